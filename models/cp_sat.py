"""CP-SAT adapter facts. Its status map lives with every other solver's in ``models.status``.

``CP_SAT_STATUS`` is re-exported here, typed for lookups by ``CpSolverStatus``, for the modules
that still import it from this one (``models.ocs_assignment``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from models.status import CP_SAT_STATUS as _CP_SAT_STATUS
from models.status import Status

if TYPE_CHECKING:
    from ortools.sat.python import cp_model

#: The same table as ``models.status.CP_SAT_STATUS``.
CP_SAT_STATUS = cast("dict[cp_model.CpSolverStatus | int, Status]", _CP_SAT_STATUS)

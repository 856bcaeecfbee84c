"""The optional extras: imported only when asked for, with an error naming the one to install."""

from __future__ import annotations

import importlib
from types import ModuleType

from planner.errors import InputError

#: The optional extras (pyproject's ``[project.optional-dependencies]``) by module they bring.
EXTRAS = {"distributed": "dask", "pandas": "pandas", "pyarrow": "pandas"}


def require_extra(module: str, what: str) -> ModuleType:
    """Import an optional dependency; InputError naming the extra to install when it is missing.

    ``what`` names what the user asked for (``--dask``, ``PlanResult.to_pandas()``).
    """
    extra = EXTRAS[module]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"{what} needs {module}, which comes with the optional '{extra}' extra: install "
            f"it with pip install 'fabric-planner[{extra}]' (in a clone: uv sync --extra {extra})"
        ) from None

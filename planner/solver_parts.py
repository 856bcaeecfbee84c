"""What a call loads when it needs it: the solver parts and the optional extras.

Importing the API is cheap: the solver libraries (OR-Tools, PuLP/HiGHS, SciPy) and the modules
that use them load on the first call that needs them (``load_solvers``); an optional extra is
imported only when asked for (``require_extra``), with an error naming it when it is missing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from planner.errors import InputError
from planner.families import (
    search_families,
)
from planner.family_roles import NeedsSolvers
from planner.interrupt import patch_cp_sat
from planner.quiet import silence_highs_banner
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.family_roles import Family


from planner.extras import EXTRAS as EXTRAS
from planner.extras import require_extra as require_extra

#: What ``load_solvers`` can load: the search (CP-SAT), the simulator (SciPy), the OCS circuit
#: engineering (CP-SAT, PuLP/HiGHS, networkx) and the torus pod (networkx, scipy.stats).
SOLVER_PARTS = {
    "search": "planner.sizing",
    "sim": "planner.sim.simulate",
    "ocs": "planner.families.ocs_direct.circuits",
    "torus": "planner.families.ocs_torus.pod",
}


def load_solvers(*parts: str) -> None:
    """Load the parts of the planner a call needs (``SOLVER_PARTS``; all of them without any).

    Each loads once per process and only when asked for, so a command pays for what it uses: a
    Clos plan never loads the OCS models, a plan without verification never loads the simulator.
    Once OCS is loaded, HiGHS's banner is kept off stdout, where it would land in the middle of
    --json output (``planner/quiet.py``); once CP-SAT is, it is patched so Ctrl-C can stop its
    solves if a command asked for it (``planner/interrupt.py``).
    """
    for part in parts or tuple(SOLVER_PARTS):
        if part == "ocs":
            silence_highs_banner()
        importlib.import_module(SOLVER_PARTS[part])
    patch_cp_sat()


def parts_for(inst: Instance, verifying: bool) -> tuple[str, ...]:
    """The solver parts a plan of ``inst`` needs: its families' and the simulator's if it verifies."""
    own = dict.fromkeys(
        g for f in instance_families(inst) if isinstance(f, NeedsSolvers) for g in f.solver_groups
    )
    return ("search", *(("sim",) if verifying else ()), *own)


def instance_families(inst: Instance) -> list[Family]:
    """The instance's families, resolved once (``planner.families.search_families``).

    ``search.families`` and ``search.pin.family`` are checked against the registry when the
    instance is read; an instance built in code with an unknown name is bad input here.
    """
    try:
        return search_families(inst)
    except ValueError as exc:
        raise InputError(f"search.families: {exc}") from None

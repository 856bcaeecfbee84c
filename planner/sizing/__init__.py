"""Plan a folded-Clos fabric: turn an instance and a catalog into sizing models, solve, and design.

The search runs over *structures* (planes x tiers). Each structure is one CP-SAT model of
``models.clos_sizing`` whose switch model per tier is a decision; the best structure is the
design, and the smallest proven bound over all structures is the global lower bound. The same
models, restricted to one switch model for every tier, give the ``alternatives`` table.

The package's parts:

* ``problems``: the Clos adapter's input side, instance and catalog to model data per structure;
* ``designs``: the Clos adapter's output side, a solution to a priced ``Design``;
* ``search_loop``: the loop over structures and switch options, the bound, the canonical tie-break;
* ``diagnosis``: why no design exists, in a user's words.
"""

from __future__ import annotations

from planner.sizing.designs import (
    design_of,
    link_groups,
)
from planner.sizing.diagnosis import (
    DIAGNOSIS_TIME_S,
    explain_infeasible,
    explain_pins,
    max_endpoints,
)
from planner.sizing.problems import (
    RATIO_DENOMINATOR,
    ROLE_LEVEL,
    Outcome,
    Progress,
    SizingResult,
    Structure,
    allowed_media,
    allowed_switches,
    cabling_of,
    cage_of,
    class_lengths,
    criteria_of,
    medium_option,
    nic_of,
    nic_port,
    pins_of,
    requirements_of,
    restrict_to,
    structures_of,
)
from planner.sizing.search_loop import (
    OPTIMALITY_RTOL,
    TIE_BREAK_MIN_S,
    TIE_BREAK_TIME_S,
    search,
)

__all__ = [
    "DIAGNOSIS_TIME_S",
    "OPTIMALITY_RTOL",
    "Outcome",
    "Progress",
    "RATIO_DENOMINATOR",
    "ROLE_LEVEL",
    "SizingResult",
    "Structure",
    "TIE_BREAK_MIN_S",
    "TIE_BREAK_TIME_S",
    "allowed_media",
    "allowed_switches",
    "cabling_of",
    "cage_of",
    "class_lengths",
    "criteria_of",
    "design_of",
    "explain_infeasible",
    "explain_pins",
    "link_groups",
    "max_endpoints",
    "medium_option",
    "nic_of",
    "nic_port",
    "pins_of",
    "requirements_of",
    "restrict_to",
    "search",
    "structures_of",
]

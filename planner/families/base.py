"""What fabric families share, called by name: no base class, no default that does nothing.

A family owns everything that differs between topologies the planner sizes; its roles are
protocols (``planner.family_roles``: ``Family`` for every family, optional roles for what only
some do) and the family is resolved once at the top and handed down, so nothing outside
``planner/families/`` asks which family it holds. A family is a plain frozen dataclass that
defines the methods of the roles it plays; the helpers here are what several of them share.

Family modules import their heavy dependencies (solvers, the simulator, the OCS engineering)
inside their methods, so that importing the registry stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from models import clos_sizing as cs
    from planner.design import Design
    from planner.family_roles import PerTier
    from planner.schema.instance import Instance, Verify
    from planner.validation import Violation


def simulated_verify(inst: Instance, design: Design) -> Verify:
    """The [verify] section the design is simulated under: the workload's traffic included.

    What a family engineers for (OCS circuits for the demand) or predicts (a closed-form
    throughput) is the traffic the simulator will judge: ``verify_with_workload``, as
    ``planner.api.verify_for`` builds it. Too many patterns together are bad input.
    """
    from planner.errors import InputError
    from planner.workload.step import verify_with_workload

    try:
        return verify_with_workload(inst.verify, inst.workload, design.scale_up.gpus)
    except ValueError as exc:
        raise InputError(f"verify: {exc}") from None


def tiers_label(planes: int, tiers: int) -> str:
    """``2 planes x 3 tiers``: a structure's short name in a family of tiers."""
    p = f"{planes} plane{'s' if planes > 1 else ''}"
    return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}"


# ---- shared by the families of tiered packet switches wired up and down ---------------------------
def clos_shapes(
    options: tuple[cs.SwitchOption, ...], tier_options: list[int]
) -> list[tuple[int, PerTier]]:
    """One structure per allowed tier count, every tier with the same options (the Clos model's)."""
    return [(t, (options,) * t) for t in tier_options]


def up_down_structure(design: Design, wiring_kind: str) -> list[Violation]:
    """The wiring kind, then the up-down structural checks (``planner.validation``)."""
    from planner.validation import UP_DOWN_STRUCTURE, check_wiring_kind

    wrong_kind = check_wiring_kind(design, wiring_kind)
    if wrong_kind:
        return wrong_kind
    return [v for check in UP_DOWN_STRUCTURE for v in check(design)]


def up_down_design(design: Design) -> list[Violation]:
    """Ratios, paths and failure tolerance of a tiered design (``planner.validation``)."""
    from planner.validation import UP_DOWN_DESIGN

    return [v for check in UP_DOWN_DESIGN for v in check(design)]

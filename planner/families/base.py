"""What every fabric family shares: the defaults of its roles (issue 10: a family is a plug-in).

A family owns everything that differs between topologies the planner sizes: the shapes it
contributes to the search, the names of its tiers and structures, the design of its special
tiers, its post-solve steps, its extra report tables, its fabric graph for the simulator, its
validator checks and its wiring. The roles are protocols (``planner.family_roles``); the family is
resolved once at the top and handed down, so nothing outside ``planner/families/`` asks which
family it holds. ``FamilyBase`` gives every role the default of a folded Clos of packet switches:
a family overrides only what differs.

Family modules import their heavy dependencies (solvers, the simulator, the OCS engineering)
inside their methods, so that importing the registry stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    import polars as pl

    from models import clos_sizing as cs
    from planner.deadline import Deadline
    from planner.design import Design, TierDesign
    from planner.family_roles import DemandOf, PerTier, Sized
    from planner.schema.catalog import Catalog
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


class FamilyBase:
    """The defaults of the optional roles: no step, no table, no prediction of its own.

    What every family must say itself has no default here, Clos-shaped or any other: its
    ``name`` and ``wiring_kind``, its wiring reader (``read_wiring``), its sizing (``size``, or
    structures for the Clos model through ``shapes``), its tiers' ``roles``, its plane
    (``build_fabric``) and its checks (``check_structure``, ``check_design``). The helpers below
    (``clos_shapes``, ``up_down_structure``, ``up_down_design``) are what the families of
    tiered packet switches share, called by name, not inherited.
    """

    name: str
    #: The wiring kind of its designs and its reader.
    wiring_kind: str
    #: The solver groups its post-solve steps need loaded (none by default).
    solver_groups: tuple[str, ...] = ()

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """None: a family gives the Clos model structures only when it says so (``clos_shapes``)."""
        return []

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """None: the structures are solved through ``shapes`` and the Clos model."""
        return []

    def label(self, planes: int, tiers: int) -> str:
        """``2 planes x 3 tiers``."""
        p = f"{planes} plane{'s' if planes > 1 else ''}"
        return f"{p} x {tiers} tier{'s' if tiers > 1 else ''}"

    def circuit_level(self, tiers: int) -> int | None:
        """None: every tier is packet switches."""
        return None

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """No switch at the plane's port speed."""
        return f"allowed switch runs {speed_gbps}G ports"

    def class_note(self, link_class: int, tiers: int) -> str:
        """Nothing to add: every class is switch to switch."""
        return ""

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """None: no special tier."""
        return None

    def after_solve(
        self, design: Design, inst: Instance, deadline: Deadline, demand_of: DemandOf
    ) -> Design:
        """The design as solved."""
        return design

    def search_tables(self, design: Design, deadline: Deadline) -> dict[str, pl.DataFrame | None]:
        """None."""
        return {}

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """None."""
        return {}

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """Not predicted."""
        return None

    def table_titles(self) -> dict[str, str]:
        """None: it has no tables of its own."""
        return {}

    def design_tables(self) -> tuple[str, ...]:
        """None."""
        return ()

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """Nothing to add."""
        return []


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

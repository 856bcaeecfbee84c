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

from typing import TYPE_CHECKING, Any

from planner.wiring import UP_DOWN, parse_up_down

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
    from planner.wiring import Wiring


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
    """Every role's default: tiers of packet switches wired up and down, no step of its own.

    A subclass sets ``name`` (a frozen dataclass field or a class attribute) and overrides what
    differs; the folded Clos family overrides almost nothing.
    """

    name: str
    #: The wiring kind of its designs and its reader.
    wiring_kind: str = UP_DOWN
    #: The solver groups its post-solve steps need loaded (none by default).
    solver_groups: tuple[str, ...] = ()

    def read_wiring(self, params: dict[str, Any]) -> Wiring:
        """The up-down wiring (no parameters)."""
        return parse_up_down(params)

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """One structure per allowed tier count, every tier with the same options."""
        return [(t, (options,) * t) for t in tier_options]

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

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Leaf, spine, core: ``planner.design.ROLES``."""
        from planner.design import ROLES

        return ROLES[tiers]

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

    def check_structure(self, design: Design) -> list[Violation]:
        """Its own wiring kind, and the up-down structural checks."""
        from planner.validation import UP_DOWN_STRUCTURE, check_wiring_kind

        wrong_kind = check_wiring_kind(design, self.wiring_kind)
        if wrong_kind:
            return wrong_kind
        return [v for check in UP_DOWN_STRUCTURE for v in check(design)]

    def check_design(self, design: Design) -> list[Violation]:
        """Ratios, paths and failure tolerance (the tiered checks)."""
        from planner.validation import UP_DOWN_DESIGN

        return [v for check in UP_DOWN_DESIGN for v in check(design)]

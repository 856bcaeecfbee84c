"""The roles a fabric family plays, as protocols: what a layer below the families calls on one.

A family (``planner/families/``) is resolved once, at the top, where an instance is read or a
design loaded (``planner.families.family_of``), and handed down to the code that needs it, as
networkx hands ``flow_func`` to its callers: the search receives its families, the validator and
the design.json reader the design's family, the simulator the fabric graph the family built.
Nothing below ``planner.families`` imports the registry; it sees a family only through these
protocols.

``Family`` is what every family must say itself, and nothing more: its names, its wiring
reader and its checks (its plane is the sim layer's
``planner.sim.fabric.BuildsFabric``). What only some families do is an optional role that a
family takes on by defining its methods, and that a caller asks for with ``isinstance``
(the protocols are runtime-checkable), never through a default that does nothing:

* one sizing entry point, exactly one of: ``SizesItself`` (its own model, ``size``) or
  ``ClosShapes`` (structures the search loop solves with the Clos model, ``shapes``);
* ``ClosModelHooks``: what the Clos model asks of a family it sizes (its circuit layer,
  special tiers, messages), and ``ClosShapes``: structures the search loop solves with it;
* ``PostSolves``: steps after the solve (OCS circuit engineering) and the tables they make,
  and ``NeedsSolvers``: solver groups its steps load (``planner.solver_parts``);
* ``Predicts``: a closed-form fraction of ideal for the [verify] demand;
* ``Tables``: tables of its own in the reports, their titles and the picture's words;
* ``PlacesJobs``: the domain a job of a shared cluster must stay in, or take whole.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from models.status import Status

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import polars as pl

    from models import clos_sizing as cs
    from planner.deadline import Deadline
    from planner.design import Design, TierDesign
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance, Verify
    from planner.violation import Violation
    from planner.wiring import Wiring

    #: Per-tier switch options of one structure, leaf first.
    PerTier = tuple[tuple[cs.SwitchOption, ...], ...]
    #: Block-level demand of a design under a [verify] section (``planner.api.verify_demand``).
    DemandOf = Callable[[Design, Verify], npt.NDArray[np.float64]]


@dataclass(frozen=True)
class Sized:
    """One structure sized by a family's own model (a family the Clos model does not size).

    Figures cover all planes. ``design`` is the priced design when the model found one;
    ``reason`` says, in a user's words, why there is none when the structure is infeasible.
    """

    status: Status
    planes: int
    tiers: int
    objective_usd: float | None = None
    bound_usd: float | None = None
    capex_usd: float | None = None
    power_w: float | None = None
    wall_s: float = 0.0
    design: Design | None = None
    reason: str = ""
    switch_model: str | None = None
    """The switch restriction it was sized under: one catalog model for every packet tier, or
    None for any allowed switch (``Family.size``'s ``switch_models``)."""


class Checks(Protocol):
    """A family's own checks of a design, for the validator and the design.json reader."""

    def check_structure(self, design: Design) -> list[Violation]:
        """Whether the design's switch groups and links make a fabric of the family at all.

        A design failing these describes no fabric: design.json refuses it (exit 2). The checks
        are the validator's own recomputations (``planner.validation``), never the model's.
        """
        ...

    def check_design(self, design: Design) -> list[Violation]:
        """The family's judgement of a buildable design: ratios, paths, failure tolerance."""
        ...


class Family(Checks, Protocol):
    """What every family says itself: names, wiring reader and checks."""

    @property
    def name(self) -> str:
        """The family's name, as in ``search.families`` and ``Design.family``."""
        ...

    @property
    def wiring_kind(self) -> str:
        """The kind of ``Design.wiring`` in the family's designs (``planner.wiring``)."""
        ...

    def label(self, planes: int, tiers: int) -> str:
        """Short name of a structure, e.g. ``2 planes x 3 tiers``."""
        ...

    def roles(self, tiers: int) -> tuple[str, ...]:
        """Role of each tier of a structure of ``tiers`` tiers, leaf first."""
        ...

    def read_wiring(self, params: dict[str, Any]) -> Wiring:
        """The wiring of that kind from its design.json parameters; ValueError names the fault."""
        ...


@runtime_checkable
class SizesItself(Family, Protocol):
    """A family sized by its own model: its one sizing entry point (else ``ClosShapes``)."""

    def size(
        self,
        inst: Instance,
        catalog: Catalog,
        switch_models: Sequence[str | None],
        deadline: Deadline,
    ) -> list[Sized]:
        """Size the family's structures with its own model, best design of each, per restriction.

        Each entry of ``switch_models`` restricts the packet switches to one catalog model (None:
        any); every ``Sized`` names the one it was sized under. Work the restrictions share
        (geometry, model data) is done once per call. ``deadline`` bounds the whole call,
        preparation and diagnosis included: what it cuts is returned ``TIME_LIMIT`` (a structure
        never solved has no bound), never left out.
        """
        ...


@runtime_checkable
class ClosModelHooks(Protocol):
    """What the Clos model asks of a family it sizes: its circuit layer, special tiers, messages.

    A family the search loop sizes (``ClosShapes``) or that runs the model inside its own
    ``size`` (the rail families) answers them. The Clos adapter (``planner.sizing``) refuses a family without them (``clos_hooks``).
    """

    def circuit_level(self, tiers: int) -> int | None:
        """The level (1 = leaf) of the circuit-switched layer, None when every tier is packet.

        That layer keeps its own devices when the search restricts tiers to one switch model,
        is not counted as switches, and is sized with ``models.clos_sizing``'s ``top_ocs``.
        """
        ...

    def missing_tier_reason(self, index: int, speed_gbps: int) -> str:
        """What is missing when tier ``index`` (0 = leaf) has no option, after ``no ``."""
        ...

    def class_note(self, link_class: int, tiers: int) -> str:
        """Extra words on how a link class is cabled, for the no-medium message ('' if none)."""
        ...

    def tier_design(
        self, catalog: Catalog, ts: cs.TierSolution, speed_gbps: int
    ) -> TierDesign | None:
        """The design of one of the family's special tiers, None for a packet-switch tier."""
        ...


@runtime_checkable
class ClosShapes(ClosModelHooks, Protocol):
    """A family whose structures the search loop solves with the Clos model, all together.

    Its one sizing entry point (else ``SizesItself``).
    """

    def shapes(
        self,
        catalog: Catalog,
        options: tuple[cs.SwitchOption, ...],
        tier_options: list[int],
        pinned_tiers: int | None,
    ) -> list[tuple[int, PerTier]]:
        """The (tiers, per-tier options) structures the family contributes for one plane count.

        ``options`` are the packet switches allowed at the plane's port speed, ``tier_options``
        the tier counts the search allows and ``pinned_tiers`` the tier count the instance pins
        (None: not pinned). An empty list: the family has no structure under these pins.
        """
        ...


@runtime_checkable
class NeedsSolvers(Protocol):
    """A family whose steps need solver groups beyond the search's (loaded lazily)."""

    @property
    def solver_groups(self) -> tuple[str, ...]:
        """The solver groups its steps need loaded (``planner.api``'s lazy groups)."""
        ...


@runtime_checkable
class PostSolves(Protocol):
    """A family with steps after the solve, and the tables they make."""

    def after_solve(
        self, design: Design, inst: Instance, deadline: Deadline, demand_of: DemandOf
    ) -> Design:
        """The chosen design after the family's post-solve steps.

        ``deadline`` is the command's end: a step it cuts is left out or falls back to a valid
        construction, and the design says so in a note (``planner.deadline.cut_note``).
        """
        ...

    def search_tables(self, design: Design, deadline: Deadline) -> dict[str, pl.DataFrame | None]:
        """Tables a solve adds that depend on the search (kept by ``simulate``), by name.

        Computed within ``deadline``: a table it cut is None, and the plan notes it was left out.
        """
        ...


@runtime_checkable
class Predicts(Protocol):
    """A family that predicts its designs' throughput in closed form."""

    def throughput_scale(self, design: Design, inst: Instance, demand_of: DemandOf) -> float | None:
        """Predicted fraction of ideal of the [verify] demand, None when it has no prediction."""
        ...


@runtime_checkable
class Tables(Protocol):
    """A family with tables of its own: the tables, their headings and place, the picture's words."""

    def extra_tables(self, design: Design) -> dict[str, pl.DataFrame]:
        """Tables of the design beyond summary, BOM and links, by file name."""
        ...

    def table_titles(self) -> dict[str, str]:
        """Headings of its tables (``extra_tables``, ``search_tables``) in report.html, by name."""
        ...

    def design_tables(self) -> tuple[str, ...]:
        """Its tables shown with the design, right after the links (the others come last)."""
        ...

    def picture_notes(self, tables: Mapping[str, pl.DataFrame]) -> list[str]:
        """What its tables add to the topology picture, a few words each ([] if nothing)."""
        ...


@runtime_checkable
class PlacesJobs(Protocol):
    """A family whose fabric restricts where a job of a shared cluster may run.

    A job of at most ``job_domain_gpus`` GPUs must lie inside one such domain; a larger job takes
    whole domains (``models.placement.Rule``): rail-only joins rails only inside a scale-up
    domain, a TPU-style pod builds a slice of whole cubes. A family without the role lets a job
    take any free GPUs (its switches join every GPU to every other).
    """

    def job_domain_gpus(self, design: Design) -> tuple[str, int, bool]:
        """The domain's name, its GPUs, and whether whole domains must be consecutive."""
        ...

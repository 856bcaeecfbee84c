"""Clos sizing: the problem, its solution, and the model's variables.

The formulation in full is the package docstring (``models.clos_sizing``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from ortools.sat.python import cp_model

from models.cabling import (
    CablePlan,
    Cage,
    CpoEngine,
    Criteria,
    LengthTails,
    MediumOption,
    OcsPort,
    PortKind,
    plans_for,
)
from models.status import Status


@dataclass(frozen=True)
class SwitchOption:
    """A switch model as one tier may use it, at the plane's link speed."""

    name: str
    radix: int
    cost_usd: float
    power_w: float
    latency_ns: int
    engine: PortKind = None
    """The module cage of its pluggable ports, the co-packaged optics behind its ports, an OCS
    port for an optical circuit switch, or None for pluggable ports of any cage."""
    protocol: str = ""
    """'infiniband' or 'ethernet'; empty for a device that carries either (an OCS)."""

    @property
    def cpo(self) -> bool:
        """Whether the ports are co-packaged optics."""
        return isinstance(self.engine, CpoEngine)


#: The placement whose leaf stands in the GPU rack it serves.
TOP_OF_RACK = "top_of_rack"


@dataclass(frozen=True)
class ClassCabling:
    """One link class: its length tails per leaf placement and the plans that may cable it."""

    tails: dict[str | None, LengthTails]
    """Keyed by leaf placement for classes 0 and 1; by None for classes above the leaf."""
    plans: tuple[CablePlan, ...]

    def tails_for(self, plan: CablePlan) -> LengthTails:
        """The tails a plan is priced on."""
        return self.tails[plan.placement]

    def tails_at(self, g: int) -> LengthTails:
        """The tails plan ``g`` (``plans[g]``) is priced on."""
        return self.tails_for(self.plans[g])


def _port_kind_key(e: PortKind) -> tuple[int, float, str, float]:
    if e is None:
        return (0, 0.0, "", 0.0)
    if isinstance(e, Cage):
        return (0, float(e.lane_gbps), e.form_factor, 1.0)
    if isinstance(e, OcsPort):
        return (2, e.insertion_loss_db, "", 0.0)
    return (1, float(e.lane_gbps), e.connector, e.reach_m)


def engines_of(options: Sequence[SwitchOption]) -> list[PortKind]:
    """The distinct port kinds of a tier's candidates: pluggable first, then CPO, then OCS."""
    return sorted({o.engine for o in options}, key=_port_kind_key)


def reach_thresholds(
    media: Sequence[MediumOption],
    lower: Sequence[SwitchOption] | None,
    upper: Sequence[SwitchOption],
) -> tuple[float, ...]:
    """Where a link class's length bands end: every medium's reach and every engine's reach."""
    engines = engines_of(upper) + ([] if lower is None else engines_of(lower))
    reaches = {m.reach_m for m in media} | {e.reach_m for e in engines if isinstance(e, CpoEngine)}
    return tuple(sorted(reaches))


def class_cabling(
    tails: dict[str | None, LengthTails],
    media: Sequence[MediumOption],
    lower: Sequence[SwitchOption] | None,
    upper: Sequence[SwitchOption],
    criteria: Criteria,
    nic: PortKind = None,
) -> ClassCabling:
    """Every cabling plan of a link class: per placement and per pair of end kinds.

    ``lower`` None stands for the NIC end, whose port is ``nic`` (a cage; never co-packaged).
    """
    lower_engines = [nic] if lower is None else engines_of(lower)
    plans = [
        plan
        for key, t in tails.items()
        for lo in lower_engines
        for hi in engines_of(upper)
        for plan in plans_for(t, media, lo, hi, key, criteria)
    ]
    return ClassCabling(tails, tuple(plans))


@dataclass(frozen=True)
class Requirements:
    """Constraints a structure must meet; None switches a constraint off."""

    max_oversubscription: tuple[Fraction, ...]
    """Allowed down:up bandwidth ratio for tiers 1..T-1 (leaf first)."""
    max_switch_hops: int | None = None
    max_latency_ns: int | None = None
    min_fraction_after_failure: Fraction | None = None
    protected_tiers: frozenset[int] = frozenset()
    """Tier levels (1 = leaf) whose loss of any one switch must be survived."""
    max_power_w: float | None = None
    max_capex_usd: float | None = None


@dataclass(frozen=True)
class Pins:
    """Decisions fixed by the user (what-if and evaluate); None leaves a decision free.

    Tuples run over tiers, leaf first; an entry of None leaves that tier free.
    """

    switch_models: tuple[str | None, ...] = ()
    switches: tuple[int | None, ...] = ()
    downlinks: tuple[int | None, ...] = ()
    uplinks: tuple[int | None, ...] = ()
    parallel_links: tuple[int | None, ...] = ()
    pods: int | None = None
    leaf_placement: str | None = None


@dataclass(frozen=True)
class SizingProblem:
    """All data of one structure (planes x tiers); pure numbers, no file formats."""

    endpoints: int
    planes: int
    tiers: int
    switch_options: tuple[tuple[SwitchOption, ...], ...]
    """Candidates per tier, leaf first."""
    cabling: tuple[ClassCabling, ...]
    """Per link class 0..T-1 (class 0: endpoint to leaf)."""
    placements: tuple[str, ...]
    """Leaf placements allowed."""
    endpoints_per_rack: int
    """Endpoints of one plane in one rack (a top-of-rack leaf serves a divisor of them)."""
    requirements: Requirements
    energy_usd_per_w: float
    """Lifetime energy cost of one watt drawn continuously (PUE included)."""
    capex_weight: float = 1.0
    energy_weight: float = 1.0
    pins: Pins = field(default_factory=Pins)
    top_ocs: bool = False
    """The top tier is a layer of optical circuit switches (direct-connect blocks): it adds no
    switch hop, and every block has an even number of ports on each device."""
    ocs_transit: bool = False
    """With ``top_ocs``: the blocks route with traffic engineering over direct and one-transit
    paths (WCMP), which needs every spine to reach every other block (``ocs.spine_reach``)."""
    nic: PortKind = None
    """The NIC's port at the lower end of class 0 (its cage); None: any module fits."""


@dataclass(frozen=True)
class TierSolution:
    """The sized tier of one plane."""

    level: int
    switch_model: str
    switches: int
    downlinks: int
    uplinks: int
    fanout: int
    parallel_links: int


@dataclass(frozen=True)
class SizingSolution:
    """Outcome of one structure's model; figures cover all planes."""

    status: Status
    planes: int
    tiers: int
    objective_usd: float | None
    bound_usd: float | None
    capex_usd: float | None
    power_w: float | None
    wall_s: float
    tier_solutions: tuple[TierSolution, ...] = ()
    pods: int = 1
    leaves_per_pod: int = 0
    placement: str = ""
    plans: tuple[CablePlan, ...] = ()
    """The cabling plan chosen for each link class."""
    objective_units: int | None = None
    """The objective of one plane in the model's integer units (see ``objective_coefficients``)."""


@dataclass
class ClosVars:
    """Decision variables of one plane, keyed by tier level."""

    x: dict[tuple[int, int], cp_model.IntVar]
    n: dict[int, cp_model.IntVar]
    d: dict[int, cp_model.IntVar]
    u: dict[int, cp_model.IntVar]
    f: dict[int, cp_model.IntVar]
    q: dict[int, cp_model.IntVar]
    links: dict[int, cp_model.IntVar]
    n_at: dict[tuple[int, int], cp_model.IntVar]
    """n[t] if tier t uses model m, else 0."""
    pods: cp_model.IntVar
    leaves_per_pod: cp_model.IntVar
    placement: dict[str, cp_model.IntVar]
    plan: dict[tuple[int, int], cp_model.IntVar]
    longer: dict[tuple[int, str | None, int], cp_model.IntVar]
    """N[c, placement, j]: links of class c longer than threshold j (classes above 0)."""


@dataclass
class BuiltModel:
    """A built, unsolved model; what-if studies may add constraints before ``solve``."""

    problem: SizingProblem
    model: cp_model.CpModel
    v: ClosVars
    capex_units: cp_model.LinearExpr
    power_units: cp_model.LinearExpr
    families: tuple[str, ...]

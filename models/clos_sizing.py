r"""Folded-Clos fabric sizing (OR-Tools CP-SAT).

One model prices one *structure*: a NIC split into ``p`` planes and a Clos of ``T`` tiers
(levels 1 = leaf, 2 = spine/aggregation, 3 = core). Every plane is an identical, independent
fabric of ``E`` endpoints (one NIC port per GPU) at link speed ``s = nic / p``; the model sizes one
plane and multiplies it by ``p``. The switch model of each tier is a decision. The planner solves
one model per structure and takes the best (``planner.sizing``); the minimum over structures of
the models' proven bounds is the global lower bound.

Data: E endpoints per plane; for every tier t the candidate switches m with radix k_m (ports at
speed s), cost c_m, power w_m, latency l_m and, for co-packaged optics, the engine e_m behind its
ports; the leaf placements allowed (top of rack, middle or end of row); R endpoints per rack and
plane; for every link class c (0 = endpoint to leaf, t = tier t to tier t+1) its length tails per
placement (the share of links longer than each reach threshold r_j, from the floor plan) and its
cabling plans g (``models.cabling``: a medium per length band, with the module at each of its
pluggable ends, for one placement and one pair of end engines, with per-link capex a_gj (both
ends' modules and the fibre), power b_gj and a worst latency lat_g).

Variables (per plane):
    x[t,m] in {0,1}   tier t uses switch model m               sum_m x[t,m] = 1
    n[t]              switches at tier t
    d[t], u[t]        ports per switch facing down / up           u[T] = 0
    f[t], q[t]        switches above that each tier-t switch reaches, parallel links to each
    P, L              (T = 3) pods, leaves per pod
    y[pi] in {0,1}    leaves stand at placement pi                sum_pi y[pi] = 1
    z[c,g] in {0,1}   link class c is cabled by plan g            sum_g z[c,g] = 1
    N[c,pi,j]         links of class c longer than r_j at placement pi

Constraints (one family per ``add_*`` function):
    switch.port_budget    d[t] + u[t] <= sum_m k_m x[t,m]
    clos.coverage         E <= n[1] d[1]                     (T = 1: n[1] = 1, d[1] = E)
    clos.even_spread      u[t] = f[t] q[t]                   every switch: the same q[t] links to each
    clos.wiring           T=2: f[1] = n[2], d[2] = n[1] q[1]
                          T=3: f[1] = A, n[2] = P A, d[2] = L q[1], n[1] <= P L,
                               f[2] = C, n[3] = A C, d[3] = P q[2]
    tier.oversubscription d[t] den_t <= num_t u[t]           ratio num_t/den_t allowed at tier t
    path.hops             2T - 1 <= max hops  (2T - 2 when the top tier is an OCS layer, 2T - 1
                          again when its blocks route through a transit block)
    ocs.even_ports        top tier OCS: q[T-1] = 2k (each block has an even number of ports per device)
    ocs.spine_reach       top tier OCS routed with transit (T = 3): u[2] >= P - 1 (every spine
                          can hold a circuit to every other block, so a leaf may spray over all its
                          spines and no block pair depends on a subset of them)
    path.latency          sum_t (2 - [t = T]) sum_m l_m x[t,m] + 2 sum_c sum_g lat_g z[c,g] <= max ns
                          (with transit: the spine tier and the OCS tier once more, the top link
                          class twice more)
                          (lat_g: the plan's worst link, media electronics plus propagation)
    failure.single_switch for a protected tier t+1: f[t] (1 - phi) >= 1   (keep phi of the uplinks)
                          for a protected leaf tier: (p - 1) / p >= phi  (other planes carry on)
    layout.leaf_placement y[top_of_rack] => d[1] divides R (a leaf serves whole racks' share)
    plane.protocol        x[t,m] + x[t',m'] <= 1 when m and m' speak different protocols
                          (a plane is InfiniBand or Ethernet end to end; the caller keeps only
                          switches the NIC speaks)
    media.plan            z[c,g] <= y[pi_g];  z[c,g] <= sum_{m: e_m = e} x[t,m] for each end's engine
    media.length_tails    N[c,pi,j] = ceil(links[c] share_j)   (two integer inequalities)
    budget.power          p * power <= cap;  budget.capex   p * capex <= cap

Objective: minimise p * (capex + energy_usd_per_w * power), with optional weights, where capex and
power add switches (sum_m c_m n[t] x[t,m]) and links: class c under plan g pays
sum_j (N[c,pi,j-1] - N[c,pi,j]) a_gj (N[c,pi,-1] = links[c]), and the same with b_gj for power.
Ties: designs of equal objective are common (64 pods of 2 leaves cost what 4 pods of 32 do), and
a parallel search returns whichever it meets first. ``solve_canonical`` therefore fixes the
optimum and, in a second, single-worker (deterministic) search, minimises ``tie_break``: fewest parallel links
per switch pair, leaf tier first. The same instance always gives the same design, and the one
chosen spreads each switch's uplinks widest (most paths, least lost with one switch above).
Products of integer variables use ``AddMultiplicationEquality``; products of a count with a model
or plan choice are linearised with bounds taken from the data. Why the media sit inside this model
rather than in a MILP after it: which medium a link may take depends on the switch at each end
(co-packaged ports), and the switch's worth depends on the media it saves; ``models.cabling``
shows the per-class plans are exact, so this one model gives the joint optimum.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
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
    band_counts,
    plans_for,
)
from models.hops import class_crossings, hops, tier_crossings
from models.scaling import units_to_usd, units_to_w, usd_to_units, w_to_units
from models.status import Status, status_of


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


def _new_int(m: cp_model.CpModel, lb: int, ub: int, name: str) -> cp_model.IntVar:
    return m.new_int_var(lb, max(lb, ub), name)


def _product(
    m: cp_model.CpModel, a: cp_model.IntVar, b: cp_model.IntVar, ub: int, name: str
) -> cp_model.IntVar:
    z = _new_int(m, 0, ub, name)
    m.add_multiplication_equality(z, [a, b])
    return z


def _ub(v: cp_model.IntVar) -> int:
    domain = v.proto.domain  # a protobuf view: negative indices are not supported
    return int(domain[len(domain) - 1])


def _choice(v: ClosVars, t: int, values: Sequence[float | int]) -> cp_model.LinearExpr:
    """Linear expression of a per-model value at tier t."""
    return sum(val * v.x[t, i] for i, val in enumerate(values))  # type: ignore[return-value]


def add_variables(m: cp_model.CpModel, p: SizingProblem) -> ClosVars:
    """Create the decision variables with domains taken from the data."""
    T, E = p.tiers, p.endpoints
    kmax = max(o.radix for opts in p.switch_options for o in opts)
    x = {
        (t, i): m.new_bool_var(f"x[{t},{o.name}]")
        for t in range(1, T + 1)
        for i, o in enumerate(p.switch_options[t - 1])
    }
    n, d, u, f, q = {}, {}, {}, {}, {}
    for t in range(1, T + 1):
        kt = max(o.radix for o in p.switch_options[t - 1])
        n_ub = E if t == 1 else kmax if T == 2 else kmax * kmax
        n[t] = _new_int(m, 1, 1 if T == 1 else n_ub, f"n[{t}]")
        d[t] = _new_int(m, 1, kt, f"d[{t}]")
        u[t] = _new_int(m, 0 if t == T else 1, 0 if t == T else kt, f"u[{t}]")
        if t < T:
            f[t] = _new_int(m, 1, kmax, f"f[{t}]")
            q[t] = _new_int(m, 1, kt, f"q[{t}]")
    links = {t: _product(m, n[t], u[t], _ub(n[t]) * _ub(u[t]), f"links[{t}]") for t in range(1, T)}
    pods = _new_int(m, 1, 1 if T < 3 else kmax, "pods")
    leaves_per_pod = _new_int(m, 1, E if T < 3 else kmax, "leaves_per_pod")
    n_at = {
        (t, i): _count_at_choice(m, n[t], x[t, i], f"n[{t},{o.name}]")
        for t in range(1, T + 1)
        for i, o in enumerate(p.switch_options[t - 1])
    }
    placement = {pi: m.new_bool_var(f"y[{pi}]") for pi in p.placements}
    plan = {
        (c, g): m.new_bool_var(f"z[{c},{g}]")
        for c, cab in enumerate(p.cabling)
        for g in range(len(cab.plans))
    }
    longer = {
        (c, key, j): _new_int(m, 0, _ub(links[c]), f"N[{c},{key},{j}]")
        for c, cab in enumerate(p.cabling)
        if c > 0
        for key, tails in cab.tails.items()
        for j in range(len(tails.longer))
    }
    return ClosVars(x, n, d, u, f, q, links, n_at, pods, leaves_per_pod, placement, plan, longer)


def add_model_choice(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Each tier uses exactly one switch model.  forall t: sum_m x[t,m] = 1."""
    for t in range(1, p.tiers + 1):
        m.add_exactly_one(v.x[t, i] for i in range(len(p.switch_options[t - 1])))


def add_port_budget(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Ports used on a switch never exceed its radix.  forall t: d[t] + u[t] <= sum_m k_m x[t,m]."""
    for t in range(1, p.tiers + 1):
        radix = _choice(v, t, [o.radix for o in p.switch_options[t - 1]])
        m.add(v.d[t] + v.u[t] <= radix)


def add_coverage(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Leaves offer a port to every endpoint.  E <= n[1] d[1]; one tier: d[1] = E."""
    if p.tiers == 1:
        m.add(v.d[1] == p.endpoints)
        return
    cap = _product(m, v.n[1], v.d[1], _ub(v.n[1]) * _ub(v.d[1]), "leaf_ports")
    m.add(cap >= p.endpoints)
    # The last leaf is the only one that may be partly empty: no leaf is wholly unused.
    m.add(cap - v.d[1] < p.endpoints)


def add_even_spread(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every switch sends the same number of links to each switch above it.  u[t] = f[t] q[t]."""
    for t in range(1, p.tiers):
        m.add_multiplication_equality(v.u[t], [v.f[t], v.q[t]])


def add_wiring(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Who connects to whom, and the down ports that uses above.

    T=2: f[1] = n[2], d[2] = n[1] q[1].
    T=3: n[2] = P f[1], d[2] = L q[1], n[1] <= P L, n[3] = f[1] f[2], d[3] = P q[2].
    """
    if p.tiers == 2:
        m.add(v.f[1] == v.n[2])
        m.add_multiplication_equality(v.d[2], [v.n[1], v.q[1]])
    elif p.tiers == 3:
        m.add_multiplication_equality(v.n[2], [v.pods, v.f[1]])
        m.add_multiplication_equality(v.d[2], [v.leaves_per_pod, v.q[1]])
        pod_room = _product(
            m, v.pods, v.leaves_per_pod, _ub(v.pods) * _ub(v.leaves_per_pod), "pod_room"
        )
        m.add(v.n[1] <= pod_room)
        # No pod is wholly empty.
        m.add(pod_room - v.leaves_per_pod < v.n[1])
        m.add_multiplication_equality(v.n[3], [v.f[1], v.f[2]])
        m.add_multiplication_equality(v.d[3], [v.pods, v.q[2]])


def add_oversubscription(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Down:up bandwidth at each tier within its limit.  d[t] den_t <= num_t u[t]."""
    for t in range(1, p.tiers):
        ratio = p.requirements.max_oversubscription[t - 1]
        m.add(v.d[t] * ratio.denominator <= ratio.numerator * v.u[t])


def transit_blocks(p: SizingProblem) -> int:
    """Transit blocks on the longest path.

    1 when the blocks of an OCS top tier route with transit (``ocs_transit``), else 0.
    """
    return int(p.top_ocs and p.ocs_transit)


def switch_hops(p: SizingProblem) -> int:
    """Switches on the longest path of a structure: ``hops(T, [top is OCS], transit blocks)``."""
    return hops(p.tiers, int(p.top_ocs), transit_blocks(p))


def add_hops(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """The longest path crosses few enough switches.  switch_hops <= max hops."""
    limit = p.requirements.max_switch_hops
    if limit is not None and switch_hops(p) > limit:
        m.add_bool_or([])  # an empty clause: this structure cannot meet the limit


def add_ocs_even_ports(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every block has an even number of ports on each OCS device.  q[T-1] = 2 k.

    With p = 2k ports per device, any block-level topology with at most (devices x p) circuits
    per block can be realised on the devices (Petersen's 2-factor theorem), which is what lets
    the circuits be engineered after sizing without losing a design.
    """
    if p.top_ocs and p.tiers >= 2:
        half = _new_int(m, 1, _ub(v.q[p.tiers - 1]) // 2, "ocs_half_ports")
        m.add(v.q[p.tiers - 1] == 2 * half)


def add_ocs_spine_reach(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every spine of a block can hold a circuit to every other block.  u[2] >= P - 1.

    Spine g of every block is cabled to its own OCS devices, so a spine's circuits join it only
    to the spines g of other blocks: the layer is S = f[1] slices, one per spine. A leaf sprays
    a flow over all its spines (each is one of its equal uplinks); slice g then carries 1/S of
    every block pair's traffic, over its own circuits, directly or through a transit block's
    spine g. With u[2] >= P - 1 every slice can join every pair directly, and the same slice
    topology on every spine keeps the slices identical (``planner.families.ocs_direct.wcmp``).
    Without it, a slice joins at most u[2] of the P - 1 other blocks: on uniform demand at least
    (P - 1 - u[2]) / (P - 1) of a slice's traffic takes two circuits, and a permutation that
    sends a leaf's flows to blocks its spines do not reach overloads them.
    """
    if p.top_ocs and p.ocs_transit and p.tiers == 3:
        m.add(v.u[2] >= v.pods - 1)


def path_latency_ns(p: SizingProblem, v: ClosVars) -> cp_model.LinearExpr:
    """One-way latency of the longest path.

    Switches up and down, media electronics each way, and with transit (``transit_blocks``) the
    transit block's spine and its two circuits.
    """
    total: cp_model.LinearExpr = 0  # type: ignore[assignment]
    transit = transit_blocks(p)
    for t in range(1, p.tiers + 1):
        crossings = tier_crossings(p.tiers, t, transit)
        total += crossings * _choice(v, t, [o.latency_ns for o in p.switch_options[t - 1]])
    for c, cab in enumerate(p.cabling):
        crossings = class_crossings(p.tiers, c, transit)
        total += crossings * sum(plan.latency_ns * v.plan[c, g] for g, plan in enumerate(cab.plans))
    return total


def add_latency(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Worst one-way latency within its limit.  latency(x, c) <= max ns."""
    if p.requirements.max_latency_ns is not None:
        m.add(path_latency_ns(p, v) <= p.requirements.max_latency_ns)


def min_fanout_for_failure(phi: Fraction) -> int | None:
    """Smallest n with (n - 1)/n >= phi, or None when no n reaches it (phi >= 1)."""
    if phi >= 1:
        return None
    if phi <= 0:
        return 1
    return math.ceil(1 / (1 - phi))


def add_failure_tolerance(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Losing any one switch of a protected tier leaves every switch below phi of its uplinks.

    protected tier t+1 > 1: f[t] >= ceil(1 / (1 - phi)); protected leaf: (p - 1)/p >= phi.
    """
    phi = p.requirements.min_fraction_after_failure
    if phi is None:
        return
    for level in sorted(p.requirements.protected_tiers):
        if level == 1:
            if Fraction(p.planes - 1, p.planes) < phi:
                m.add_bool_or([])
        elif level <= p.tiers:
            need = min_fanout_for_failure(phi)
            if need is None:
                m.add_bool_or([])
            else:
                m.add(v.f[level - 1] >= need)


def add_leaf_placement(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Leaves stand at one placement; a top-of-rack leaf serves a divisor of a rack's endpoints.

    sum_pi y[pi] = 1;  y[top_of_rack] => d[1] in divisors(R).
    """
    m.add_exactly_one(v.placement.values())
    if TOP_OF_RACK in v.placement:
        R = p.endpoints_per_rack
        divisors = [k for k in range(1, R + 1) if R % k == 0]
        m.add_linear_expression_in_domain(
            v.d[1], cp_model.Domain.from_values(divisors)
        ).only_enforce_if(v.placement[TOP_OF_RACK])


def add_protocol(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """A plane speaks one protocol: no two tiers use switches of different protocols.

    x[t,m] + x[t',m'] <= 1 for every t < t' and protocol(m) != protocol(m'), both non-empty.
    """
    for t in range(1, p.tiers + 1):
        for t2 in range(t + 1, p.tiers + 1):
            for i, a in enumerate(p.switch_options[t - 1]):
                for j, b in enumerate(p.switch_options[t2 - 1]):
                    if a.protocol and b.protocol and a.protocol != b.protocol:
                        m.add_bool_or([v.x[t, i].Not(), v.x[t2, j].Not()])


def _engine_choice(p: SizingProblem, v: ClosVars, t: int, engine: PortKind) -> cp_model.LinearExpr:
    """1 when tier t's switch model has this engine (None: pluggable ports), else 0."""
    return _choice(v, t, [int(o.engine == engine) for o in p.switch_options[t - 1]])


def add_media_plan(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every link class takes one plan, made for the chosen placement and the ends' switches.

    sum_g z[c,g] = 1;  z[c,g] <= y[pi_g];  z[c,g] <= [engine of tier c = lower_g] (c > 0),
    z[c,g] <= [engine of tier c+1 = upper_g].
    """
    for c, cab in enumerate(p.cabling):
        m.add_exactly_one(v.plan[c, g] for g in range(len(cab.plans)))
        for g, plan in enumerate(cab.plans):
            z = v.plan[c, g]
            if plan.placement is not None:
                if plan.placement in v.placement:
                    m.add_implication(z, v.placement[plan.placement])
                else:
                    m.add(z == 0)
            if c > 0:
                m.add(z <= _engine_choice(p, v, c, plan.lower_engine))
            m.add(z <= _engine_choice(p, v, c + 1, plan.upper_engine))


def add_length_tails(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Links longer than each threshold, rounded up: N = ceil(links[c] w_j / W).

    W N >= w_j links[c];  W N <= w_j links[c] + W - 1.
    """
    for (c, key, j), longer in v.longer.items():
        tails = p.cabling[c].tails[key]
        g = math.gcd(tails.longer[j], tails.total)
        w, total = tails.longer[j] // g, tails.total // g
        m.add(total * longer >= w * v.links[c])
        m.add(total * longer <= w * v.links[c] + total - 1)


def _count_at_choice(
    m: cp_model.CpModel, count: cp_model.IntVar, chosen: cp_model.LinearExpr, name: str
) -> cp_model.IntVar:
    """Z = count * chosen for a 0/1 expression, linearised with the count's own upper bound."""
    z = _new_int(m, 0, _ub(count), name)
    m.add(z <= count)
    m.add(z <= _ub(count) * chosen)
    m.add(z >= count - _ub(count) * (1 - chosen))
    return z


def _band_count_exprs(
    v: ClosVars, c: int, key: str | None, bands: int
) -> list[cp_model.LinearExpr]:
    """Links per band of class c > 0 at a placement: N[j-1] - N[j], with N[-1] = links[c]."""
    above = [v.links[c]] + [v.longer[c, key, j] for j in range(bands)]
    return [above[j] - above[j + 1] for j in range(bands)]


def cost_and_power(
    m: cp_model.CpModel, p: SizingProblem, v: ClosVars
) -> tuple[cp_model.LinearExpr, cp_model.LinearExpr]:
    """Capex and power of one plane, in CP-SAT units, as linear expressions."""
    capex: cp_model.LinearExpr = 0  # type: ignore[assignment]
    power: cp_model.LinearExpr = 0  # type: ignore[assignment]
    for t in range(1, p.tiers + 1):
        for i, o in enumerate(p.switch_options[t - 1]):
            capex += usd_to_units(o.cost_usd) * v.n_at[t, i]
            power += w_to_units(o.power_w) * v.n_at[t, i]
    for c, cab in enumerate(p.cabling):
        for g, plan in enumerate(cab.plans):
            z = v.plan[c, g]
            unit_capex = [0 if u is None else usd_to_units(u.capex_usd) for u in plan.bands]
            unit_power = [0 if u is None else w_to_units(u.power_w) for u in plan.bands]
            if c == 0:
                # E endpoint links: the band counts are numbers, the plan's price a constant.
                counts = band_counts(cab.tails_at(g), p.endpoints)
                capex += sum(n * a for n, a in zip(counts, unit_capex, strict=True)) * z
                power += sum(n * b for n, b in zip(counts, unit_power, strict=True)) * z
                continue
            exprs = _band_count_exprs(v, c, plan.placement, len(plan.bands))
            bound = _ub(v.links[c])
            for values, name in ((unit_capex, "capex"), (unit_power, "power")):
                total = sum(e * a for e, a in zip(exprs, values, strict=True) if a)
                ub = bound * max(values, default=0)
                amount = _new_int(m, 0, ub, f"{name}[{c},{g}]")
                m.add(amount == total)
                paid = _count_at_choice(m, amount, z, f"{name}_paid[{c},{g}]")
                if name == "capex":
                    capex += paid
                else:
                    power += paid
    return capex, power


def add_budgets(
    m: cp_model.CpModel,
    p: SizingProblem,
    v: ClosVars,
    capex: cp_model.LinearExpr,
    power: cp_model.LinearExpr,
) -> None:
    """Power and capex caps over all planes.  p power <= cap_w; p capex <= cap_usd."""
    r = p.requirements
    if r.max_power_w is not None:
        m.add(p.planes * power <= w_to_units(r.max_power_w))
    if r.max_capex_usd is not None:
        m.add(p.planes * capex <= usd_to_units(r.max_capex_usd))


def add_pins(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Decisions the user fixed.  x[t, pinned] = 1, n[t] = pinned, ..."""
    pins = p.pins
    for t, name in enumerate(pins.switch_models, start=1):
        if name is not None and t <= p.tiers:
            names = [o.name for o in p.switch_options[t - 1]]
            if name in names:
                m.add(v.x[t, names.index(name)] == 1)
            else:
                m.add_bool_or([])
    for values, var in (
        (pins.switches, v.n),
        (pins.downlinks, v.d),
        (pins.uplinks, v.u),
        (pins.parallel_links, v.q),
    ):
        for t, value in enumerate(values, start=1):
            if value is None:
                continue
            if t in var:
                m.add(var[t] == value)
            else:
                m.add_bool_or([])
    if pins.pods is not None:
        m.add(v.pods == pins.pods)
    if pins.leaf_placement is not None:
        if pins.leaf_placement in v.placement:
            m.add(v.placement[pins.leaf_placement] == 1)
        else:
            m.add_bool_or([])


def add_port_capacity_cuts(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Valid inequalities that give the LP relaxation the port arithmetic (switchable).

    links[1] >= E / r_1;  links[2] >= E / (r_1 r_2);
    sum_m k_m n[t,m] >= ports used at tier t  (leaf: E + links[1]; middle: links[t-1] + links[t];
    top: links[T-1]). They follow from the constraints above and cut off none of their solutions.
    """
    T, E = p.tiers, p.endpoints
    ratios = p.requirements.max_oversubscription
    need = Fraction(E)
    for t in range(1, T):
        need /= ratios[t - 1]
        m.add(v.links[t] >= math.ceil(need))
    for t in range(1, T + 1):
        capacity = sum(o.radix * v.n_at[t, i] for i, o in enumerate(p.switch_options[t - 1]))
        below = E if t == 1 else v.links[t - 1]
        above = v.links[t] if t < T else 0
        m.add(capacity >= below + above)


#: Constraint families, in the order they are added; each can be left out by name (what-if, and
#: finding which constraints conflict in an infeasible instance).
CONSTRAINTS: dict[str, Callable[[cp_model.CpModel, SizingProblem, ClosVars], None]] = {
    "switch.model_choice": add_model_choice,
    "switch.port_budget": add_port_budget,
    "clos.coverage": add_coverage,
    "clos.even_spread": add_even_spread,
    "clos.wiring": add_wiring,
    "tier.oversubscription": add_oversubscription,
    "path.hops": add_hops,
    "ocs.even_ports": add_ocs_even_ports,
    "ocs.spine_reach": add_ocs_spine_reach,
    "path.latency": add_latency,
    "failure.single_switch": add_failure_tolerance,
    "layout.leaf_placement": add_leaf_placement,
    "plane.protocol": add_protocol,
    "media.plan": add_media_plan,
    "media.length_tails": add_length_tails,
    "pins": add_pins,
    "cuts.port_capacity": add_port_capacity_cuts,
}

#: Families a user can relax; the structural ones define what a Clos is.
RELAXABLE = (
    "tier.oversubscription",
    "path.hops",
    "path.latency",
    "failure.single_switch",
    "budget.power",
    "budget.capex",
    "pins",
)


def binds(p: SizingProblem, family: str) -> bool:
    """Whether a relaxable family adds any constraint to the problem's model.

    When it adds none (no such limit, no pin), the model without it is the same model: relaxing
    it alone can never turn an infeasible structure feasible, so a diagnosis need not re-solve.
    """
    r, pins = p.requirements, p.pins
    if family == "tier.oversubscription":
        return p.tiers > 1
    if family == "path.hops":
        return r.max_switch_hops is not None and switch_hops(p) > r.max_switch_hops
    if family == "path.latency":
        return r.max_latency_ns is not None
    if family == "failure.single_switch":
        return r.min_fraction_after_failure is not None and any(
            level <= p.tiers for level in r.protected_tiers
        )
    if family == "budget.power":
        return r.max_power_w is not None
    if family == "budget.capex":
        return r.max_capex_usd is not None
    if family == "pins":
        per_tier = (pins.switches, pins.downlinks, pins.uplinks, pins.parallel_links)
        return (
            any(name is not None for name in pins.switch_models[: p.tiers])
            or any(value is not None for values in per_tier for value in values)
            or pins.pods is not None
            or pins.leaf_placement is not None
        )
    return True


def build(problem: SizingProblem, leave_out: frozenset[str] = frozenset()) -> BuiltModel:
    """Build (not solve) the CP-SAT model of one structure."""
    m = cp_model.CpModel()
    v = add_variables(m, problem)
    for family, add in CONSTRAINTS.items():
        if family not in leave_out:
            add(m, problem, v)
    capex, power = cost_and_power(m, problem, v)
    r = problem.requirements
    budget_req = Requirements(
        max_oversubscription=r.max_oversubscription,
        max_power_w=None if "budget.power" in leave_out else r.max_power_w,
        max_capex_usd=None if "budget.capex" in leave_out else r.max_capex_usd,
    )
    add_budgets(m, _with_requirements(problem, budget_req), v, capex, power)
    set_objective(m, problem, capex, power)
    families = tuple(
        f for f in (*CONSTRAINTS, "budget.power", "budget.capex") if f not in leave_out
    )
    return BuiltModel(problem, m, v, capex, power, families)


def _with_requirements(p: SizingProblem, r: Requirements) -> SizingProblem:
    return replace(p, requirements=r)


def objective_coefficients(p: SizingProblem) -> tuple[int, int, float]:
    """Integer weights (a, b) of capex and power units, and dollars per objective unit.

    The objective is p (w_capex capex_usd + w_energy energy_usd_per_w power_w). In CP-SAT
    units (cents, milliwatts) the exact ratio b/a of the two weights is approximated by a fraction
    with denominator at most ``MAX_WEIGHT_DENOMINATOR`` (relative error below 1e-6), which keeps
    the objective's integer range far from overflow at a million GPUs.
    """
    per_capex = p.planes * p.capex_weight / usd_to_units(1)  # dollars per cent unit
    per_power = p.planes * p.energy_weight * p.energy_usd_per_w / w_to_units(1)  # dollars per mW
    if per_capex <= 0:
        return 0, 1, per_power
    ratio = Fraction(per_power / per_capex).limit_denominator(MAX_WEIGHT_DENOMINATOR)
    return ratio.denominator, ratio.numerator, per_capex / ratio.denominator


#: Largest denominator of the rational weight between capex and power in the objective.
MAX_WEIGHT_DENOMINATOR = 1000


def set_objective(
    m: cp_model.CpModel, p: SizingProblem, capex: cp_model.LinearExpr, power: cp_model.LinearExpr
) -> None:
    """Minimise p (w_capex capex + w_energy energy_usd_per_w power) as a + b integer weights."""
    a, b, _ = objective_coefficients(p)
    m.minimize(a * capex + b * power)


def objective_usd(p: SizingProblem, capex_usd: float, power_w: float) -> float:
    """The objective in dollars from the totals of all planes."""
    return p.capex_weight * capex_usd + p.energy_weight * p.energy_usd_per_w * power_w


def tie_break(p: SizingProblem, v: ClosVars) -> cp_model.LinearExpr:
    """Preference among designs of equal objective (lower is better).

    sum_{t<T} W_t q[t] with W_{T-1} = 1 and W_t = W_{t+1} (ub q[t+1] + 1): lexicographic in the
    parallel links per switch pair, leaf tier first. Fewer parallel links means each switch's
    uplinks reach more switches above: more equal-cost paths, and less of a switch's uplink
    bandwidth lost when one switch above it fails.
    """
    weights: list[int] = []
    weight = 1
    for t in range(p.tiers - 1, 0, -1):
        weights.append(weight)
        weight *= _ub(v.q[t]) + 1
    return cp_model.LinearExpr.weighted_sum([v.q[t] for t in range(p.tiers - 1, 0, -1)], weights)


@dataclass(frozen=True)
class SolveOptions:
    """How to solve: time limit and workers; a hint is optional."""

    time_limit_s: float = 30.0
    workers: int = 2
    relative_gap: float = 0.0


def solve(built: BuiltModel, options: SolveOptions = SolveOptions()) -> SizingSolution:
    """Solve a built model and read the design of one plane out of it."""
    p = built.problem
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, options.time_limit_s)
    solver.parameters.num_workers = options.workers
    solver.parameters.relative_gap_limit = options.relative_gap
    start = time.perf_counter()
    code = solver.solve(built.model)
    wall = time.perf_counter() - start
    status = status_of("cp_sat", code)
    _, _, usd_per_unit = objective_coefficients(p)
    if status is Status.INFEASIBLE:
        return SizingSolution(status, p.planes, p.tiers, None, None, None, None, wall)
    bound = solver.best_objective_bound * usd_per_unit
    if not status.has_solution:
        return SizingSolution(status, p.planes, p.tiers, None, bound, None, None, wall)
    return _read(built, solver, status, bound, wall)


def solve_canonical(
    built: BuiltModel, solution: SizingSolution, time_limit_s: float = 10.0
) -> SizingSolution:
    """The design ``tie_break`` prefers among all designs of ``solution``'s proven-optimal objective.

    Re-solves with the objective capped at its optimum (so held there: nothing is below it) and
    ``tie_break`` as objective, with one worker so the search (and the pick among any remaining
    ties) is the same on every run. A cap rather than an equality: it propagates far better (on
    small models 0.01 s against seconds). Returns
    ``solution`` unchanged when it is not proven optimal or nothing is found in the time given.
    """
    if solution.status is not Status.OPTIMAL or solution.objective_units is None:
        return solution
    p = built.problem
    a, b, _ = objective_coefficients(p)
    model = built.model.clone()
    model.clear_objective()
    model.add(a * built.capex_units + b * built.power_units <= solution.objective_units)
    model.minimize(tie_break(p, built.v))
    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = max(0.01, time_limit_s)
    solver.parameters.num_workers = 1
    start = time.perf_counter()
    code = solver.solve(model)
    wall = time.perf_counter() - start
    if not status_of("cp_sat", code).has_solution:
        return solution
    return _read(built, solver, Status.OPTIMAL, solution.bound_usd, solution.wall_s + wall)


def _read(
    built: BuiltModel,
    solver: cp_model.CpSolver,
    status: Status,
    bound: float | None,
    wall: float,
) -> SizingSolution:
    """The design of one plane in a solver's current solution."""
    p = built.problem
    v = built.v
    tiers = []
    for t in range(1, p.tiers + 1):
        opts = p.switch_options[t - 1]
        chosen = next(o for i, o in enumerate(opts) if solver.value(v.x[t, i]))
        tiers.append(
            TierSolution(
                level=t,
                switch_model=chosen.name,
                switches=solver.value(v.n[t]),
                downlinks=solver.value(v.d[t]),
                uplinks=solver.value(v.u[t]),
                fanout=solver.value(v.f[t]) if t < p.tiers else 0,
                parallel_links=solver.value(v.q[t]) if t < p.tiers else 0,
            )
        )
    capex_units, power_units = solver.value(built.capex_units), solver.value(built.power_units)
    a, b, _ = objective_coefficients(p)
    capex_usd = p.planes * units_to_usd(capex_units)
    power_w = p.planes * units_to_w(power_units)
    objective = objective_usd(p, capex_usd, power_w)
    if status is Status.OPTIMAL or bound is None:
        bound = objective
    return SizingSolution(
        status=status,
        planes=p.planes,
        tiers=p.tiers,
        objective_usd=objective,
        bound_usd=min(bound, objective),
        capex_usd=capex_usd,
        power_w=power_w,
        wall_s=wall,
        tier_solutions=tuple(tiers),
        pods=solver.value(v.pods) if p.tiers == 3 else 1,
        leaves_per_pod=solver.value(v.leaves_per_pod) if p.tiers == 3 else solver.value(v.n[1]),
        placement=next(pi for pi, y in v.placement.items() if solver.value(y)),
        plans=tuple(
            next(plan for g, plan in enumerate(cab.plans) if solver.value(v.plan[c, g]))
            for c, cab in enumerate(p.cabling)
        ),
        objective_units=a * capex_units + b * power_units,
    )

r"""Cabling plans: the medium of every link of a class, by length band, for each kind of end.

A link class (GPU to leaf, leaf to spine, spine to core) has a length distribution taken from the
floor plan. Cut it at the reach thresholds r_1 < ... < r_B of the candidate media (and of the
co-packaged engines): band j holds the links of length in (r_{j-1}, r_j]. A link in band j may use
any medium m that

* runs the class's speed (the caller passes only those),
* reaches: reach(m) >= r_j, where a co-packaged (CPO) end caps the reach at its engine's reach,
* fits both ends: a pluggable end is a module cage (``Cage``) that takes only modules (or
  cable plugs) of its form factor made for its electrical lane rate (``plugs_into``); a CPO end
  takes only optical media of its engine's lane rate and connector (``meets``); copper never
  meets a CPO port; an optical circuit switch (OCS) end takes only duplex optics (one OCS port
  per link) whose channel loss budget covers the OCS's insertion loss plus its two extra
  connectors,

and pays per link ``sum over its pluggable ends of (module cost, module power) + cable cost``; an
end that is neither CPO nor OCS is pluggable (a CPO end has its optics inside the switch, an OCS
port is a mirror; a link between two CPO switches pays the fibre only). A medium is its line side
(lanes and their rate on the fibre, connector, reach, fibre, DSP latency) with its own module and
possibly other modules (``ModuleOption``) of the same line side for other cages: each pluggable
end takes any module of the medium that plugs into its cage, so a link's two ends may carry
different modules (a gearbox module on a 200G-lane NIC, a plain one on a 100G-lane switch) as long
as both drive the medium's line side. A *use* is a medium with the module at each end; a *plan*
gives every non-empty band a use.

Latency. A link of length l on medium m takes ``latency(m) + l x v(m)`` one way: the medium's
electronics (DSP, retimers) plus propagation at v = ``FIBRE_NS_PER_M`` in fibre or
``COPPER_NS_PER_M`` in copper. A plan's latency is the worst over its bands, each band's links
being at most min(r_j, longest link of the class) long.

Why plans are exact. Given the kind of both ends (pluggable, or a CPO engine) and the leaf
placement, the links of a class are independent of each other: each pays its own use's figures
(medium and modules), and the class's latency is the worst medium it uses. So a plan that, band by band, uses media no
worse in any term the model sees (objective value; capex or power when capped; latency when
capped) is never worse than another. Keeping, per band, only the media on that Pareto front, and
per context every combination of them, leaves a set of plans that contains an optimal one for
every count of links, every switch choice and every cap. The sizing model
(``models.clos_sizing``) then picks one plan per class together with the switches, which makes the
joint choice of switch, placement and medium exact (not a two-step heuristic). Without caps the
front is a single medium per band: the cheapest in objective value.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

#: Most plans kept per context. The per-band fronts of real catalogs give a handful of plans
#: (one per context without caps); only a catalog with many media trading price against power
#: on many bands gets near this. Beyond it the plans with the best objective are kept and
#: exactness under caps is no longer guaranteed.
MAX_PLANS_PER_CONTEXT = 4096
#: Loss of the two extra connector pairs a circuit crosses at an optical circuit switch, dB.
OCS_CONNECTORS_LOSS_DB = 0.5
#: The connector a medium needs to go through an OCS: one duplex fibre pair, one OCS port.
OCS_CONNECTOR = "lc-duplex"
#: Propagation delay in optical fibre, ns per metre: group index ~1.47 of silica fibre
#: (c / 1.47 = 2.04e8 m/s), the usual figure for single-mode and multimode fibre.
FIBRE_NS_PER_M = 4.9
#: Propagation delay in twinax copper, ns per metre (NVIDIA MCP4Y10 800G passive DAC
#: specification: 4.5 ns/m).
COPPER_NS_PER_M = 4.5


@dataclass(frozen=True)
class Cage:
    """A pluggable port: a module cage of one form factor whose lanes run at one rate."""

    form_factor: str
    lane_gbps: int
    nic: bool = False
    """A NIC's cage (it also takes the modules made for NIC cages only)."""


@dataclass(frozen=True)
class CpoEngine:
    """The co-packaged optics behind every port of a CPO switch."""

    lane_gbps: int
    connector: str
    reach_m: float


@dataclass(frozen=True)
class OcsPort:
    """A port of an optical circuit switch: no module at this end, and a loss to budget for."""

    insertion_loss_db: float


#: What stands at one end of a link: a module cage, a CPO engine, an OCS port, or None for a
#: pluggable port whose cage is not modelled (any medium plugs in).
PortKind = Cage | CpoEngine | OcsPort | None


@dataclass(frozen=True)
class ModuleOption:
    """One module (or cable plug) a medium's links may carry at an end: what it fits, its price."""

    name: str
    end_cost_usd: float
    end_power_w: float
    host_lane_gbps: tuple[int, ...] = ()
    """Electrical lane rates it is made for; empty: any."""
    form_factors: tuple[str, ...] = ()
    """Cage form factors it is made in; empty: any."""
    nic_only: bool = False
    """Made for NIC cages only (a switch's cage does not take it)."""

    def plugs_into(self, cage: Cage) -> bool:
        """Whether it fits the cage: form factor, host lanes, and a NIC's cage if it needs one."""
        return (
            (not self.form_factors or cage.form_factor in self.form_factors)
            and (not self.host_lane_gbps or cage.lane_gbps in self.host_lane_gbps)
            and (cage.nic or not self.nic_only)
        )


@dataclass(frozen=True)
class MediumOption:
    """A link medium: its line side, its own module's figures per end, and its other modules."""

    name: str
    end_cost_usd: float
    end_power_w: float
    cable_cost_usd: float
    latency_ns: int
    reach_m: float = math.inf
    copper: bool = False
    lane_gbps: int | None = None
    connector: str = ""
    channel_loss_db: float | None = None
    host_lane_gbps: tuple[int, ...] = ()
    """Electrical lane rates its modules or plugs are made for; empty: any."""
    form_factors: tuple[str, ...] = ()
    """Cage form factors its modules or plugs are made in; empty: any."""
    modules: tuple[ModuleOption, ...] = ()
    """Other modules of the same line side (for other host lanes or form factors)."""

    @property
    def ns_per_m(self) -> float:
        """Propagation delay per metre of this medium."""
        return COPPER_NS_PER_M if self.copper else FIBRE_NS_PER_M

    @property
    def own_module(self) -> ModuleOption:
        """The medium's own module: its name, figures per end, host lanes and form factors."""
        return ModuleOption(
            self.name, self.end_cost_usd, self.end_power_w, self.host_lane_gbps, self.form_factors
        )

    def plugs_into(self, cage: Cage) -> bool:
        """Whether the medium's own module (or plug) fits the cage: form factor and host lanes."""
        return self.own_module.plugs_into(cage)

    def fits(self, cage: Cage) -> bool:
        """Whether any module of the medium (its own or another) fits the cage."""
        return bool(self.modules_into(cage))

    def modules_into(self, end: PortKind) -> tuple[ModuleOption, ...]:
        """The modules that may sit at this end: those of a cage's form factor and lanes.

        A port whose cage is not modelled (None) takes the medium's own module.
        """
        if end is None:
            return (self.own_module,)
        assert isinstance(end, Cage)
        return tuple(m for m in (self.own_module, *self.modules) if m.plugs_into(end))

    def passes(self, ocs: OcsPort) -> bool:
        """Whether this medium runs through an optical circuit switch: duplex, enough budget."""
        return (
            not self.copper
            and self.connector == OCS_CONNECTOR
            and self.channel_loss_db is not None
            and self.channel_loss_db >= ocs.insertion_loss_db + OCS_CONNECTORS_LOSS_DB
        )

    def meets(self, engine: CpoEngine) -> bool:
        """Whether this medium plugs into the far end of the engine's port."""
        return (
            not self.copper
            and self.lane_gbps == engine.lane_gbps
            and self.connector == engine.connector
        )


@dataclass(frozen=True)
class LengthTails:
    """How many links of a class are longer than each threshold, as weights out of ``total``.

    ``longer[j]`` is the weight of links longer than ``thresholds_m[j]``; the share of links in
    band j, (thresholds_m[j-1], thresholds_m[j]], is (longer[j-1] - longer[j]) / total with
    longer[-1] = total.
    """

    total: int
    thresholds_m: tuple[float, ...]
    longer: tuple[int, ...]
    max_length_m: float = 0.0
    """Longest link of the class (propagation latency); 0 leaves propagation out."""

    def band_max_m(self, j: int) -> float:
        """Longest a link of band j can be."""
        return min(self.thresholds_m[j], self.max_length_m)

    def band_weight(self, j: int) -> int:
        """Weight of the links in band j."""
        above = self.total if j == 0 else self.longer[j - 1]
        return above - self.longer[j]

    @property
    def beyond_m(self) -> int:
        """Weight of the links longer than every threshold (no medium reaches them)."""
        return self.longer[-1] if self.longer else self.total


@dataclass(frozen=True)
class Use:
    """A medium on the links of one band, with the module at each end (None: no module there).

    An end carries no module at a co-packaged (CPO) port or an OCS mirror.
    """

    medium: MediumOption
    lower: ModuleOption | None
    upper: ModuleOption | None

    @property
    def ends(self) -> int:
        """Pluggable ends of each link: the ends that carry a module (or a cable plug)."""
        return (self.lower is not None) + (self.upper is not None)

    @property
    def modules(self) -> tuple[ModuleOption, ...]:
        """The modules of one link, lower end first."""
        return tuple(m for m in (self.lower, self.upper) if m is not None)

    @property
    def module_names(self) -> tuple[str, str]:
        """The module at each end by name, lower first ('' where none sits)."""
        return (
            "" if self.lower is None else self.lower.name,
            "" if self.upper is None else self.upper.name,
        )

    @property
    def capex_usd(self) -> float:
        """Per link: the module at each pluggable end and the cable."""
        return sum(m.end_cost_usd for m in self.modules) + self.medium.cable_cost_usd

    @property
    def power_w(self) -> float:
        """Per link: the modules at its pluggable ends."""
        return sum(m.end_power_w for m in self.modules)


@dataclass(frozen=True)
class CablePlan:
    """A medium for every non-empty band of one link class, in one context."""

    placement: str | None
    """Leaf placement the plan assumes (classes touching a leaf), None otherwise."""
    lower_engine: PortKind
    upper_engine: PortKind
    bands: tuple[Use | None, ...]
    """Per band of the class's ``LengthTails``; None where the band holds no link."""
    band_max_m: tuple[float, ...] = ()
    """Longest link of each band (propagation); empty: propagation left out."""

    @property
    def latency_ns(self) -> int:
        """Worst one-way latency of a link: media electronics plus propagation, rounded up."""
        return max(
            (
                u.medium.latency_ns + math.ceil(self._length(j) * u.medium.ns_per_m - 1e-9)
                for j, u in enumerate(self.bands)
                if u is not None
            ),
            default=0,
        )

    def _length(self, j: int) -> float:
        return self.band_max_m[j] if self.band_max_m else 0.0


@dataclass(frozen=True)
class Criteria:
    """What the choice between media must respect besides the objective."""

    energy_usd_per_w: float
    capex_weight: float = 1.0
    energy_weight: float = 1.0
    capex_capped: bool = False
    power_capped: bool = False
    latency_capped: bool = False

    def value_usd(self, use: Use) -> float:
        """Objective value of one link."""
        return (
            self.capex_weight * use.capex_usd
            + self.energy_weight * self.energy_usd_per_w * use.power_w
        )

    def key(self, use: Use, length_m: float = 0.0) -> tuple[float, ...]:
        """The terms a medium is compared on (smaller is better in each), on a link of ``length_m``."""
        terms = [self.value_usd(use)]
        if self.capex_capped:
            terms.append(use.capex_usd)
        if self.power_capped:
            terms.append(use.power_w)
        if self.latency_capped:
            terms.append(use.medium.latency_ns + length_m * use.medium.ns_per_m)
        return tuple(terms)


def _line_serves(medium: MediumOption, lower: PortKind, upper: PortKind, length_m: float) -> bool:
    """Whether the medium's line side serves these ends and this length (modules aside)."""
    reach = medium.reach_m
    for engine in (lower, upper):
        if isinstance(engine, OcsPort):
            if not medium.passes(engine):
                return False
        elif isinstance(engine, CpoEngine):
            if not medium.meets(engine):
                return False
            reach = min(reach, engine.reach_m)
    return reach >= length_m


def uses_of(medium: MediumOption, lower: PortKind, upper: PortKind, length_m: float) -> list[Use]:
    """Every way the medium serves a link of this length between these ends ([] if none).

    One use per pair of modules, each fitting its pluggable end; the two modules share the
    medium's line side, so any pair of them makes a working link.
    """
    if not _line_serves(medium, lower, upper, length_m):
        return []
    choices = [medium.modules_into(end) if pluggable(end) else (None,) for end in (lower, upper)]
    return [Use(medium, lo, hi) for lo, hi in itertools.product(*choices)]


def usable(medium: MediumOption, lower: PortKind, upper: PortKind, length_m: float) -> Use | None:
    """The medium with its own module at both ends on a link of this length, or None.

    Callers that price every module choice use ``uses_of`` instead.
    """
    if not _line_serves(medium, lower, upper, length_m):
        return None
    own = medium.own_module
    ends = [end for end in (lower, upper) if pluggable(end)]
    if any(isinstance(end, Cage) and not own.plugs_into(end) for end in ends):
        return None
    return Use(medium, own if pluggable(lower) else None, own if pluggable(upper) else None)


def pluggable(end: PortKind) -> int:
    """1 when a module or plug sits at this end (a cage), 0 for a CPO engine or an OCS port."""
    return int(end is None or isinstance(end, Cage))


def pareto_front(uses: Sequence[Use], criteria: Criteria, length_m: float = 0.0) -> list[Use]:
    """Uses no other use beats in every term on links up to ``length_m`` (ties: first by name)."""
    ordered = sorted(uses, key=lambda u: (criteria.key(u, length_m), u.medium.name, u.module_names))
    front: list[Use] = []
    for u in ordered:
        k = criteria.key(u, length_m)
        if not any(
            all(a <= b for a, b in zip(criteria.key(f, length_m), k, strict=True)) for f in front
        ):
            front.append(u)
    return front


def plans_for(
    tails: LengthTails,
    media: Sequence[MediumOption],
    lower: PortKind,
    upper: PortKind,
    placement: str | None,
    criteria: Criteria,
) -> list[CablePlan]:
    """Every plan on the Pareto front of each band, for one context; [] when a band has no medium."""
    if tails.beyond_m > 0:
        return []
    fronts: list[list[Use | None]] = []
    for j, edge in enumerate(tails.thresholds_m):
        if tails.band_weight(j) == 0:
            fronts.append([None])
            continue
        uses = [u for m in media for u in uses_of(m, lower, upper, edge)]
        if not uses:
            return []
        fronts.append(list(pareto_front(uses, criteria, tails.band_max_m(j))))
    lengths = tuple(tails.band_max_m(j) for j in range(len(tails.thresholds_m)))
    plans = [
        CablePlan(placement, lower, upper, tuple(choice), lengths)
        for choice in itertools.product(*fronts)
    ]
    if criteria.latency_capped and len(plans) > 1:
        plans = _undominated(plans, criteria)
    if len(plans) > MAX_PLANS_PER_CONTEXT:
        plans.sort(key=lambda p: _plan_value(p, tails, criteria))
        plans = plans[:MAX_PLANS_PER_CONTEXT]
    return plans


def _undominated(plans: list[CablePlan], criteria: Criteria) -> list[CablePlan]:
    """Drop every plan another beats band by band, with a latency (the plan's worst) no higher.

    A plan's latency is the worst of its bands, so a low-latency medium on one band buys nothing
    when another band is slower anyway; such plans are dominated whatever the link counts.
    """
    no_latency = replace(criteria, latency_capped=False)

    def beats(p: CablePlan, q: CablePlan) -> bool:
        if p.latency_ns > q.latency_ns:
            return False
        for a, b in zip(p.bands, q.bands, strict=True):
            if a is None or b is None:
                continue
            if any(x > y for x, y in zip(no_latency.key(a), no_latency.key(b), strict=True)):
                return False
        return True

    kept: list[CablePlan] = []
    for q in sorted(plans, key=lambda p: p.latency_ns):
        if not any(beats(p, q) for p in kept):
            kept = [p for p in kept if not beats(q, p)] + [q]
    return kept


def _plan_value(plan: CablePlan, tails: LengthTails, criteria: Criteria) -> float:
    return sum(
        tails.band_weight(j) * criteria.value_usd(u)
        for j, u in enumerate(plan.bands)
        if u is not None
    )


def band_counts(tails: LengthTails, links: int) -> tuple[int, ...]:
    """Links per band for ``links`` links: N_j = ceil(links x longer_j / total), count_j = N_{j-1} - N_j.

    Rounding up the number longer than each threshold never shortens a link: the last, partial
    share always goes to the longer band.
    """
    above = [links] + [_ceil_share(links, w, tails.total) for w in tails.longer]
    return tuple(above[j] - above[j + 1] for j in range(len(tails.longer)))


def _ceil_share(links: int, weight: int, total: int) -> int:
    return -((-links * weight) // total)

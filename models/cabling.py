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

and pays per link ``ends x (end cost, end power) + cable cost``, where ``ends`` counts the ends
that are neither CPO nor OCS (a CPO end has its optics inside the switch, an OCS port is a mirror;
a link between two CPO switches pays the fibre only). A *plan* gives every non-empty band a medium.

Latency. A link of length l on medium m takes ``latency(m) + l x v(m)`` one way: the medium's
electronics (DSP, retimers) plus propagation at v = ``FIBRE_NS_PER_M`` in fibre or
``COPPER_NS_PER_M`` in copper. A plan's latency is the worst over its bands, each band's links
being at most min(r_j, longest link of the class) long.

Why plans are exact. Given the kind of both ends (pluggable, or a CPO engine) and the leaf
placement, the links of a class are independent of each other: each pays its own medium's figures,
and the class's latency is the worst medium it uses. So a plan that, band by band, uses media no
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
class MediumOption:
    """A link medium: figures per pluggable end and per link, reach, and what it plugs into."""

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

    @property
    def ns_per_m(self) -> float:
        """Propagation delay per metre of this medium."""
        return COPPER_NS_PER_M if self.copper else FIBRE_NS_PER_M

    def plugs_into(self, cage: Cage) -> bool:
        """Whether a module or plug of this medium fits the cage: form factor and host lanes."""
        return (not self.form_factors or cage.form_factor in self.form_factors) and (
            not self.host_lane_gbps or cage.lane_gbps in self.host_lane_gbps
        )

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
    """A medium on the links of one band, with the number of pluggable ends each link has."""

    medium: MediumOption
    ends: int

    @property
    def capex_usd(self) -> float:
        """Per link: the pluggable ends and the cable."""
        return self.ends * self.medium.end_cost_usd + self.medium.cable_cost_usd

    @property
    def power_w(self) -> float:
        """Per link: the pluggable ends."""
        return self.ends * self.medium.end_power_w


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


def usable(medium: MediumOption, lower: PortKind, upper: PortKind, length_m: float) -> Use | None:
    """The medium on a link of this length between these ends, or None when it cannot serve."""
    reach = medium.reach_m
    for engine in (lower, upper):
        if isinstance(engine, OcsPort):
            if not medium.passes(engine):
                return None
        elif isinstance(engine, Cage):
            if not medium.plugs_into(engine):
                return None
        elif engine is not None:
            if not medium.meets(engine):
                return None
            reach = min(reach, engine.reach_m)
    if reach < length_m:
        return None
    return Use(medium, pluggable(lower) + pluggable(upper))


def pluggable(end: PortKind) -> int:
    """1 when a module or plug sits at this end (a cage), 0 for a CPO engine or an OCS port."""
    return int(end is None or isinstance(end, Cage))


def pareto_front(uses: Sequence[Use], criteria: Criteria, length_m: float = 0.0) -> list[Use]:
    """Uses no other use beats in every term on links up to ``length_m`` (ties: first by name)."""
    ordered = sorted(uses, key=lambda u: (criteria.key(u, length_m), u.medium.name))
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
        uses = [u for m in media if (u := usable(m, lower, upper, edge)) is not None]
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

"""Brute-force enumeration of the Clos design space, written apart from the CP-SAT model.

It walks every wiring (leaf downlinks, fanouts, parallel links, pod size), every switch model per
tier, every leaf placement and every medium on every length band of every link class, checks each
rule directly and prices each design in floating point. It reads the problem's length tails (data
from the floor plan) but not its cabling plans. It is slow and obvious on purpose: it is the oracle
the solver is compared against.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from models.cabling import Cage, CpoEngine, LengthTails, MediumOption, PortKind
from models.clos_sizing import TOP_OF_RACK, SizingProblem, SwitchOption

#: A link class's price and worst latency under one assignment of media: (capex, power, ns).
Outcome = tuple[float, float, int]


@dataclass(frozen=True)
class Wiring:
    """Per-plane counts of one design: switches, down and up ports per tier."""

    n: tuple[int, ...]
    d: tuple[int, ...]
    u: tuple[int, ...]
    fanout: tuple[int, ...]


def _pairs(limit: int) -> Iterator[tuple[int, int, int]]:
    """(fanout, parallel, uplinks) with fanout x parallel = uplinks <= limit."""
    for up in range(1, limit + 1):
        for q in range(1, up + 1):
            if up % q == 0:
                yield up // q, q, up


def wirings(
    E: int, T: int, kmax: tuple[int, ...], ratios: tuple[Fraction, ...], need: int
) -> Iterator[Wiring]:
    """Every regular wiring of T tiers whose ports fit the given radices (per tier, leaf first)."""
    if T == 1:
        if E <= kmax[0]:
            yield Wiring((1,), (E,), (0,), ())
        return
    for d1 in range(1, kmax[0] + 1):
        n1 = math.ceil(E / d1)
        for f1, q1, u1 in _pairs(kmax[0] - d1):
            if d1 > ratios[0] * u1 or f1 < need:
                continue
            if T == 2:
                d2 = n1 * q1
                if d2 <= kmax[1]:
                    yield Wiring((n1, f1), (d1, d2), (u1, 0), (f1,))
                continue
            for L in range(1, kmax[1] // q1 + 1):
                d2 = L * q1
                P = math.ceil(n1 / L)
                for f2, q2, u2 in _pairs(kmax[1] - d2):
                    if d2 > ratios[1] * u2 or f2 < need:
                        continue
                    d3 = P * q2
                    if d3 <= kmax[2]:
                        yield Wiring((n1, P * f1, f1 * f2), (d1, d2, d3), (u1, u2, 0), (f1, f2))


def brute_force(p: SizingProblem, media: Sequence[MediumOption]) -> float | None:
    """Least objective over the whole design space of one structure, or None if none is feasible."""
    best = canonical(p, media)
    return None if best is None else best[0]


def canonical(
    p: SizingProblem, media: Sequence[MediumOption]
) -> tuple[float, tuple[int, ...]] | None:
    """Least objective, and the least parallel links per tier (leaf first) among its designs."""
    best: tuple[float, tuple[int, ...]] | None = None
    for value, w in _priced(p, media):
        q = tuple(u // f for u, f in zip(w.u, w.fanout, strict=False))
        if best is None or value < best[0] - TIE_RTOL * abs(best[0]):
            best = (value, q)
        elif value <= best[0] + TIE_RTOL * abs(best[0]) and q < best[1]:
            best = (best[0], q)
    return best


#: Relative difference under which two designs' objectives count as a tie.
TIE_RTOL = 1e-6


def _priced(p: SizingProblem, media: Sequence[MediumOption]) -> Iterator[tuple[float, Wiring]]:
    """Every feasible design of one structure, priced, with its wiring."""
    r = p.requirements
    T, E = p.tiers, p.endpoints
    if r.max_switch_hops is not None and 2 * T - 1 > r.max_switch_hops:
        return
    phi = r.min_fraction_after_failure
    need = 1
    if phi is not None:
        if 1 in r.protected_tiers and Fraction(p.planes - 1, p.planes) < phi:
            return
        if any(level <= T and level > 1 for level in r.protected_tiers):
            if phi >= 1:
                return
            need = max(1, math.ceil(1 / (1 - phi)))
    protected_upper = (
        any(1 < level <= T for level in r.protected_tiers) if phi is not None else False
    )
    for models in itertools.product(*p.switch_options):
        if len({m.protocol for m in models if m.protocol}) > 1:
            continue  # a plane speaks one protocol
        kmax = tuple(m.radix for m in models)
        for w in wirings(E, T, kmax, r.max_oversubscription, need if protected_upper else 1):
            if protected_upper:
                ok = all(
                    w.fanout[level - 2] >= need for level in r.protected_tiers if 1 < level <= T
                )
                if not ok:
                    continue
            for placement in p.placements:
                value = _price(p, media, models, w, placement)
                if value is not None:
                    yield value, w


def _port(end: SwitchOption | None, nic: PortKind) -> PortKind:
    return nic if end is None else end.engine


def _reaches(m: MediumOption, lower: PortKind, upper: PortKind, edge: float) -> bool:
    """Whether a medium can cable a link of length ``edge`` between these ends."""
    if m.reach_m < edge:
        return False
    for e in (lower, upper):
        if e is None:
            continue
        if isinstance(e, Cage):
            # A module fits a cage of its form factor whose lanes run a host rate it is made for.
            if m.form_factors and e.form_factor not in m.form_factors:
                return False
            if m.host_lane_gbps and e.lane_gbps not in m.host_lane_gbps:
                return False
            continue
        assert isinstance(e, CpoEngine)
        if m.copper or (m.lane_gbps, m.connector) != (e.lane_gbps, e.connector):
            return False
        if e.reach_m < edge:
            return False
    return True


#: Propagation per metre as the public figures give it: fibre ~4.9 ns/m, twinax copper 4.5 ns/m.
FIBRE_NS_PER_M, COPPER_NS_PER_M = 4.9, 4.5


def class_outcomes(
    tails: LengthTails,
    links: int,
    media: Sequence[MediumOption],
    lower: PortKind,
    upper: PortKind,
) -> list[Outcome]:
    """(capex, power, latency) of every assignment of media to the bands that hold links."""
    ends = sum(1 for e in (lower, upper) if e is None or isinstance(e, Cage))
    longer = [links] + [-((-links * w) // tails.total) for w in tails.longer]
    if tails.longer and tails.longer[-1] > 0:
        return []
    bands = []
    for j, edge in enumerate(tails.thresholds_m):
        weight = (tails.total if j == 0 else tails.longer[j - 1]) - tails.longer[j]
        if weight == 0:
            continue
        fits = [m for m in media if _reaches(m, lower, upper, edge)]
        if not fits:
            return []
        # The band's longest link: its upper edge, or the class's longest link if shorter.
        length = min(edge, tails.max_length_m)
        bands.append([(m, longer[j] - longer[j + 1], length) for m in fits])
    out = set()
    for choice in itertools.product(*bands):
        capex = sum(n * (ends * m.end_cost_usd + m.cable_cost_usd) for m, n, _ in choice)
        power = sum(n * ends * m.end_power_w for m, n, _ in choice)
        latency = max(
            (
                m.latency_ns
                + math.ceil(length * (COPPER_NS_PER_M if m.copper else FIBRE_NS_PER_M) - 1e-6)
                for m, _, length in choice
            ),
            default=0,
        )
        out.add((capex, power, latency))
    # Keep the outcomes no other one beats in all three terms (the rest can never be better).
    return [
        o
        for o in out
        if not any(x != o and all(a <= b for a, b in zip(x, o, strict=True)) for x in out)
    ]


#: Designs share link classes (same ends, length tails and link count): enumerate each once.
_class_outcomes = functools.lru_cache(maxsize=65536)(class_outcomes)


def _price(
    p: SizingProblem,
    media: Sequence[MediumOption],
    models: tuple[SwitchOption, ...],
    w: Wiring,
    placement: str,
) -> float | None:
    r = p.requirements
    T, E = p.tiers, p.endpoints
    if placement == TOP_OF_RACK and p.endpoints_per_rack % w.d[0] != 0:
        return None
    capex = sum(n * m.cost_usd for n, m in zip(w.n, models, strict=True))
    power = sum(n * m.power_w for n, m in zip(w.n, models, strict=True))
    latency = sum((1 if t == T - 1 else 2) * m.latency_ns for t, m in enumerate(models))
    per_class = []
    for c in range(T):
        tails = p.cabling[c].tails[placement if c < 2 else None]
        links = E if c == 0 else w.n[c - 1] * w.u[c - 1]
        lower = _port(None if c == 0 else models[c - 1], p.nic)
        outcomes = _class_outcomes(tails, links, tuple(media), lower, models[c].engine)
        if not outcomes:
            return None
        per_class.append(outcomes)
    best: float | None = None
    for combo in itertools.product(*per_class):
        total_capex = capex + sum(o[0] for o in combo)
        total_power = power + sum(o[1] for o in combo)
        total_latency = latency + sum(2 * o[2] for o in combo)
        if r.max_latency_ns is not None and total_latency > r.max_latency_ns:
            continue
        if r.max_power_w is not None and p.planes * total_power > r.max_power_w + 1e-6:
            continue
        if r.max_capex_usd is not None and p.planes * total_capex > r.max_capex_usd + 1e-6:
            continue
        value = p.planes * (
            p.capex_weight * total_capex + p.energy_weight * p.energy_usd_per_w * total_power
        )
        if best is None or value < best:
            best = value
    return best

"""Brute-force enumeration of the Clos design space, written apart from the CP-SAT model.

It walks every wiring (leaf downlinks, fanouts, parallel links, pod size), every switch model per
tier and both endpoint media, checks each rule directly and prices each design in floating point.
It is slow and obvious on purpose: it is the oracle the solver is compared against.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from models.clos_sizing import SizingProblem, SwitchOption


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


def brute_force(p: SizingProblem) -> float | None:
    """Least objective over the whole design space of one structure, or None if none is feasible."""
    r = p.requirements
    T, E = p.tiers, p.endpoints
    if r.max_switch_hops is not None and 2 * T - 1 > r.max_switch_hops:
        return None
    phi = r.min_fraction_after_failure
    need = 1
    if phi is not None:
        if 1 in r.protected_tiers and Fraction(p.planes - 1, p.planes) < phi:
            return None
        if any(level <= T and level > 1 for level in r.protected_tiers):
            if phi >= 1:
                return None
            need = max(1, math.ceil(1 / (1 - phi)))
    protected_upper = (
        any(1 < level <= T for level in r.protected_tiers) if phi is not None else False
    )
    best: float | None = None
    for models in itertools.product(*p.switch_options):
        kmax = tuple(m.radix for m in models)
        for w in wirings(E, T, kmax, r.max_oversubscription, need if protected_upper else 1):
            if protected_upper:
                ok = all(
                    w.fanout[level - 2] >= need for level in r.protected_tiers if 1 < level <= T
                )
                if not ok:
                    continue
            for copper in (False, True):
                value = _price(p, models, w, copper)
                if value is not None and (best is None or value < best - 1e-9):
                    best = value
    return best


def _price(
    p: SizingProblem, models: tuple[SwitchOption, ...], w: Wiring, copper: bool
) -> float | None:
    r = p.requirements
    T, E = p.tiers, p.endpoints
    R = p.endpoints_per_rack
    if copper and (p.copper is None or R % w.d[0] != 0 or models[0].cpo):
        return None
    capex = sum(n * m.cost_usd for n, m in zip(w.n, models, strict=True))
    power = sum(n * m.power_w for n, m in zip(w.n, models, strict=True))
    latency = sum((1 if t == T - 1 else 2) * m.latency_ns for t, m in enumerate(models))
    if copper:
        assert p.copper is not None
        capex += E * (2 * p.copper.end_cost_usd + p.copper.cable_cost_usd)
        power += E * 2 * p.copper.end_power_w
        latency += 2 * p.copper.latency_ns
    else:
        o = p.optical[0]
        ends = 1 + (0 if models[0].cpo else 1)
        capex += E * (ends * o.end_cost_usd + o.cable_cost_usd)
        power += E * ends * o.end_power_w
        latency += 2 * o.latency_ns
    for t in range(1, T):
        o = p.optical[t]
        links = w.n[t - 1] * w.u[t - 1]
        ends = 2 - int(models[t - 1].cpo) - int(models[t].cpo)
        capex += links * (ends * o.end_cost_usd + o.cable_cost_usd)
        power += links * ends * o.end_power_w
        latency += 2 * o.latency_ns
    if r.max_latency_ns is not None and latency > r.max_latency_ns:
        return None
    if r.max_power_w is not None and p.planes * power > r.max_power_w + 1e-6:
        return None
    if r.max_capex_usd is not None and p.planes * capex > r.max_capex_usd + 1e-6:
        return None
    return p.planes * (p.capex_weight * capex + p.energy_weight * p.energy_usd_per_w * power)

"""Brute-force enumeration of the rail design space, written apart from the CP-SAT rail model.

Every SU size U, every switch model per tier, every regular wiring of whole SUs (n rail leaves per
SU; with three tiers, pods of whole SUs), every leaf placement the rail rules allow and every
medium on every length band of every link class, priced in floating point. It reads the class 0
length tails of each (U, placement) from the problem's ``SuCabling`` (data from the floor plan)
and the other classes' tails from the Clos problem, never the cabling plans.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from fractions import Fraction

from models.cabling import LengthTails, MediumOption
from models.clos_sizing import TOP_OF_RACK, SwitchOption
from models.rail_sizing import RailProblem, SuCabling
from tests.models.brute_force import Wiring, _class_outcomes, _pairs, _port


def rail_wirings(
    r: RailProblem, u: int, kmax: tuple[int, ...], ratios: tuple[Fraction, ...], need: int
) -> Iterator[Wiring]:
    """Every regular wiring with SUs of ``u`` nodes: n1 = n ceil(N / u), d1 = u."""
    T = r.clos.tiers
    n1 = r.rails * math.ceil(r.nodes / u)
    d1 = u
    if T == 1:
        if n1 == 1 and d1 <= kmax[0]:
            yield Wiring((1,), (d1,), (0,), ())
        return
    for f1, q1, u1 in _pairs(kmax[0] - d1):
        if d1 > ratios[0] * u1 or f1 < need:
            continue
        if T == 2:
            d2 = n1 * q1
            if d2 <= kmax[1]:
                yield Wiring((n1, f1), (d1, d2), (u1, 0), (f1,))
            continue
        for L in range(r.rails, kmax[1] // q1 + 1, r.rails):
            d2 = L * q1
            P = math.ceil(n1 / L)
            for f2, q2, u2 in _pairs(kmax[1] - d2):
                if d2 > ratios[1] * u2 or f2 < need:
                    continue
                d3 = P * q2
                if d3 <= kmax[2]:
                    yield Wiring((n1, P * f1, f1 * f2), (d1, d2, d3), (u1, u2, 0), (f1, f2))


def class0_tails(cab: SuCabling) -> dict[tuple[int, str], LengthTails]:
    """The class 0 tails of each (U, placement), read off the problem's data."""
    out: dict[tuple[int, str], LengthTails] = {}
    for u, plan, tails in zip(cab.su_nodes, cab.plans, cab.plan_tails, strict=True):
        assert plan.placement is not None
        out[(u, plan.placement)] = tails
    return out


def rail_brute_force(r: RailProblem, media: Sequence[MediumOption]) -> float | None:
    """Least objective (all copies) over the rail design space, or None if nothing is feasible."""
    p = r.clos
    req = p.requirements
    T = p.tiers
    if req.max_switch_hops is not None and 2 * T - 1 > req.max_switch_hops:
        return None
    phi = req.min_fraction_after_failure
    need = 1
    if phi is not None:
        if 1 in req.protected_tiers and Fraction(p.planes - 1, p.planes) < phi:
            return None
        if any(1 < level <= T for level in req.protected_tiers):
            if phi >= 1:
                return None
            need = max(1, math.ceil(1 / (1 - phi)))
    cab0 = p.cabling[0]
    assert isinstance(cab0, SuCabling)
    tails0 = class0_tails(cab0)
    best: float | None = None
    for models in itertools.product(*p.switch_options):
        if len({m.protocol for m in models if m.protocol}) > 1:
            continue
        kmax = tuple(m.radix for m in models)
        for u in range(1, min(r.nodes, kmax[0]) + 1):
            for w in rail_wirings(r, u, kmax, req.max_oversubscription, need):
                for placement in p.placements:
                    if placement == TOP_OF_RACK and u > r.nodes_per_rack:
                        continue
                    if (u, placement) not in tails0:
                        continue
                    value = _price(r, media, models, w, placement, tails0[(u, placement)])
                    if value is not None and (best is None or value < best):
                        best = value
    return None if best is None else best * r.copies


def _price(
    r: RailProblem,
    media: Sequence[MediumOption],
    models: tuple[SwitchOption, ...],
    w: Wiring,
    placement: str,
    tails0: LengthTails,
) -> float | None:
    p = r.clos
    req = p.requirements
    T, E = p.tiers, p.endpoints
    capex = sum(n * m.cost_usd for n, m in zip(w.n, models, strict=True))
    power = sum(n * m.power_w for n, m in zip(w.n, models, strict=True))
    latency = sum((1 if t == T - 1 else 2) * m.latency_ns for t, m in enumerate(models))
    per_class = []
    for c in range(T):
        tails = tails0 if c == 0 else p.cabling[c].tails[placement if c < 2 else None]
        links = E if c == 0 else w.n[c - 1] * w.u[c - 1]
        lower = _port(None if c == 0 else models[c - 1], p.nic)
        outcomes = _class_outcomes(tails, links, tuple(media), lower, models[c].engine)
        if not outcomes:
            return None
        per_class.append(outcomes)
    factor = p.planes * r.copies
    best: float | None = None
    for combo in itertools.product(*per_class):
        total_capex = capex + sum(o[0] for o in combo)
        total_power = power + sum(o[1] for o in combo)
        total_latency = latency + sum(2 * o[2] for o in combo)
        if req.max_latency_ns is not None and total_latency > req.max_latency_ns:
            continue
        if req.max_power_w is not None and factor * total_power > req.max_power_w + 1e-6:
            continue
        if req.max_capex_usd is not None and factor * total_capex > req.max_capex_usd + 1e-6:
            continue
        value = p.planes * (
            p.capex_weight * total_capex + p.energy_weight * p.energy_usd_per_w * total_power
        )
        if best is None or value < best:
            best = value
    return best

"""Reference max-min solvers the fast ones in ``planner.sim.flow`` are checked against.

* ``dense_max_min_rates``: progressive filling on the dense links x flows matrix, every flow
  rising from 0 together, written for clarity.
* ``reference_max_min_rates`` and ``reference_completion_times``: the solver as it was before
  issue 11's second pass (commit 0f743e5): every round recomputes every link's fair share, and
  every completion event re-shares from scratch. Kept verbatim apart from names.
"""

from __future__ import annotations

import numpy as np

from planner.sim.fabric import BoolArray, FloatArray
from planner.sim.flow import (
    BITS_PER_BYTE,
    GBPS,
    LEVEL_ATOL_GBPS,
    LEVEL_RTOL,
    MAX_EVENTS,
    WEIGHT_EPS,
    Completion,
)
from planner.sim.routes import Routes
from tests.sim.test_routing import dense


def dense_max_min_rates(
    routes: Routes, capacity_gbps: FloatArray, active: BoolArray | None = None
) -> FloatArray:
    """Max-min fair rates by progressive filling over the dense fraction matrix."""
    frac = dense(routes)
    act = routes.connected.copy() if active is None else active & routes.connected
    rate = np.zeros(routes.flows)
    load = np.zeros(routes.links)
    level = 0.0
    while act.any():
        weight = frac[:, act].sum(axis=1)
        carrying = weight > WEIGHT_EPS
        if not carrying.any():
            break
        share = np.maximum(capacity_gbps[carrying] - load[carrying], 0.0) / weight[carrying]
        step = float(share.min())
        level += step
        load[carrying] += step * weight[carrying]
        saturated = np.flatnonzero(carrying)[share <= step * (1 + LEVEL_RTOL) + LEVEL_ATOL_GBPS]
        frozen = act & (frac[saturated] > 0).any(axis=0)
        rate[frozen] = level
        act &= ~frozen
    return rate


def _group_min(values: FloatArray, groups: np.ndarray, n: int) -> FloatArray:
    out = np.full(n, np.inf)
    np.minimum.at(out, groups, values)
    return out


def reference_max_min_rates(
    routes: Routes, capacity_gbps: FloatArray, active: BoolArray | None = None
) -> FloatArray:
    """The solver of commit 0f743e5: every round over every link of every component."""
    active = routes.connected.copy() if active is None else active & routes.connected
    comp_link, comp_flow, n_comp = routes.components
    rate = np.zeros(routes.flows)
    weight = routes.weight(active)
    load = np.zeros(routes.links)
    level = np.zeros(n_comp)
    while active.any():
        carrying = np.flatnonzero(weight > WEIGHT_EPS)
        if carrying.size == 0:
            break
        share = np.maximum(capacity_gbps[carrying] - load[carrying], 0.0) / weight[carrying]
        comp = comp_link[carrying]
        step = _group_min(share, comp, n_comp)
        moving = np.isfinite(step)
        level[moving] += step[moving]
        load[carrying] += step[comp] * weight[carrying]
        saturated = carrying[share <= step[comp] * (1 + LEVEL_RTOL) + LEVEL_ATOL_GBPS]
        frozen = routes.flows_on_links(saturated)
        frozen = frozen[active[frozen]]
        if frozen.size == 0:
            frozen = np.flatnonzero(active)
        rate[frozen] = level[comp_flow[frozen]]
        active[frozen] = False
        weight -= routes.weight_of(frozen)
        weight[weight < WEIGHT_EPS] = 0.0
    return rate


def reference_completion_times(
    routes: Routes,
    capacity_gbps: FloatArray,
    size_bytes: FloatArray,
    *,
    max_events: int = MAX_EVENTS,
) -> Completion:
    """The completion times of commit 0f743e5: re-sharing from scratch at every event."""
    from planner.sim.flow import EVENT_RTOL

    remaining_all = np.asarray(size_bytes, dtype=np.float64) * BITS_PER_BYTE / GBPS
    finish = np.where(routes.connected, 0.0, np.inf)
    initial = np.zeros(routes.flows)
    ids = np.flatnonzero(routes.connected & (remaining_all > 0))
    work = routes.subset(ids)
    remaining = remaining_all[ids]
    active = np.ones(ids.size, dtype=bool)
    comp_flow = work.components[1]
    clock = np.zeros(work.components[2])
    events = 0
    exact = True
    last_rate = np.zeros(ids.size)
    while active.any():
        if events >= max(1, max_events):
            idx = np.flatnonzero(active)
            finish[ids[idx]] = clock[comp_flow[idx]] + remaining[idx] / last_rate[idx]
            exact = False
            break
        if active.sum() * 2 < active.size:
            keep = np.flatnonzero(active)
            old_comp = comp_flow[keep]
            work, ids, remaining = work.subset(keep), ids[keep], remaining[keep]
            active = np.ones(ids.size, dtype=bool)
            comp_flow = work.components[1]
            new_clock = np.zeros(work.components[2])
            new_clock[comp_flow] = clock[old_comp]
            clock = new_clock
        rate = reference_max_min_rates(work, capacity_gbps, active)
        last_rate = rate
        if events == 0:
            initial[ids] = rate
        stuck = active & (rate <= 0)
        if stuck.any():
            finish[ids[stuck]] = np.inf
            active &= ~stuck
            if not active.any():
                break
        idx = np.flatnonzero(active)
        left = remaining[idx] / rate[idx]
        comp = comp_flow[idx]
        step = _group_min(left, comp, clock.size)
        now = clock[comp]
        done = now + left <= (now + step[comp]) * (1 + EVENT_RTOL)
        finish[ids[idx[done]]] = now[done] + left[done]
        remaining[idx] -= rate[idx] * step[comp]
        remaining[idx[done]] = 0.0
        active[idx[done]] = False
        moving = np.isfinite(step)
        clock[moving] += step[moving]
        events += 1
    return Completion(finish, initial, events, exact)

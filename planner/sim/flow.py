"""Max-min fair rates by progressive filling, and flow completion times by re-sharing.

Progressive filling: every unfrozen flow's rate rises at the same pace; a link saturates when the
sum over flows of (fraction on the link x rate) reaches its capacity; every flow with a positive
fraction on a saturated link freezes at its current rate. Links that saturate at the same level
(within ``LEVEL_RTOL``) are taken together.

Completion times: start every flow with its bytes, give them max-min rates, advance the clock to
the next completion (flows finishing within ``EVENT_RTOL`` of it finish together), take the
finished flows out, re-share, and repeat. A phase ends with its slowest flow.

Scale. Flows in different connected components of the link-flow graph never meet, so each
component fills and advances on its own level and its own clock, all of them in the same
vectorised rounds: the number of rounds is the largest number of distinct levels (or events) of
any one component, not their sum. A round touches only the links' vectors and the entries of
the flows that freeze; when half the working flows have finished, the routes shrink to the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from planner.sim.fabric import BoolArray, FloatArray, IntArray
from planner.sim.routing import Routes

#: Links whose fair-share increment is within this relative tolerance of their component's
#: smallest saturate together.
LEVEL_RTOL = 1e-9
#: Absolute slack (Gb/s) in the same test, for shares that are zero.
LEVEL_ATOL_GBPS = 1e-12
#: Flows whose completion is within this relative tolerance of their component's next event
#: finish with it: the accuracy of every completion time.
EVENT_RTOL = 1e-4
#: Safety net only: re-sharing rounds after which the flows still running keep their last rates
#: to the end (reported as not exact; not a bound: under max-min a flow's rate can also fall
#: when others finish, so a cut-short time can be early as well as late). Re-sharing is
#: meant to run to the last completion. The earlier cap of 16 rounds was set for fear of
#: thousands of distinct ECMP rates; measured (issue 11), a random permutation under ECMP needs
#: 56 rounds on 32,768 GPUs and 60 on 131,072 (completion events within ``EVENT_RTOL`` merge, and
#: ECMP rates are capacity / small integers), so the cap cut those runs short for no reason.
MAX_EVENTS = 100_000
#: Fractions smaller than this are treated as zero when testing whether a link carries active flows.
WEIGHT_EPS = 1e-12
BITS_PER_BYTE = 8.0
GBPS = 1e9


def _group_min(values: FloatArray, groups: IntArray, n: int) -> FloatArray:
    out = np.full(n, np.inf)
    np.minimum.at(out, groups, values)
    return out


def max_min_rates(
    routes: Routes, capacity_gbps: FloatArray, active: BoolArray | None = None
) -> FloatArray:
    """Max-min fair rate (Gb/s) of every flow; flows not active (or not connected) get 0."""
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
        if frozen.size == 0:  # numerical safety: nothing can rise any more
            frozen = np.flatnonzero(active)
        rate[frozen] = level[comp_flow[frozen]]
        active[frozen] = False
        weight -= routes.weight_of(frozen)
        weight[weight < WEIGHT_EPS] = 0.0
    return rate


@dataclass(frozen=True)
class Completion:
    """Completion time of every flow of a phase, and the rates they started with."""

    time_s: FloatArray
    """Completion time of every flow (inf for a flow with no route)."""
    initial_rate_gbps: FloatArray
    events: int
    """Rounds of re-sharing (the most events of any one component)."""
    exact: bool = True
    """False when re-sharing stopped after ``MAX_EVENTS`` rounds (times are then approximate)."""

    @property
    def phase_time_s(self) -> float:
        """The phase ends with its slowest flow."""
        return float(self.time_s.max()) if self.time_s.size else 0.0


def completion_times(
    routes: Routes,
    capacity_gbps: FloatArray,
    size_bytes: FloatArray,
    *,
    max_events: int = MAX_EVENTS,
) -> Completion:
    """Flow completion times with max-min re-sharing at every completion (up to ``max_events``)."""
    remaining_all = np.asarray(size_bytes, dtype=np.float64) * BITS_PER_BYTE / GBPS  # Gbit
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
        if events >= max(1, max_events):  # finish at the last rates: no more re-sharing
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
            new_clock[comp_flow] = clock[
                old_comp
            ]  # a component only splits: its parts keep its clock
            clock = new_clock
        rate = max_min_rates(work, capacity_gbps, active)
        last_rate = rate
        if events == 0:
            initial[ids] = rate
        stuck = active & (rate <= 0)
        if stuck.any():  # a flow with no capacity on its path never finishes
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

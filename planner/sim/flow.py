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

from planner.deadline import NO_DEADLINE, Deadline, Watch, watch
from planner.sim.fabric import BoolArray, FloatArray, IntArray
from planner.sim.routes import Routes, distinct
from planner.units import BITS_PER_BYTE

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
GBPS = 1e9


#: A round that freezes at least 1 / BULK_FREEZE of the active flows sums the links' weights
#: and loads afresh (matrix products over all routes) instead of subtracting its flows' entries.
BULK_FREEZE = 4
#: Links in a round's working set: those with the lowest saturation levels. The others wait
#: above its threshold (their levels only rise as flows freeze) until it runs out.
WORKING_LINKS = 4_096


def _group_min(values: FloatArray, groups: IntArray, n: int) -> FloatArray:
    out = np.full(n, np.inf)
    np.minimum.at(out, groups, values)
    return out


def _saturation(
    capacity_gbps: FloatArray, frozen_gbps: FloatArray, weight: FloatArray, links: IntArray
) -> FloatArray:
    """Fill level at which each of these links saturates (inf when no active flow crosses it).

    (capacity - load of the frozen flows) / (sum of the active flows' fractions): the level
    stays put until a flow on the link freezes, and then only rises.
    """
    w = weight[links]
    out = np.full(links.size, np.inf)
    on = w > 0
    out[on] = (capacity_gbps[links[on]] - frozen_gbps[links[on]]) / w[on]
    return out


def _working_set(saturation: FloatArray, size: int, links: IntArray) -> tuple[IntArray, float]:
    """The ``size`` or so of these links that saturate first, and the level above the rest."""
    finite = links[np.isfinite(saturation[links])]
    if finite.size <= size:
        return finite, np.inf
    values = saturation[finite]
    kth = float(np.partition(values, size)[size])
    threshold = float(np.nextafter(kth, np.inf))
    return finite[values < threshold], threshold


@dataclass
class _Filling:
    """Per-link state of progressive filling, kept between the fills of one phase's events."""

    weight: FloatArray
    """Sum over the active flows of their fraction on every link."""
    frozen_gbps: FloatArray
    """Load of the frozen flows on every link."""
    saturation: FloatArray
    """Fill level at which every link saturates (inf: no active flow crosses it)."""


def _fill(
    routes: Routes,
    capacity_gbps: FloatArray,
    state: _Filling,
    active: BoolArray,
    rate: FloatArray,
    level: FloatArray,
    links: IntArray,
    check: Watch,
) -> None:
    """Progressive filling of the active flows from ``level`` (per component), in place.

    ``links`` are those the active flows cross (the others saturate at inf). Each round takes,
    in every component, the links that saturate first (within ``LEVEL_RTOL`` of the
    component's step) and freezes their flows at the component's level; only those flows'
    links are updated. On return no flow is active and every link's saturation is inf.
    """
    comp_link, comp_flow, n_comp = routes.components
    weight, frozen_gbps, saturation = state.weight, state.frozen_gbps, state.saturation
    saturation[links] = _saturation(capacity_gbps, frozen_gbps, weight, links)
    size = WORKING_LINKS
    work, threshold = _working_set(saturation, size, links)
    in_work = np.zeros(routes.links, dtype=bool)
    in_work[work] = True
    still_active = int(active.sum())
    while True:
        check.check()
        keep = saturation[work] < threshold
        in_work[work[~keep]] = False
        work = work[keep]
        if not work.size:
            if not np.isfinite(threshold):
                break
            work, threshold = _working_set(saturation, size, links)
            in_work[work] = True
            if not work.size:
                break
        sat, comp = saturation[work], comp_link[work]
        least = _group_min(sat, comp, n_comp)
        new_level = np.maximum(level, least)
        bound = new_level + (new_level - level) * LEVEL_RTOL + LEVEL_ATOL_GBPS
        # A component whose window reaches past the threshold waits for a larger working set.
        take = (sat <= bound[comp]) & (bound[comp] < threshold)
        if not take.any():
            size *= 2
            in_work[work] = False
            work, threshold = _working_set(saturation, size, links)
            in_work[work] = True
            continue
        saturated = work[take]
        moving = distinct(comp[take], n_comp)
        level[moving] = new_level[moving]
        frozen = routes.flows_on_links(saturated)
        frozen = frozen[active[frozen]]
        if not frozen.size:  # numerical residue: the links carry no active flow any more
            weight[saturated] = 0.0
            saturation[saturated] = np.inf
            continue
        rate[frozen] = level[comp_flow[frozen]]
        active[frozen] = False
        if frozen.size * BULK_FREEZE >= still_active:  # sum afresh: a few matrix products
            weight[:] = routes.weight(active)
            frozen_gbps[:] = routes.load(np.where(active, 0.0, rate))
            touched = links
        else:  # only the frozen flows' entries
            entry_links, fractions = routes.entries_of(frozen)
            np.subtract.at(weight, entry_links, fractions)
            np.add.at(frozen_gbps, entry_links, fractions * level[comp_link[entry_links]])
            touched = distinct(entry_links, routes.links)
        still_active -= frozen.size
        weight[touched[weight[touched] < WEIGHT_EPS]] = 0.0
        saturation[touched] = _saturation(capacity_gbps, frozen_gbps, weight, touched)
        late = touched[(saturation[touched] < threshold) & ~in_work[touched]]
        if late.size:  # rounding only: a level fell below the threshold
            work = np.concatenate([work, late])
            in_work[late] = True
    # Flows left active cross no link that can saturate (none on a connected route).
    weight[links] = 0.0
    saturation[links] = np.inf


def _start(routes: Routes, active: BoolArray, rate: FloatArray) -> tuple[_Filling, IntArray]:
    """The filling's state with the flows not active frozen at ``rate``; the links to fill."""
    frozen_gbps = routes.load(np.where(active, 0.0, rate))
    weight = routes.weight(active)
    weight[weight < WEIGHT_EPS] = 0.0
    state = _Filling(weight, frozen_gbps, np.full(routes.links, np.inf))
    return state, np.flatnonzero(weight > 0)


def max_min_rates(
    routes: Routes,
    capacity_gbps: FloatArray,
    active: BoolArray | None = None,
    *,
    fixed_rate_gbps: FloatArray | None = None,
    start_level_gbps: FloatArray | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> FloatArray:
    """Max-min fair rate (Gb/s) of every flow; flows not active (or not connected) get 0.

    Warm start: with ``fixed_rate_gbps``, the flows not active keep those rates (and load their
    links with them), and the active flows of each component start from its
    ``start_level_gbps`` (per component of ``routes.components``; 0 when not given). That is
    progressive filling resumed at that level when the fixed flows are those it froze below.
    Raises ``DeadlineExpired`` when ``deadline`` passes.
    """
    active = routes.connected.copy() if active is None else active & routes.connected
    rate = (
        np.zeros(routes.flows)
        if fixed_rate_gbps is None
        else np.where(active, 0.0, np.asarray(fixed_rate_gbps, dtype=np.float64))
    )
    level = (
        np.zeros(routes.components[2])
        if start_level_gbps is None
        else np.asarray(start_level_gbps, dtype=np.float64).copy()
    )
    state, links = _start(routes, active, rate)
    _fill(routes, capacity_gbps, state, active, rate, level, links, watch(deadline))
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
    deadline: Deadline = NO_DEADLINE,
) -> Completion:
    """Flow completion times with max-min re-sharing at every completion (up to ``max_events``).

    Re-sharing after an event resumes progressive filling where it can (``max_min_rates``'s warm
    start): every link of a finished flow f saturated at a level >= f's rate, so in each
    component the flows whose rates lie below the least rate of its finished flows keep them,
    and only the others are filled again from that level. Raises ``DeadlineExpired`` when
    ``deadline`` passes.
    """
    check = watch(deadline)
    remaining_all = np.asarray(size_bytes, dtype=np.float64) * BITS_PER_BYTE / GBPS  # Gbit
    finish = np.where(routes.connected, 0.0, np.inf)
    initial = np.zeros(routes.flows)
    ids = np.flatnonzero(routes.connected & (remaining_all > 0))
    work = routes if ids.size == routes.flows else routes.subset(ids)
    remaining = remaining_all[ids]
    active = np.ones(ids.size, dtype=bool)
    comp_flow = work.components[1]
    clock = np.zeros(work.components[2])
    events = 0
    exact = True
    rate = np.zeros(ids.size)
    # Per flow: the level from which its component is filled again (inf: its rates all stand).
    refill = np.zeros(ids.size)
    while active.any():
        check.check()
        if events >= max(1, max_events):  # finish at the last rates: no more re-sharing
            idx = np.flatnonzero(active)
            finish[ids[idx]] = clock[comp_flow[idx]] + remaining[idx] / rate[idx]
            exact = False
            break
        if active.sum() * 2 < active.size:
            keep = np.flatnonzero(active)
            old_comp = comp_flow[keep]
            work, ids, remaining = work.subset(keep), ids[keep], remaining[keep]
            rate, refill = rate[keep], refill[keep]
            active = np.ones(ids.size, dtype=bool)
            comp_flow = work.components[1]
            new_clock = np.zeros(work.components[2])
            new_clock[comp_flow] = clock[
                old_comp
            ]  # a component only splits: its parts keep its clock
            clock = new_clock
        if events == 0:
            state, links = _start(work, active, rate)
            _fill(
                work, capacity_gbps, state, active.copy(), rate, np.zeros(clock.size), links, check
            )
            initial[ids] = rate
        else:
            level = np.zeros(clock.size)
            level[comp_flow] = refill  # one value per component
            level[~np.isfinite(level)] = 0.0
            redo = np.flatnonzero(active & (rate >= refill))
            links, fractions = work.entries_of(redo, rate[redo])
            np.subtract.at(state.frozen_gbps, links, fractions)
            links, fractions = work.entries_of(redo)
            np.add.at(state.weight, links, fractions)
            rate[redo] = 0.0
            filling = np.zeros(ids.size, dtype=bool)
            filling[redo] = True
            _fill(
                work, capacity_gbps, state, filling, rate, level, distinct(links, work.links), check
            )
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
        finished_rate = rate[idx[done]]
        links, fractions = work.entries_of(idx[done], rate[idx[done]])
        np.subtract.at(state.frozen_gbps, links, fractions)  # the finished flows leave
        rate[idx[done]] = 0.0
        # Stuck flows carried no rate: only the finished ones move their components' levels.
        refill = _group_min(finished_rate, comp[done], clock.size)[comp_flow]
        moving = np.isfinite(step)
        clock[moving] += step[moving]
        events += 1
    return Completion(finish, initial, events, exact)

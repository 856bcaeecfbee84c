"""Phases too large to re-share flow by flow: when to stream them, and what fits in memory.

A phase whose routes are estimated above ``verify.memory_budget_gib``, or with more flows than
``verify.resharing_max_flows``, is streamed (``plan_stream``, ``planner.sim.streamed``): routed in
chunks for its exact time, with a uniform sample's per-flow upper bounds as its flows' times.
A distance table over the budget cannot be streamed (``check_table_memory``, ``OverMemory``).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, IntArray
from planner.sim.routing import BYTES_PER_FLOW, BYTES_PER_ROUTE_ENTRY, Routing, estimate_route_bytes
from planner.sim.sim_tables import FCT_PERCENTILES

#: Flows of a streamed phase whose completion-time bounds give its percentiles.
STREAM_SAMPLE_FLOWS = 10_000
#: Confidence stated for a sample's percentiles (two-sided).
CONFIDENCE = 0.95


def percentile_band(
    percentile: float, sample: int, confidence: float = CONFIDENCE
) -> tuple[float, float]:
    """Which population percentiles a sample's percentile lies between, with this confidence.

    The sample's p-quantile is its k-th smallest of n, k = ceil(n p). It falls below the
    population's q-quantile when at least k of the n draws do, so the q at which that happens
    with probability a is the a-quantile of Beta(k, n - k + 1): exact and distribution-free for
    draws with replacement (a sample of 10,000 from a million flows is that to 1 %).
    """
    n = max(sample, 1)
    k = min(max(math.ceil(n * percentile / 100.0), 1), n)
    tail = (1.0 - confidence) / 2.0
    from scipy import stats  # about 0.3-1 s to import; only a sampled phase needs it

    lo, hi = stats.beta.ppf([tail, 1.0 - tail], k, n - k + 1)
    return 100.0 * float(lo), 100.0 * float(hi)


#: Fewest flows a chunk of a streamed phase routes, however tight the memory budget.
MIN_CHUNK_FLOWS = 1_000
#: Share of the memory left under the budget that one chunk's routes may take.
BUDGET_SAFETY = 0.8
BYTES_PER_GIB = 2**30
#: Bytes per entry of a routing strategy's distance table (switches x destination leaves): the
#: int16 distance and the temporaries that build it (a float32 reach, a float64 search row).
TABLE_BYTES_PER_ENTRY = 8.0


class OverMemory(Exception):
    """A step whose routing tables alone would pass ``verify.memory_budget_gib``: not run.

    Streaming splits a phase's flows, not the distance table every chunk routes with (one
    column per destination leaf), so a table over the budget cannot be streamed.
    """


def check_table_memory(fabric: Fabric, phase: tr.Phase, budget_gib: float | None) -> None:
    """Raise ``OverMemory`` when the phase's distance table would not fit the memory budget.

    need = switches x destination leaves x TABLE_BYTES_PER_ENTRY, against budget x
    BUDGET_SAFETY (the room a stream plans with).
    """
    if budget_gib is None or phase.flows == 0:
        return
    leaves = int(np.unique(fabric.leaf_of(phase.dst)).size)
    need = float(fabric.switches) * leaves * TABLE_BYTES_PER_ENTRY
    if need > budget_gib * BYTES_PER_GIB * BUDGET_SAFETY:
        raise OverMemory(
            f"its routing table ({fabric.switches:,} switches x {leaves:,} destination leaves, "
            f"about {need / BYTES_PER_GIB:,.1f} GiB) does not fit verify.memory_budget_gib = "
            f"{budget_gib:g}"
        )


@dataclass(frozen=True)
class Stream:
    """How a phase too large to re-share flow by flow is simulated (``planner.sim.streamed``).

    Its flows are routed ``chunk_flows`` at a time for their link loads, which give the phase's
    time exactly; ``flows`` is the uniform sample whose per-flow upper bounds stand for the
    flows' completion times (the percentiles).
    """

    flows: IntArray
    chunk_flows: int
    leaf_block: int
    """Spraying chunks group flows by tiles of this many source and destination leaves (0: no
    tiles)."""
    why: str
    """What made the phase streamed: the memory budget or the re-sharing cap."""

    def statement(self, label: str, of_flows: int, chunks: int, exact: bool) -> str:
        """What was streamed and sampled, and what the figures then mean.

        ``chunks`` 0: the loads were factored by tier (``planner.sim.spray_loads``).
        """
        time = (
            "its time is exact (the most loaded link's gigabits over its capacity)"
            if exact
            else "its time is an upper bound (flows of unequal size)"
        )
        how = (
            f"routed in {chunks:,} chunk(s) of at most {self.chunk_flows:,}"
            if chunks
            else "sprayed with their link loads summed tier by tier (each climb and descent "
            "once for all the flows that share it)"
        )
        bands = ", ".join(
            f"p{p:g} between the phase's p{lo:.1f} and p{hi:.1f}"
            for p in FCT_PERCENTILES
            for lo, hi in [percentile_band(p, self.flows.size)]
        )
        return (
            f"{label}: {of_flows:,} flows {how} ({self.why}); {time}; its flow completion "
            f"percentiles are upper bounds on {self.flows.size:,} flows sampled uniformly "
            f"(with 95 % confidence the sample's {bands})"
        )


def _resident_bytes() -> float:
    """Resident memory of this process now (Linux /proc; 0 where it cannot be read)."""
    try:
        with open("/proc/self/statm") as f:
            return float(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0.0


def plan_stream(
    fabric: Fabric,
    phase: tr.Phase,
    routing: Routing,
    seed: int,
    budget_gib: float | None,
    max_flows: int | None = None,
) -> Stream | None:
    """A stream when re-sharing the whole phase would pass the memory budget or the flow cap.

    Over the budget, ECMP chunks take the share of the flows that fits; spraying chunks are
    leaf tiles (``planner.sim.streamed.chunks_of``) whose climbs and descents fit in half the
    room, the flows' own entries in the other half.
    """
    m = phase.flows
    if m <= MIN_CHUNK_FLOWS:
        return None
    chunk, block, why = m, 0, ""
    if max_flows is not None and m > max_flows:
        chunk, why = max_flows, f"above verify.resharing_max_flows = {max_flows:,}"
    if budget_gib is not None:
        need = estimate_route_bytes(fabric, phase.src, phase.dst, routing, seed=seed)
        room = max(budget_gib * BYTES_PER_GIB - _resident_bytes(), 0.0) * BUDGET_SAFETY
        if need > room:
            why = (
                f"routes estimated at {need / BYTES_PER_GIB:.1f} GiB, over "
                f"verify.memory_budget_gib = {budget_gib:g}"
            )
            per_flow = BYTES_PER_FLOW + 2 * BYTES_PER_ROUTE_ENTRY
            if routing is Routing.SPRAY:
                leaves = fabric.tier_offsets[2] - fabric.tier_offsets[1]
                per_leaf = max(need - m * per_flow, 0.0) / (2 * leaves)
                block = max(1, int(room / 2 / (2 * per_leaf))) if per_leaf > 0 else leaves
                chunk = min(chunk, max(MIN_CHUNK_FLOWS, int(room / 2 / per_flow)))
            else:
                chunk = min(chunk, max(MIN_CHUNK_FLOWS, int(m * room / need)))
    if chunk >= m and block == 0:
        return None
    rng = np.random.default_rng(seed)
    flows = np.sort(rng.choice(m, size=min(m, STREAM_SAMPLE_FLOWS), replace=False))
    return Stream(flows, chunk, block, why)

"""Analytic time of the collectives of an iteration: bytes on the wire over the bandwidth there.

The simulator (``planner.sim``) times one call of each collective on a design; this module
times them without one, for the parallelism search (``planner.workload.parallelism_search``)
and for the published runs the step model is checked against (``tests/workload/test_strong_scaling.py``).

For a collective of n ranks, S bytes per call in the nccl-tests convention
(``planner.workload.iteration``) and placement π::

    t = w(kind, n) S / B(π) + k(kind, n) α

    w = 2 (n - 1) / n    ring all-reduce (reduce-scatter then all-gather)
        (n - 1) / n      reduce-scatter, all-gather, all-to-all
        1                point-to-point
    k = 2 (n - 1)        ring all-reduce: its steps, each waiting on the one before
        n - 1            ring reduce-scatter, all-gather
        1                all-to-all (its sends go out at once), point-to-point
    B = scale-up bandwidth per GPU, each way              inside one scale-up domain
        NIC bandwidth per GPU x fabric efficiency         across domains (same rail or not)
    α = latency of one step

w S are the bytes each GPU puts on its wire (Patarasuk and Yuan 2009 for the ring,
https://doi.org/10.1016/j.jpdc.2008.09.002; Thakur et al. 2005 for the others,
https://doi.org/10.1177/1094342005051521). The fabric efficiency is the share of the NIC rate a
GPU keeps across the fabric: 1 / the oversubscription ratio of the design's worst tier (1 for a
non-blocking fabric). Not modelled: congestion between collectives, in-network reduction
(SHARP), hierarchical algorithms that would use the scale-up domain inside a fabric collective.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.schema.workload import Workload
from planner.workload.iteration import Collective, collectives
from planner.workload.step import CollectiveTime

#: Bits per byte, and bytes per gigabit (link rates are in Gb/s).
BYTES_PER_GBIT = 1e9 / 8
#: Latency of one step of a collective by default: NCCL's order of magnitude across nodes.
DEFAULT_LATENCY_S = 10e-6
#: The label of analytic times (the ``pattern`` of a ``CollectiveTime``).
ANALYTIC = "analytic"


@dataclass(frozen=True)
class Bandwidths:
    """What a GPU can send: inside its scale-up domain, and across the fabric."""

    domain_gpus: int
    """GPUs per scale-up domain."""
    scale_up_bytes_per_s: float
    """Scale-up bandwidth per GPU, each way (NVLink 4: 450e9)."""
    nic_bytes_per_s: float
    """NIC bandwidth per GPU, each way (400 Gb/s: 50e9)."""
    fabric_efficiency: float = 1.0
    """Share of the NIC rate kept across the fabric: 1 / oversubscription."""
    latency_s: float = DEFAULT_LATENCY_S
    """Latency of one step of a collective (a ring of n ranks waits on n - 1 of them)."""

    @property
    def fabric_bytes_per_s(self) -> float:
        """NIC bandwidth x fabric efficiency."""
        return self.nic_bytes_per_s * self.fabric_efficiency


def bandwidths(
    domain_gpus: int,
    scale_up_gbps_per_gpu: float,
    nic_gbps: float,
    oversubscription: float | list[float] = 1.0,
    latency_s: float = DEFAULT_LATENCY_S,
) -> Bandwidths:
    """Bandwidths from a cluster's figures (Gb/s) and its design's oversubscription.

    fabric efficiency = 1 / max(oversubscription over the tiers), at most 1.
    """
    ratios = oversubscription if isinstance(oversubscription, list) else [oversubscription]
    worst = max(1.0, *ratios)
    return Bandwidths(
        domain_gpus=domain_gpus,
        scale_up_bytes_per_s=scale_up_gbps_per_gpu * BYTES_PER_GBIT,
        nic_bytes_per_s=nic_gbps * BYTES_PER_GBIT,
        fabric_efficiency=1.0 / worst,
        latency_s=latency_s,
    )


def wire_factor(c: Collective) -> float:
    """w(kind, n): bytes on each GPU's wire per byte of S."""
    n = c.group_size
    if c.kind == "all_reduce_ring":
        return 2.0 * (n - 1) / n
    if c.kind == "point_to_point":
        return 1.0
    return (n - 1) / n


def latency_steps(c: Collective) -> int:
    """k(kind, n): steps of one call that each pay the latency."""
    n = c.group_size
    if c.kind == "all_reduce_ring":
        return 2 * (n - 1)
    if c.kind in ("reduce_scatter", "all_gather"):
        return n - 1
    return 1


def call_time_s(c: Collective, bw: Bandwidths) -> float:
    """Time of one call: w S / B(placement) + k α."""
    rate = bw.scale_up_bytes_per_s if c.placement == "tensor_parallel" else bw.fabric_bytes_per_s
    return wire_factor(c) * c.size_bytes / rate + latency_steps(c) * bw.latency_s


def analytic_times(w: Workload, bw: Bandwidths) -> list[CollectiveTime]:
    """Each collective of ``w``'s iteration with its analytic time per call."""
    return [CollectiveTime(c, ANALYTIC, call_time_s(c, bw)) for c in collectives(w, bw.domain_gpus)]

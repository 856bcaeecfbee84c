"""Traffic as phases of flows: collectives on GPU groups and synthetic patterns.

A :class:`Traffic` is a sequence of :class:`Phase` objects. All flows of a phase start together and
the phase ends when its slowest flow ends; phases run one after another. A phase that repeats
(the 2(n-1) steps of a ring all-reduce share one pattern) is stored once with ``repeat`` set.

Every builder is vectorised: flows are built with numpy indexing over the groups array, never with
a Python loop over GPUs or flows (the only loops run over a handful of tree levels). Building the
expert-parallel all-to-all of 131,072 GPUs in groups of 64 (8.3 M flows) takes well under a second
and about 200 MB.

Collectives follow the nccl-tests conventions
(https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md): ``size_bytes`` is the
nccl-tests "size" S per rank, ``algbw = S / time`` and ``busbw = algbw * busbw_factor``.

GPU ``g`` lives on node ``g // gpus_per_node`` with local index ``g % gpus_per_node``, its rail.
The machine is two-level: GPU ``g`` also sits in scale-up domain ``g // domain_gpus`` (NVLink: 8 =
one DGX node, 72 = an NVL72 rack of 18 nodes of 4), consecutive ids, the last domain possibly
partial. :func:`domain_groups` and :func:`rail_groups` place parallel groups on that machine, and
:func:`hierarchical_all_reduce` runs an all-reduce level by level over it.

This module holds the data (:class:`Phase`, :class:`Traffic`), the building blocks every
builder shares and the ideal time. The builders: group placements in
``planner.sim.gpu_groups``, collectives in ``planner.sim.collectives``, synthetic patterns in
``planner.sim.traffic_patterns``; ``planner.sim.traffic_kinds`` maps each ``TrafficSpec.kind``
to its builder.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Flows one phase may hold (24 bytes each: about 3 GiB). Guards against O(gpus^2) patterns on
#: large fabrics, e.g. a uniform all-to-all over 131,072 GPUs (17 G flows).
MAX_FLOWS_PER_PHASE = 2**27


# --------------------------------------------------------------------------------------------------
# Data
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Phase:
    """Flows that start together; the phase ends when its slowest flow ends.

    Attributes
    ----------
    src, dst
        int64 GPU ids (``0 .. gpus-1``), one entry per flow; ``src != dst`` for every flow.
    size_bytes
        float64 bytes of each flow (the whole GPU-to-GPU flow, all planes together).
    repeat
        Identical phases in a row (a ring's 2(n-1) steps share one pattern).
    flow_id
        int64 identity of each flow for ECMP hashing (its UDP source port,
        ``planner.sim.ecmp_hash``); None: its index in the phase. Flows of several traffics run
        as one phase keep the ids they have alone (``planner.sim.concurrent``), so each is
        hashed onto the same path.

    Raises
    ------
    ValueError
        If the arrays are not 1-D of one length, an id is negative, a flow goes from a GPU to
        itself, a size is negative or not finite, or ``repeat < 1``.
    """

    src: IntArray
    dst: IntArray
    size_bytes: FloatArray
    repeat: int = 1
    flow_id: IntArray | None = None

    def __post_init__(self) -> None:
        src = np.asarray(self.src, dtype=np.int64)
        dst = np.asarray(self.dst, dtype=np.int64)
        size = np.asarray(self.size_bytes, dtype=np.float64)
        object.__setattr__(self, "src", src)
        object.__setattr__(self, "dst", dst)
        object.__setattr__(self, "size_bytes", size)
        if src.ndim != 1 or dst.shape != src.shape or size.shape != src.shape:
            raise ValueError(
                f"phase arrays must be 1-D of one length; got src {src.shape}, dst {dst.shape}, size_bytes {size.shape}"
            )
        if self.flow_id is not None:
            ids = np.asarray(self.flow_id, dtype=np.int64)
            object.__setattr__(self, "flow_id", ids)
            if ids.shape != src.shape or (ids.size and int(ids.min()) < 0):
                raise ValueError("flow_id must be one non-negative id per flow")
        if self.repeat < 1:
            raise ValueError(f"phase repeat must be at least 1; got {self.repeat}")
        if src.size == 0:
            return
        if min(int(src.min()), int(dst.min())) < 0:
            raise ValueError("GPU ids in a phase must be non-negative")
        if np.any(src == dst):
            raise ValueError("a flow may not go from a GPU to itself (src == dst)")
        if not np.all(np.isfinite(size)) or float(size.min()) < 0.0:
            raise ValueError("flow sizes must be finite and non-negative")

    @property
    def flows(self) -> int:
        """Number of flows in one repetition of the phase."""
        return int(self.src.size)

    @property
    def total_bytes(self) -> float:
        """Bytes carried by the phase over all its repetitions."""
        return float(self.size_bytes.sum()) * self.repeat


@dataclass(frozen=True)
class Traffic:
    """A collective or synthetic pattern, as the phases that carry it.

    Attributes
    ----------
    name
        What is carried, e.g. ``"all_reduce"``, ``"all_to_all"``, ``"uniform_all_to_all"``.
    algorithm
        ``"ring"``, ``"tree"``, ``"hierarchical"``, ``"direct"`` or ``"pattern"``.
    group_size
        Ranks per group (n); for synthetic patterns, the GPUs involved.
    groups
        Number of groups running at once.
    size_bytes
        nccl-tests "size" S per rank; for patterns, bytes each sending GPU sends.
    busbw_factor
        ``busbw = algbw * busbw_factor`` (nccl-tests conventions).
    phases
        The phases, in order; empty when there is nothing to send (n = 1).
    """

    name: str
    algorithm: str
    group_size: int
    groups: int
    size_bytes: float
    busbw_factor: float
    phases: tuple[Phase, ...]

    @property
    def flows(self) -> int:
        """Flows over all phases, each repeated phase counted once."""
        return sum(phase.flows for phase in self.phases)

    @property
    def total_bytes(self) -> float:
        """Bytes carried over all phases and repetitions."""
        return sum(phase.total_bytes for phase in self.phases)

    def algbw_gbps(self, time_s: float) -> float:
        """Algorithm bandwidth in Gbit/s for a completion time: ``S * 8 / time / 1e9``."""
        return self.size_bytes * 8.0 / time_s / 1e9

    def busbw_gbps(self, time_s: float) -> float:
        """Bus bandwidth in Gbit/s for a completion time: ``algbw * busbw_factor``."""
        return self.algbw_gbps(time_s) * self.busbw_factor


# --------------------------------------------------------------------------------------------------
# Building blocks
# --------------------------------------------------------------------------------------------------


def check_size(size_bytes: float) -> float:
    """``size_bytes`` as a float; ValueError when it is negative or not finite."""
    size = float(size_bytes)
    if not math.isfinite(size) or size < 0.0:
        raise ValueError(f"size_bytes must be finite and non-negative; got {size_bytes}")
    return size


def check_flows(flows: int) -> None:
    """ValueError when one phase would hold more than ``MAX_FLOWS_PER_PHASE`` flows."""
    if flows > MAX_FLOWS_PER_PHASE:
        raise ValueError(
            f"one phase would hold {flows:,} flows, more than MAX_FLOWS_PER_PHASE ({MAX_FLOWS_PER_PHASE:,}); use smaller groups or a coarser pattern"
        )


def uniform_phase(src: IntArray, dst: IntArray, flow_bytes: float, repeat: int = 1) -> Phase:
    """A phase whose flows all carry ``flow_bytes``."""
    return Phase(src, dst, np.full(src.size, flow_bytes, dtype=np.float64), repeat)


def off_diagonal(n: int) -> tuple[IntArray, IntArray]:
    """Rank pairs ``(i, j)`` with ``i != j``: for each i, ``j = i+1, i+2, ...`` modulo n."""
    src = np.repeat(np.arange(n, dtype=np.int64), n - 1)
    shift = np.tile(np.arange(1, n, dtype=np.int64), n)
    return src, (src + shift) % n


# --------------------------------------------------------------------------------------------------
# Ideal time
# --------------------------------------------------------------------------------------------------


#: A GPU's NIC rate in Gb/s: one for every GPU, or one per GPU (blocks of mixed generations).
NicRate = float | FloatArray


def check_nic_rate(nic_gbps: NicRate) -> None:
    """ValueError unless every rate is positive."""
    if not np.all(np.asarray(nic_gbps) > 0.0):
        raise ValueError(f"nic_gbps must be positive; got {nic_gbps}")


def busiest_s(
    src: IntArray, dst: IntArray, size_bytes: FloatArray, gpus: int, nic_gbps: NicRate
) -> float:
    """Seconds the busiest GPU needs: max_g max(sent_g, received_g) * 8 / (rate_g 1e9).

    ``nic_gbps`` is one rate for every GPU or one per GPU (then each GPU at its own).
    """
    if src.size == 0:
        return 0.0
    sent = np.bincount(src, weights=size_bytes, minlength=gpus)
    received = np.bincount(dst, weights=size_bytes, minlength=gpus)
    if np.ndim(nic_gbps) == 0:
        return max(float(sent.max()), float(received.max())) * 8.0 / (float(nic_gbps) * 1e9)
    return float((np.maximum(sent, received) * 8.0 / (np.asarray(nic_gbps) * 1e9)).max())


def ideal_time_s(traffic: Traffic, gpus: int, nic_gbps: NicRate) -> float:
    """Completion time if every GPU sent and received at its full NIC rate, with no contention.

    ``Σ_phases repeat · max_g max(sent_g, received_g) · 8 / (rate_g · 1e9)``

    Parameters
    ----------
    traffic
        The traffic.
    gpus
        GPUs in the cluster; every GPU id in the traffic must be below it.
    nic_gbps
        Network bandwidth of one GPU in Gbit/s (all planes together), or of each GPU.

    Returns
    -------
    float
        Seconds; 0 for traffic without flows.

    Raises
    ------
    ValueError
        If a rate is not positive or a GPU id is out of range.
    """
    check_nic_rate(nic_gbps)
    total = 0.0
    for phase in traffic.phases:
        if phase.flows == 0:
            continue
        if max(int(phase.src.max()), int(phase.dst.max())) >= gpus:
            raise ValueError(f"traffic {traffic.name!r} uses a GPU id at or above gpus ({gpus})")
        total += busiest_s(phase.src, phase.dst, phase.size_bytes, gpus, nic_gbps) * phase.repeat
    return total

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

#: Attempts at drawing a derangement by rejection; each succeeds with probability ~1/e, so 200
#: attempts all fail with probability below 1e-39.
_DERANGEMENT_ATTEMPTS = 200


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
# Group placements
# --------------------------------------------------------------------------------------------------


def _check_positive(total: int, part: int, what: str) -> None:
    if part < 1:
        raise ValueError(f"{what} must be at least 1; got {part}")
    if total < 1:
        raise ValueError(f"gpus must be at least 1; got {total}")


def _check_divides(total: int, part: int, what: str) -> None:
    _check_positive(total, part, what)
    if total % part:
        raise ValueError(f"{what} ({part}) does not divide {total}")


def data_parallel_groups(gpus: int, gpus_per_node: int) -> IntArray:
    """One data-parallel group per local GPU index, spanning all nodes.

    Parameters
    ----------
    gpus
        GPUs in the cluster.
    gpus_per_node
        GPUs per node (the scale-up domain holding tensor parallelism).

    Returns
    -------
    numpy.ndarray
        int64, shape ``(gpus_per_node, nodes)``: row ``i`` is local GPU ``i`` of every node, in
        node order.

    Raises
    ------
    ValueError
        If ``gpus_per_node`` does not divide ``gpus``.
    """
    _check_divides(gpus, gpus_per_node, "gpus_per_node")
    ids = np.arange(gpus, dtype=np.int64).reshape(gpus // gpus_per_node, gpus_per_node)
    return np.ascontiguousarray(ids.T)


def consecutive_groups(gpus: int, group_size: int) -> IntArray:
    """Groups of consecutive GPUs (an expert-parallel group, or any other).

    A group of 64 with 8 GPUs per node is 8 consecutive whole nodes.

    Parameters
    ----------
    gpus
        GPUs in the cluster.
    group_size
        GPUs per group.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(gpus // group_size, group_size)``.

    Raises
    ------
    ValueError
        If ``group_size`` does not divide ``gpus``.
    """
    _check_divides(gpus, group_size, "group_size")
    return np.arange(gpus, dtype=np.int64).reshape(gpus // group_size, group_size)


def domain_groups(gpus: int, domain_gpus: int, group_size: int) -> IntArray:
    """Tensor-parallel groups: consecutive GPUs that never straddle a scale-up domain.

    Group ``j`` is GPUs ``j * group_size .. (j + 1) * group_size - 1``. Since ``group_size``
    divides ``domain_gpus``, every domain boundary is a group boundary, so each group lies in one
    domain. A partial last domain is used as long as it holds whole groups; GPUs that would be
    left over are refused, not silently left idle (an idle GPU would change what the traffic
    means and its ideal time without a word).

    Parameters
    ----------
    gpus
        GPUs in the cluster.
    domain_gpus
        GPUs per scale-up domain.
    group_size
        GPUs per group; divides ``domain_gpus``.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(gpus // group_size, group_size)``; row ``j`` in GPU order.

    Raises
    ------
    ValueError
        If ``group_size`` is larger than ``domain_gpus`` or does not divide it, or does not
        divide ``gpus`` (a partial last domain that ends inside a group).
    """
    _check_positive(gpus, domain_gpus, "domain_gpus")
    if group_size > domain_gpus:
        raise ValueError(
            f"tensor-parallel group_size ({group_size}) is larger than the scale-up domain "
            f"({domain_gpus} GPUs): a tensor-parallel group must fit in one domain"
        )
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1; got {group_size}")
    if domain_gpus % group_size:
        raise ValueError(
            f"tensor-parallel group_size ({group_size}) must divide the scale-up domain "
            f"({domain_gpus} GPUs), so that no group straddles two domains"
        )
    if gpus % group_size:
        raise ValueError(
            f"tensor-parallel group_size ({group_size}) does not divide {gpus} GPUs: the last, "
            f"partial scale-up domain ({gpus % domain_gpus} GPUs) would end inside a group"
        )
    return np.arange(gpus, dtype=np.int64).reshape(gpus // group_size, group_size)


def rail_groups(gpus: int, domain_gpus: int, group_size: int) -> IntArray:
    """Data- or expert-parallel groups across scale-up domains, each on one rail.

    Domains are taken ``group_size`` at a time, in order; within such a block, the GPUs at local
    index ``i`` of its domains form one group. Every member has the same index in its domain, so
    (when ``gpus_per_node`` divides ``domain_gpus``, as in every real machine) the same rail
    ``g % gpus_per_node``, and the members sit in distinct domains. With ``group_size`` equal
    to the number of domains this is :func:`data_parallel_groups` over domains.

    Parameters
    ----------
    gpus
        GPUs in the cluster; whole domains only.
    domain_gpus
        GPUs per scale-up domain.
    group_size
        Domains per block, i.e. GPUs per group; divides the number of domains.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(gpus // group_size, group_size)``; row ``b * domain_gpus + i`` is local
        index ``i`` of the domains of block ``b``, in domain order.

    Raises
    ------
    ValueError
        If the last domain is partial, or ``group_size`` does not divide the number of domains.
    """
    _check_positive(gpus, domain_gpus, "domain_gpus")
    if gpus % domain_gpus:
        raise ValueError(
            f"same-rail groups need whole scale-up domains: {gpus} GPUs is {gpus // domain_gpus} "
            f"domains of {domain_gpus} and {gpus % domain_gpus} GPUs over"
        )
    domains = gpus // domain_gpus
    if group_size < 1:
        raise ValueError(f"group_size must be at least 1; got {group_size}")
    if domains % group_size:
        raise ValueError(
            f"same-rail group_size ({group_size}) must divide the number of scale-up domains "
            f"({domains} of {domain_gpus} GPUs): a group takes one GPU from each of group_size domains"
        )
    ids = np.arange(gpus, dtype=np.int64).reshape(domains // group_size, group_size, domain_gpus)
    return np.ascontiguousarray(ids.transpose(0, 2, 1)).reshape(gpus // group_size, group_size)


def pipeline_pairs(gpus: int, gpus_per_node: int, stages: int) -> tuple[IntArray, IntArray]:
    """Sender and receiver of each point-to-point transfer between consecutive pipeline stages.

    Stage ``s`` is a contiguous block of ``nodes // stages`` nodes; GPU ``j`` of stage ``s`` sends to
    GPU ``j`` of stage ``s + 1`` (forward activations; swap the arrays for backward gradients).

    Parameters
    ----------
    gpus
        GPUs in the cluster.
    gpus_per_node
        GPUs per node.
    stages
        Pipeline stages.

    Returns
    -------
    tuple of numpy.ndarray
        ``(src, dst)``, int64, each of length ``(stages - 1) * gpus // stages`` (empty for one stage).

    Raises
    ------
    ValueError
        If ``gpus_per_node`` does not divide ``gpus`` or ``stages`` does not divide the nodes.
    """
    _check_divides(gpus, gpus_per_node, "gpus_per_node")
    _check_divides(gpus // gpus_per_node, stages, "stages")
    stage_gpus = gpus // stages
    src = np.arange(gpus - stage_gpus, dtype=np.int64)
    return src, src + stage_gpus


# --------------------------------------------------------------------------------------------------
# Collectives
# --------------------------------------------------------------------------------------------------


def _as_groups(groups: npt.ArrayLike) -> IntArray:
    """Check a groups array (rows = groups, columns = ranks) and return it as int64."""
    arr = np.asarray(groups)
    if arr.ndim != 2:
        raise ValueError(f"groups must be a 2-D array (groups x ranks); got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise ValueError(f"groups must hold integer GPU ids; got dtype {arr.dtype}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size == 0:
        return arr
    if int(arr.min()) < 0:
        raise ValueError("GPU ids in groups must be non-negative")
    if arr.shape[1] > 1 and np.any(np.diff(np.sort(arr, axis=1), axis=1) == 0):
        raise ValueError("a GPU appears twice in one group")
    return arr


def _check_size(size_bytes: float) -> float:
    size = float(size_bytes)
    if not math.isfinite(size) or size < 0.0:
        raise ValueError(f"size_bytes must be finite and non-negative; got {size_bytes}")
    return size


def _check_flows(flows: int) -> None:
    if flows > MAX_FLOWS_PER_PHASE:
        raise ValueError(
            f"one phase would hold {flows:,} flows, more than MAX_FLOWS_PER_PHASE ({MAX_FLOWS_PER_PHASE:,}); use smaller groups or a coarser pattern"
        )


def _uniform_phase(src: IntArray, dst: IntArray, flow_bytes: float, repeat: int = 1) -> Phase:
    return Phase(src, dst, np.full(src.size, flow_bytes, dtype=np.float64), repeat)


def _ring(
    groups: npt.ArrayLike, size_bytes: float, name: str, steps_per_rank: int, factor_steps: int
) -> Traffic:
    """A ring collective: ``steps(n)`` steps in which each rank sends S/n to the next rank.

    ``steps = steps_per_rank * (n - 1)``; ``busbw_factor = factor_steps * (n - 1) / n``.
    """
    arr = _as_groups(groups)
    size = _check_size(size_bytes)
    count, n = arr.shape
    factor = factor_steps * (n - 1) / n if n else 0.0
    phases: tuple[Phase, ...] = ()
    if n > 1 and count:
        _check_flows(arr.size)
        src = arr.ravel()
        dst = np.roll(arr, -1, axis=1).ravel()
        phases = (_uniform_phase(src, dst, size / n, steps_per_rank * (n - 1)),)
    return Traffic(name, "ring", n, count, size, factor, phases)


def ring_all_reduce(groups: npt.ArrayLike, size_bytes: float) -> Traffic:
    """Ring all-reduce: 2(n-1) steps, each rank sending S/n to the next rank of its ring.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``; each row is one ring in rank order.
    size_bytes
        nccl-tests size S per rank.

    Returns
    -------
    Traffic
        One phase repeated 2(n-1) times; ``busbw_factor = 2(n-1)/n``.
    """
    return _ring(groups, size_bytes, "all_reduce", steps_per_rank=2, factor_steps=2)


def ring_reduce_scatter(groups: npt.ArrayLike, size_bytes: float) -> Traffic:
    """Ring reduce-scatter: n-1 steps, each rank sending S/n to the next rank of its ring.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``; each row is one ring in rank order.
    size_bytes
        nccl-tests size S per rank (the whole buffer, n chunks of S/n).

    Returns
    -------
    Traffic
        One phase repeated n-1 times; ``busbw_factor = (n-1)/n``.
    """
    return _ring(groups, size_bytes, "reduce_scatter", steps_per_rank=1, factor_steps=1)


def ring_all_gather(groups: npt.ArrayLike, size_bytes: float) -> Traffic:
    """Ring all-gather: n-1 steps, each rank sending S/n to the next rank of its ring.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``; each row is one ring in rank order.
    size_bytes
        nccl-tests size S per rank (the gathered output, n chunks of S/n).

    Returns
    -------
    Traffic
        One phase repeated n-1 times; ``busbw_factor = (n-1)/n``.
    """
    return _ring(groups, size_bytes, "all_gather", steps_per_rank=1, factor_steps=1)


def tree_parents(n: int) -> IntArray:
    """Parent rank of each rank in the binary tree used by :func:`tree_all_reduce`.

    The tree is NCCL's binary tree (``ncclGetBtree``): rank 0 is the root, and rank ``r > 0`` with
    lowest set bit ``b`` has parent ``(r ^ b) | 2b``, or ``r ^ b`` when that is out of range.
    Every rank has at most two children, and a rank's children have a lower lowest set bit than
    it has, so the tree can be reduced level by level: level ``k`` is the ranks whose lowest set
    bit is ``2**k``. There are ``ceil(log2 n)`` levels.

    Parameters
    ----------
    n
        Ranks in the tree.

    Returns
    -------
    numpy.ndarray
        int64 of length ``n``; entry 0 (the root) is -1.
    """
    ranks = np.arange(n, dtype=np.int64)
    low_bit = ranks & -ranks
    parents = (ranks ^ low_bit) | (low_bit << 1)
    parents = np.where(parents >= n, ranks ^ low_bit, parents)
    if n:
        parents[0] = -1
    return parents


def tree_all_reduce(groups: npt.ArrayLike, size_bytes: float) -> Traffic:
    """Binary-tree all-reduce, not pipelined: a reduce up the tree, then a broadcast down it.

    The reduce runs ``ceil(log2 n)`` phases, level by level from the leaves up; in each, every rank
    of the level sends the whole buffer S to its parent. The broadcast runs the same levels in
    reverse, each parent sending S to its children. See :func:`tree_parents` for the tree.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``; column ``r`` is rank ``r`` of each group.
    size_bytes
        nccl-tests size S per rank.

    Returns
    -------
    Traffic
        ``2 * ceil(log2 n)`` phases; ``busbw_factor = 2(n-1)/n``.
    """
    arr = _as_groups(groups)
    size = _check_size(size_bytes)
    count, n = arr.shape
    factor = 2.0 * (n - 1) / n if n else 0.0
    if n < 2 or count == 0:
        return Traffic("all_reduce", "tree", n, count, size, factor, ())
    _check_flows(arr.size)
    parents = tree_parents(n)
    ranks = np.arange(1, n, dtype=np.int64)
    levels = np.log2(ranks & -ranks).astype(np.int64)  # level of each non-root rank
    reduce: list[Phase] = []
    for level in range((n - 1).bit_length()):  # ceil(log2 n) levels
        children = ranks[levels == level]
        src = np.take(arr, children, axis=1).ravel()
        dst = np.take(arr, parents[children], axis=1).ravel()
        reduce.append(_uniform_phase(src, dst, size))
    broadcast = [_uniform_phase(p.dst, p.src, size) for p in reversed(reduce)]
    return Traffic("all_reduce", "tree", n, count, size, factor, (*reduce, *broadcast))


def local_teams(groups: npt.ArrayLike, domain_gpus: int) -> IntArray:
    """Split each group into its local teams: its members in each scale-up domain.

    Members keep their order in the group within a team (that order is the team's ring), and
    teams come in domain order.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``.
    domain_gpus
        GPUs per scale-up domain; GPU ``g`` is in domain ``g // domain_gpus``.

    Returns
    -------
    numpy.ndarray
        int64, shape ``(groups, m, k)``: ``teams[r, t, j]`` is local rank ``j`` of the ``t``-th
        domain of group ``r``; ``m * k = n``.

    Raises
    ------
    ValueError
        If ``domain_gpus < 1``, or the teams are not all of one size ``k`` (within a group, and
        from group to group: the levels of all groups run as one phase each).
    """
    arr = _as_groups(groups)
    if domain_gpus < 1:
        raise ValueError(f"domain_gpus must be at least 1; got {domain_gpus}")
    count, n = arr.shape
    if count == 0 or n == 0:
        return arr.reshape(count, 0 if n == 0 else 1, n)
    domain = arr // domain_gpus
    order = np.argsort(domain, axis=1, kind="stable")  # by domain, group order kept within one
    members = np.take_along_axis(arr, order, axis=1)
    domain = np.take_along_axis(domain, order, axis=1)
    # A group splits evenly when it touches m domains and a new domain starts at every k-th
    # member (k = n / m), i.e. exactly at positions k, 2k, ... of the sorted row.
    starts = np.diff(domain, axis=1) != 0  # a new team starts at member j + 1
    per_group = 1 + np.count_nonzero(starts, axis=1)  # m of each group
    team_gpus = np.where(n % per_group == 0, n // per_group, 0)  # k of each group (0: uneven)
    position = np.arange(1, n, dtype=np.int64)
    expected = position[None, :] % np.maximum(team_gpus, 1)[:, None] == 0
    even = (team_gpus > 0) & np.all(starts == expected, axis=1)
    if not np.all(even):
        bad = int(np.argmin(even))
        sizes = np.unique(domain[bad], return_counts=True)[1]
        raise ValueError(
            f"a hierarchical all-reduce needs each group to have the same number of GPUs in "
            f"every scale-up domain it touches ({domain_gpus} GPUs per domain); group {bad} "
            f"has {', '.join(str(int(c)) for c in sizes[:8])}{', ...' if sizes.size > 8 else ''} "
            f"GPUs in its {sizes.size} domains (use groups of whole domains, or of one local "
            f"index across domains)"
        )
    if np.any(team_gpus != team_gpus[0]):
        other = int(np.argmax(team_gpus != team_gpus[0]))
        raise ValueError(
            f"a hierarchical all-reduce needs every group split alike (its levels run as one "
            f"phase each): group 0 has {int(team_gpus[0])} GPUs per scale-up domain, group "
            f"{other} has {int(team_gpus[other])}"
        )
    teams = int(per_group[0])
    return members.reshape(count, teams, n // teams)


def hierarchical_all_reduce(groups: npt.ArrayLike, size_bytes: float, domain_gpus: int) -> Traffic:
    """NCCL-style hierarchical all-reduce: inside each scale-up domain, then across domains.

    The members of a group in one domain form a local team of k; a group touches m domains
    (n = m k). In order:

    (a) ring reduce-scatter of S inside each team: k-1 steps of S/k per rank;
    (b) ring all-reduce of S/k across domains among the m members of the group that hold the
        same local rank in their teams: 2(m-1) steps of S/(k m) per rank;
    (c) ring all-gather of S inside each team: k-1 steps of S/k per rank.

    A level with one member (k = 1 or m = 1) sends nothing. Per GPU, closed form:

    - bytes sent inside domains (a + c): ``2 (k-1)/k · S``
    - bytes sent across domains (b):     ``2 (m-1)/m · S/k``

    so with scale-up rate B_up and NIC rate B_nic per GPU (bytes/s) and no contention the time is
    ``2 (k-1)/k · S / B_up + 2 (m-1)/m · (S/k) / B_nic``: the network carries 1/k of what a flat
    ring all-reduce over the n ranks would (``2 (n-1)/n · S``).

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``; the order within a domain is the team's ring order.
    size_bytes
        nccl-tests size S per rank.
    domain_gpus
        GPUs per scale-up domain (GPU ``g`` is in domain ``g // domain_gpus``).

    Returns
    -------
    Traffic
        Phases (a), (b), (c), each one phase repeated per ring step (absent when its level has
        one member); name ``"all_reduce"``, algorithm ``"hierarchical"``,
        ``busbw_factor = 2(n-1)/n``.

    Raises
    ------
    ValueError
        If the teams are not all of one size (see :func:`local_teams`).
    """
    size = _check_size(size_bytes)
    teams = local_teams(groups, domain_gpus)
    count, m, k = teams.shape
    n = m * k
    factor = 2.0 * (n - 1) / n if n else 0.0
    if n < 2 or count == 0:
        return Traffic("all_reduce", "hierarchical", n, count, size, factor, ())
    intra = teams.reshape(count * m, k)  # one row per local team
    inter = np.ascontiguousarray(teams.transpose(0, 2, 1)).reshape(count * k, m)  # per local rank
    phases = (
        *ring_reduce_scatter(intra, size).phases,
        *ring_all_reduce(inter, size / k).phases,
        *ring_all_gather(intra, size).phases,
    )
    return Traffic("all_reduce", "hierarchical", n, count, size, factor, phases)


def _off_diagonal(n: int) -> tuple[IntArray, IntArray]:
    """Rank pairs ``(i, j)`` with ``i != j``: for each i, ``j = i+1, i+2, ...`` modulo n."""
    src = np.repeat(np.arange(n, dtype=np.int64), n - 1)
    shift = np.tile(np.arange(1, n, dtype=np.int64), n)
    return src, (src + shift) % n


def all_to_all(groups: npt.ArrayLike, size_bytes: float) -> Traffic:
    """All-to-all: each rank sends S/n to each of the other n-1 ranks of its group, all at once.

    Parameters
    ----------
    groups
        GPU ids, shape ``(groups, n)``.
    size_bytes
        nccl-tests size S per rank (S/n for each rank of the group, itself included).

    Returns
    -------
    Traffic
        One phase of ``groups * n * (n-1)`` flows; ``busbw_factor = (n-1)/n``.
    """
    arr = _as_groups(groups)
    size = _check_size(size_bytes)
    count, n = arr.shape
    factor = (n - 1) / n if n else 0.0
    phases: tuple[Phase, ...] = ()
    if n > 1 and count:
        _check_flows(count * n * (n - 1))
        src_rank, dst_rank = _off_diagonal(n)
        src = np.take(arr, src_rank, axis=1).ravel()  # contiguous, so ravel does not copy
        dst = np.take(arr, dst_rank, axis=1).ravel()
        phases = (_uniform_phase(src, dst, size / n),)
    return Traffic("all_to_all", "direct", n, count, size, factor, phases)


def point_to_point(src: npt.ArrayLike, dst: npt.ArrayLike, size_bytes: float) -> Traffic:
    """Point-to-point transfers, all at once: ``src[i]`` sends S to ``dst[i]``.

    Parameters
    ----------
    src, dst
        GPU ids of the same length (see :func:`pipeline_pairs`).
    size_bytes
        Bytes of each transfer.

    Returns
    -------
    Traffic
        One phase (none if there are no pairs); ``busbw_factor = 1``.
    """
    src_arr = np.asarray(src, dtype=np.int64).ravel()
    dst_arr = np.asarray(dst, dtype=np.int64).ravel()
    size = _check_size(size_bytes)
    if src_arr.shape != dst_arr.shape:
        raise ValueError(f"src and dst differ in length: {src_arr.size} and {dst_arr.size}")
    _check_flows(src_arr.size)
    phases = (_uniform_phase(src_arr, dst_arr, size),) if src_arr.size else ()
    return Traffic("point_to_point", "direct", 2, int(src_arr.size), size, 1.0, phases)


# --------------------------------------------------------------------------------------------------
# Synthetic patterns
# --------------------------------------------------------------------------------------------------


def _check_gpus(gpus: int, least: int) -> None:
    if gpus < least:
        raise ValueError(f"this pattern needs at least {least} GPUs; got {gpus}")


def uniform_all_to_all(gpus: int, bytes_per_gpu: float) -> Traffic:
    """Every GPU sends ``bytes_per_gpu / (gpus - 1)`` to every other GPU, all at once.

    This is ``gpus * (gpus - 1)`` flows: meant for fabric checks of up to a few thousand GPUs.

    Parameters
    ----------
    gpus
        GPUs in the cluster (at least 2).
    bytes_per_gpu
        Bytes each GPU sends in total.

    Returns
    -------
    Traffic
        One phase; algorithm ``"pattern"``, ``busbw_factor = 1``.

    Raises
    ------
    ValueError
        If the phase would exceed :data:`MAX_FLOWS_PER_PHASE` flows.
    """
    _check_gpus(gpus, 2)
    size = _check_size(bytes_per_gpu)
    _check_flows(gpus * (gpus - 1))
    src, dst = _off_diagonal(gpus)
    phase = _uniform_phase(src, dst, size / (gpus - 1))
    return Traffic("uniform_all_to_all", "pattern", gpus, 1, size, 1.0, (phase,))


def random_derangement(gpus: int, rng: np.random.Generator) -> IntArray:
    """A permutation with no fixed point, uniform over all derangements.

    Draws permutations until one has no fixed point (about e ≈ 2.7 draws on average).

    Parameters
    ----------
    gpus
        Length (at least 2).
    rng
        Random generator.

    Returns
    -------
    numpy.ndarray
        int64 ``p`` with ``p[i] != i`` for every ``i``.
    """
    _check_gpus(gpus, 2)
    ranks = np.arange(gpus, dtype=np.int64)
    for _ in range(_DERANGEMENT_ATTEMPTS):
        perm = rng.permutation(gpus).astype(np.int64, copy=False)
        if not np.any(perm == ranks):
            return perm
    raise RuntimeError("no derangement drawn; the random generator is broken")  # pragma: no cover


def random_permutation(gpus: int, bytes_per_gpu: float, seed: int) -> Traffic:
    """Every GPU sends ``bytes_per_gpu`` to one other GPU; every GPU receives from one.

    Parameters
    ----------
    gpus
        GPUs in the cluster (at least 2).
    bytes_per_gpu
        Bytes each GPU sends.
    seed
        Seed for ``numpy.random.default_rng``; the same seed gives the same flows.

    Returns
    -------
    Traffic
        One phase of ``gpus`` flows drawn uniformly from the derangements; algorithm
        ``"pattern"``, ``busbw_factor = 1``.
    """
    size = _check_size(bytes_per_gpu)
    dst = random_derangement(gpus, np.random.default_rng(seed))
    phase = _uniform_phase(np.arange(gpus, dtype=np.int64), dst, size)
    return Traffic("random_permutation", "pattern", gpus, 1, size, 1.0, (phase,))


def incast(gpus: int, fan_in: int, bytes_per_gpu: float, seed: int) -> Traffic:
    """``fan_in`` distinct random senders each send ``bytes_per_gpu`` to one random receiver.

    Parameters
    ----------
    gpus
        GPUs in the cluster (at least 2).
    fan_in
        Senders, ``1 .. gpus - 1``.
    bytes_per_gpu
        Bytes each sender sends.
    seed
        Seed for ``numpy.random.default_rng``; the same seed gives the same flows.

    Returns
    -------
    Traffic
        One phase of ``fan_in`` flows; ``group_size = fan_in + 1`` (the GPUs involved), algorithm
        ``"pattern"``, ``busbw_factor = 1``.
    """
    _check_gpus(gpus, 2)
    if not 1 <= fan_in <= gpus - 1:
        raise ValueError(f"fan_in must be between 1 and gpus - 1 ({gpus - 1}); got {fan_in}")
    size = _check_size(bytes_per_gpu)
    rng = np.random.default_rng(seed)
    receiver = int(rng.integers(gpus))
    others = rng.choice(gpus - 1, size=fan_in, replace=False).astype(np.int64)
    src = others + (others >= receiver)  # skip the receiver
    dst = np.full(fan_in, receiver, dtype=np.int64)
    phase = _uniform_phase(src, dst, size)
    return Traffic("incast", "pattern", fan_in + 1, 1, size, 1.0, (phase,))


# --------------------------------------------------------------------------------------------------
# Ideal time
# --------------------------------------------------------------------------------------------------


def ideal_time_s(traffic: Traffic, gpus: int, nic_gbps: float) -> float:
    """Completion time if every GPU sent and received at its full NIC rate, with no contention.

    ``Σ_phases repeat · max_g max(sent_g, received_g) · 8 / (nic_gbps · 1e9)``

    Parameters
    ----------
    traffic
        The traffic.
    gpus
        GPUs in the cluster; every GPU id in the traffic must be below it.
    nic_gbps
        Network bandwidth of one GPU in Gbit/s (all planes together).

    Returns
    -------
    float
        Seconds; 0 for traffic without flows.

    Raises
    ------
    ValueError
        If ``nic_gbps`` is not positive or a GPU id is out of range.
    """
    if not nic_gbps > 0.0:
        raise ValueError(f"nic_gbps must be positive; got {nic_gbps}")
    busiest_bytes = 0.0
    for phase in traffic.phases:
        if phase.flows == 0:
            continue
        if max(int(phase.src.max()), int(phase.dst.max())) >= gpus:
            raise ValueError(f"traffic {traffic.name!r} uses a GPU id at or above gpus ({gpus})")
        sent = np.bincount(phase.src, weights=phase.size_bytes, minlength=gpus)
        received = np.bincount(phase.dst, weights=phase.size_bytes, minlength=gpus)
        busiest_bytes += max(float(sent.max()), float(received.max())) * phase.repeat
    return busiest_bytes * 8.0 / (nic_gbps * 1e9)

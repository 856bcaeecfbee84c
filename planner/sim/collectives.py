"""Collectives on groups of GPUs, as the phases of flows that carry them.

Every builder takes the groups (rows = groups, columns = ranks in ring order; placed by
``planner.sim.gpu_groups``) and the nccl-tests size S per rank, and follows the nccl-tests
conventions for ``busbw_factor``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from planner.sim.traffic import (
    IntArray,
    Phase,
    Traffic,
    check_flows,
    check_size,
    off_diagonal,
    uniform_phase,
)


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


def _ring(
    groups: npt.ArrayLike, size_bytes: float, name: str, steps_per_rank: int, factor_steps: int
) -> Traffic:
    """A ring collective: ``steps(n)`` steps in which each rank sends S/n to the next rank.

    ``steps = steps_per_rank * (n - 1)``; ``busbw_factor = factor_steps * (n - 1) / n``.
    """
    arr = _as_groups(groups)
    size = check_size(size_bytes)
    count, n = arr.shape
    factor = factor_steps * (n - 1) / n if n else 0.0
    phases: tuple[Phase, ...] = ()
    if n > 1 and count:
        check_flows(arr.size)
        src = arr.ravel()
        dst = np.roll(arr, -1, axis=1).ravel()
        phases = (uniform_phase(src, dst, size / n, steps_per_rank * (n - 1)),)
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
    size = check_size(size_bytes)
    count, n = arr.shape
    factor = 2.0 * (n - 1) / n if n else 0.0
    if n < 2 or count == 0:
        return Traffic("all_reduce", "tree", n, count, size, factor, ())
    check_flows(arr.size)
    parents = tree_parents(n)
    ranks = np.arange(1, n, dtype=np.int64)
    levels = np.log2(ranks & -ranks).astype(np.int64)  # level of each non-root rank
    reduce: list[Phase] = []
    for level in range((n - 1).bit_length()):  # ceil(log2 n) levels
        children = ranks[levels == level]
        src = np.take(arr, children, axis=1).ravel()
        dst = np.take(arr, parents[children], axis=1).ravel()
        reduce.append(uniform_phase(src, dst, size))
    broadcast = [uniform_phase(p.dst, p.src, size) for p in reversed(reduce)]
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
    size = check_size(size_bytes)
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
    size = check_size(size_bytes)
    count, n = arr.shape
    factor = (n - 1) / n if n else 0.0
    phases: tuple[Phase, ...] = ()
    if n > 1 and count:
        check_flows(count * n * (n - 1))
        src_rank, dst_rank = off_diagonal(n)
        src = np.take(arr, src_rank, axis=1).ravel()  # contiguous, so ravel does not copy
        dst = np.take(arr, dst_rank, axis=1).ravel()
        phases = (uniform_phase(src, dst, size / n),)
    return Traffic("all_to_all", "direct", n, count, size, factor, phases)

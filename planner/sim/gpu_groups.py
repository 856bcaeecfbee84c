"""Where parallel groups of GPUs sit on the machine: rows of GPU ids, one row per group.

GPU ``g`` lives on node ``g // gpus_per_node`` with local index ``g % gpus_per_node``, its rail,
and in scale-up domain ``g // domain_gpus`` (consecutive ids, the last domain possibly partial).
The collectives (``planner.sim.collectives``) run on the groups placed here.
"""

from __future__ import annotations

import numpy as np

from planner.sim.traffic import IntArray


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

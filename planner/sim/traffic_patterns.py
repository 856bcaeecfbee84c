"""Synthetic traffic patterns over the whole cluster, and point-to-point transfers.

Patterns are not collectives: ``size_bytes`` is what each sending GPU sends, the algorithm is
``"pattern"`` (``"direct"`` for point-to-point) and ``busbw_factor = 1``.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from planner.sim.traffic import (
    IntArray,
    Traffic,
    check_flows,
    check_size,
    off_diagonal,
    uniform_phase,
)

#: Attempts at drawing a derangement by rejection; each succeeds with probability ~1/e, so 200
#: attempts all fail with probability below 1e-39.
_DERANGEMENT_ATTEMPTS = 200


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
    size = check_size(size_bytes)
    if src_arr.shape != dst_arr.shape:
        raise ValueError(f"src and dst differ in length: {src_arr.size} and {dst_arr.size}")
    check_flows(src_arr.size)
    phases = (uniform_phase(src_arr, dst_arr, size),) if src_arr.size else ()
    return Traffic("point_to_point", "direct", 2, int(src_arr.size), size, 1.0, phases)


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
    size = check_size(bytes_per_gpu)
    check_flows(gpus * (gpus - 1))
    src, dst = off_diagonal(gpus)
    phase = uniform_phase(src, dst, size / (gpus - 1))
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
    size = check_size(bytes_per_gpu)
    dst = random_derangement(gpus, np.random.default_rng(seed))
    phase = uniform_phase(np.arange(gpus, dtype=np.int64), dst, size)
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
    size = check_size(bytes_per_gpu)
    rng = np.random.default_rng(seed)
    receiver = int(rng.integers(gpus))
    others = rng.choice(gpus - 1, size=fan_in, replace=False).astype(np.int64)
    src = others + (others >= receiver)  # skip the receiver
    dst = np.full(fan_in, receiver, dtype=np.int64)
    phase = uniform_phase(src, dst, size)
    return Traffic("incast", "pattern", fan_in + 1, 1, size, 1.0, (phase,))

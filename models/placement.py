r"""Placing the jobs of a shared GPU cluster onto GPUs, by locality rule and policy.

Hierarchy. GPU ids 0..G-1 are grouped into nested locality domains, innermost first (node,
leaf, pod, .., cluster): level k's domains are consecutive runs of ``S_k`` ids, ``S_k`` divides
``S_{k+1}`` (equal sizes allowed) and the last level is the whole cluster. The span level of a
set of GPUs is the lowest level one of whose domains holds them all.

Rule. What a job of n GPUs may be given. No level: any n free GPUs. A level k, ``D = S_k``:
n <= D GPUs inside one domain of that level; n > D takes ``ceil(n / D)`` whole domains of that
level that are entirely free (the GPUs it does not use are its internal fragmentation), and
``contiguous`` asks for consecutive domains (ids, no wrap-around). Fabrics, by example:

* a Clos or a dragonfly: no rule (any GPUs talk to any at full bisection, or nearly);
* rail-only (Wang et al. 2023): the level of the scale-up (NVLink) domain;
* an OCS direct-connect fabric or a TPU-style pod: the level of the block or cube (any whole
  cubes, joined by circuits);
* a switch torus: a slice unit, contiguous.

Policies (``POLICIES``).

* ``first_fit``: the lexicographically smallest allocation: the lowest free ids (no rule); the
  first domain with n free GPUs and its lowest free ids; the lowest whole free domains, or the
  lowest run of consecutive ones.
* ``pack`` (topology-aware packing): the least span level possible; among the domains of that
  level that can host the job, the best fit (fewest free GPUs, ties by lowest id); inside it,
  recursively: the best-fit child that can take all that is left, else the child with the
  fewest free GPUs, whole, and on; a tie between domains of the span level goes to the one
  whose parent, then grandparent, has the fewest free GPUs. Whole domains are chosen the same way, counting the whole
  free domains a domain holds; contiguous runs: the least span, the best-fit domain of that
  level, then inside it the start of the shortest run of whole free domains that is long
  enough. Small jobs go into partly used nodes and leaves; large empty domains stay whole.

``place_jobs`` serves a queue first come, first served with backfill: a job that cannot be
placed is skipped and the later ones are tried. Counts in ``Placement`` are GPUs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

Policy = Literal["pack", "first_fit"]
#: Placement policies, in the order reports list them.
POLICIES: tuple[Policy, ...] = ("pack", "first_fit")
#: GPU of no job in ``Placement.job_of_gpu``.
IDLE = -1
#: Span level of a job not placed.
NOT_PLACED = -1

IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Hierarchy:
    """Nested locality domains over GPU ids 0..gpus-1.

    Level k's domains are consecutive runs of ``gpus_per_domain[k]`` ids; each level's size
    divides the next (so sizes never decrease; equal sizes are allowed); the last level is the
    whole cluster.
    """

    names: tuple[str, ...]
    """Innermost first, e.g. ("node", "leaf", "pod", "cluster")."""
    gpus_per_domain: tuple[int, ...]
    """E.g. (8, 32, 1024, 16384)."""

    def __post_init__(self) -> None:
        sizes = self.gpus_per_domain
        if not sizes or len(self.names) != len(sizes):
            raise ValueError(f"names and gpus_per_domain must be as long, not empty: {self}")
        if any(s < 1 for s in sizes):
            raise ValueError(f"gpus_per_domain must be positive, got {sizes}")
        if any(b % a for a, b in zip(sizes, sizes[1:], strict=False)):
            raise ValueError(f"each of gpus_per_domain must divide the next, got {sizes}")

    @property
    def gpus(self) -> int:
        """GPUs in the cluster (the last level's domain size)."""
        return self.gpus_per_domain[-1]

    @property
    def levels(self) -> int:
        """Number of levels."""
        return len(self.gpus_per_domain)

    def check_level(self, level: int) -> None:
        """ValueError unless ``level`` is one of this hierarchy's levels."""
        if not 0 <= level < self.levels:
            raise ValueError(f"level {level} is not in 0..{self.levels - 1} {self.names}")

    def domain_of(self, level: int, gpu_ids: npt.ArrayLike) -> IntArray:
        """The domain index at ``level`` of each GPU id."""
        self.check_level(level)
        return np.asarray(gpu_ids, dtype=np.int64) // self.gpus_per_domain[level]

    def span_level(self, gpu_ids: npt.ArrayLike) -> int:
        """The lowest level one of whose domains holds all the ids (not empty, in range)."""
        ids = np.asarray(gpu_ids, dtype=np.int64)
        if ids.size == 0 or ids.min() < 0 or ids.max() >= self.gpus:
            raise ValueError(f"span_level needs GPU ids in 0..{self.gpus - 1}, got {ids}")
        lo, hi = int(ids.min()), int(ids.max())
        return next(k for k, s in enumerate(self.gpus_per_domain) if lo // s == hi // s)


@dataclass(frozen=True)
class Rule:
    """What a job may be given.

    ``level`` None: any free GPUs. Otherwise, with ``D = gpus_per_domain[level]``: a job of
    n <= D GPUs lies inside one domain of that level; a job of n > D GPUs takes ceil(n / D)
    whole domains of that level that are entirely free (their unused GPUs are the job's internal
    fragmentation); ``contiguous``: those whole domains must be consecutive (a torus slice).
    """

    level: int | None = None
    contiguous: bool = False

    def __post_init__(self) -> None:
        if self.level is not None and self.level < 0:
            raise ValueError(f"rule level must be non-negative, got {self.level}")
        if self.contiguous and self.level is None:
            raise ValueError("a contiguous rule needs a level (the unit of the slice)")

    def allocated_gpus(self, n: int, hierarchy: Hierarchy) -> int:
        """GPUs a job of n takes: n, or ceil(n / D) D for n > D under a level."""
        if self.level is None:
            return n
        hierarchy.check_level(self.level)
        d = hierarchy.gpus_per_domain[self.level]
        return n if n <= d else math.ceil(n / d) * d


# --------------------------------------------------------------------------- one job


def _lowest(units: BoolArray, lo: int, hi: int, count: int) -> IntArray:
    """The lowest ``count`` available units among lo..hi-1."""
    return lo + np.flatnonzero(units[lo:hi])[:count].astype(np.int64)


def _pack(
    units: BoolArray,
    need: int,
    levels: Sequence[int],
    unit_gpus: int,
    free: BoolArray,
    h: Hierarchy,
) -> IntArray | None:
    """Unit ids by ``pack``: least span among ``levels``, best fit, filled recursively.

    A unit is a free GPU or an entirely free domain (``unit_gpus`` GPUs); ``caps[i]`` / ``keys[i]``
    count the units / free GPUs of each domain of ``levels[i]``, which holds ``per[i]`` units.
    """
    per = [h.gpus_per_domain[k] // unit_gpus for k in levels]
    caps = [units.reshape(-1, p).sum(axis=1) for p in per]
    keys = [free.reshape(-1, h.gpus_per_domain[k]).sum(axis=1) for k in levels]

    def fill(i: int, domain: int, need: int) -> list[IntArray]:
        """``need`` units of a domain of ``levels[i]``, best-fit child first (module docstring)."""
        if i == 0:
            return [_lowest(units, domain * per[0], (domain + 1) * per[0], need)]
        ratio, size = per[i] // per[i - 1], per[i - 1]
        lo = domain * ratio
        cap = caps[i - 1][lo : lo + ratio].copy()
        key = keys[i - 1][lo : lo + ratio]
        taken: list[IntArray] = []
        while need > 0:
            hosts = np.flatnonzero(cap >= need)
            if hosts.size:
                return [*taken, *fill(i - 1, lo + int(hosts[np.argmin(key[hosts])]), need)]
            some = np.flatnonzero(cap)
            c = int(some[np.argmin(key[some])])
            taken.append(_lowest(units, (lo + c) * size, (lo + c + 1) * size, int(cap[c])))
            need -= int(cap[c])
            cap[c] = 0
        return taken

    span = next((i for i, cap in enumerate(caps) if cap.max() >= need), None)
    if span is None:
        return None
    hosts = np.flatnonzero(caps[span] >= need)
    # Best fit; ties to the host whose parent, then grandparent, has the fewest free GPUs.
    span_gpus = h.gpus_per_domain[levels[span]]
    order = [keys[span][hosts]]
    for k in range(levels[span] + 1, h.levels):
        above = free.reshape(-1, h.gpus_per_domain[k]).sum(axis=1)
        order.append(above[hosts * span_gpus // h.gpus_per_domain[k]])
    pick = int(hosts[np.lexsort(tuple(reversed(order)))[0]])
    return np.concatenate(fill(span, pick, need))


def _runs(units: BoolArray, m: int) -> IntArray:
    """Starts of every window of m consecutive available units."""
    filled = np.concatenate(([0], np.cumsum(units, dtype=np.int64)))
    return np.flatnonzero(filled[m:] - filled[:-m] == m).astype(np.int64)


def _pack_contiguous(
    starts: IntArray, units: BoolArray, m: int, level: int, free: BoolArray, h: Hierarchy
) -> int:
    """The first unit of m consecutive whole free domains by ``pack`` (module docstring)."""
    d = h.gpus_per_domain[level]
    for k in range(level + 1, h.levels):  # the top level holds every window
        ratio = h.gpus_per_domain[k] // d
        inside = starts // ratio == (starts + m - 1) // ratio
        if inside.any():
            break
    domains = starts[inside] // ratio
    keys = free.reshape(-1, h.gpus_per_domain[k]).sum(axis=1)[domains]
    domain = int(domains[np.argmin(keys)])
    seg = units[domain * ratio : (domain + 1) * ratio].astype(np.int8)
    edges = np.diff(np.concatenate(([0], seg, [0])))
    begin, end = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
    fit = np.flatnonzero(end - begin >= m)
    return domain * ratio + int(begin[fit[np.argmin((end - begin)[fit])]])


def _check(free: BoolArray, n: int, hierarchy: Hierarchy, rule: Rule, policy: str) -> None:
    """ValueError naming what is wrong with a placement request."""
    if free.dtype != np.bool_ or free.shape != (hierarchy.gpus,):
        raise ValueError(
            f"free must be a bool array of {hierarchy.gpus} GPUs, got {free.dtype} {free.shape}"
        )
    if not 1 <= n <= hierarchy.gpus:
        raise ValueError(f"job size n must be in 1..{hierarchy.gpus} GPUs, got {n}")
    if rule.level is not None:
        hierarchy.check_level(rule.level)
    if policy not in POLICIES:
        raise ValueError(f"policy must be one of {POLICIES}, got {policy!r}")


def place(
    free: npt.ArrayLike, n: int, hierarchy: Hierarchy, rule: Rule, policy: Policy
) -> IntArray | None:
    """The GPU ids a job of n GPUs is given, or None if no placement meets the rule.

    Sorted int64 ids, ``rule.allocated_gpus(n, hierarchy)`` of them, all free; ``free`` (bool
    per GPU) is not changed. See the module docstring for the rule and the policies.
    """
    free = np.asarray(free)
    _check(free, n, hierarchy, rule, policy)
    top = hierarchy.levels - 1
    level = top if rule.level is None else rule.level
    d = hierarchy.gpus_per_domain[level]
    if n <= d:  # units are GPUs, inside one domain of ``level``
        if policy == "pack":
            ids = _pack(free, n, range(level + 1), 1, free, hierarchy)
        else:
            hosts = np.flatnonzero(free.reshape(-1, d).sum(axis=1) >= n)
            # the domain holds n free GPUs: the lowest n from its start lie inside it
            ids = _lowest(free, int(hosts[0]) * d, len(free), n) if hosts.size else None
        return None if ids is None else np.sort(ids)
    m = math.ceil(n / d)  # units are whole free domains of ``level``
    chosen: IntArray | None
    units = free.reshape(-1, d).sum(axis=1) == d
    if rule.contiguous:
        starts = _runs(units, m)
        if not starts.size:
            return None
        first = int(starts[0])
        if policy == "pack":
            first = _pack_contiguous(starts, units, m, level, free, hierarchy)
        chosen = first + np.arange(m, dtype=np.int64)
    elif policy == "pack":
        chosen = _pack(units, m, range(level + 1, top + 1), d, free, hierarchy)
    else:
        lowest = np.flatnonzero(units)[:m].astype(np.int64)
        chosen = lowest if lowest.size == m else None
    return (
        None
        if chosen is None
        else (np.sort(chosen)[:, None] * d + np.arange(d, dtype=np.int64)).ravel()
    )


# --------------------------------------------------------------------------- a queue of jobs


@dataclass(frozen=True)
class Placement:
    """A queue of jobs placed on the cluster; counts are GPUs."""

    job_of_gpu: IntArray
    """Job index per GPU, ``IDLE`` (-1) when no job holds it."""
    placed: BoolArray
    """Per job."""
    allocated_gpus: IntArray
    """Per job: GPUs held (size plus internal fragmentation); 0 if not placed."""
    span_level: IntArray
    """Per job: the lowest level one of whose domains holds its GPUs; -1 if not placed."""
    sizes_gpus: IntArray
    """Per job: GPUs asked for."""

    @property
    def used_gpus(self) -> int:
        """GPUs the placed jobs asked for."""
        return int(self.sizes_gpus[self.placed].sum())

    @property
    def internal_fragmentation_gpus(self) -> int:
        """GPUs held by placed jobs beyond their size (whole domains a job does not fill)."""
        return int((self.allocated_gpus - self.sizes_gpus)[self.placed].sum())

    @property
    def idle_gpus(self) -> int:
        """GPUs free at the end."""
        return int((self.job_of_gpu == IDLE).sum())

    @property
    def stranded_gpus(self) -> int:
        """GPUs idle only because no placement met a job's locality rule.

        min(idle, sum of the sizes of the jobs not placed that are no larger than idle).
        """
        idle = self.idle_gpus
        waiting = self.sizes_gpus[~self.placed]
        return min(idle, int(waiting[waiting <= idle].sum()))

    @property
    def fragmentation_gpus(self) -> int:
        """Internal fragmentation plus stranded GPUs."""
        return self.internal_fragmentation_gpus + self.stranded_gpus

    @property
    def utilisation(self) -> float:
        """Used GPUs over all the GPUs of the cluster."""
        return self.used_gpus / len(self.job_of_gpu)


def place_jobs(
    sizes_gpus: Sequence[int], hierarchy: Hierarchy, rule: Rule, policy: Policy
) -> Placement:
    """Place jobs in queue order, first come first served with backfill, on an empty cluster.

    Each job is placed if it can be (``place``), else skipped and the later ones are tried.
    """
    sizes = np.asarray(sizes_gpus, dtype=np.int64).reshape(-1)
    bad = np.flatnonzero((sizes < 1) | (sizes > hierarchy.gpus))
    if bad.size:
        raise ValueError(
            f"job {int(bad[0])} asks for {int(sizes[bad[0]])} GPUs, not in 1..{hierarchy.gpus}"
        )
    free = np.ones(hierarchy.gpus, dtype=bool)
    job_of_gpu = np.full(hierarchy.gpus, IDLE, dtype=np.int64)
    allocated = np.zeros(len(sizes), dtype=np.int64)
    span = np.full(len(sizes), NOT_PLACED, dtype=np.int64)
    for job, n in enumerate(sizes.tolist()):
        ids = place(free, n, hierarchy, rule, policy)
        if ids is None:
            continue
        free[ids] = False
        job_of_gpu[ids] = job
        allocated[job] = len(ids)
        span[job] = hierarchy.span_level(ids)
    return Placement(job_of_gpu, span != NOT_PLACED, allocated, span, sizes)

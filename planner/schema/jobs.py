"""An instance's [jobs]: the many jobs that share the cluster, and how they are placed.

A cluster of 10k GPUs and more runs many jobs at once, most of them far smaller than the
cluster (Kokolis et al., HPCA 2025, https://arxiv.org/abs/2410.21680, section IV: on Meta's
16k-GPU RSC-1 most jobs use one GPU or one node, yet jobs of 256 GPUs and more hold two thirds
of the GPU time). ``[jobs]`` gives the mix either as a distribution of job sizes with its source
(``sizes_gpus`` and ``gpu_share``: the share of the busy GPUs held by jobs of each size, which is
what a snapshot of a full cluster shows) or as an explicit queue of sizes; the placement
policies to compare; the routings the jobs' traffic is simulated under; and what a lost GPU-hour
is worth. ``planner.mix`` places the mix on each family's design and prices what it loses.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict

#: What a command that places a job mix says of an instance without one.
NO_JOBS = "jobs: the instance has no [jobs] section (a job mix and placement policies)"
#: How far the shares may sum from 1 (they are typed by hand, to a few digits).
SHARE_SUM_TOL = 1e-3
#: Largest number of sizes or queued jobs one mix lists.
MAX_SIZES = 64
MAX_QUEUE = 100_000
#: Most planes a candidate may be pinned to (``search.pin.planes``).
MAX_PLANES = 16

#: Placement policies (``models.placement``).
PlacementPolicy = Literal["pack", "first_fit"]
#: Routings the jobs' traffic is simulated under (``planner.sim.routing.Routing``).
MixRouting = Literal["ecmp", "spray"]
POLICIES: tuple[PlacementPolicy, ...] = ("pack", "first_fit")
ROUTINGS: tuple[MixRouting, ...] = ("ecmp", "spray")


class Jobs(Strict):
    """The job mix of a shared cluster and how it is placed (module docstring)."""

    sizes_gpus: list[int] | None = Field(None, min_length=1, max_length=MAX_SIZES)
    """Job sizes of the distribution, GPUs, ascending."""
    gpu_share: list[float] | None = Field(None, min_length=1, max_length=MAX_SIZES)
    """Share of the busy GPUs held by jobs of each size (one per size, summing to 1)."""
    source: str = Field("", max_length=2000)
    """Where the distribution is published (required with ``gpu_share``)."""
    queue: list[int] | None = Field(None, min_length=1, max_length=MAX_QUEUE)
    """Instead of a distribution: the jobs' sizes in the order they arrive."""
    load: float = Field(4.0, gt=1, le=100)
    """Sampled mix only: GPUs the queued jobs ask for, over the cluster's GPUs (above 1)."""
    seed: int = Field(0, ge=0, le=2**31 - 1)
    """Seed of the sampled mix (the same seed, the same jobs in the same order)."""
    policies: list[PlacementPolicy] = Field(
        default_factory=lambda: list(POLICIES), min_length=1, max_length=2
    )
    """Placement policies compared: topology-aware packing (``pack``) and first fit by GPU id."""
    routings: list[MixRouting] = Field(
        default_factory=lambda: list(ROUTINGS), min_length=1, max_length=2
    )
    """Routings the jobs' traffic is simulated under; the first one prices the slowdown."""
    all_reduce_bytes: float = Field(2.0**30, gt=0, le=2.0**40)
    """Each job's data-parallel all-reduce, bytes per rank (nccl-tests size): its traffic."""
    comm_fraction: float = Field(0.2, ge=0, lt=1)
    """Share of a job's step its all-reduce takes when the job runs alone: a slowdown s of the
    collective stretches the step to (1 - φ) + φ s."""
    gpu_usd_per_hour: float | None = Field(None, ge=0, le=1000)
    """Value of a GPU-hour lost to fragmentation or slowdown; none: the workload's GPU price."""
    oversubscription: list[float | list[float]] | None = Field(None, min_length=1, max_length=4)
    """Ratio caps to plan each family at, as candidates: each a ratio for every tier or one per
    tier, leaf first (as constraints.max_oversubscription takes them); none: the instance's."""
    planes: list[int] | None = Field(None, min_length=1, max_length=4)
    """Plane counts to plan each family at, as candidates (search.pin.planes); none: the
    search chooses."""

    @model_validator(mode="after")
    def _check(self) -> Jobs:
        given = (self.sizes_gpus is not None, self.queue is not None)
        if given[0] == given[1]:
            raise ValueError("give either sizes_gpus with gpu_share (a distribution) or queue")
        if self.sizes_gpus is not None:
            sizes, share = self.sizes_gpus, self.gpu_share
            if share is None or len(share) != len(sizes):
                raise ValueError(
                    f"gpu_share: one share per size ({len(sizes)}); got "
                    f"{'none' if share is None else len(share)}"
                )
            if any(s < 1 for s in sizes) or sizes != sorted(set(sizes)):
                raise ValueError(f"sizes_gpus {sizes}: positive, ascending, each once")
            if any(not 0 <= x <= 1 for x in share) or abs(sum(share) - 1) > SHARE_SUM_TOL:
                raise ValueError(
                    f"gpu_share sums to {sum(share):.4f}: each in [0, 1], summing to 1"
                )
            if not self.source.strip():
                raise ValueError("source: say where the distribution is published")
        elif self.gpu_share is not None:
            raise ValueError("gpu_share goes with sizes_gpus, not with queue")
        elif any(n < 1 for n in self.queue or []):
            raise ValueError("queue: every job needs at least one GPU")
        if any(not 1 <= n <= MAX_PLANES for n in self.planes or []):
            raise ValueError(f"planes {self.planes}: each from 1 to {MAX_PLANES}")
        if len(set(self.policies)) != len(self.policies):
            raise ValueError(f"policies {self.policies}: each at most once")
        if len(set(self.routings)) != len(self.routings):
            raise ValueError(f"routings {self.routings}: each at most once")
        return self

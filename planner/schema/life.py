"""An instance's [life]: the phases a cluster is built in, its generations, and what time costs.

A cluster grows in phases (Jupiter's OCS layer went in as 1/8, 1/4, 1/2, then all of it:
Poutievski et al., SIGCOMM 2022), mixes generations (blocks of different speeds side by side)
and refreshes old blocks while the rest keeps running. ``[life]`` lists the generations on offer
(oldest first), the phases (when, how many GPUs in all after it, which generation the added
GPUs are, how many old GPUs it refreshes, the prices then), the horizon and the discount rate,
and what disturbing the running cluster costs. ``planner.life`` plans it per family.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from planner.schema.instance_base import Family, Strict

#: What a command that plans a life says of an instance without one.
NO_LIFE = "life: the instance has no [life] section (phases, generations, horizon)"
#: Pattern of a generation's name (it labels rows of the phase table).
GENERATION_NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$"


class Generation(Strict):
    """A generation of blocks: the NIC and switches on offer while it is the newest."""

    name: str = Field(pattern=GENERATION_NAME_PATTERN)
    """Label of the generation (e.g. "400g", "800g")."""
    nic_gbps: int = Field(ge=10, le=6400)
    """Speed of a GPU's NIC in this generation; its blocks' links run at it."""
    nic: str | None = None
    """NIC model from the catalog for this generation; none: any NIC of that speed."""
    switch_models: list[str] | None = Field(None, min_length=1, max_length=256)
    """Switch models of this generation (catalog names); none: the instance's search.switch_models."""


class LifePhase(Strict):
    """One phase of the build: when, how big after it, and what it buys."""

    at_years: float = Field(ge=0, le=50)
    """When the phase is built, in years from the first (which is at 0)."""
    gpus: int = Field(ge=1, le=10_000_000)
    """GPUs installed after this phase, in all."""
    generation: str
    """Generation of the GPUs (and blocks) this phase adds or refreshes."""
    refresh_gpus: int = Field(0, ge=0, le=10_000_000)
    """GPUs of older generations replaced by this phase's generation (the oldest first)."""
    price_factor: float = Field(1.0, gt=0, le=10)
    """What the devices bought at this phase cost, as a share of the catalog's price."""


class Life(Strict):
    """The cluster's life: generations, phases, horizon, discounting and disruption's price."""

    generations: list[Generation] = Field(min_length=1, max_length=8)
    """Generations on offer, oldest first; a later one is never slower."""
    phases: list[LifePhase] = Field(min_length=1, max_length=16)
    """Phases in time order; the last one's GPUs are cluster.gpus."""
    horizon_years: float = Field(gt=0, le=50)
    """End of the life: energy is counted up to it."""
    discount_rate: float = Field(0.05, ge=0, le=1)
    """Yearly discount rate of money spent later (0: every year counts the same)."""
    gpu_hour_usd: float = Field(ge=0, le=1e4)
    """Price of a GPU-hour lost to disruption (an idle or drained GPU)."""
    gpu_hours_per_moved_link: float = Field(0.5, ge=0, le=1e4)
    """GPU-hours disturbed by re-cabling one link: the GPUs its traffic serves (about one in a
    non-blocking fabric) times the hours it is drained, moved and checked (default half an hour)."""
    gpu_hours_per_changed_circuit: float = Field(0.02, ge=0, le=1e4)
    """GPU-hours disturbed by reconfiguring one OCS circuit: one GPU's share for the minute or
    so its traffic is drained and restored (the mirrors switch in milliseconds)."""
    gpu_hours_per_refreshed_gpu: float = Field(24.0, ge=0, le=1e5)
    """GPU-hours lost per GPU whose block is replaced (drained for the swap; default one day)."""
    families: list[Family] | None = Field(None, min_length=1, max_length=8)
    """Families to plan the life for; none: search.families."""
    installed: str | None = Field(None, min_length=1, max_length=4096)
    """design.json of the fabric already standing when the life begins (written by an earlier
    ``solve``), read relative to the instance file. Its family's life grows from it: its blocks
    are of the first generation and its top layer is the state before the first phase; what it
    cost is not counted again."""

    @model_validator(mode="after")
    def _check(self) -> Life:
        names = [g.name for g in self.generations]
        if len(set(names)) != len(names):
            raise ValueError(f"generations: names must differ; got {names}")
        speeds = [g.nic_gbps for g in self.generations]
        if any(b < a for a, b in zip(speeds, speeds[1:], strict=False)):
            raise ValueError(f"generations: oldest first, never slower; got nic_gbps {speeds}")
        rank = {n: i for i, n in enumerate(names)}
        previous_at, previous_gpus, newest = -1.0, 0, -1
        by_generation = [0] * len(names)  # GPUs installed per generation
        for i, p in enumerate(self.phases):
            where = f"phases[{i}]"
            if p.generation not in rank:
                raise ValueError(f"{where}.generation: {p.generation!r} is not one of {names}")
            if p.at_years <= previous_at:
                raise ValueError(f"{where}.at_years: phases must be in time order, each later")
            if p.gpus < previous_gpus:
                raise ValueError(f"{where}.gpus: a cluster never shrinks ({previous_gpus} before)")
            if rank[p.generation] < newest:
                raise ValueError(f"{where}.generation: blocks added are never older than before")
            older = sum(by_generation[: rank[p.generation]])
            if p.refresh_gpus > older:
                raise ValueError(
                    f"{where}.refresh_gpus: only {older} GPUs of generations older than "
                    f"{p.generation!r} are installed"
                )
            left = p.refresh_gpus
            for g in range(rank[p.generation]):  # the oldest are replaced first
                taken = min(left, by_generation[g])
                by_generation[g] -= taken
                left -= taken
            by_generation[rank[p.generation]] += p.gpus - previous_gpus + p.refresh_gpus
            previous_at, previous_gpus = p.at_years, p.gpus
            newest = rank[p.generation]
        if self.phases[0].at_years != 0:
            raise ValueError("phases[0].at_years: the life's dates count from its first phase (0)")
        if self.phases[0].refresh_gpus:
            raise ValueError("phases[0].refresh_gpus: nothing is installed before the first phase")
        if self.horizon_years <= self.phases[-1].at_years:
            raise ValueError("horizon_years: the horizon comes after the last phase")
        return self

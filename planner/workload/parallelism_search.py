"""Choose the parallelism of a workload for a fabric: the layout that fits memory with the shortest step.

Pure functions. A layout is (T, P, D, E, b, v, recompute, ZeRO stage) with sequence parallelism
whenever T > 1 (in this model it sends the same bytes as the all-reduces it replaces and stores
less, so it never loses). The search enumerates, for G GPUs, a model of L layers, a heads, B
sequences a step and the bounds of ``[workload.search]`` (``ParallelismSearch``)::

    T | G,  T <= max_tensor (default: the scale-up domain),  T | a
    P | G / T,  P <= min(max_pipeline, L)
    D = G / (T P),  D | B                        (each replica runs whole sequences)
    n | T D when P > 1                           (a stage is whole nodes of n GPUs, as the
                                                  simulator places stages)
    E | D,  E | experts                          (E = 1 for a dense model)
    b in bounds,  b | B / D,  m = B / (b D),  m >= P when P > 1 (the pipeline fills)
    v in bounds,  v = 1 or (P > 1 and P v <= L and P | m: Megatron-LM's interleaved
                  schedule runs the microbatches in groups of P)
    ZeRO stage, recompute in bounds

and keeps those whose memory (``planner.schema.workload.memory_per_gpu``) fits
``gpu.memory_gib``. Each kept layout is timed by the step model (``planner.workload.step``) with
the analytic collective times of ``planner.workload.analytic`` (bytes on the wire over the
bandwidth at the collective's placement, plus a latency a call); the best minimises

    T_step = T_comp (1 + (P - 1) / (v m)) + E

(ties: less memory, then the smaller T, P, v, ZeRO stage and recomputation, in that order).
The full simulator then verifies the chosen layout only (it simulates the chosen workload's
traffic). Pruning: only the lightest recomputation mode that fits is timed (a heavier one sends
the same traffic and executes at least as many FLOPs), and the memory check runs before any
timing, so only fitting layouts are timed.

The search reads a deadline (``planner.deadline``, the command's): when it passes, the
enumeration stops, the best layout timed so far is kept, and the choice says what was cut
(``Choice.note``); when it passes before any layout was timed, the given layout stands.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import polars as pl

from planner.deadline import NO_DEADLINE, Deadline, DeadlineExpired, Watch, watch
from planner.schema.instance import Instance
from planner.schema.workload import (
    BYTES_PER_GIB,
    RECOMPUTE_MODES,
    Parallelism,
    ParallelismSearch,
    Recompute,
    Workload,
    ZeroStage,
    memory_per_gpu,
)
from planner.workload.analytic import Bandwidths, analytic_times, bandwidths
from planner.workload.iteration import flops_per_gpu
from planner.workload.step import StepTime, step_time

#: Recomputation modes, lightest first.
RECOMPUTE_ORDER = RECOMPUTE_MODES
TERA = 1e12


def divisors(n: int) -> list[int]:
    """The divisors of n, ascending."""
    small = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return sorted(set(small + [n // k for k in small]))


@dataclass(frozen=True)
class Layout:
    """One candidate layout: its degrees and settings (sequence parallel when tensor > 1)."""

    tensor: int
    pipeline: int
    data: int
    expert: int
    micro_batch_sequences: int
    virtual_stages: int
    zero_stage: ZeroStage
    recompute: Recompute


def with_layout(w: Workload, layout: Layout) -> Workload:
    """``w`` with the layout's parallelism, microbatch and recomputation (validated)."""
    par = w.parallelism.model_copy(
        update={
            "tensor": layout.tensor,
            "pipeline": layout.pipeline,
            "data": layout.data,
            "expert": layout.expert,
            "virtual_stages": layout.virtual_stages,
            "zero_stage": layout.zero_stage,
            "sequence_parallel": layout.tensor > 1,
        }
    )
    data: dict[str, Any] = w.model_dump(exclude={"parallelism", "search"})
    data |= {
        "parallelism": par.model_dump(),
        "micro_batch_sequences": layout.micro_batch_sequences,
        "recompute": layout.recompute,
    }
    return Workload.model_validate(data)


def _fast(w: Workload, layout: Layout) -> Workload:
    """``with_layout`` without validation: for timing candidates already checked here."""
    par = Parallelism.model_construct(
        tensor=layout.tensor,
        pipeline=layout.pipeline,
        data=layout.data,
        expert=layout.expert,
        virtual_stages=layout.virtual_stages,
        sequence_parallel=layout.tensor > 1,
        zero_stage=layout.zero_stage,
    )
    return w.model_copy(
        update={
            "parallelism": par,
            "micro_batch_sequences": layout.micro_batch_sequences,
            "recompute": layout.recompute,
            "search": None,
        }
    )


def layouts(
    w: Workload, gpus: int, domain_gpus: int, node_gpus: int = 1, inside: Watch | None = None
) -> Iterator[Layout]:
    """Every layout of the bounds that fits the GPU's memory (the module docstring's sets).

    For each degree and setting only the lightest recomputation mode that fits is yielded: a
    heavier one sends the same traffic and executes at least as many FLOPs, so it is never
    faster (``tests/workload/test_parallelism_search.py`` checks the optimum against brute force).
    ``inside``: the watch on a deadline, checked before every memory check (raises
    ``planner.deadline.DeadlineExpired``), so that layouts that do not fit cannot run it out
    unseen either.
    """
    bounds = w.search or ParallelismSearch()
    model = w.spec
    assert w.gpu.memory_gib is not None, "the search needs gpu.memory_gib (schema rule)"
    capacity = w.gpu.memory_gib * BYTES_PER_GIB
    batch = model.global_batch_sequences
    max_t = bounds.max_tensor or domain_gpus
    max_p = min(bounds.max_pipeline or model.layers, model.layers)
    modes = [r for r in RECOMPUTE_ORDER if r in bounds.recompute]
    for t in divisors(gpus):
        if t > max_t or model.heads % t:
            continue
        for p in divisors(gpus // t):
            d = gpus // (t * p)
            if p > max_p or batch % d or (p > 1 and (t * d) % node_gpus):
                continue
            experts = (
                [e for e in divisors(d) if model.experts % e == 0] if model.moe_layers else [1]
            )
            for e in experts:
                for b in sorted(set(bounds.micro_batch_sequences)):
                    if (batch // d) % b:
                        continue
                    m = batch // (d * b)
                    if p > 1 and m < p:
                        continue  # fewer microbatches than stages: the pipeline never fills
                    for v in sorted(set(bounds.virtual_stages)):
                        if v > 1 and (p == 1 or p * v > model.layers or m % p):
                            continue
                        for z in sorted(set(bounds.zero_stages)):
                            if inside is not None:
                                inside.check()
                            par = Parallelism.model_construct(
                                tensor=t,
                                pipeline=p,
                                data=d,
                                expert=e,
                                virtual_stages=v,
                                sequence_parallel=t > 1,
                                zero_stage=z,
                            )
                            for r in modes:
                                if memory_per_gpu(model, par, b, m, r).total_bytes <= capacity:
                                    yield Layout(t, p, d, e, b, v, z, r)
                                    break


@dataclass(frozen=True)
class SearchResult:
    """The best layout, its workload and step, and how many layouts were timed."""

    layout: Layout
    workload: Workload
    step: StepTime
    timed: int
    """Layouts that fit memory and were timed."""
    cut: bool = False
    """The deadline passed before every layout was timed: the best of those timed."""


def _key(layout: Layout, step: StepTime, memory_bytes: float) -> tuple[Any, ...]:
    return (
        step.step_s,
        memory_bytes,
        layout.tensor,
        layout.pipeline,
        layout.virtual_stages,
        layout.zero_stage,
        RECOMPUTE_ORDER.index(layout.recompute),
        layout.micro_batch_sequences,
        layout.expert,
    )


def search(
    w: Workload,
    gpus: int,
    bw: Bandwidths,
    node_gpus: int = 1,
    deadline: Deadline = NO_DEADLINE,
) -> SearchResult | None:
    """The layout with the shortest analytic step that fits memory; None when none fits.

    ``node_gpus``: GPUs a node, so that pipeline stages are whole nodes (``layouts``).
    ``deadline``: when it passes, the best layout timed so far (``SearchResult.cut``); None
    when it passed before any was timed (``searched`` tells that apart from none fitting).
    """
    return searched(w, gpus, bw, node_gpus, deadline)[0]


def searched(
    w: Workload,
    gpus: int,
    bw: Bandwidths,
    node_gpus: int = 1,
    deadline: Deadline = NO_DEADLINE,
) -> tuple[SearchResult | None, bool]:
    """``search``, and whether the deadline cut it (before or after a layout was timed)."""
    best: tuple[tuple[Any, ...], Layout, StepTime] | None = None
    timed = 0
    inside = watch(deadline)
    cut = False
    try:
        if deadline.expired:
            raise DeadlineExpired("the time limit passed before the parallelism search")
        for layout in layouts(w, gpus, bw.domain_gpus, node_gpus, inside):
            candidate = _fast(w, layout)
            step = step_time(candidate, analytic_times(candidate, bw))
            assert step is not None, "every analytic time is known"
            timed += 1
            key = _key(layout, step, candidate.memory().total_bytes)
            if best is None or key < best[0]:
                best = (key, layout, step)
            inside.check()
    except DeadlineExpired:
        cut = True
    if best is None:
        return None, cut
    _, layout, step = best
    return SearchResult(layout, with_layout(w, layout), step, timed, cut), cut


#: Columns of the choice table (Narayanan et al. 2021 Table 1 style, one row per layout).
CHOICE_SCHEMA: dict[str, Any] = {
    "layout": pl.Utf8,
    "tensor": pl.Int64,
    "pipeline": pl.Int64,
    "data": pl.Int64,
    "expert": pl.Int64,
    "micro_batch_sequences": pl.Int64,
    "virtual_stages": pl.Int64,
    "microbatches": pl.Int64,
    "zero_stage": pl.Int64,
    "recompute": pl.Utf8,
    "memory_gib": pl.Float64,
    "bubble_fraction": pl.Float64,
    "exposed_comm_s": pl.Float64,
    "step_s": pl.Float64,
    "tokens_per_gpu_per_s": pl.Float64,
    "tflops_per_gpu": pl.Float64,
    "mfu": pl.Float64,
}


def analytic_step(w: Workload, bw: Bandwidths) -> StepTime:
    """The step of ``w`` with analytic collective times."""
    step = step_time(w, analytic_times(w, bw))
    assert step is not None, "every analytic time is known"
    return step


def choice_row(label: str, w: Workload, step: StepTime) -> dict[str, Any]:
    """One row of the choice table: the layout in Megatron's terms and its step.

    ``tflops_per_gpu`` counts the model's 6 N_a FLOPs per token (not the recomputed ones):
    6 N_a B s / (G T_step); ``mfu`` is the same over the GPU's peak.
    """
    par = w.parallelism
    return {
        "layout": label,
        "tensor": par.tensor,
        "pipeline": par.pipeline,
        "data": par.data,
        "expert": par.expert,
        "micro_batch_sequences": w.micro_batch_sequences,
        "virtual_stages": par.virtual_stages,
        "microbatches": w.microbatches,
        "zero_stage": par.zero_stage,
        "recompute": w.recompute,
        "memory_gib": w.memory().total_bytes / BYTES_PER_GIB,
        "bubble_fraction": step.bubble_fraction,
        "exposed_comm_s": step.exposed_comm_s,
        "step_s": step.step_s,
        "tokens_per_gpu_per_s": step.tokens_per_s / par.gpus,
        "tflops_per_gpu": flops_per_gpu(w) / step.step_s / TERA,
        "mfu": step.mfu,
    }


@dataclass(frozen=True)
class Choice:
    """What ``choose`` chose: the workload to plan with, the table, and what a deadline cut."""

    workload: Workload
    """The chosen layout's workload, or the given one when none was chosen; its ``search``
    is None either way (the choice is made once, and every later step reads it)."""
    table: pl.DataFrame
    """The given layout's row, and the chosen one's when there is one (``CHOICE_SCHEMA``)."""
    note: str | None = None
    """What the deadline cut, in a user's words (None: the search ran whole)."""
    timed: int = 0
    """Layouts that fit memory and were timed."""

    def label(self) -> str:
        """The choice in a progress line: the layout chosen, of how many timed."""
        par = self.workload.parallelism
        layout = f"tensor {par.tensor}, pipeline {par.pipeline}, data {par.data}"
        if self.timed == 0:
            return f"the given layout stands ({layout})"
        cut = ", cut by the time limit" if self.note else ""
        return f"{layout}, the best of {self.timed:,} layouts timed{cut}"


def choose(
    w: Workload, bw: Bandwidths, node_gpus: int = 1, deadline: Deadline = NO_DEADLINE
) -> Choice:
    """``choose_parallelism`` within a deadline: the best layout timed before it passed.

    A search the deadline cut keeps the best layout it timed (the note says how many it
    timed); one cut before it timed any leaves the given layout (the note says so).
    """
    if w.gpu.memory_gib is None:
        raise ValueError("the parallelism search needs gpu.memory_gib")
    gpus = w.parallelism.gpus
    rows = [choice_row("given", w, analytic_step(w, bw))]
    found, cut = searched(w, gpus, bw, node_gpus, deadline)
    note = None
    if found is None:
        if cut:
            note = (
                "the parallelism search ([workload.search]) was cut before it timed any "
                "layout: the given parallelism is planned and verified"
            )
        table = pl.DataFrame(rows, schema=CHOICE_SCHEMA)
        return Choice(w.model_copy(update={"search": None}), table, note)
    if cut:
        note = (
            f"the parallelism search ([workload.search]) was cut after timing {found.timed:,} "
            "layouts that fit memory: the best of them is planned and verified, and a layout "
            "it did not reach may be faster"
        )
    rows.append(choice_row("chosen", found.workload, found.step))
    return Choice(found.workload, pl.DataFrame(rows, schema=CHOICE_SCHEMA), note, found.timed)


def choose_parallelism(
    w: Workload, bw: Bandwidths, node_gpus: int = 1
) -> tuple[Workload, pl.DataFrame]:
    """The searched layout for ``w`` on bandwidths ``bw``, and the table setting it beside ``w``'s.

    The table has the given layout (``given``: the published or current one) and the chosen
    one (``chosen``), both timed by the same analytic model. Without a fitting layout, ``w`` is
    returned unchanged with its row only.

    Raises
    ------
    ValueError
        If ``w`` has no ``gpu.memory_gib`` (the search keeps only layouts that fit memory).
    """
    if w.gpu.memory_gib is None:
        raise ValueError("the parallelism search needs gpu.memory_gib")
    gpus = w.parallelism.gpus
    rows = [choice_row("given", w, analytic_step(w, bw))]
    found = search(w, gpus, bw, node_gpus)
    if found is None:
        return w, pl.DataFrame(rows, schema=CHOICE_SCHEMA)
    rows.append(choice_row("chosen", found.workload, found.step))
    return found.workload, pl.DataFrame(rows, schema=CHOICE_SCHEMA)


def instance_bandwidths(inst: Instance) -> Bandwidths:
    """The bandwidths the search times collectives with, from the instance's cluster.

    Scale-up: ``cluster.scale_up.gbps_per_gpu`` inside domains of ``cluster.scale_up.gpus``;
    fabric: ``cluster.nic_gbps`` / the largest ``constraints.max_oversubscription`` (the most
    oversubscribed design the planner may choose); latency: ``[workload.search] latency_s``.
    """
    w = inst.workload
    latency = w.search.latency_s if w is not None and w.search is not None else None
    cluster = inst.cluster
    return bandwidths(
        cluster.scale_up.gpus,
        cluster.scale_up.gbps_per_gpu,
        cluster.nic_gbps,
        inst.constraints.max_oversubscription,
        **({} if latency is None else {"latency_s": latency}),
    )


def with_chosen_parallelism(inst: Instance) -> Instance:
    """``inst`` with its workload's searched layout when ``[workload.search]`` asks for one.

    Unchanged without a workload, without a search, or when no layout fits (the given one
    then stands, and has passed its own memory check).
    """
    w = inst.workload
    if w is None or w.search is None:
        return inst
    found = search(w, w.parallelism.gpus, instance_bandwidths(inst), inst.cluster.gpus_per_node)
    if found is None:
        return inst
    return inst.model_copy(update={"workload": found.workload})

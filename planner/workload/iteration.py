"""The collectives and compute of one training iteration, from a workload.

Pure functions of a :class:`~planner.schema.workload.Workload`. Notation: N total and N_a active
parameters, D_w dense and X expert weights (N = D_w + X), L layers and L_moe MoE layers, h
hidden size, s sequence length, b microbatch sequences, B global batch sequences; T, P, D, E the
tensor, pipeline, data and expert degrees; m = B / (b D) microbatches per pipeline per iteration;
L_s = ceil(L / P) and L_moe,s = ceil(L_moe / P) the layers of the busiest stage; a and g the bytes
of an activation and of a gradient. Ranks follow Megatron-LM's order (tensor fastest, then data,
then pipeline): rank = t + T (d + D p).

Sizes follow the nccl-tests convention (``planner.sim.traffic``): ``size_bytes`` is the size S per
rank of one call (the whole buffer for all-reduce, reduce-scatter and all-gather; everything a
rank sends, itself included, for all-to-all; the message for point-to-point).
``total_bytes`` = S x calls, per GPU per iteration, in the same convention (not wire bytes:
a ring all-reduce puts 2 (n-1)/n x S on each GPU's wire).

Sources: Narayanan et al. 2021 (https://arxiv.org/abs/2104.04473) for TP, PP and DP volumes and
the 6 N tokens FLOPs; Korthikanti et al. 2022 (https://arxiv.org/abs/2205.05198) for sequence
parallelism; Rajbhandari et al. 2020 (ZeRO, https://arxiv.org/abs/1910.02054) for sharded data
parallelism; Lepikhin et al. 2020 (GShard, https://arxiv.org/abs/2006.16668) for the MoE
all-to-all. Full activation recomputation reruns the forward pass (8 N instead of 6 N FLOPs per
token, Korthikanti et al. 2022 section 5); the interleaved schedule (v model chunks a stage,
Narayanan 2021 section 2.2.2) sends v times as often between stages. Not counted: context
parallelism, embedding-table imbalance between stages and the attention term of the FLOPs
(which is also what selective recomputation recomputes, so it costs nothing here).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.schema.verify import GroupsName, TrafficKind, TrafficSpec
from planner.schema.workload import Message, Workload

#: FLOPs per parameter per token of one training step: 2 forward + 4 backward (Narayanan 2021).
FLOPS_PER_PARAMETER_TOKEN = 6.0
#: FLOPs per parameter per token the GPUs execute, by recomputation: full recomputation reruns
#: the 2 N forward FLOPs (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198, section 5);
#: selective recomputation reruns only the attention core, outside the 6 N count.
EXECUTED_FLOPS_PER_PARAMETER_TOKEN = {"none": 6.0, "selective": 6.0, "full": 8.0}
#: TP collectives per layer per microbatch: 2 forward (after attention, after the MLP) + 2 backward.
TP_CALLS_PER_LAYER = 4

#: The traffic kind of each collective, by its name after the dimension (``dp_all_reduce``).
KINDS: dict[str, TrafficKind] = {
    "all_reduce": "all_reduce_ring",
    "reduce_scatter": "reduce_scatter",
    "all_gather": "all_gather",
    "send": "point_to_point",
    "dispatch": "all_to_all",
    "combine": "all_to_all",
}


def kind_of(name: str) -> TrafficKind:
    """The ``[verify]`` traffic kind of a collective, from its name (``tp_all_reduce``)."""
    return KINDS[name.partition("_")[2]]


@dataclass(frozen=True)
class Collective:
    """One collective of an iteration, as each GPU of its groups sees it.

    Attributes
    ----------
    name
        ``dp_all_reduce``, ``dp_reduce_scatter``, ``dp_all_gather``, ``edp_*`` (expert weights over
        the expert-data-parallel group), ``tp_all_reduce``, ``tp_reduce_scatter``,
        ``tp_all_gather``, ``pp_send``, ``ep_dispatch`` or ``ep_combine``.
    kind
        The ``[verify]`` traffic kind that simulates one call.
    group_size
        GPUs per group (2 for a point-to-point pair).
    groups
        Groups in the cluster (pairs of neighbouring stages for ``pp_send``).
    stride_gpus
        GPU ids between consecutive members of a group (1 for tensor parallel, T for data).
    size_bytes
        nccl-tests size per rank of one call.
    calls
        Calls per iteration (on the busiest stage).
    placement
        Where the groups sit on the two-level machine (``TrafficSpec.groups``).
    size_from
        The workload fields ``size_bytes`` is computed from, as a formula (for messages).
    """

    name: str
    kind: TrafficKind
    group_size: int
    groups: int
    stride_gpus: int
    size_bytes: float
    calls: int
    placement: GroupsName
    size_from: str = ""

    @property
    def total_bytes(self) -> float:
        """Bytes per GPU per iteration in the size convention: S x calls."""
        return self.size_bytes * self.calls


def placement(stride_gpus: int, group_size: int, domain_gpus: int) -> GroupsName:
    """Where a group of ``group_size`` GPUs ``stride_gpus`` apart sits, domains of ``domain_gpus``.

    - inside one scale-up domain (stride x size divides the domain): ``tensor_parallel``; a group
      of stride > 1 inside a domain is simulated as consecutive GPUs, the same to the fabric
      (neither touches a NIC);
    - one member per domain at the same index (the stride a multiple of the domain):
      ``same_rail``; members k domains apart are simulated in consecutive domains, the same rail;
    - otherwise (several members per domain, spanning domains): ``consecutive``.
    """
    span = stride_gpus * group_size
    if span <= domain_gpus and domain_gpus % span == 0:
        return "tensor_parallel"
    if stride_gpus % domain_gpus == 0:
        return "same_rail"
    return "consecutive"


def _sharded(
    message: Message | None, group: int, stride: int, count: int, w: Workload, dom: int
) -> list[Collective]:
    """Gradient synchronisation of one weight shard over its data-parallel group.

    ZeRO 0: one all-reduce of S = weights x g per iteration. ZeRO 1 and 2: one reduce-scatter of
    the gradients and one all-gather of the updated parameters, each of S (the same bytes as the
    all-reduce). ZeRO 3 (FSDP): layer by layer, as FSDP wraps each transformer layer in its own
    unit: per microbatch and per layer of the stage, an all-gather of the layer's parameters
    before its forward and its backward pass (2 m L_s calls) and a reduce-scatter of its
    gradients (m L_s calls), each of S / L_s. The bytes are those of whole-stage calls; the
    calls, each paying its latency, are L_s times as many. Parameters travel at g.
    """
    if message is None:  # a group of one rank
        return []
    where = placement(stride, group, dom)
    zero, m = w.parallelism.zero_stage, w.microbatches
    size, size_from, per_layer = message.size_bytes, message.size_from, 1
    if zero == 3:
        per_layer = w.layers_per_stage
        size, size_from = size / per_layer, f"({size_from}) / L_s"
    gathers, scatters = (2 * m * per_layer, m * per_layer) if zero == 3 else (1, 1)
    calls = {"all_reduce_ring": 1, "reduce_scatter": scatters, "all_gather": gathers}
    return [
        Collective(
            name,
            kind_of(name),
            group,
            count,
            stride,
            size,
            calls[kind_of(name)],
            where,
            size_from,
        )
        for name in message.collectives
    ]


def data_parallel(w: Workload, domain_gpus: int) -> list[Collective]:
    """Gradients of the dense weights over D ranks, of the expert weights over D / E ranks.

    dense:   S = D_w / (T P) x g,      group D,      stride T
    experts: S = X / (T P E) x g,     group D / E,  stride T E   (expert weights split by E and T)
    """
    par, messages = w.parallelism, w.messages()
    t, p, d, e = par.tensor, par.pipeline, par.data, par.expert
    dense = _sharded(messages.get("dp"), d, t, t * p, w, domain_gpus)
    experts = _sharded(messages.get("edp"), d // e, t * e, t * p * e, w, domain_gpus)
    return dense + experts


def tensor_parallel(w: Workload, domain_gpus: int) -> list[Collective]:
    """Layer activations over the T ranks of a tensor group, 4 per layer per microbatch.

    S = b s h a; calls = 4 L_s m: all-reduces (2 forward, 2 backward per layer), or with sequence
    parallelism (Korthikanti 2022) each all-reduce becomes an all-gather and a reduce-scatter of
    the same S, so 4 L_s m of each.
    """
    par, message = w.parallelism, w.messages().get("tp")
    if message is None:
        return []
    t = par.tensor
    calls = TP_CALLS_PER_LAYER * w.layers_per_stage * w.microbatches
    where = placement(1, t, domain_gpus)
    count = par.data * par.pipeline
    size, size_from = message.size_bytes, message.size_from
    return [
        Collective(name, kind_of(name), t, count, 1, size, calls, where, size_from)
        for name in message.collectives
    ]


def pipeline_parallel(w: Workload, domain_gpus: int) -> list[Collective]:
    """Activations forward and gradients backward between neighbouring stages.

    S = b s h a / T (each of the T ranks of a stage sends its 1/T: Megatron's scatter-gather
    optimisation, Narayanan 2021 section 4.1); calls = 2 m v on a middle stage (m activations to
    the next stage, m gradients to the previous one, for each of its v model chunks: the
    interleaved schedule's extra communication, Narayanan 2021 section 2.2.2). Pairs:
    (P - 1) T D, members T D apart.
    """
    par, message = w.parallelism, w.messages().get("pp")
    if message is None:
        return []
    p, t, d = par.pipeline, par.tensor, par.data
    stride = t * d
    where = placement(stride, 2, domain_gpus)
    return [
        Collective(
            name="pp_send",
            kind="point_to_point",
            group_size=2,
            groups=(p - 1) * stride,
            stride_gpus=stride,
            size_bytes=message.size_bytes,
            calls=2 * w.microbatches * par.virtual_stages,
            placement=where,
            size_from=message.size_from,
        )
    ]


def expert_parallel(w: Workload, domain_gpus: int) -> list[Collective]:
    """Token dispatch to the experts and combination back, all-to-all over E ranks per MoE layer.

    A rank routes t = b s / T tokens with sequence parallelism (b s without: each tensor rank holds
    every token); S = t k c h a (k: top_k, c: capacity factor). Per MoE layer per microbatch:
    dispatch and combine forward, and their mirror images backward, so 2 L_moe,s m calls of each.
    Groups: T P D / E, members T apart (E consecutive data ranks).
    """
    par, message = w.parallelism, w.messages().get("ep")
    if message is None:
        return []
    e, t = par.expert, par.tensor
    calls = 2 * w.moe_layers_per_stage * w.microbatches
    count = t * par.pipeline * (par.data // e)
    where = placement(t, e, domain_gpus)
    size, size_from = message.size_bytes, message.size_from
    return [
        Collective(name, kind_of(name), e, count, t, size, calls, where, size_from)
        for name in message.collectives
    ]


#: The parallel dimensions whose collectives make up an iteration, in report order.
DIMENSIONS = (data_parallel, tensor_parallel, pipeline_parallel, expert_parallel)


def collectives(w: Workload, domain_gpus: int) -> list[Collective]:
    """Every collective of one iteration, on a machine of scale-up domains of ``domain_gpus``."""
    return [c for dimension in DIMENSIONS for c in dimension(w, domain_gpus)]


def flops_per_gpu(w: Workload) -> float:
    """Model FLOPs of one iteration on one GPU: 6 N_a B s / (T P D) (attention term omitted).

    The model's FLOPs, whatever is recomputed: the numerator of MFU.
    """
    model = w.spec
    total = FLOPS_PER_PARAMETER_TOKEN * model.active * model.global_batch_tokens
    return total / w.parallelism.gpus


def executed_flops_per_gpu(w: Workload) -> float:
    """FLOPs one GPU executes per iteration: 6 N_a B s / G, or 8 N_a B s / G under full recompute."""
    factor = EXECUTED_FLOPS_PER_PARAMETER_TOKEN[w.recompute] / FLOPS_PER_PARAMETER_TOKEN
    return flops_per_gpu(w) * factor


def compute_time_s(w: Workload) -> float:
    """Compute time of one iteration: executed FLOPs per GPU / (peak FLOP/s x utilisation).

    ``utilisation`` is the achieved fraction of peak while computing (recomputed FLOPs included),
    so full recomputation takes 8/6 as long; the pipeline bubble is ``planner.workload.step``'s.
    """
    return executed_flops_per_gpu(w) / (w.gpu.peak_flops * w.gpu.utilisation)


def to_verify_traffic(rows: list[Collective], pipeline_stages: int) -> list[TrafficSpec]:
    """One ``[verify]`` traffic spec per collective: one call of it, at its size and placement.

    ``pp_send`` becomes ``point_to_point`` between ``pipeline_stages`` contiguous blocks of GPUs
    (GPU j of stage p to GPU j of p + 1), which is Megatron's order with the pipeline slowest.
    """
    specs = []
    for row in rows:
        if row.kind == "point_to_point":
            specs.append(
                TrafficSpec(
                    kind=row.kind, size_bytes=row.size_bytes, pipeline_stages=pipeline_stages
                )
            )
        else:
            specs.append(
                TrafficSpec(
                    kind=row.kind,
                    size_bytes=row.size_bytes,
                    groups=row.placement,
                    group_size=row.group_size,
                )
            )
    return specs

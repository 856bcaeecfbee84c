"""The ``[workload]`` section: what will be trained, how it is split over the GPUs, on what GPU.

A workload names a documented preset (``planner.schema.presets``) or gives its own ``[model]``;
``planner.workload.iteration`` turns it into the collectives of one training iteration, each
sending the message per call that :meth:`Workload.messages` sizes here. Rules between the model
and the parallelism, and the size of every message, are checked here; the rule that the parallel
degrees multiply to the cluster's GPUs is checked where the workload meets the cluster
(``planner.checks.check_workload``).

Memory per GPU is checked here too when the GPU gives ``memory_gib`` (:func:`memory_per_gpu`):
a layout whose weights, gradients, optimizer states and activations do not fit is refused with
the arithmetic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Annotated, Literal, get_args

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict
from planner.schema.presets import preset
from planner.schema.transformer import Model
from planner.schema.verify import TrafficSpec

#: Activation recomputation (Korthikanti et al. 2022, https://arxiv.org/abs/2205.05198): none,
#: selective (the attention core is recomputed in the backward pass), full (each layer's forward
#: pass is rerun from its stored input).
Recompute = Literal["none", "selective", "full"]

#: Bytes per parameter of mixed-precision Adam (Rajbhandari et al. 2020, ZeRO,
#: https://arxiv.org/abs/1910.02054, section 3.1): bf16 parameters (2) and gradients (2), and the
#: fp32 master weights, momentum and variance (4 + 4 + 4 = 12) of the optimizer.
PARAMETER_BYTES = 2.0
GRADIENT_BYTES = 2.0
OPTIMIZER_BYTES = 12.0
#: Bytes of an fp32 value (the loss computes the logits' softmax in fp32).
FP32_BYTES = 4.0
#: Activation bytes per layer over s b h (Korthikanti et al. 2022, section 4.1, equation 1):
#: 34 for the linear parts and 5 a s / h for the attention core's scores, softmax and dropout.
ACTIVATION_BYTES_LINEAR = 34.0
ACTIVATION_BYTES_ATTENTION = 5.0
#: Of the 34 linear bytes, those not split by tensor parallelism without sequence parallelism
#: (the layer norms' and dropouts' inputs: Korthikanti et al. 2022, equation 2: 10 + 24 / t).
ACTIVATION_BYTES_REPLICATED = 10.0
#: Bytes per s b h each layer keeps under full recomputation: its bf16 input (Korthikanti 2022).
ACTIVATION_BYTES_FULL_RECOMPUTE = 2.0
BYTES_PER_GIB = float(2**30)
#: Slowest GPU (peak FLOP/s) and lowest utilisation a workload may give. The step time divides
#: an iteration's FLOPs (at most 8 x 1e14 parameters x 1e15 tokens = 8e29, the model's caps) by
#: peak x utilisation, and the cost per token multiplies it by up to 4e6 GPUs at $1e4 an hour:
#: with the achieved rate at least 1e9 x 1e-3 = 1e6 FLOP/s every figure stays below 1e35, far
#: inside a float's range, where a rate of 1e-300 overflowed to inf. No accelerator that trains a
#: transformer is near either bound (an H100 is 989e12 at about 0.4).
MIN_PEAK_FLOPS = 1e9
MIN_UTILISATION = 1e-3
#: Most sequences in one microbatch (``Workload.micro_batch_sequences``'s cap).
MAX_MICRO_BATCH_SEQUENCES = 100_000
#: Most model chunks per pipeline stage (``Parallelism.virtual_stages``'s cap).
MAX_VIRTUAL_STAGES = 1024
#: One microbatch size the search tries: a whole number of sequences, at least one.
MicroBatchItem = Annotated[int, Field(ge=1, le=MAX_MICRO_BATCH_SEQUENCES)]
#: One interleaving degree the search tries: at least one model chunk per stage.
VirtualStagesItem = Annotated[int, Field(ge=1, le=MAX_VIRTUAL_STAGES)]

ZeroStage = Literal[0, 1, 2, 3]
#: Every recomputation mode and ZeRO stage, lightest first (the search's defaults).
RECOMPUTE_MODES: tuple[Recompute, ...] = ("none", "selective", "full")
ZERO_STAGES: tuple[ZeroStage, ...] = (0, 1, 2, 3)

#: Names of the documented presets in ``planner.schema.presets`` (a test keeps the two equal).
PresetName = Literal["gpt3-175b", "llama3.1-405b", "mixtral-8x7b", "kimi-k2-1t"]
PRESET_NAMES: tuple[str, ...] = get_args(PresetName)

#: Most bytes one simulated call of a collective may carry: the ``[verify]`` traffic's own cap
#: (``TrafficSpec.size_bytes``), which every collective of an iteration becomes.
MAX_MESSAGE_BYTES: float = next(
    float(m.le) for m in TrafficSpec.model_fields["size_bytes"].metadata if hasattr(m, "le")
)

#: The workload fields each message's size per call is computed from (``Message.size_from``).
DP_SIZE_FROM = (
    "the model's dense parameters / (parallelism.tensor x parallelism.pipeline) x "
    "model.gradient_bytes"
)
EDP_SIZE_FROM = (
    "the model's expert parameters / (parallelism.tensor x parallelism.pipeline x "
    "parallelism.expert) x model.gradient_bytes"
)
_ACTIVATIONS = (
    "micro_batch_sequences x model.sequence_length_tokens x model.hidden_size x "
    "model.activation_bytes"
)
TP_SIZE_FROM = _ACTIVATIONS
PP_SIZE_FROM = f"{_ACTIVATIONS} / parallelism.tensor"
EP_SIZE_FROM = (
    "micro_batch_sequences x model.sequence_length_tokens x model.top_k x "
    "model.capacity_factor x model.hidden_size x model.activation_bytes"
)
EP_SIZE_FROM_SP = (
    "micro_batch_sequences x model.sequence_length_tokens // parallelism.tensor (sequence "
    "parallel) x model.top_k x model.capacity_factor x model.hidden_size x model.activation_bytes"
)


@dataclass(frozen=True)
class Message:
    """What each call of one parallel dimension's collectives carries.

    Attributes
    ----------
    collectives
        The collectives that send it, in iteration order (``dp_all_reduce``, or
        ``dp_reduce_scatter`` then ``dp_all_gather``, ...): ``planner.workload.iteration`` adds
        their kind, calls and placement.
    size_bytes
        nccl-tests size per rank of one call (``planner.workload.iteration`` gives the convention).
    size_from
        The workload fields ``size_bytes`` is computed from, as a formula (for messages).
    """

    collectives: tuple[str, ...]
    size_bytes: float
    size_from: str


class Parallelism(Strict):
    """How the model is split over the GPUs (Megatron-LM order: tensor, then data, then pipeline).

    Rank r has tensor rank ``r % tensor``, data rank ``(r // tensor) % data`` and stage
    ``r // (tensor * data)``. Expert parallelism is carved out of data parallelism (the rule:
    ``expert`` divides ``data``): an expert-parallel group is ``expert`` consecutive data ranks.
    Expert weights are split by tensor parallelism too (expert tensor parallel = tensor).
    """

    tensor: int = Field(1, ge=1, le=1024)
    """Tensor-parallel degree T (GPUs sharing each layer's weights)."""
    pipeline: int = Field(1, ge=1, le=100_000)
    """Pipeline stages P."""
    data: int = Field(1, ge=1, le=4_000_000)
    """Data-parallel degree D (model replicas)."""
    expert: int = Field(1, ge=1, le=100_000)
    """Expert-parallel degree E (GPUs the experts of a layer are spread over); divides data."""
    virtual_stages: int = Field(1, ge=1, le=MAX_VIRTUAL_STAGES)
    """Model chunks per pipeline stage v (Narayanan et al. 2021, section 2.2.2): 1 is the 1F1B
    schedule (bubble (P - 1) / m); more is the interleaved schedule (bubble (P - 1) / (v m),
    v times the pipeline sends, (1 + (P - 1) / (P v)) times the first stage's activations)."""
    sequence_parallel: bool = False
    """Megatron sequence parallelism (Korthikanti et al. 2022): each tensor all-reduce becomes a
    reduce-scatter and an all-gather of the same size, and each tensor rank holds s / T tokens."""
    zero_stage: ZeroStage = 0
    """Sharded data parallelism (ZeRO): 0 all-reduces gradients; 1 and 2 reduce-scatter them and
    all-gather the updated parameters once per iteration; 3 (FSDP) all-gathers each layer's
    parameters before its forward and its backward pass and reduce-scatters its gradients, every
    microbatch (one call a layer, each paying its latency)."""

    @property
    def gpus(self) -> int:
        """GPUs the parallelism occupies: T x P x D."""
        return self.tensor * self.pipeline * self.data

    @model_validator(mode="after")
    def _check(self) -> Parallelism:
        if self.virtual_stages > 1 and self.pipeline == 1:
            raise ValueError(
                f"virtual_stages ({self.virtual_stages}) interleaves pipeline stages: give "
                "pipeline > 1, or leave virtual_stages at 1"
            )
        if self.data % self.expert:
            raise ValueError(
                f"expert ({self.expert}) must divide data ({self.data}): expert-parallel groups "
                "are carved out of the data-parallel replicas"
            )
        return self


class Gpu(Strict):
    """The accelerator: its peak rate, how much of it training reaches, and its price."""

    peak_flops: float = Field(ge=MIN_PEAK_FLOPS, le=1e18)
    """Peak dense FLOP/s at the training precision (H100 SXM bf16: 989e12, without sparsity)."""
    utilisation: float = Field(0.4, ge=MIN_UTILISATION, le=1)
    """Achieved / peak FLOP/s while the GPU computes (recomputed FLOPs included; the pipeline
    bubble and exposed communication excluded: ``planner.workload.step`` adds those, and its
    ``mfu`` is the whole step's). The same figure as a published MFU only for a run with neither."""
    price_usd_per_hour: float = Field(ge=0, le=1e4)
    """Price of one GPU for one hour, in US dollars (rented, or amortised with its power)."""
    memory_gib: float | None = Field(None, gt=0, le=1e6)
    """Memory (HBM) of one GPU in GiB, optional: with it a layout that does not fit is refused
    (:func:`memory_per_gpu`). The datasheets' GB are binary-sized stacks, taken as GiB: H100 SXM
    80 (5 x 16 GiB HBM3; nvidia-smi shows 81,559 MiB), H200 141, B200 180 (NVIDIA datasheets:
    https://www.nvidia.com/en-us/data-center/h100/, .../h200/, .../dgx-b200/)."""
    power_w: float | None = Field(None, gt=0, le=1e5)
    """Power of one GPU in watts (its board power, e.g. H100 SXM 700 W), optional: with it the
    report sets the GPUs' power beside the network's (``network_power_share``)."""


class ParallelismSearch(Strict):
    """Bounds of the parallelism search (``planner.workload.parallelism_search``).

    With a ``[workload.search]`` the planner chooses tensor, pipeline, data and expert degrees,
    the microbatch, the interleaving and the recomputation that fit the GPU's memory and give the
    shortest step on the cluster's bandwidths; the ``parallelism`` given stays the baseline the
    choice is reported beside (a published layout, or the one in use).
    """

    max_tensor: int | None = Field(None, ge=1, le=1024)
    """Largest tensor degree; default: the scale-up domain's GPUs (tensor stays inside it)."""
    max_pipeline: int | None = Field(None, ge=1, le=100_000)
    """Largest pipeline degree; default: the model's layers."""
    micro_batch_sequences: list[MicroBatchItem] = Field(
        default_factory=lambda: [1, 2, 4, 8], min_length=1, max_length=16
    )
    """Microbatch sizes b to try (each must divide the sequences of a data-parallel replica)."""
    virtual_stages: list[VirtualStagesItem] = Field(
        default_factory=lambda: [1, 2, 4, 8], min_length=1, max_length=16
    )
    """Interleaving degrees v to try (1: plain 1F1B)."""
    recompute: list[Recompute] = Field(default_factory=lambda: list(RECOMPUTE_MODES), min_length=1)
    """Recomputation modes to try."""
    zero_stages: list[ZeroStage] = Field(default_factory=lambda: list(ZERO_STAGES), min_length=1)
    """ZeRO stages to try."""
    latency_s: float = Field(10e-6, ge=0, le=1)
    """Latency of one step of a collective in the search's analytic model (NCCL's order of
    magnitude across nodes: ~10 us); a ring of n ranks pays it n - 1 times a pass."""


class Workload(Strict):
    """What the cluster trains: a preset or a model, its parallelism, the GPU and the microbatch."""

    preset: PresetName | None = None
    """A documented model (``planner.schema.presets``); give either this or ``model``."""
    model: Model | None = None
    """A model of your own; give either this or ``preset``."""
    parallelism: Parallelism = Field(default_factory=Parallelism)
    """Tensor, pipeline, data and expert degrees; T x P x D must equal cluster.gpus."""
    gpu: Gpu
    """The accelerator."""
    micro_batch_sequences: int = Field(1, ge=1, le=MAX_MICRO_BATCH_SEQUENCES)
    """Sequences per microbatch b; global batch = b x data x microbatches."""
    overlap_fraction: float = Field(0.0, ge=0, le=1)
    """Fraction of the overlappable communication time hidden under compute (0: none; 1: all of
    it). Data-parallel gradient synchronisation is overlappable; tensor- and pipeline-parallel
    traffic only with ``overlap_tensor_parallel`` / ``overlap_pipeline_parallel``."""
    overlap_tensor_parallel: bool = False
    """Tensor-parallel collectives may hide under the neighbouring matrix multiplies (MegaScale's
    decomposed all-gather / reduce-scatter, Jiang et al. 2024, https://arxiv.org/abs/2402.15627)."""
    overlap_pipeline_parallel: bool = False
    """Pipeline sends may hide under compute (MegaScale's decoupled send/receive in the
    interleaved schedule, https://arxiv.org/abs/2402.15627 section 3.3)."""
    recompute: Recompute = "none"
    """Activation recomputation: ``none``; ``selective`` (drops the 5 a s / h term of the stored
    activations, and recomputes only attention-core FLOPs, which the 6 N count leaves out);
    ``full`` (keeps 2 s b h bytes per layer and reruns the forward pass: 8 N instead of 6 N FLOPs
    per token)."""
    search: ParallelismSearch | None = None
    """Ask the planner to choose the parallelism (``[workload.search]``); needs
    ``gpu.memory_gib``."""
    published_mfu: float | None = Field(None, gt=0, le=1)
    """An MFU published for this run (e.g. the Llama 3 paper's 0.41), for comparison only: the
    report sets it beside the planner's own (the summary's ``mfu``, from the simulated step);
    it changes no figure."""

    @model_validator(mode="after")
    def _check(self) -> Workload:
        if (self.preset is None) == (self.model is None):
            raise ValueError("give exactly one of preset (a documented model) and model")
        model, par = self.spec, self.parallelism
        if par.pipeline > model.layers:
            raise ValueError(
                f"parallelism.pipeline ({par.pipeline}) exceeds the model's layers "
                f"({model.layers}): every stage holds at least one layer"
            )
        if model.experts % par.expert:
            raise ValueError(
                f"parallelism.expert ({par.expert}) must divide the model's experts "
                f"({model.experts}): each expert-parallel rank holds whole experts"
            )
        replicas = self.micro_batch_sequences * par.data
        if model.global_batch_sequences % replicas:
            raise ValueError(
                f"global_batch_sequences ({model.global_batch_sequences}) must be a multiple of "
                f"micro_batch_sequences x parallelism.data ({self.micro_batch_sequences} x "
                f"{par.data} = {replicas}): each replica runs whole microbatches"
            )
        par = self.parallelism
        if par.pipeline * par.virtual_stages > model.layers:
            raise ValueError(
                f"parallelism.pipeline x virtual_stages ({par.pipeline} x {par.virtual_stages}) "
                f"exceeds the model's layers ({model.layers}): every model chunk holds a layer"
            )
        if self.search is not None and self.gpu.memory_gib is None:
            raise ValueError(
                "workload.search chooses among layouts that fit the GPU's memory: give "
                "gpu.memory_gib"
            )
        self._check_message_sizes()
        self._check_memory()
        return self

    def _check_memory(self) -> None:
        """The layout fits the GPU's memory: ``memory_per_gpu(...).total_bytes <= memory_gib``."""
        if self.gpu.memory_gib is None:
            return
        need = self.memory()
        have = self.gpu.memory_gib * BYTES_PER_GIB
        if need.total_bytes > have:
            raise ValueError(
                f"the layout does not fit the GPU's memory: {need.explain()} = "
                f"{need.total_bytes / BYTES_PER_GIB:,.1f} GiB per GPU > gpu.memory_gib "
                f'({self.gpu.memory_gib:g}); recompute activations (recompute = "selective" or '
                '"full"), shard more (zero_stage), lower micro_batch_sequences, or split the '
                "model further (tensor, pipeline, sequence_parallel)"
            )

    def memory(self) -> MemoryPerGpu:
        """Memory of the busiest GPU (the first pipeline stage's): :func:`memory_per_gpu`."""
        return memory_per_gpu(
            self.spec,
            self.parallelism,
            self.micro_batch_sequences,
            self.microbatches,
            self.recompute,
        )

    def _check_message_sizes(self) -> None:
        """Every collective sends more than nothing and at most ``MAX_MESSAGE_BYTES`` a call.

        0 < size_bytes <= MAX_MESSAGE_BYTES, for every collective of one iteration.

        Each bound holds field by field, but their products (a microbatch's activations, a
        replica's gradients) can still leave what the simulator takes: the collective, its size
        and the fields it comes from are named here rather than in a ``[verify]`` traffic error.
        The collectives of one message share its size, so the first of them is named.
        """
        for message in self.messages().values():
            name = message.collectives[0]
            if message.size_bytes <= 0:
                raise ValueError(
                    f"{name} sends no byte per call ({message.size_from} = 0): with sequence "
                    "parallelism every tensor rank needs at least one token of the microbatch"
                )
            if message.size_bytes > MAX_MESSAGE_BYTES:
                raise ValueError(
                    f"{name} sends {message.size_bytes:,.0f} bytes per call ({message.size_from}), more "
                    f"than one simulated call may carry ({MAX_MESSAGE_BYTES:,.0f} bytes, the "
                    "[verify] traffic's size_bytes cap): lower those figures, or split the model "
                    "further (parallelism)"
                )

    @property
    def spec(self) -> Model:
        """The model: the preset's, or the one given."""
        if self.model is not None:
            return self.model
        assert self.preset is not None
        return preset(self.preset)

    @property
    def microbatches(self) -> int:
        """Microbatches each pipeline runs per iteration: m = B / (b x D)."""
        return self.spec.global_batch_sequences // (
            self.micro_batch_sequences * self.parallelism.data
        )

    @property
    def layers_per_stage(self) -> int:
        """Layers on the busiest stage, ceil(L / P).

        Stages may be uneven (Llama 3.1 405B ran 126 layers on 16 stages), so P need not divide L.
        """
        return math.ceil(self.spec.layers / self.parallelism.pipeline)

    @property
    def moe_layers_per_stage(self) -> int:
        """MoE layers on the busiest stage, ceil(L_moe / P)."""
        return math.ceil(self.spec.moe_layers / self.parallelism.pipeline)

    def messages(self) -> dict[str, Message]:
        """The message of each parallel dimension that has one, in iteration order.

        Keys ``dp``, ``edp``, ``tp``, ``pp``, ``ep``; a dimension of one rank (or a dense model's
        experts) sends nothing and has none. Sizes per call (notation of
        ``planner.workload.iteration``):

        dp:  S = D_w / (T P) x g              edp: S = X / (T P E) x g   (groups of D / E)
        tp:  S = b s h a                      pp:  S = b s h a / T
        ep:  S = t k c h a, t = b s (/ T with sequence parallelism)
        """
        model, par = self.spec, self.parallelism
        t, p, d, e, g = par.tensor, par.pipeline, par.data, par.expert, model.gradient_bytes
        # ZeRO 0 all-reduces the gradients; 1 to 3 reduce-scatter them and all-gather parameters.
        ops = ("all_reduce",) if par.zero_stage == 0 else ("reduce_scatter", "all_gather")
        out: dict[str, Message] = {}
        if d >= 2:
            size = model.dense_parameters / (t * p) * g
            out["dp"] = Message(tuple(f"dp_{op}" for op in ops), size, DP_SIZE_FROM)
        if model.expert_parameters != 0 and d // e >= 2:
            size = model.expert_parameters / (t * p * e) * g
            out["edp"] = Message(tuple(f"edp_{op}" for op in ops), size, EDP_SIZE_FROM)
        activations = self.micro_batch_sequences * model.sequence_length_tokens * model.hidden_size
        if t >= 2:
            names = (
                ("tp_all_gather", "tp_reduce_scatter")
                if par.sequence_parallel
                else ("tp_all_reduce",)
            )
            out["tp"] = Message(names, float(activations * model.activation_bytes), TP_SIZE_FROM)
        if p >= 2:
            size = activations * model.activation_bytes / t
            out["pp"] = Message(("pp_send",), size, PP_SIZE_FROM)
        if e >= 2 and model.moe_layers != 0:
            tokens = self.micro_batch_sequences * model.sequence_length_tokens
            if par.sequence_parallel:
                tokens //= t
            size = tokens * model.top_k * model.capacity_factor * model.hidden_size
            size *= model.activation_bytes
            size_from = EP_SIZE_FROM_SP if par.sequence_parallel else EP_SIZE_FROM
            out["ep"] = Message(("ep_dispatch", "ep_combine"), size, size_from)
        return out


@dataclass(frozen=True)
class MemoryPerGpu:
    """Memory of the busiest GPU, in bytes (:func:`memory_per_gpu` gives the arithmetic)."""

    parameters_bytes: float
    gradients_bytes: float
    optimizer_bytes: float
    activations_bytes: float
    activations_per_layer_bytes: float
    """Activations of one layer for one microbatch (before pipelining)."""
    layers: int
    """Layers on the first stage, L_s."""
    microbatches_in_flight: float
    """Microbatches whose activations the first stage holds, interleaving factor included."""
    buffers_bytes: float = 0.0
    """Communication buffers: ZeRO 3's gathered layers (:func:`memory_per_gpu`)."""
    logits_bytes: float = 0.0
    """The output layer's logits, on a first stage that is also the last (one pipeline stage)."""

    @property
    def total_bytes(self) -> float:
        """Parameters + gradients + optimizer states + activations + logits + buffers."""
        return (
            self.parameters_bytes
            + self.gradients_bytes
            + self.optimizer_bytes
            + self.activations_bytes
            + self.logits_bytes
            + self.buffers_bytes
        )

    def explain(self) -> str:
        """The sum in GiB, with the activations' factors (for a refusal)."""

        def gib(x: float) -> str:
            return f"{x / BYTES_PER_GIB:,.1f}"

        return (
            f"parameters {gib(self.parameters_bytes)} + gradients {gib(self.gradients_bytes)} "
            f"+ optimizer {gib(self.optimizer_bytes)} + activations "
            f"{gib(self.activations_bytes)} GiB "
            f"({self.activations_per_layer_bytes / 2**20:,.0f} MiB a layer and microbatch x {self.layers} layers x {self.microbatches_in_flight:g} "
            "microbatches in flight)"
            + (f" + logits {gib(self.logits_bytes)} GiB" if self.logits_bytes else "")
            + (f" + ZeRO 3 buffers {gib(self.buffers_bytes)} GiB" if self.buffers_bytes else "")
        )


def activation_bytes_per_layer(
    model: Model, par: Parallelism, micro_batch_sequences: int, recompute: Recompute
) -> float:
    """Activations one layer stores for one microbatch (Korthikanti et al. 2022, section 4).

    With s b h the microbatch's tokens times the hidden size, a heads and t = tensor degree:

        none:       s b h (34 + 5 a s / h) / t                  (tensor + sequence parallel)
                    s b h (10 + 24 / t + 5 a s / (h t))         (tensor parallel only)
        selective:  the same without the 5 a s / h term
        full:       2 s b h / t   (2 s b h without sequence parallelism)

    (t = 1 gives the unparallelised s b h (34 + 5 a s / h).) Dense-layer figures; an MoE layer
    is counted as a dense one (its routed tokens' buffers are not counted).
    """
    s, h, t = model.sequence_length_tokens, model.hidden_size, par.tensor
    sbh = float(s) * micro_batch_sequences * h
    sp = par.sequence_parallel or t == 1
    if recompute == "full":
        return sbh * ACTIVATION_BYTES_FULL_RECOMPUTE / (t if sp else 1)
    attention = (
        0.0 if recompute == "selective" else ACTIVATION_BYTES_ATTENTION * model.heads * s / h
    )
    if sp:
        return sbh * (ACTIVATION_BYTES_LINEAR + attention) / t
    split = ACTIVATION_BYTES_LINEAR - ACTIVATION_BYTES_REPLICATED
    return sbh * (ACTIVATION_BYTES_REPLICATED + (split + attention) / t)


def memory_per_gpu(
    model: Model,
    par: Parallelism,
    micro_batch_sequences: int,
    microbatches: int,
    recompute: Recompute,
) -> MemoryPerGpu:
    """Memory of the first pipeline stage's GPU: weights, gradients, optimizer and activations.

    Weights per GPU (the busiest stage's share; Rajbhandari et al. 2020 mixed-precision Adam):

        phi_d = D_w x (L_s / L) / T              dense weights
        phi_x = X x (L_moe,s / L_moe) / (T E)    expert weights (replicated over D / E ranks)
        parameters = 2 phi / Z3,  gradients = 2 phi / Z2,  optimizer = 12 phi / Z1

    where Z_k is the weights' data-parallel group (D for dense, D / E for expert weights) when
    zero_stage >= k, else 1. Activations (Korthikanti et al. 2022, section 4.2.3)::

        A = a_layer x L_s x min(P, m) x (1 + (P - 1) / (P v) if v > 1 else 1)

    with a_layer = :func:`activation_bytes_per_layer`: under 1F1B the first stage holds the
    activations of min(P, m) microbatches for its L_s layers; interleaving adds the factor.
    With a vocabulary (``Model.vocab_size``) the layers hold D_l = D - c V h (c = 1 tied, 2
    untied) and the first stage adds the input embedding, and the output layer too when it is
    also the last (P = 1, untied), all split over the tensor ranks (vocabulary-parallel)::

        phi_d = (D_l x (L_s / L) + V h (1 + [P = 1 and untied])) / T

    and, on one pipeline stage, the logits of the microbatch being computed: b s V / T values at
    the activations' bytes and again in fp32 for the loss. Without one, D is spread over the
    layers. ZeRO 3 adds its communication buffers: the parameters of the layer being computed
    and of the one prefetched, gathered whole (of the tensor shard), and one layer's gradients
    before their reduce-scatter::

        buffers = (2 x 2 + 2) x phi_layer,   phi_layer = D_l / (L T) + X / (L_moe T E)

    Not counted: framework buffers (NCCL's, the data-parallel gradient buckets) and
    fragmentation, so the total is a lower bound and a refusal is certain.
    """
    t, p, d, e, v = par.tensor, par.pipeline, par.data, par.expert, par.virtual_stages
    layers = math.ceil(model.layers / p)
    vh = model.embedding_parameters
    ends = 1 + (1 if p == 1 and not model.tied_embeddings else 0)
    phi_d = (model.layer_dense_parameters * (layers / model.layers) + vh * ends) / t
    phi_x = 0.0
    if model.moe_layers:
        moe_layers = math.ceil(model.moe_layers / p)
        phi_x = model.expert_parameters * (moe_layers / model.moe_layers) / (t * e)

    def sharded(per_parameter: float, stage: int) -> float:
        dense = d if par.zero_stage >= stage else 1
        expert = d // e if par.zero_stage >= stage else 1
        return per_parameter * (phi_d / dense + phi_x / expert)

    in_flight = float(min(p, microbatches))
    if v > 1:
        in_flight *= 1 + (p - 1) / (p * v)
    per_layer = activation_bytes_per_layer(model, par, micro_batch_sequences, recompute)
    logits = 0.0
    if p == 1 and model.vocab_size is not None:
        tokens = micro_batch_sequences * model.sequence_length_tokens
        logits = tokens * model.vocab_size / t * (model.activation_bytes + FP32_BYTES)
    buffers = 0.0
    if par.zero_stage == 3:
        phi_layer = model.layer_dense_parameters / (model.layers * t)
        if model.moe_layers:
            phi_layer += model.expert_parameters / (model.moe_layers * t * e)
        buffers = (2 * PARAMETER_BYTES + GRADIENT_BYTES) * phi_layer
    return MemoryPerGpu(
        parameters_bytes=sharded(PARAMETER_BYTES, 3),
        gradients_bytes=sharded(GRADIENT_BYTES, 2),
        optimizer_bytes=sharded(OPTIMIZER_BYTES, 1),
        activations_bytes=per_layer * layers * in_flight,
        activations_per_layer_bytes=per_layer,
        layers=layers,
        microbatches_in_flight=in_flight,
        buffers_bytes=buffers,
        logits_bytes=logits,
    )

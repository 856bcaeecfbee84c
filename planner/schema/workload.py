"""The ``[workload]`` section: what will be trained, how it is split over the GPUs, on what GPU.

A workload names a documented preset (``planner.schema.presets``) or gives its own ``[model]``;
``planner.workload.iteration`` turns it into the collectives of one training iteration, each
sending the message per call that :meth:`Workload.messages` sizes here. Rules between the model
and the parallelism, and the size of every message, are checked here; the rule that the parallel
degrees multiply to the cluster's GPUs is checked where the workload meets the cluster
(``planner.checks.check_workload``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, get_args

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict
from planner.schema.presets import preset
from planner.schema.transformer import Model
from planner.schema.verify import TrafficSpec

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
    sequence_parallel: bool = False
    """Megatron sequence parallelism (Korthikanti et al. 2022): each tensor all-reduce becomes a
    reduce-scatter and an all-gather of the same size, and each tensor rank holds s / T tokens."""
    zero_stage: Literal[0, 1, 2, 3] = 0
    """Sharded data parallelism (ZeRO): 0 all-reduces gradients; 1 and 2 reduce-scatter them and
    all-gather the updated parameters once per iteration; 3 (FSDP) also all-gathers parameters
    before each microbatch's forward and backward pass and reduce-scatters per microbatch."""

    @property
    def gpus(self) -> int:
        """GPUs the parallelism occupies: T x P x D."""
        return self.tensor * self.pipeline * self.data

    @model_validator(mode="after")
    def _check(self) -> Parallelism:
        if self.data % self.expert:
            raise ValueError(
                f"expert ({self.expert}) must divide data ({self.data}): expert-parallel groups "
                "are carved out of the data-parallel replicas"
            )
        return self


class Gpu(Strict):
    """The accelerator: its peak rate, how much of it training reaches, and its price."""

    peak_flops: float = Field(gt=0, le=1e18)
    """Peak dense FLOP/s at the training precision (H100 SXM bf16: 989e12, without sparsity)."""
    utilisation: float = Field(0.4, gt=0, le=1)
    """Model FLOPs utilisation: achieved / peak FLOP/s over the compute of an iteration."""
    price_usd_per_hour: float = Field(ge=0, le=1e4)
    """Price of one GPU for one hour, in US dollars (rented, or amortised with its power)."""
    power_w: float | None = Field(None, gt=0, le=1e5)
    """Power of one GPU in watts (its board power, e.g. H100 SXM 700 W), optional: with it the
    report sets the GPUs' power beside the network's (``network_power_share``)."""


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
    micro_batch_sequences: int = Field(1, ge=1, le=100_000)
    """Sequences per microbatch b; global batch = b x data x microbatches."""
    overlap_fraction: float = Field(0.0, ge=0, le=1)
    """Fraction of communication time hidden under compute (0: none; 1: all of it)."""

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
        self._check_message_sizes()
        return self

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

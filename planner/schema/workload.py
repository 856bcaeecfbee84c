"""The ``[workload]`` section: what will be trained, how it is split over the GPUs, on what GPU.

A workload names a documented preset (``planner.workload.presets``) or gives its own ``[model]``;
``planner.workload.iteration`` turns it into the collectives of one training iteration. Rules
between the model and the parallelism are checked here; the rule that the parallel degrees
multiply to the cluster's GPUs is checked where the workload meets the cluster
(``planner.checks.check_workload``).
"""

from __future__ import annotations

import math
from typing import Literal, get_args

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict
from planner.schema.verify import TrafficSpec

#: Names of the documented presets in ``planner.workload.presets`` (a test keeps the two equal).
PresetName = Literal["gpt3-175b", "llama3.1-405b", "mixtral-8x7b", "kimi-k2-1t"]
PRESET_NAMES: tuple[str, ...] = get_args(PresetName)

#: Most bytes one simulated call of a collective may carry: the ``[verify]`` traffic's own cap
#: (``TrafficSpec.size_bytes``), which every collective of an iteration becomes.
MAX_MESSAGE_BYTES: float = next(
    float(m.le) for m in TrafficSpec.model_fields["size_bytes"].metadata if hasattr(m, "le")
)


class Model(Strict):
    """A transformer to train: its size, shape, batch and precision; mixture-of-experts if any.

    A mixture-of-experts model gives its total and its active (per-token) parameters; the
    parameters in the routed experts follow from them (``expert_parameters``), so the split
    between dense and expert weights needs no per-layer shapes. Shared experts count as dense.
    """

    parameters: float = Field(ge=1e6, le=1e14)
    """Total parameters (all experts included)."""
    active_parameters: float | None = Field(None, ge=1e6, le=1e14)
    """Parameters used per token (a mixture of experts); the total when absent (a dense model)."""
    layers: int = Field(ge=1, le=10_000)
    """Transformer layers (blocks)."""
    hidden_size: int = Field(ge=1, le=1_000_000)
    """Model (residual stream) width h: the activations between layers are b x s x h values."""
    sequence_length_tokens: int = Field(ge=1, le=10_000_000)
    """Tokens per training sequence s."""
    global_batch_sequences: int = Field(ge=1, le=100_000_000)
    """Sequences per iteration (all data-parallel replicas together)."""
    activation_bytes: int = Field(2, ge=1, le=8)
    """Bytes per activation value sent between GPUs (2: bf16)."""
    gradient_bytes: int = Field(2, ge=1, le=8)
    """Bytes per gradient (and parameter) value in the data-parallel collectives (2: bf16, 4: fp32)."""
    experts: int = Field(1, ge=1, le=100_000)
    """Routed experts per MoE layer (1: a dense model)."""
    top_k: int = Field(1, ge=1, le=1024)
    """Routed experts each token is sent to."""
    moe_layers: int = Field(0, ge=0, le=10_000)
    """Layers whose feed-forward block is a mixture of experts (0: a dense model)."""
    capacity_factor: float = Field(1.0, ge=1.0, le=16.0)
    """Expert capacity over the even share of tokens; the all-to-all carries this many times the
    routed tokens (1.0 for dropless routing, which sends exactly the routed tokens)."""
    source: dict[str, str] = Field(default_factory=dict, max_length=64)
    """Where each figure comes from (a URL, a document, or 'estimate: why'); presets give all."""

    @model_validator(mode="after")
    def _check(self) -> Model:
        moe = self.experts > 1
        if moe and not 1 <= self.moe_layers <= self.layers:
            raise ValueError(
                f"moe_layers ({self.moe_layers}): a model with {self.experts} experts needs "
                f"from 1 to layers ({self.layers}) MoE layers"
            )
        if not moe and (self.moe_layers or self.top_k != 1 or self.active_parameters is not None):
            raise ValueError(
                "moe_layers, top_k and active_parameters describe a mixture of experts: give "
                "experts (more than 1) as well, or leave them out for a dense model"
            )
        if moe and self.top_k >= self.experts:
            raise ValueError(f"top_k ({self.top_k}) must be fewer than experts ({self.experts})")
        if moe and self.active_parameters is None:
            raise ValueError("active_parameters: a mixture of experts gives its per-token count")
        if self.active_parameters is not None and not (
            self.active_parameters < self.parameters and self.expert_parameters < self.parameters
        ):
            raise ValueError(
                f"active_parameters ({self.active_parameters:,.0f}) and parameters "
                f"({self.parameters:,.0f}) leave no dense weights: the routed experts would hold "
                f"{self.expert_parameters:,.0f} = (parameters - active) x experts / (experts - top_k)"
            )
        return self

    @property
    def active(self) -> float:
        """Parameters used per token (the total for a dense model)."""
        return self.parameters if self.active_parameters is None else self.active_parameters

    @property
    def expert_parameters(self) -> float:
        """Parameters in the routed experts, X = (N - N_active) · E / (E - k).

        From N = D + X and N_active = D + X · k / E (D: dense weights, shared experts included).
        """
        if self.experts == 1:
            return 0.0
        return (self.parameters - self.active) * self.experts / (self.experts - self.top_k)

    @property
    def dense_parameters(self) -> float:
        """Parameters outside the routed experts: D = N - X."""
        return self.parameters - self.expert_parameters

    @property
    def global_batch_tokens(self) -> int:
        """Tokens per iteration: sequences x sequence length."""
        return self.global_batch_sequences * self.sequence_length_tokens


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
    """A documented model (``planner.workload.presets``); give either this or ``model``."""
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
        """
        from planner.workload.iteration import collectives  # iteration reads this schema

        for c in collectives(self, 1):  # sizes do not depend on where the groups sit
            if c.size_bytes <= 0:
                raise ValueError(
                    f"{c.name} sends no byte per call ({c.size_from} = 0): with sequence "
                    "parallelism every tensor rank needs at least one token of the microbatch"
                )
            if c.size_bytes > MAX_MESSAGE_BYTES:
                raise ValueError(
                    f"{c.name} sends {c.size_bytes:,.0f} bytes per call ({c.size_from}), more "
                    f"than one simulated call may carry ({MAX_MESSAGE_BYTES:,.0f} bytes, the "
                    "[verify] traffic's size_bytes cap): lower those figures, or split the model "
                    "further (parallelism)"
                )

    @property
    def spec(self) -> Model:
        """The model: the preset's, or the one given."""
        if self.model is not None:
            return self.model
        from planner.workload.presets import preset  # presets depend on schema, not the reverse

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

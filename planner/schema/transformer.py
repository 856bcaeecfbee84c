"""The ``[workload.model]`` table: the transformer a workload trains.

Its own module below ``planner.schema.workload`` so that the documented models
(``planner.schema.presets``) and the workload that names one can both use it.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict

#: Head dimension h / a assumed when a model gives no ``attention_heads``: 128, the head size of
#: GPT-3 175B (12,288 / 96), Llama 3 (16,384 / 128) and Mixtral (4,096 / 32).
DEFAULT_HEAD_DIM = 128


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
    attention_heads: int | None = Field(None, ge=1, le=100_000)
    """Attention (query) heads a; the activations' 5 a s / h term per layer (Korthikanti et al.
    2022) grows with it. Default: h / 128 (``DEFAULT_HEAD_DIM``), at least 1."""
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
    vocab_size: int | None = Field(None, ge=2, le=10_000_000)
    """Tokens in the vocabulary V. With it the memory model puts the input embedding (V x h) on
    the first pipeline stage and the output layer on the last instead of spreading them over the
    layers, and counts the logits where the loss is computed; none: spread (a coarser count)."""
    tied_embeddings: bool = False
    """Whether the output layer reuses the input embedding's weights (GPT-2 and GPT-3 do)."""
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
        if self.vocab_size is not None and self.layer_dense_parameters <= 0:
            copies = 1 if self.tied_embeddings else 2
            raise ValueError(
                f"vocab_size: {copies} x {self.vocab_size:,} x {self.hidden_size:,} embedding "
                f"weights leave nothing of the {self.dense_parameters:,.0f} dense parameters "
                "for the layers"
            )
        return self

    @property
    def active(self) -> float:
        """Parameters used per token (the total for a dense model)."""
        return self.parameters if self.active_parameters is None else self.active_parameters

    @property
    def heads(self) -> int:
        """Attention heads a: those given, else h / ``DEFAULT_HEAD_DIM`` (at least 1)."""
        if self.attention_heads is not None:
            return self.attention_heads
        return max(1, self.hidden_size // DEFAULT_HEAD_DIM)

    @property
    def expert_parameters(self) -> float:
        """Parameters in the routed experts, X = (N - N_active) · E / (E - k).

        From N = D + X and N_active = D + X · k / E (D: dense weights, shared experts included).
        """
        if self.experts == 1:
            return 0.0
        return (self.parameters - self.active) * self.experts / (self.experts - self.top_k)

    @property
    def embedding_parameters(self) -> float:
        """Weights of the input embedding, V h (0 without a vocabulary)."""
        return 0.0 if self.vocab_size is None else float(self.vocab_size * self.hidden_size)

    @property
    def layer_dense_parameters(self) -> float:
        """Dense weights inside the transformer layers: D less the embedding (and output layer)."""
        copies = 1 if self.tied_embeddings else 2
        return self.dense_parameters - copies * self.embedding_parameters

    @property
    def dense_parameters(self) -> float:
        """Parameters outside the routed experts: D = N - X."""
        return self.parameters - self.expert_parameters

    @property
    def global_batch_tokens(self) -> int:
        """Tokens per iteration: sequences x sequence length."""
        return self.global_batch_sequences * self.sequence_length_tokens

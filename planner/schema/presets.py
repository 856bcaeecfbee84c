"""Documented models, every figure with its source, for ``[workload] preset = "..."``.

Each preset is a :class:`~planner.schema.transformer.Model`; its ``source`` names a paper or model
card for every figure it sets (``estimate: why`` where the figure is not published). Precision is
bf16 for activations and gradients in all four (Megatron-LM's default reduction precision); a
workload that reduces gradients in fp32 gives a model of its own.
"""

from __future__ import annotations

from planner.errors import InputError
from planner.schema.transformer import Model

_GPT3 = "https://arxiv.org/abs/2005.14165"
_LLAMA = "https://arxiv.org/abs/2407.21783"
_MIXTRAL = "https://arxiv.org/abs/2401.04088"
_MISTRAL_BLOG = "https://mistral.ai/news/mixtral-of-experts"
_KIMI = "https://arxiv.org/abs/2507.20534"
_KIMI_CARD = "https://huggingface.co/moonshotai/Kimi-K2-Instruct"
_GPT2 = "https://cdn.openai.com/better-language-models/language_models_are_unsupervised_multitask_learners.pdf"
_GPT1 = (
    "https://cdn.openai.com/research-covers/language-unsupervised/language_understanding_paper.pdf"
)
_BF16 = "estimate: bf16 mixed precision, gradients reduced in bf16 (Megatron-LM default)"
_DROPLESS = "estimate: dropless routing counted as capacity factor 1 (exactly the routed tokens)"

#: The presets by name; the keys are ``planner.schema.workload.PRESET_NAMES``.
PRESETS: dict[str, Model] = {
    "gpt3-175b": Model(
        parameters=175e9,
        layers=96,
        hidden_size=12288,
        attention_heads=96,
        sequence_length_tokens=2048,
        global_batch_sequences=1536,
        vocab_size=50257,
        tied_embeddings=True,
        source={
            "parameters": f"{_GPT3} Table 2.1 (GPT-3 175B: n_params 175.0B)",
            "vocab_size": f"{_GPT2} section 2.2 (a vocabulary of 50,257), which GPT-3 keeps: "
            f"{_GPT3} section 2.1 (the same model and architecture as GPT-2)",
            "tied_embeddings": f"{_GPT1} section 3.1 (the output softmax uses the token "
            "embedding matrix W_e), kept by GPT-2 and GPT-3",
            "layers": f"{_GPT3} Table 2.1 (n_layers 96)",
            "hidden_size": f"{_GPT3} Table 2.1 (d_model 12288)",
            "attention_heads": f"{_GPT3} Table 2.1 (n_heads 96)",
            "sequence_length_tokens": f"{_GPT3} section 2.1 (context window n_ctx = 2048)",
            "global_batch_sequences": f"{_GPT3} Table 2.1 (batch 3.2M tokens = 1,536 x 2,048; "
            "Narayanan et al. 2021, https://arxiv.org/abs/2104.04473, Table 1 also use 1,536)",
            "activation_bytes": _BF16,
            "gradient_bytes": _BF16,
        },
    ),
    "llama3.1-405b": Model(
        parameters=405e9,
        layers=126,
        hidden_size=16384,
        attention_heads=128,
        sequence_length_tokens=8192,
        global_batch_sequences=2048,
        vocab_size=128256,
        source={
            "parameters": f"{_LLAMA} Table 3 (405B)",
            "vocab_size": f"{_LLAMA} Table 3 (vocabulary size 128,000 in round figures); "
            "128,256 in the released model's config (recalled, not re-checked)",
            "tied_embeddings": "estimate: a separate output layer, as the released config's "
            "tie_word_embeddings = false (recalled, not re-checked)",
            "layers": f"{_LLAMA} Table 3 (126 layers)",
            "hidden_size": f"{_LLAMA} Table 3 (model dimension 16,384)",
            "attention_heads": f"{_LLAMA} Table 3 (128 attention heads, 8 key/value heads)",
            "sequence_length_tokens": f"{_LLAMA} section 3.4.1 (sequences of 8,192 tokens)",
            "global_batch_sequences": f"{_LLAMA} section 3.4.1 (final batch 16M tokens = "
            "2,048 x 8,192)",
            "activation_bytes": _BF16,
            "gradient_bytes": _BF16,
        },
    ),
    "mixtral-8x7b": Model(
        parameters=46.7e9,
        active_parameters=12.9e9,
        layers=32,
        hidden_size=4096,
        attention_heads=32,
        sequence_length_tokens=32768,
        global_batch_sequences=128,
        experts=8,
        top_k=2,
        moe_layers=32,
        vocab_size=32000,
        source={
            "parameters": f"{_MISTRAL_BLOG} (46.7B total parameters)",
            "vocab_size": f"{_MIXTRAL} Table 1 (vocab_size 32000)",
            "tied_embeddings": "estimate: a separate output layer, as Mistral 7B's released "
            "config (tie_word_embeddings = false; recalled, not re-checked)",
            "active_parameters": f"{_MISTRAL_BLOG} (12.9B parameters per token)",
            "layers": f"{_MIXTRAL} Table 1 (n_layers 32)",
            "hidden_size": f"{_MIXTRAL} Table 1 (dim 4096)",
            "attention_heads": f"{_MIXTRAL} Table 1 (n_heads 32)",
            "sequence_length_tokens": f"{_MIXTRAL} Table 1 (context_len 32768)",
            "global_batch_sequences": "estimate: not published; 128 x 32,768 = 4M tokens, "
            "the batch of Llama 2 (https://arxiv.org/abs/2307.09288)",
            "experts": f"{_MIXTRAL} Table 1 (num_experts 8)",
            "top_k": f"{_MIXTRAL} Table 1 (top_k_experts 2)",
            "moe_layers": f"{_MIXTRAL} section 2 (every layer's feed-forward block is an MoE)",
            "capacity_factor": _DROPLESS,
            "activation_bytes": _BF16,
            "gradient_bytes": _BF16,
        },
    ),
    "kimi-k2-1t": Model(
        parameters=1.04e12,
        active_parameters=32e9,
        layers=61,
        hidden_size=7168,
        attention_heads=64,
        sequence_length_tokens=4096,
        global_batch_sequences=16384,
        experts=384,
        top_k=8,
        moe_layers=60,
        source={
            "parameters": f"{_KIMI} abstract and section 2 (1.04 trillion total parameters)",
            "active_parameters": f"{_KIMI} (32 billion activated parameters)",
            "layers": f"{_KIMI_CARD} (61 layers, dense layer included)",
            "hidden_size": f"{_KIMI_CARD} (attention hidden dimension 7168)",
            "attention_heads": f"{_KIMI_CARD} (64 attention heads)",
            "sequence_length_tokens": f"{_KIMI} pre-training recipe (4,096-token context window)",
            "global_batch_sequences": f"{_KIMI} pre-training recipe (global batch 67M tokens = "
            "16,384 x 4,096); recalled, not re-checked against the PDF",
            "experts": f"{_KIMI_CARD} (384 experts; 1 shared expert, counted as dense)",
            "top_k": f"{_KIMI_CARD} (8 selected experts per token)",
            "moe_layers": f"{_KIMI_CARD} (61 layers of which 1 dense: 60 MoE layers)",
            "capacity_factor": _DROPLESS,
            "activation_bytes": _BF16,
            "gradient_bytes": _BF16,
        },
    ),
}

#: Figures every preset must source (the MoE ones only for a mixture of experts).
SOURCED = (
    "parameters",
    "layers",
    "hidden_size",
    "attention_heads",
    "sequence_length_tokens",
    "global_batch_sequences",
    "activation_bytes",
    "gradient_bytes",
)
SOURCED_MOE = ("active_parameters", "experts", "top_k", "moe_layers", "capacity_factor")


def unsourced(model: Model) -> list[str]:
    """Figures of a preset without a source (empty when every figure has one)."""
    figures = SOURCED + (SOURCED_MOE if model.experts > 1 else ())
    return [f for f in figures if not model.source.get(f, "").strip()]


def preset(name: str) -> Model:
    """The model of a preset, by name.

    Raises
    ------
    InputError
        If no preset has that name (the message lists the known ones).
    """
    if name not in PRESETS:
        raise InputError(f"workload.preset: unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]

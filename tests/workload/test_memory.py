"""Memory per GPU: ZeRO-sharded states and Korthikanti activations, and the refusal of what does not fit.

Every figure is worked out by hand next to its assertion. Sources: Rajbhandari et al. 2020 (ZeRO,
https://arxiv.org/abs/1910.02054) for 2 + 2 + 12 bytes a parameter and their sharding;
Korthikanti et al. 2022 (https://arxiv.org/abs/2205.05198) section 4 for the activations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError
from typer.testing import CliRunner

from planner.cli import app
from planner.schema.transformer import Model
from planner.schema.workload import (
    BYTES_PER_GIB,
    Parallelism,
    Workload,
    activation_bytes_per_layer,
)

#: Relative tolerance of figures that pass through a few float operations.
REL = 1e-12
GPU = {"peak_flops": 989e12, "price_usd_per_hour": 2.0, "memory_gib": 80}


def _w(preset: str, parallelism: dict[str, Any], **extra: Any) -> Workload:
    data = {"preset": preset, "parallelism": parallelism, "gpu": GPU} | extra
    return Workload.model_validate(data)


#: A toy model: s = 1,000 tokens, h = 1,000, a = 10 heads, so s b h = 1e6 (b = 1) and
#: 5 a s / h = 5 x 10 x 1,000 / 1,000 = 50.
TOY = Model(
    parameters=1e9,
    layers=8,
    hidden_size=1000,
    attention_heads=10,
    sequence_length_tokens=1000,
    global_batch_sequences=64,
)


@pytest.mark.parametrize(
    ("tensor", "sp", "recompute", "bytes_"),
    [
        # No parallelism: s b h (34 + 5 a s / h) = 1e6 x 84.
        (1, False, "none", 84e6),
        # Tensor + sequence parallel, t = 4: 1e6 x 84 / 4.
        (4, True, "none", 21e6),
        # Tensor parallel only, t = 4: 1e6 x (10 + 24 / 4 + 50 / 4) = 1e6 x 28.5.
        (4, False, "none", 28.5e6),
        # Selective drops 5 a s / h: 1e6 x 34 / 4; without SP 1e6 x (10 + 24 / 4).
        (4, True, "selective", 8.5e6),
        (4, False, "selective", 16e6),
        # Full keeps each layer's input: 2 s b h / t with SP, 2 s b h without.
        (4, True, "full", 0.5e6),
        (4, False, "full", 2e6),
    ],
)
def test_activations_per_layer_are_korthikanti_s(
    tensor: int, sp: bool, recompute: Any, bytes_: float
) -> None:
    par = Parallelism(tensor=tensor, sequence_parallel=sp)
    assert activation_bytes_per_layer(TOY, par, 1, recompute) == pytest.approx(bytes_, rel=REL)


#: GPT-3 175B, the workload-gpt3-175b instance's layout: T 8, P 4, D 4 (no sequence parallel), b 1,
#: m = 1,536 / 4 = 384. L_s = 96 / 4 = 24. The tied embedding, V h = 50,257 x 12,288 =
#: 617,558,016 weights, sits on the first stage; the layers hold 175e9 - 617,558,016 =
#: 174,382,441,984: phi = (174,382,441,984 x 24 / 96 + 617,558,016) / 8 = 5,526,646,064.
#: Activations a layer: s b h = 2,048 x 12,288 = 25,165,824; 5 a s / h = 5 x 96 x 2,048 / 12,288
#: = 80; tensor only: 10 + 24 / 8 + 80 / 8 = 23 -> 578,813,952 B; x 24 layers x min(4, 384) = 4.
GPT3_LAYOUT = {"tensor": 8, "pipeline": 4, "data": 4, "zero_stage": 1}
GPT3_PHI = 5_526_646_064


def test_gpt3_layout_hand_arithmetic() -> None:
    m = _w("gpt3-175b", GPT3_LAYOUT, recompute="selective").memory()
    assert m.parameters_bytes == pytest.approx(2 * GPT3_PHI, rel=REL)
    assert m.gradients_bytes == pytest.approx(2 * GPT3_PHI, rel=REL)
    # ZeRO 1 shards the 12 optimizer bytes over D = 4.
    assert m.optimizer_bytes == pytest.approx(12 * GPT3_PHI / 4, rel=REL)
    # Selective: 10 + 24 / 8 = 13 -> 327,155,712 B x 24 x 4 = 31,406,948,352 B.
    assert m.activations_bytes == pytest.approx(31_406_948_352, rel=REL)
    # 7 phi + 31.406948352e9 = 38,686,522,448 + 31,406,948,352 = 70,093,470,800 B = 65.3 GiB.
    assert m.total_bytes == pytest.approx(70_093_470_800, rel=REL)
    assert m.logits_bytes == 0  # the loss is on the last of 4 stages
    assert m.buffers_bytes == 0  # ZeRO 1 gathers nothing layer by layer


def test_gpt3_layout_without_recompute_is_refused_with_the_arithmetic() -> None:
    # 7 phi + 578,813,952 x 96 (= 55,566,139,392) = 94,252,661,840 B = 87.8 GiB > 80 GiB.
    with pytest.raises(ValidationError) as info:
        _w("gpt3-175b", GPT3_LAYOUT)
    text = str(info.value)
    assert "parameters 10.3 + gradients 10.3 + optimizer 15.4 + activations 51.8 GiB" in text
    assert "= 87.8 GiB per GPU > gpu.memory_gib (80)" in text
    assert "24 layers x 4 microbatches in flight" in text


#: Llama 3.1 405B as its paper's Table 4 (T 8, P 16, D 128, sequence parallel), b 1, m = 16,
#: selective recompute. L_s = ceil(126 / 16) = 8. The input embedding, V h = 128,256 x 16,384 =
#: 2,101,346,304 weights, is on the first stage, the (untied) output layer on the last; the
#: layers hold 405e9 - 2 V h = 400,797,307,392: phi = (400,797,307,392 x 8 / 126 + V h) / 8.
#: Activations: s b h = 8,192 x 16,384 = 134,217,728 x 34 / 8 = 570,425,344 B a layer,
#: x 8 layers x min(16, 16) = 73,014,444,032 B.
LLAMA = {"tensor": 8, "pipeline": 16, "data": 128, "sequence_parallel": True}
LLAMA_VH = 128_256 * 16_384
LLAMA_LAYERS = 405e9 - 2 * LLAMA_VH
LLAMA_PHI = (LLAMA_LAYERS * 8 / 126 + LLAMA_VH) / 8
LLAMA_ACTIVATIONS = 73_014_444_032
#: ZeRO 3's buffers: two layers' parameters gathered (2 B each) and one layer's gradients (2 B):
#: 6 x 400,797,307,392 / (126 x 8) = 2,385,698,258 B.
LLAMA_ZERO3_BUFFERS = 6 * LLAMA_LAYERS / (126 * 8)


@pytest.mark.parametrize(
    ("zero_stage", "total_bytes"),
    [
        # ZeRO 2: 2 phi + 2 phi / 128 + 12 phi / 128 + activations = 80.28e9 B = 74.8 GiB.
        (2, 2 * LLAMA_PHI + 14 * LLAMA_PHI / 128 + LLAMA_ACTIVATIONS),
        # ZeRO 3: 16 phi / 128 + activations + buffers = 75.83e9 B = 70.6 GiB.
        (3, 16 * LLAMA_PHI / 128 + LLAMA_ACTIVATIONS + LLAMA_ZERO3_BUFFERS),
    ],
)
def test_llama_table4_layout_fits_with_sharded_gradients(
    zero_stage: int, total_bytes: float
) -> None:
    w = _w("llama3.1-405b", LLAMA | {"zero_stage": zero_stage}, recompute="selective")
    assert w.memory().total_bytes == pytest.approx(total_bytes, rel=REL)
    assert total_bytes <= 80 * BYTES_PER_GIB


def test_llama_table4_layout_with_zero1_misses_by_a_gib() -> None:
    # ZeRO 1 keeps the 2 phi of gradients: 4 phi + 12 phi / 128 + activations = 87.11e9 B
    # = 81.13 GiB > 80 (80.25 GiB before the embedding was put on the first stage).
    need = 4 * LLAMA_PHI + 12 * LLAMA_PHI / 128 + LLAMA_ACTIVATIONS
    assert need / BYTES_PER_GIB == pytest.approx(81.13, abs=0.01)
    with pytest.raises(ValidationError, match=r"= 81\.1 GiB per GPU > gpu.memory_gib \(80\)"):
        _w("llama3.1-405b", LLAMA | {"zero_stage": 1}, recompute="selective")


def test_interleaving_holds_more_microbatches_on_the_first_stage() -> None:
    # v = 4: in flight 16 x (1 + 15 / (16 x 4)) = 19.75; full recompute keeps 2 s b h / 8 =
    # 33,554,432 B a layer: x 8 x 19.75 = 5,301,600,256 B.
    w = _w(
        "llama3.1-405b",
        LLAMA | {"zero_stage": 2, "virtual_stages": 4},
        recompute="full",
    )
    m = w.memory()
    assert m.microbatches_in_flight == pytest.approx(19.75, rel=REL)
    assert m.activations_bytes == pytest.approx(5_301_600_256, rel=REL)


def test_expert_weights_are_sharded_over_their_own_group() -> None:
    # Mixtral: X = (46.7e9 - 12.9e9) x 8 / 6 = 45.0667e9 expert and D_w = 46.7e9 - X dense
    # weights; D 64, E 8: the experts split 8 ways, their optimizer over D / E = 8 ranks, the
    # dense optimizer over 64.
    w = _w("mixtral-8x7b", {"data": 64, "expert": 8, "zero_stage": 1}, recompute="full")
    x = (46.7e9 - 12.9e9) * 8 / 6
    dense = 46.7e9 - x
    m = w.memory()
    assert m.parameters_bytes == pytest.approx(2 * (dense + x / 8), rel=REL)
    assert m.optimizer_bytes == pytest.approx(12 * (dense / 64 + x / 8 / 8), rel=REL)


def test_memory_is_not_checked_without_memory_gib() -> None:
    gpu = {k: v for k, v in GPU.items() if k != "memory_gib"}
    w = Workload.model_validate({"preset": "gpt3-175b", "parallelism": GPT3_LAYOUT, "gpu": gpu})
    assert w.memory().total_bytes > 80 * BYTES_PER_GIB


def test_a_layout_that_does_not_fit_exits_2_with_the_figures(tmp_path: Path) -> None:
    path = tmp_path / "too-big.toml"
    path.write_text(
        "name = 'too-big'\n[cluster]\ngpus = 128\ngpus_per_node = 8\n[workload]\n"
        "preset = 'gpt3-175b'\n"
        "parallelism = { tensor = 8, pipeline = 4, data = 4, zero_stage = 1 }\n"
        "gpu = { peak_flops = 989e12, price_usd_per_hour = 2.0, memory_gib = 80 }\n",
        encoding="utf-8",
    )
    out = CliRunner().invoke(app, ["solve", str(path), "--no-verify", "-o", str(tmp_path / "o")])
    assert out.exit_code == 2, out.output
    assert "87.8 GiB per GPU > gpu.memory_gib (80)" in out.output
    assert "Traceback" not in out.output


#: A toy with a vocabulary: V h = 10,000 x 1,000 = 1e7 weights; 1e9 parameters in all.
VOCAB = TOY.model_copy(update={"vocab_size": 10_000})


@pytest.mark.parametrize(
    ("tied", "pipeline", "phi"),
    [
        # Untied, one stage: layers 1e9 - 2e7, all 8 of them, plus both ends: 1e9 / t.
        (False, 1, 1e9),
        # Untied, 2 stages: the first holds half the layers and the input embedding only.
        (False, 2, (1e9 - 2e7) / 2 + 1e7),
        # Tied, one stage: one copy of V h.
        (True, 1, 1e9),
        # Tied, 2 stages: half the layers (1e9 - 1e7) and the embedding.
        (True, 2, (1e9 - 1e7) / 2 + 1e7),
    ],
)
def test_the_embedding_sits_on_the_first_stage(tied: bool, pipeline: int, phi: float) -> None:
    from planner.schema.workload import memory_per_gpu

    model = VOCAB.model_copy(update={"tied_embeddings": tied})
    par = Parallelism(pipeline=pipeline)
    m = memory_per_gpu(model, par, 1, 2, "none")
    assert m.parameters_bytes == pytest.approx(2 * phi, rel=REL)


@pytest.mark.parametrize(("pipeline", "logits"), [(1, 1_000 * 10_000 / 2 * (2 + 4)), (2, 0.0)])
def test_the_logits_count_where_the_loss_is(pipeline: int, logits: float) -> None:
    """b s V / T values in bf16 and fp32 on a stage that computes the loss (T = 2 here)."""
    from planner.schema.workload import memory_per_gpu

    m = memory_per_gpu(VOCAB, Parallelism(tensor=2, pipeline=pipeline), 1, 2, "none")
    assert m.logits_bytes == pytest.approx(logits, rel=REL)


@pytest.mark.parametrize(("zero", "buffers"), [(2, 0.0), (3, 6 * (1e9 - 2e7) / 8)])
def test_zero3_holds_two_gathered_layers_and_one_layers_gradients(
    zero: int, buffers: float
) -> None:
    from planner.schema.workload import memory_per_gpu

    par = Parallelism(data=4, zero_stage=zero)
    m = memory_per_gpu(VOCAB, par, 1, 2, "none")
    assert m.buffers_bytes == pytest.approx(buffers, rel=REL)
    assert m.total_bytes == pytest.approx(
        m.parameters_bytes
        + m.gradients_bytes
        + m.optimizer_bytes
        + m.activations_bytes
        + m.logits_bytes
        + buffers,
        rel=REL,
    )


def test_a_vocabulary_larger_than_the_model_is_refused() -> None:
    with pytest.raises(ValidationError, match="vocab_size"):
        TOY.model_validate(TOY.model_dump() | {"vocab_size": 1_000_000})

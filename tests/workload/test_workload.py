"""The [workload] section, its presets, and the bytes of one training iteration.

Every expected figure below is worked out by hand from the preset's published numbers, with the
arithmetic written next to it; the code under test computes them from the formulas.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from planner.checks import check_workload
from planner.errors import InputError
from planner.schema.instance import Instance
from planner.schema.presets import PRESETS, preset, unsourced
from planner.schema.verify import Verify
from planner.schema.workload import PRESET_NAMES, Model, Workload
from planner.workload.iteration import (
    Collective,
    collectives,
    compute_time_s,
    flops_per_gpu,
    placement,
    to_verify_traffic,
)

#: Relative tolerance of byte counts that pass through a float division (exact ones compare ==).
REL = 1e-12

#: H100 SXM dense bf16 peak (NVIDIA H100 datasheet: 989 TFLOP/s without sparsity) at 40 % MFU.
H100 = {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0}


def _workload(name: str, **parallelism: Any) -> Workload:
    return Workload.model_validate({"preset": name, "parallelism": parallelism, "gpu": H100})


#: preset -> (parallelism, domain GPUs, {name: (size_bytes, calls, group_size, groups, placement)})
Expected = dict[str, tuple[float, int, int, int, str]]
CASES: dict[str, tuple[dict[str, Any], int, Expected]] = {
    # GPT-3 175B on 1,024 GPUs as Narayanan et al. 2021 Table 1: T=8, P=16, D=8, b=1.
    # m = 1,536 / (1 x 8) = 192 microbatches; 96 / 16 = 6 layers per stage.
    "gpt3-175b": (
        {"tensor": 8, "pipeline": 16, "data": 8},
        8,
        {
            # 175e9 / (8 x 16) = 1,367,187,500 params x 2 B = 2,734,375,000 B, once;
            # 8 x 16 = 128 groups of 8, members 8 apart: one per NVLink node, same rail.
            "dp_all_reduce": (2_734_375_000, 1, 8, 128, "same_rail"),
            # b s h a = 1 x 2,048 x 12,288 x 2 = 50,331,648 B; 4 x 6 x 192 = 4,608 calls.
            "tp_all_reduce": (50_331_648, 4_608, 8, 128, "tensor_parallel"),
            # 50,331,648 / 8 = 6,291,456 B; 2 x 192 = 384 sends; (16 - 1) x 64 = 960 pairs.
            "pp_send": (6_291_456, 384, 2, 960, "same_rail"),
        },
    ),
    # Llama 3.1 405B on 16,384 GPUs as its paper's Table 4: T=8, P=16, D=128, sequence parallel,
    # sharded optimizer (ZeRO 1). m = 2,048 / 128 = 16; ceil(126 / 16) = 8 layers on a stage.
    "llama3.1-405b": (
        {"tensor": 8, "pipeline": 16, "data": 128, "sequence_parallel": True, "zero_stage": 1},
        8,
        {
            # 405e9 / 128 = 3,164,062,500 params x 2 B = 6,328,125,000 B, each once.
            "dp_reduce_scatter": (6_328_125_000, 1, 128, 128, "same_rail"),
            "dp_all_gather": (6_328_125_000, 1, 128, 128, "same_rail"),
            # 1 x 8,192 x 16,384 x 2 = 268,435,456 B; 4 x 8 x 16 = 512 calls of each.
            "tp_all_gather": (268_435_456, 512, 8, 2_048, "tensor_parallel"),
            "tp_reduce_scatter": (268_435_456, 512, 8, 2_048, "tensor_parallel"),
            # 268,435,456 / 8 = 33,554,432 B; 2 x 16 = 32 sends; 15 x 1,024 = 15,360 pairs.
            "pp_send": (33_554_432, 32, 2, 15_360, "same_rail"),
        },
    ),
    # Mixtral 8x7B on 64 GPUs: T=1, P=1, D=64, E=8 (one expert per GPU of an 8-GPU node).
    # m = 128 / 64 = 2. Experts X = (46.7e9 - 12.9e9) x 8 / (8 - 2) = 45.0666...e9, dense
    # D_w = 46.7e9 - 45.0666e9 = 1.6333...e9.
    "mixtral-8x7b": (
        {"data": 64, "expert": 8},
        8,
        {
            # 1.6333e9 x 2 B = 3.2666...e9 B over all 64 GPUs (8 nodes: spans domains).
            "dp_all_reduce": (3.2666666666666667e9, 1, 64, 1, "consecutive"),
            # 45.0666e9 / 8 = 5.6333e9 params x 2 B = 11.2666...e9 B over D / E = 8 GPUs 8 apart.
            "edp_all_reduce": (11.266666666666667e9, 1, 8, 8, "same_rail"),
            # 32,768 tokens x top-2 x 1.0 x 4,096 x 2 B = 536,870,912 B; 2 x 32 x 2 = 128 calls;
            # 64 / 8 = 8 groups of 8 consecutive GPUs, each inside its NVLink node.
            "ep_dispatch": (536_870_912, 128, 8, 8, "tensor_parallel"),
            "ep_combine": (536_870_912, 128, 8, 8, "tensor_parallel"),
        },
    ),
    # Kimi K2 on 4,096 GPUs: T=8, P=16, D=32, E=32, sequence parallel, ZeRO 1.
    # m = 16,384 / 32 = 512; ceil(61 / 16) = 4 layers and ceil(60 / 16) = 4 MoE layers a stage.
    # X = (1.04e12 - 32e9) x 384 / 376 = 1,029,446,808,510.638; D_w = 10,553,191,489.362.
    "kimi-k2-1t": (
        {
            "tensor": 8,
            "pipeline": 16,
            "data": 32,
            "expert": 32,
            "sequence_parallel": True,
            "zero_stage": 1,
        },
        8,
        {
            # 10,553,191,489.362 / 128 = 82,446,808.51064 params x 2 B = 164,893,617.02128 B. The expert
            # weights have D / E = 1 replica: no expert-data-parallel collective.
            "dp_reduce_scatter": (164_893_617.02128, 1, 32, 128, "same_rail"),
            "dp_all_gather": (164_893_617.02128, 1, 32, 128, "same_rail"),
            # 1 x 4,096 x 7,168 x 2 = 58,720,256 B; 4 x 4 x 512 = 8,192 calls of each.
            "tp_all_gather": (58_720_256, 8_192, 8, 512, "tensor_parallel"),
            "tp_reduce_scatter": (58_720_256, 8_192, 8, 512, "tensor_parallel"),
            # 58,720,256 / 8 = 7,340,032 B; 2 x 512 = 1,024 sends; 15 x 256 = 3,840 pairs.
            "pp_send": (7_340_032, 1_024, 2, 3_840, "same_rail"),
            # 4,096 / 8 = 512 tokens x top-8 x 1.0 x 7,168 x 2 B = 58,720,256 B;
            # 2 x 4 x 512 = 4,096 calls; 8 x 16 x 1 = 128 groups of 32 GPUs 8 apart.
            "ep_dispatch": (58_720_256, 4_096, 32, 128, "same_rail"),
            "ep_combine": (58_720_256, 4_096, 32, 128, "same_rail"),
        },
    ),
}


def _rows(name: str) -> dict[str, Collective]:
    parallelism, domain, _ = CASES[name]
    return {c.name: c for c in collectives(_workload(name, **parallelism), domain)}


@pytest.mark.parametrize("name", list(CASES))
def test_each_preset_has_exactly_the_expected_collectives(name: str) -> None:
    assert set(_rows(name)) == set(CASES[name][2])


@pytest.mark.parametrize(
    ("name", "collective"), [(n, c) for n, (_, _, rows) in CASES.items() for c in rows]
)
def test_bytes_of_each_collective_match_the_hand_computation(name: str, collective: str) -> None:
    size_bytes, calls, group_size, groups, where = CASES[name][2][collective]
    row = _rows(name)[collective]
    assert row.size_bytes == pytest.approx(size_bytes, rel=REL)
    assert row.calls == calls
    assert row.total_bytes == pytest.approx(size_bytes * calls, rel=REL)
    assert row.group_size == group_size
    assert row.groups == groups
    assert row.placement == where


def test_gpt3_totals_per_gpu_per_iteration() -> None:
    rows = _rows("gpt3-175b")
    # 50,331,648 x 4,608 and 6,291,456 x 384, exact in binary.
    assert rows["tp_all_reduce"].total_bytes == 231_928_233_984
    assert rows["pp_send"].total_bytes == 2_415_919_104


def test_zero3_gathers_parameters_every_microbatch_a_layer_at_a_time() -> None:
    # A free model: 8e9 params, 32 layers, on 64 GPUs of D=64; B = 256, b = 2 -> m = 2.
    # 8e9 x 2 B = 16e9 B in all, a layer at a time (FSDP's unit): 32 calls of 0.5e9 B each for
    # every whole-stage call; all-gather 2 x 2 x 32 = 128 calls (forward and backward of each
    # layer), reduce-scatter 2 x 32 = 64: the bytes of whole-stage calls, 32 times the latency.
    model = Model(
        parameters=8e9,
        layers=32,
        hidden_size=4096,
        sequence_length_tokens=8192,
        global_batch_sequences=256,
    )
    w = Workload.model_validate(
        {
            "model": model,
            "parallelism": {"data": 64, "zero_stage": 3},
            "gpu": H100,
            "micro_batch_sequences": 2,
        }
    )
    rows = {c.name: c for c in collectives(w, 8)}
    assert set(rows) == {"dp_reduce_scatter", "dp_all_gather"}
    assert rows["dp_all_gather"].size_bytes == 16e9 / 32
    assert rows["dp_all_gather"].calls == 4 * 32
    assert rows["dp_reduce_scatter"].calls == 2 * 32
    assert rows["dp_all_gather"].total_bytes == 4 * 16e9


@pytest.mark.parametrize(
    ("name", "seconds"),
    [
        # 6 x 175e9 x (1,536 x 2,048) = 3.3030144e18 FLOPs / 1,024 GPUs = 3.2256e15;
        # / (989e12 x 0.4 = 395.6e12) = 8.153690596... s.
        ("gpt3-175b", 3.2256e15 / 395.6e12),
        # 6 x 405e9 x (2,048 x 8,192) = 4.076863488e19 / 16,384 = 2.48832e15 -> 6.2899... s.
        ("llama3.1-405b", 2.48832e15 / 395.6e12),
        # 6 x 12.9e9 (active) x (128 x 32,768) = 3.246391296e17 / 64 = 5.0724864e15 -> 12.82... s.
        ("mixtral-8x7b", 5.0724864e15 / 395.6e12),
        # 6 x 32e9 x (16,384 x 4,096) = 1.288490189e19 / 4,096 = 3.145728e15 -> 7.9518... s.
        ("kimi-k2-1t", 3.145728e15 / 395.6e12),
    ],
)
def test_compute_time_is_flops_per_gpu_over_achieved_rate(name: str, seconds: float) -> None:
    w = _workload(name, **CASES[name][0])
    assert compute_time_s(w) == pytest.approx(seconds, rel=1e-9)
    assert flops_per_gpu(w) == pytest.approx(seconds * 395.6e12, rel=1e-9)


@pytest.mark.parametrize("name", list(CASES))
def test_to_verify_traffic_gives_valid_specs_of_one_call_each(name: str) -> None:
    parallelism, domain, _ = CASES[name]
    rows = collectives(_workload(name, **parallelism), domain)
    specs = to_verify_traffic(rows, pipeline_stages=parallelism.get("pipeline", 1) or 1)
    verify = Verify.model_validate({"traffic": [s.model_dump() for s in specs]})
    assert len(verify.traffic) == len(rows)
    for row, spec in zip(rows, verify.traffic, strict=True):
        assert spec.kind == row.kind
        assert spec.size_bytes == row.size_bytes
        if row.kind != "point_to_point":
            assert (spec.groups, spec.group_size) == (row.placement, row.group_size)


@pytest.mark.parametrize(
    ("stride", "size", "domain", "expected"),
    [
        (1, 8, 8, "tensor_parallel"),  # a TP group filling an NVLink node
        (2, 4, 8, "tensor_parallel"),  # 4 GPUs 2 apart: still inside one node
        (8, 32, 8, "same_rail"),  # one GPU per node, same local index
        (64, 2, 8, "same_rail"),  # 8 nodes apart, same rail
        (1, 64, 8, "consecutive"),  # 8 whole nodes
        (4, 8, 8, "consecutive"),  # two per node across four nodes
        (1, 8, 72, "tensor_parallel"),  # nine TP-8 groups in an NVL72 domain
        (1, 16, 72, "consecutive"),  # 16 does not divide 72: the fifth group straddles two
    ],
)
def test_placement_on_the_two_level_machine(
    stride: int, size: int, domain: int, expected: str
) -> None:
    assert placement(stride, size, domain) == expected


# ---- presets ---------------------------------------------------------------------------------


def test_preset_names_in_the_schema_are_the_presets() -> None:
    assert tuple(PRESETS) == PRESET_NAMES


@pytest.mark.parametrize("name", PRESET_NAMES)
def test_every_figure_of_a_preset_has_a_source(name: str) -> None:
    assert unsourced(preset(name)) == []


def test_one_preset_above_a_trillion_parameters() -> None:
    assert preset("kimi-k2-1t").parameters > 1e12
    assert preset("kimi-k2-1t").active == 32e9


def test_unknown_preset_is_an_input_error() -> None:
    with pytest.raises(InputError, match=r"unknown preset 'gpt-5'.*gpt3-175b"):
        preset("gpt-5")


# ---- refusals --------------------------------------------------------------------------------

_MOE = {
    "parameters": 46.7e9,
    "active_parameters": 12.9e9,
    "layers": 32,
    "hidden_size": 4096,
    "sequence_length_tokens": 4096,
    "global_batch_sequences": 64,
    "experts": 8,
    "top_k": 2,
    "moe_layers": 32,
}


@pytest.mark.parametrize(
    ("workload", "expected"),
    [
        ({"parallelism": {"data": 8}}, "exactly one of preset"),
        (
            {"preset": "gpt3-175b", "model": _MOE, "parallelism": {"data": 8}},
            "exactly one of preset",
        ),
        ({"preset": "gpt-5"}, "preset"),
        ({"preset": "gpt3-175b", "parallelism": {"data": 12, "expert": 8}}, "must divide data"),
        (
            {"model": _MOE, "parallelism": {"data": 64, "expert": 16}},
            "must divide the model's experts (8)",
        ),
        ({"preset": "gpt3-175b", "parallelism": {"pipeline": 97}}, "exceeds the model's layers"),
        ({"preset": "gpt3-175b", "parallelism": {"data": 1000}}, "multiple of"),
        ({"model": _MOE | {"moe_layers": 0}}, "moe_layers (0)"),
        ({"model": _MOE | {"top_k": 8}}, "top_k (8) must be fewer"),
        ({"model": _MOE | {"active_parameters": None}}, "per-token count"),
        ({"model": _MOE | {"active_parameters": 50e9}}, "leave no dense weights"),
        ({"model": _MOE | {"experts": 1}}, "describe a mixture of experts"),
        ({"model": _MOE | {"capacity_factor": 0.5}}, "capacity_factor"),
        ({"model": _MOE, "overlap_fraction": 1.5}, "overlap_fraction"),
        ({"model": _MOE, "gpu": {"peak_flops": 0, "price_usd_per_hour": 2}}, "peak_flops"),
        (
            {"preset": "gpt3-175b", "parallelism": {"data": 8, "virtual_stages": 2}},
            "give pipeline > 1",
        ),
        (
            {"preset": "gpt3-175b", "parallelism": {"pipeline": 16, "virtual_stages": 8}},
            "pipeline x virtual_stages (16 x 8) exceeds the model's layers (96)",
        ),
        ({"preset": "gpt3-175b", "recompute": "some"}, "recompute"),
        ({"preset": "gpt3-175b", "search": {}}, "give gpu.memory_gib"),
    ],
)
def test_schema_refuses_inconsistent_workloads(workload: dict[str, Any], expected: str) -> None:
    with pytest.raises(ValidationError) as info:
        Workload.model_validate({"gpu": H100} | workload)
    assert expected in str(info.value)


def _instance(gpus: int, **parallelism: int) -> Instance:
    return Instance.model_validate(
        {
            "name": "wl",
            "cluster": {"gpus": gpus},
            "workload": {"preset": "gpt3-175b", "parallelism": parallelism, "gpu": H100},
        }
    )


def test_parallel_degrees_must_multiply_to_the_cluster() -> None:
    check_workload(_instance(1024, tensor=8, pipeline=16, data=8))  # 8 x 16 x 8 = 1,024
    with pytest.raises(InputError, match=r"8 x 16 x 4 = 512 GPUs, but cluster.gpus is 1,024"):
        check_workload(_instance(1024, tensor=8, pipeline=16, data=4))


def test_an_instance_without_workload_is_unchanged() -> None:
    inst = Instance.model_validate({"name": "plain", "cluster": {"gpus": 64}})
    assert inst.workload is None
    check_workload(inst)


# ---- extreme values: products of allowed fields beyond what a simulated call carries ----------

#: A 1B dense model whose fields each stay within their bounds.
_DENSE = {
    "parameters": 1e9,
    "layers": 4,
    "hidden_size": 4096,
    "sequence_length_tokens": 4096,
    "global_batch_sequences": 8,
}


@pytest.mark.parametrize(
    ("workload", "collective", "fields"),
    [
        # 1 x 1e7 x 1e6 x 2 = 2e13 bytes a tensor all-reduce (the cap is 1e13).
        (
            {
                "model": _DENSE | {"hidden_size": 1_000_000, "sequence_length_tokens": 10_000_000},
                "parallelism": {"tensor": 2, "data": 4},
            },
            "tp_all_reduce sends 20,000,000,000,000 bytes",
            "micro_batch_sequences x model.sequence_length_tokens x model.hidden_size",
        ),
        # 1e5 x 1e7 x 4,096 x 8 / 1 = 3.3e16 bytes between two stages.
        (
            {
                "model": _DENSE
                | {
                    "sequence_length_tokens": 10_000_000,
                    "activation_bytes": 8,
                    "global_batch_sequences": 100_000,
                },
                "micro_batch_sequences": 100_000,
                "parallelism": {"pipeline": 2},
            },
            "pp_send sends",
            "model.activation_bytes / parallelism.tensor",
        ),
        # 1e14 parameters x 8 B on one replica's shard: 8e14 bytes of gradients.
        (
            {
                "model": _DENSE | {"parameters": 1e14, "gradient_bytes": 8},
                "parallelism": {"data": 2},
            },
            "dp_all_reduce sends 800,000,000,000,000 bytes",
            "dense parameters / (parallelism.tensor x parallelism.pipeline) x model.gradient_bytes",
        ),
        # 8 x 1e6 tokens x top 2 x capacity 16 x 65,536 x 2 bytes = 3.4e16 bytes an all-to-all.
        (
            {
                "model": _MOE
                | {"sequence_length_tokens": 1_000_000, "hidden_size": 65_536}
                | {"capacity_factor": 16.0},
                "micro_batch_sequences": 8,
                "parallelism": {"data": 8, "expert": 8},
            },
            "ep_dispatch sends",
            "model.top_k x model.capacity_factor",
        ),
        # Sequence parallel over 8 tensor ranks with 4 tokens a microbatch: 4 // 8 = 0 tokens.
        (
            {
                "model": _MOE | {"sequence_length_tokens": 4},
                "parallelism": {"tensor": 8, "data": 8, "expert": 8, "sequence_parallel": True},
            },
            "ep_dispatch sends no byte per call",
            "model.sequence_length_tokens // parallelism.tensor",
        ),
    ],
    ids=["tensor", "pipeline", "data", "expert", "expert-no-token"],
)
def test_a_collective_beyond_a_simulated_call_is_refused_by_the_workload(
    workload: dict[str, Any], collective: str, fields: str
) -> None:
    # Each field was within its bounds, and the derived traffic failed as a raw pydantic dump
    # naming verify.TrafficSpec.size_bytes.
    with pytest.raises(ValidationError) as info:
        Workload.model_validate({"gpu": H100} | workload)
    message = str(info.value)
    assert collective in message
    assert fields in message
    assert "TrafficSpec" not in message


def test_the_largest_message_a_workload_may_send_is_the_traffic_cap() -> None:
    from planner.schema.workload import MAX_MESSAGE_BYTES

    limit = Verify.model_json_schema()["$defs"]["TrafficSpec"]["properties"]["size_bytes"]
    assert limit["maximum"] == MAX_MESSAGE_BYTES
    # At the cap exactly: 1 x 10,000,000 x 500,000 x 2 = 1e13 bytes is accepted and simulable.
    w = Workload.model_validate(
        {
            "gpu": H100,
            "model": _DENSE | {"hidden_size": 500_000, "sequence_length_tokens": 10_000_000},
            "parallelism": {"tensor": 2, "data": 4},
        }
    )
    (tp,) = [c for c in collectives(w, 8) if c.name == "tp_all_reduce"]
    assert tp.size_bytes == MAX_MESSAGE_BYTES
    assert len(to_verify_traffic(collectives(w, 8), 1)) == 2


def test_an_instance_with_an_extreme_workload_names_the_workload(tmp_path: Any) -> None:
    from planner.loading import load_instance

    path = tmp_path / "extreme.toml"
    path.write_text(
        "name = 'extreme'\n[cluster]\ngpus = 8\n[workload]\n"
        "parallelism = { tensor = 2, data = 4 }\n"
        "gpu = { peak_flops = 1e15, price_usd_per_hour = 2.0 }\n"
        "[workload.model]\nparameters = 1e9\nlayers = 4\nhidden_size = 1000000\n"
        "sequence_length_tokens = 10000000\nglobal_batch_sequences = 8\n",
        encoding="utf-8",
    )
    with pytest.raises(InputError) as info:
        load_instance(path)
    assert "workload: " in str(info.value)
    assert "tp_all_reduce sends" in str(info.value)
    assert "TrafficSpec" not in str(info.value)


@pytest.mark.parametrize("layers", [8, 32])
def test_zero3_pays_its_latency_once_a_layer(layers: int) -> None:
    """FSDP's gathers, one a layer: on 2,048 ranks of a tiny model, latency is their whole time.

    Analytic time (``planner.workload.analytic``): per call w S / B + (n - 1) alpha; the bytes of
    the iteration do not depend on L, the (n - 1) alpha of each of its 3 m L calls does.
    """
    from planner.workload.analytic import bandwidths, call_time_s

    model = Model(
        parameters=1e6,
        layers=layers,
        hidden_size=256,
        sequence_length_tokens=1024,
        global_batch_sequences=2048,
    )
    w = Workload.model_validate(
        {
            "model": model,
            "parallelism": {"data": 2048, "zero_stage": 3},
            "gpu": H100,
            "micro_batch_sequences": 1,
        }
    )
    bw = bandwidths(8, 3600.0, 400.0)
    rows = {c.name: c for c in collectives(w, 8)}
    calls = sum(c.calls for c in rows.values())
    assert calls == 3 * w.microbatches * layers
    latency = calls * 2047 * bw.latency_s
    wire = sum(c.total_bytes * 2047 / 2048 for c in rows.values()) / bw.fabric_bytes_per_s
    total = sum(call_time_s(c, bw) * c.calls for c in rows.values())
    assert total == pytest.approx(wire + latency, rel=1e-9)
    assert latency > 0.99 * total

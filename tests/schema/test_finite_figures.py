"""Every figure the planner writes is finite, or the input is refused with its field (issue 32).

The step time divides a workload's FLOPs by the GPU's achieved rate, peak_flops x utilisation;
both were only bounded away from zero (``gt=0``), so a tiny peak (1e-300 FLOP/s) made the step
time and the cost per token overflow to ``inf`` and the run still exited 0. The root is the
input's range: with the rate bounded below (``MIN_PEAK_FLOPS``, ``MIN_UTILISATION``), every
step figure is finite at every corner of the schema, which is tested at the worst corner here;
``step_time`` guards its own arithmetic as well, for a workload built without validation.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from planner.errors import InputError
from planner.schema.input_errors import validate_data
from planner.schema.workload import MIN_PEAK_FLOPS, MIN_UTILISATION, Workload
from planner.workload.iteration import collectives
from planner.workload.step import CollectiveTime, step_time
from tests.conftest import REPO_ROOT

#: A dense 8-GPU workload (tensor 2, data 4) whose GPU fields the cases below change.
SMALL: dict[str, Any] = {
    "model": {
        "parameters": 1e9,
        "layers": 4,
        "hidden_size": 1024,
        "sequence_length_tokens": 1000,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 2, "data": 4},
    "gpu": {"peak_flops": 1e15, "utilisation": 0.5, "price_usd_per_hour": 3.6},
}

#: The worst corner of the schema for the step figures: the most FLOPs an iteration may hold
#: (the largest model, the longest sequences, the largest batch, full recomputation) on one
#: pipeline of 2 GPUs at the slowest GPU the schema accepts and the highest price, every
#: collective call taking a day.
WORST: dict[str, Any] = {
    "model": {
        "parameters": 1e14,
        "layers": 10_000,
        "hidden_size": 1024,
        "sequence_length_tokens": 10_000_000,
        "global_batch_sequences": 100_000_000,
        "activation_bytes": 8,
        "gradient_bytes": 8,
    },
    "parallelism": {"pipeline": 2},
    "recompute": "full",
    "gpu": {
        "peak_flops": MIN_PEAK_FLOPS,
        "utilisation": MIN_UTILISATION,
        "price_usd_per_hour": 1e4,
    },
}
#: Simulated time of one call at the worst corner: a day.
DAY_S = 86_400.0


def _with_gpu(**gpu: float) -> dict[str, Any]:
    return SMALL | {"gpu": SMALL["gpu"] | gpu}


@pytest.mark.parametrize(
    ("field", "value", "bound"),
    [
        ("peak_flops", 1e-300, f"{MIN_PEAK_FLOPS:.0f}"),
        ("peak_flops", 1.0, f"{MIN_PEAK_FLOPS:.0f}"),
        ("utilisation", 1e-300, f"{MIN_UTILISATION}"),
    ],
)
def test_a_gpu_too_slow_for_finite_figures_is_refused(field: str, value: float, bound: str) -> None:
    with pytest.raises(InputError) as err:
        validate_data(Workload, _with_gpu(**{field: value}))
    message = str(err.value)
    assert f"gpu.{field}" in message
    assert bound in message


def test_every_step_figure_is_finite_at_the_worst_corner() -> None:
    w = Workload.model_validate(WORST)
    times = [CollectiveTime(c, c.name, DAY_S) for c in collectives(w, 1)]
    assert times, "the worst corner has a pipeline send to time"
    step = step_time(w, times)
    assert step is not None
    figures = dataclasses.asdict(step)
    assert all(math.isfinite(v) for v in figures.values()), figures
    assert step.usd_per_million_tokens > 0


@pytest.mark.parametrize(("field", "value"), [("peak_flops", 1e-300), ("utilisation", 1e-320)])
def test_step_time_guards_its_arithmetic(field: str, value: float) -> None:
    w = Workload.model_validate(SMALL)
    # model_copy does not validate: a workload the schema would refuse, as a caller might build.
    unchecked = w.model_copy(update={"gpu": w.gpu.model_copy(update={field: value})})
    times = [CollectiveTime(c, c.name, 0.01) for c in collectives(unchecked, 8)]
    with pytest.raises(InputError) as err:
        step_time(unchecked, times)
    assert "workload.gpu.peak_flops" in str(err.value)
    assert "not finite" in str(err.value)


@pytest.mark.parametrize("call_s", [math.inf, math.nan])
def test_step_time_refuses_a_non_finite_collective_time(call_s: float) -> None:
    w = Workload.model_validate(SMALL)
    times = [CollectiveTime(c, c.name, call_s) for c in collectives(w, 8)]
    with pytest.raises(ValueError, match="not finite"):
        step_time(w, times)


# ---- the other rates and counts the figures divide by or multiply up --------------------------
@pytest.mark.parametrize(
    ("dotted", "value", "bound"),
    [
        # The scale-up rate divides every tensor-parallel byte: 1e-300 Gb/s gave a 2.6e304 s step.
        ("cluster.scale_up.gbps_per_gpu", 1e-300, "greater than or equal to 1"),
        # The pacing divides every flow's rate: 1e-300 gave a 4.3e299 s step.
        ("verify.transport.pacing_fraction", 1e-300, "greater than or equal to 0.01"),
    ],
)
def test_rates_are_bounded_below(dotted: str, value: float, bound: str) -> None:
    import tomllib

    from planner.schema.instance import Instance

    path = REPO_ROOT / "instances" / "workload-gpt3-175b.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    node = data
    *parents, last = dotted.split(".")
    for part in parents:
        node = node.setdefault(part, {})
    node[last] = value
    with pytest.raises(InputError) as err:
        validate_data(Instance, data)
    assert dotted in str(err.value)
    assert bound in str(err.value)


@pytest.mark.parametrize(
    ("dotted", "value"),
    [
        ("switch.0.capacity_gbps", 10**15),
        ("switch.0.latency_ns", 10**15),
        ("medium.0.speed_gbps", 10**9),
        ("medium.0.reach_m", 1e300),
        ("medium.0.latency_ns", 10**15),
        ("nic.0.speed_gbps", 10**9),
        ("ocs.0.reconfiguration_ms", 1e300),
    ],
)
def test_catalog_figures_are_bounded_above(dotted: str, value: float) -> None:
    import copy
    import tomllib

    from planner.schema.catalog import Catalog

    path = REPO_ROOT / "planner" / "catalog" / "default.toml"
    data = copy.deepcopy(tomllib.loads(path.read_text(encoding="utf-8")))
    kind, index, field = dotted.split(".")
    data[kind][int(index)][field] = value
    with pytest.raises(InputError) as err:
        validate_data(Catalog, data)
    assert dotted in str(err.value)
    assert "less than or equal to" in str(err.value)

"""Numbers are numbers: no ``true``/``false`` where a number is expected, list items checked one by one.

TOML's ``true`` is a Python ``bool``, which is an ``int``: pydantic's lax mode takes it as 1.
The rule is model-wide (``planner.schema.instance_base.Strict``), so it is tested on fields of
every section of the instance and of the catalog, and on list and table items, not on one field.
Items of ``[workload.search]`` lists are bounded one by one (issue 32: a microbatch or an
interleaving degree of 0 reached the search and divided by zero).
"""

from __future__ import annotations

import copy
import tomllib
from typing import Any

import pytest

from planner.errors import InputError
from planner.schema.catalog import Catalog
from planner.schema.input_errors import validate_data
from planner.schema.instance import Instance
from tests.conftest import REPO_ROOT

REPO = REPO_ROOT
SEARCH_INSTANCE = REPO / "instances" / "workload-gpt3-175b-search.toml"
CATALOG = REPO / "planner" / "catalog" / "default.toml"


def _instance_data() -> dict[str, Any]:
    return tomllib.loads(SEARCH_INSTANCE.read_text(encoding="utf-8"))


def _set(data: dict[str, Any], dotted: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``data`` with the value at a dotted path (list indices as numbers) set."""
    out = copy.deepcopy(data)
    node: Any = out
    parts = dotted.split(".")
    for part in parts[:-1]:
        node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
    last = parts[-1]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


def _refusal(model: type[Instance] | type[Catalog], data: dict[str, Any]) -> str:
    with pytest.raises(InputError) as err:
        validate_data(model, data)
    return str(err.value)


@pytest.mark.parametrize(
    ("dotted", "value"),
    [
        ("workload.gpu.peak_flops", True),
        ("workload.gpu.price_usd_per_hour", False),
        ("workload.parallelism.tensor", True),
        ("workload.parallelism.zero_stage", True),
        ("workload.micro_batch_sequences", True),
        ("workload.search.micro_batch_sequences.1", True),
        ("workload.search.virtual_stages.0", True),
        ("workload.search.zero_stages.0", True),
        ("verify.spray_entropies", True),
        ("verify.memory_budget_gib", True),
        ("verify.transport.payload_bytes", True),
        ("verify.transport.acks_per_packet", True),
        ("cluster.gpus", True),
        ("cluster.nic_gbps", True),
        ("constraints.max_oversubscription", True),
        ("objective.lifetime_years", True),
    ],
)
def test_bool_is_not_a_number_in_the_instance(dotted: str, value: bool) -> None:
    data = _instance_data()
    if dotted.startswith("verify.transport"):
        data.setdefault("verify", {})["transport"] = {"name": "rocev2"}
    message = _refusal(Instance, _set(data, dotted, value))
    assert dotted in message
    assert "not true or false" in message


@pytest.mark.parametrize(
    "dotted",
    [
        "switch.0.cost_usd",
        "switch.0.capacity_gbps",
        "switch.0.port_configs.0.ports",
        "medium.0.cost_usd_per_end",
    ],
)
def test_bool_is_not_a_number_in_the_catalog(dotted: str) -> None:
    data = tomllib.loads(CATALOG.read_text(encoding="utf-8"))
    message = _refusal(Catalog, _set(data, dotted, True))
    assert dotted in message
    assert "not true or false" in message


def test_booleans_stay_booleans() -> None:
    data = _set(_instance_data(), "workload.overlap_tensor_parallel", True)
    inst = validate_data(Instance, data)
    assert inst.workload is not None
    assert inst.workload.overlap_tensor_parallel is True


@pytest.mark.parametrize(
    ("dotted", "value"),
    [
        ("workload.search.micro_batch_sequences", [1, 0]),
        ("workload.search.micro_batch_sequences", [-2]),
        ("workload.search.virtual_stages", [1, 0]),
        ("workload.search.virtual_stages", [-1, 2]),
        ("workload.search.virtual_stages", [100_000]),
    ],
)
def test_search_list_items_are_bounded(dotted: str, value: list[int]) -> None:
    bad = next(i for i, v in enumerate(value) if v < 1 or v > 1024)
    message = _refusal(Instance, _set(_instance_data(), dotted, value))
    assert f"{dotted}.{bad}" in message


@pytest.mark.parametrize(
    ("dotted", "value"),
    [
        ("workload.gpu.peak_flops", float("nan")),
        ("workload.gpu.utilisation", float("inf")),
        ("verify.memory_budget_gib", float("nan")),
        ("constraints.max_oversubscription", float("inf")),
        ("workload.search.latency_s", float("nan")),
    ],
)
def test_non_finite_numbers_are_refused(dotted: str, value: float) -> None:
    message = _refusal(Instance, _set(_instance_data(), dotted, value))
    assert dotted in message
    assert "finite" in message


@pytest.mark.parametrize("value", [0, -0.1, 1.01, True])
def test_a_published_mfu_is_a_fraction(value: object) -> None:
    """workload.published_mfu: a number in (0, 1], named when it is not."""
    data = {
        "name": "mfu",
        "cluster": {"gpus": 64, "gpus_per_node": 8},
        "workload": {
            "preset": "llama3.1-405b",
            "gpu": {"peak_flops": 989e12, "price_usd_per_hour": 2.0},
            "published_mfu": value,
        },
    }
    with pytest.raises((InputError, ValueError), match="published_mfu"):
        validate_data(Instance, data)

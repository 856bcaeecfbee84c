"""Scenarios of a study: the grid's order, names, keys, and every change validated up front."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest

import planner
from planner.errors import InputError
from planner.output import safe_name
from planner.schema.instance import INSTANCE_NAME_PATTERN
from planner.study import study_of
from planner.study.scenarios import change_sets, short_labels, value_text
from tests.study.conftest import tiny


def test_grid_is_the_cartesian_product_last_key_fastest() -> None:
    sets = change_sets({"a.x": [1, 2], "b.y": ["p", "q", "r"]})
    assert sets == [
        {"a.x": 1, "b.y": "p"},
        {"a.x": 1, "b.y": "q"},
        {"a.x": 1, "b.y": "r"},
        {"a.x": 2, "b.y": "p"},
        {"a.x": 2, "b.y": "q"},
        {"a.x": 2, "b.y": "r"},
    ]


def test_scenario_names_are_short_readable_and_safe() -> None:
    study = study_of(tiny(), {"cluster.gpus": [64, 128], "cluster.nic_gbps": [400]})
    assert [s.name for s in study.scenarios] == ["gpus=64+nic_gbps=400", "gpus=128+nic_gbps=400"]
    assert all(s.name == safe_name(s.name) for s in study.scenarios)


def test_each_scenario_instance_is_named_after_its_scenario() -> None:
    study = study_of(tiny(), {"cluster.gpus": [64, 128]})
    assert [s.instance.name for s in study.scenarios] == ["tiny.gpus-64", "tiny.gpus-128"]
    assert [s.instance.cluster.gpus for s in study.scenarios] == [64, 128]


def test_a_tail_two_keys_share_is_lengthened() -> None:
    assert short_labels(["cluster.nic_gbps", "network.nic_gbps", "cluster.gpus"]) == {
        "cluster.nic_gbps": "cluster.nic_gbps",
        "network.nic_gbps": "network.nic_gbps",
        "cluster.gpus": "gpus",
    }


@pytest.mark.parametrize(
    ("value", "text"),
    [(True, "true"), (2.0, "2"), (0.5, "0.5"), ([1, 2], "1-2"), (["clos"], "clos"), ("x y", "x y")],
    ids=str,
)
def test_values_show_without_brackets(value: Any, text: str) -> None:
    assert value_text(value) == text


def test_names_that_come_out_the_same_are_told_apart() -> None:
    # Two different instances whose names are made the same by safe_name (a space is "_").
    study = study_of(tiny(), [{"description": "a b"}, {"description": "a_b"}])
    names = [s.name for s in study.scenarios]
    assert names == ["description=a_b", "description=a_b-2"]
    assert study.merged == ()


def test_a_long_scenario_name_still_makes_a_valid_instance_name() -> None:
    import re

    study = study_of(
        tiny(),
        [
            {
                "search.switch_models": [
                    "qm9700",
                    "tomahawk4-25t",
                    "sn5600",
                    "q3400",
                    "tomahawk6-102t",
                ]
            }
        ],
    )
    name = study.scenarios[0].instance.name
    assert re.match(INSTANCE_NAME_PATTERN, name)


def test_the_same_changes_give_the_same_key() -> None:
    grid = {"cluster.gpus": [64, 128]}
    first = [s.key for s in study_of(tiny(), grid).scenarios]
    assert first == [s.key for s in study_of(tiny(), grid).scenarios]
    assert len(set(first)) == 2


@pytest.mark.parametrize(
    "other",
    [
        {"verify": False},
        {"time_limit_s": 5.0},
    ],
    ids=str,
)
def test_other_settings_give_other_keys(other: dict[str, Any]) -> None:
    grid = {"cluster.gpus": [64]}
    base = study_of(tiny(), grid).scenarios[0].key
    assert study_of(tiny(), grid, **other).scenarios[0].key != base


def test_another_base_instance_gives_other_keys() -> None:
    grid = {"cluster.gpus": [64]}
    other = tiny().with_changes({"cluster.gpus_per_node": 4})
    assert study_of(other, grid).scenarios[0].key != study_of(tiny(), grid).scenarios[0].key


@pytest.mark.parametrize(
    ("grid", "words"),
    [
        ({"cluster.gpuz": [64]}, ["scenario gpuz=64", "cluster.gpuz", "unknown field"]),
        ({"cluster.gpus": [64, "many"]}, ["scenario gpus=many", "cluster.gpus"]),
        ({}, ["grid is empty"]),
        ({"cluster.gpus": []}, ["grid cluster.gpus", "no values"]),
        ({"cluster.gpus": 64}, ["grid cluster.gpus", "list of values"]),
        ({"cluster..gpus": [64]}, ["dotted field path"]),
        ({"status": [1]}, ["status"]),
    ],
    ids=str,
)
def test_bad_changes_are_refused_before_anything_runs(grid: Any, words: list[str]) -> None:
    with pytest.raises(InputError) as info:
        study_of(tiny(), grid)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("sets", "words"),
    [
        ([], ["no scenarios"]),
        ([{"cluster.gpus": 64}, "cluster.gpus=8"], ["change set 1"]),
        ([{}, {"cluster.gpus": 0}], ["scenario gpus=0", "cluster.gpus"]),
    ],
    ids=str,
)
def test_bad_change_sets_are_refused(sets: Any, words: list[str]) -> None:
    with pytest.raises(InputError) as info:
        study_of(tiny(), sets)
    for word in words:
        assert word in str(info.value)


def test_an_empty_change_set_is_the_baseline() -> None:
    study = study_of(tiny(), [{}, {"cluster.gpus": 128}])
    assert [s.name for s in study.scenarios] == ["base", "gpus=128"]
    assert study.scenarios[0].instance.cluster.gpus == 64


#: A workload whose parallel degrees multiply to the tiny instance's 64 GPUs.
WORKLOAD_64: dict[str, Any] = {
    "preset": "mixtral-8x7b",
    "parallelism": {"data": 64, "expert": 8},
    "gpu": {"peak_flops": 989e12, "price_usd_per_hour": 2.0},
}


@pytest.mark.parametrize(
    ("base", "grid", "words"),
    [
        (
            {},
            {"search.switch_models": [["sn5600"], ["nope"]]},
            ["scenario switch_models=nope", "search.switch_models", "unknown switch model 'nope'"],
        ),
        (
            {"cluster.nic": "connectx-7"},
            {"cluster.nic_gbps": [400, 200]},
            ["scenario nic_gbps=200", "cluster.nic_gbps", "connectx-7 runs at 400"],
        ),
        (
            {},
            {"cluster.nic": ["connectx-7", "nic-9000"]},
            ["scenario nic=nic-9000", "cluster.nic", "unknown NIC"],
        ),
        (
            {"workload": WORKLOAD_64},
            {"cluster.gpus": [64, 32]},
            ["scenario gpus=32", "workload.parallelism", "multiply to the cluster's GPUs"],
        ),
        (
            {},
            {"search.catalog": ["default", "/nonexistent/catalog.toml"]},
            ["scenario catalog=", "search.catalog", "/nonexistent/catalog.toml", "not found"],
        ),
        (
            {"workload": WORKLOAD_64},
            {"objective.idle_gpu_weight": [0.0, 1.0]},
            ["scenario idle_gpu_weight=1", "objective.idle_gpu_weight", "verification on"],
        ),
    ],
    ids=[
        "unknown-switch",
        "nic-speed",
        "unknown-nic",
        "parallelism",
        "no-catalog",
        "idle-unverified",
    ],
)
def test_the_checks_solve_makes_refuse_a_scenario_before_anything_runs(
    base: dict[str, Any], grid: dict[str, list[Any]], words: list[str]
) -> None:
    inst = tiny().with_changes(base) if base else tiny()
    with pytest.raises(InputError) as info:
        study_of(inst, grid, verify=False)
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    ("grid_or_sets", "names", "note"),
    [
        (
            {"cluster.gpus": [64, 64.0, 128]},
            ["gpus=64", "gpus=128"],
            "cluster.gpus = 64.0 is the same as cluster.gpus = 64 once validated: merged "
            "(1 scenario fewer)",
        ),
        (
            {"cluster.gpus": [64, 64], "cluster.nic_gbps": [200, 400]},
            ["gpus=64+nic_gbps=200", "gpus=64+nic_gbps=400"],
            "scenario gpus=64+nic_gbps=200 is given more than once: planned once (1 scenario fewer)",
        ),
        (
            {"constraints.max_oversubscription": [1, 1.0, 2]},
            ["max_oversubscription=1", "max_oversubscription=2"],
            "constraints.max_oversubscription = 1.0 is the same as "
            "constraints.max_oversubscription = 1 once validated",
        ),
        (
            [{}, {"cluster.gpus": 64}, {"cluster.gpus": 128}],
            ["base", "gpus=128"],
            "cluster.gpus = 64 is the same as cluster.gpus = the base value once validated",
        ),
    ],
    ids=["int-and-float", "listed-twice", "float-field", "same-as-base"],
)
def test_scenarios_the_same_once_validated_are_merged_and_said(
    grid_or_sets: Any, names: list[str], note: str
) -> None:
    study = study_of(tiny(), grid_or_sets)
    assert [s.name for s in study.scenarios] == names
    assert len({s.key for s in study.scenarios}) == len(names)
    assert any(note in line for line in study.merged), study.merged


def test_a_merged_grid_keeps_the_column_type_of_the_values_left() -> None:
    study = study_of(tiny(), {"cluster.gpus": [64, 64.0]})
    assert study.schema["cluster.gpus"] == pl.Int64


def _catalog_file(path: Path, price_usd: float) -> Path:
    """The default catalog with every ``cost_usd`` (switches and the like) set to ``price_usd``."""
    text = (Path(planner.__file__).parent / "catalog" / "default.toml").read_text(encoding="utf-8")
    changed = re.sub(r"(?m)^cost_usd = [0-9][0-9_.e+]*$", f"cost_usd = {price_usd}", text)
    assert changed != text
    path.write_text(changed, encoding="utf-8")
    return path


def test_the_key_holds_the_catalog_files_content_not_its_name(tmp_path: Path) -> None:
    path = _catalog_file(tmp_path / "mine.toml", 10_000.0)
    inst = tiny().with_changes({"search.catalog": str(path)})
    grid = {"cluster.gpus": [64]}
    before = study_of(inst, grid).scenarios[0].key
    assert study_of(inst, grid).scenarios[0].key == before
    _catalog_file(path, 20_000.0)  # the same file, other prices
    assert study_of(inst, grid).scenarios[0].key != before


def test_each_scenario_carries_the_catalog_it_was_checked_against(tmp_path: Path) -> None:
    path = _catalog_file(tmp_path / "mine.toml", 10_000.0)
    inst = tiny().with_changes({"search.catalog": str(path)})
    study = study_of(inst, {"cluster.gpus": [64, 128]})
    prices = {sw.cost_usd for s in study.scenarios for sw in s.catalog.switch}
    assert prices == {10_000.0}

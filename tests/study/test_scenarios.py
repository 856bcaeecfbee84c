"""Scenarios of a study: the grid's order, names, keys, and every change validated up front."""

from __future__ import annotations

from typing import Any

import pytest

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
    sets = [{"constraints.max_oversubscription": 2}, {"constraints.max_oversubscription": 2.0}]
    study = study_of(tiny(), sets)
    names = [s.name for s in study.scenarios]
    assert len(set(names)) == 2
    assert names[1] == names[0] + "-2"


def test_a_long_scenario_name_still_makes_a_valid_instance_name() -> None:
    import re

    study = study_of(
        tiny(), [{"search.switch_models": ["sn5600", "qm9700", "sn5400", "tomahawk5"]}]
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
        ({"cluster.gpus": [64, 64]}, ["the same changes as scenario gpus=64"]),
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

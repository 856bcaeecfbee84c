"""design.json through its schema: every broken field is named with what was expected."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from planner.api import plan
from planner.design import Design
from planner.design_file import DesignFileError
from planner.errors import InputError
from planner.families import FAMILIES, read_design
from planner.loading import load_instance
from planner.schema.instance import one_of
from tests.hostile.generator import drop_key, set_path


@pytest.fixture(scope="module")
def design(repo_root: Path) -> Design:
    inst = load_instance(repo_root / "instances" / "h100-1k.toml")
    result = plan(inst, verify=False, alternatives=False, time_limit_s=30)
    assert result.design is not None
    return result.design


_set, _drop = set_path, drop_key


#: id -> (edit of a real design.json, words the message must hold)
MUTATIONS: dict[str, tuple[Callable[[dict[str, Any]], None], list[str]]] = {
    "empty-tiers": (_set("tiers", []), ["tiers", "at least 1 item"]),
    "null-tiers": (_set("tiers", None), ["tiers", "valid list", "null"]),
    "zero-switches": (
        _set("tiers.0.switches", 0),
        ["tiers.0.switches", "greater than or equal to 1"],
    ),
    "negative-switches": (_set("tiers.1.switches", -4), ["tiers.1.switches", "-4"]),
    "string-count": (_set("tiers.1.switches", "16"), ["tiers.1.switches", "valid integer"]),
    "bool-planes": (_set("planes", True), ["planes", "valid integer"]),
    "null-gpus": (_set("gpus", None), ["gpus", "valid integer"]),
    "zero-gpus": (_set("gpus", 0), ["gpus", "greater than or equal to 1"]),
    "float-gpus": (_set("gpus", 1016.5), ["gpus", "valid integer"]),
    "bogus-family": (_set("family", "hypercube"), ["family", one_of(list(FAMILIES))]),
    "bogus-status": (_set("status", "great"), ["status", "optimal"]),
    "unknown-key": (_set("surprise", 1), ["unknown field 'surprise'"]),
    "unknown-tier-key": (_set("tiers.0.surprise", 1), ["tiers.0", "unknown field 'surprise'"]),
    "missing-requirements": (_drop("requirements"), ["requirements", "Field required"]),
    "name-with-dots": (_set("instance", "../../escape"), ["instance", "pattern"]),
    "name-absolute": (_set("instance", "/tmp/escape"), ["instance", "pattern"]),
    "name-with-nul": (_set("instance", "a\x00b"), ["instance", "pattern"]),
    "negative-cost": (_set("tiers.0.unit_cost_usd", -1.0), ["tiers.0.unit_cost_usd"]),
    "ports-beyond-radix": (_set("tiers.0.downlinks", 1000), ["tiers.0", "exceed the radix"]),
    "levels-out-of-order": (_set("tiers.1.level", 1), ["levels must run 1, 2"]),
    "bogus-role": (_set("tiers.0.role", "router"), ["tiers.0.role"]),
    "empty-groups": (_set("link_classes.0.groups", []), ["link_classes.0.groups"]),
    "class-missing": (
        lambda d: d["link_classes"].pop(),
        ["link_classes", "one per tier"],
    ),
    "afr-above-one": (_set("link_classes.1.groups.0.afr", 5.0), ["link_classes.1.groups.0.afr"]),
    "circuits-on-clos": (_set("circuits", [[0, 1, 0, 1]]), ["circuits", "OCS layer"]),
    "bad-circuit": (_set("circuits", [[1, 0, 0]]), ["circuits", "entry 0"]),
    "requirement-ratio": (
        _set("requirements.max_oversubscription", [0.0]),
        ["requirements.max_oversubscription", "0.1 to 64"],
    ),
}


@pytest.mark.parametrize("case", list(MUTATIONS))
def test_a_broken_design_names_the_field(design: Design, case: str) -> None:
    edit, expected = MUTATIONS[case]
    data = json.loads(design.to_json())
    edit(data)
    with pytest.raises(DesignFileError) as info:
        read_design(data)
    assert isinstance(info.value, InputError)
    assert isinstance(info.value, ValueError)
    for words in expected:
        assert words in str(info.value)


@pytest.mark.parametrize("text", ["[1, 2]", '"design"', "null", "3"])
def test_what_is_not_an_object_is_no_design(text: str) -> None:
    with pytest.raises(DesignFileError, match="expected a JSON object"):
        read_design(text)


def test_infinity_in_a_design_is_refused(design: Design) -> None:
    text = design.to_json().replace('"capex_usd": ', '"capex_usd": Infinity, "_": ', 1)
    data = json.loads(text)
    data.pop("_")
    with pytest.raises(DesignFileError, match="capex_usd: Input should be a finite number"):
        read_design(data)


def test_the_written_design_reads_back_equal(design: Design) -> None:
    assert read_design(design.to_json()) == design


def test_to_dict_output_reads_back_equal(design: Design) -> None:
    assert read_design(design.to_dict()) == design


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        ("gpus", 4_000_000, "32 leaves x 32 ports < 4000000 GPUs"),
        ("tiers.0.downlinks", 1, "wiring"),
        ("tiers.0.fanout", 1000, "spread"),
        ("tiers.1.switches", 1, "each leaf reaches 16 spines, but there are 1"),
        ("link_speed_gbps", 1, "every class runs at link_speed_gbps"),
    ],
)
def test_counts_that_describe_no_fabric_are_bad_input(
    design: Design, path: str, value: Any, expected: str
) -> None:
    # simulate built a fabric from them and failed with an IndexError (or ran at 1 Gb/s).
    data = json.loads(design.to_json())
    _set(path, value)(data)
    with pytest.raises(DesignFileError, match="not a buildable fabric|link_speed_gbps") as info:
        read_design(data)
    assert expected in str(info.value)


def test_reading_leaves_the_callers_data_alone(design: Design) -> None:
    data = json.loads(design.to_json())
    before = json.dumps(data, sort_keys=True)
    read_design(data)
    assert json.dumps(data, sort_keys=True) == before

"""True histograms (issue 14): cable lengths per link group, link utilisation per bin.

The length histogram of every link group must count the group's links and span its shortest to
longest link, for every family that records one; a tiny floor plan is checked against lengths
worked out by hand; design.json carries the histogram there and back, refuses a broken one
(exit 2) and still reads a file written before it existed. The utilisation histogram of the
simulation must count, per pattern, routing, tier and direction, the links of its ``sim_links``
row.
"""

from __future__ import annotations

import copy
import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl
import pytest
from typer.testing import CliRunner

from planner.api import PlanResult, catalog_for, load_instance, plan, validate
from planner.cli import app
from planner.design import MAX_LENGTH_BINS, Design, length_histogram
from planner.families import read_design, search_families
from planner.layout import _apportion
from planner.report.pictures import cables, utilisation
from planner.schema.instance import Instance
from planner.sim.sim_tables import UTIL_BINS, utilisation_bins
from planner.sizing import search

runner = CliRunner()

#: A cluster every family can be sized for, small enough to size in seconds.
SMALL = {
    "cluster": {
        "gpus": 512,
        "gpus_per_node": 8,
        "nic_gbps": 400,
        "nic_ports": [1],
        "scale_up": {"gpus": 8, "gbps_per_gpu": 3600},
    },
    "search": {"switch_models": ["qm9700"]},
}
#: Families whose every link group records its lengths.
RECORDED = ("clos", "rail_optimized", "rail_only", "ocs_direct")


def _sized(family: str, **extra: Any) -> Design:
    data = {**SMALL, "name": "hist", "search": {**SMALL["search"], "families": [family]}, **extra}
    inst = Instance.model_validate(data)
    design = search(inst, catalog_for(inst), search_families(inst), time_limit_s=60).design
    assert design is not None
    return design


@pytest.fixture(scope="module", params=[*RECORDED, "torus"])
def sized(request: pytest.FixtureRequest) -> Design:
    return _sized(request.param)


@pytest.fixture(scope="module", params=["small-256", "h100-1k", "rail-32k"])
def example(request: pytest.FixtureRequest) -> Design:
    inst = load_instance(f"instances/{request.param}.toml")
    design = search(inst, catalog_for(inst), search_families(inst), time_limit_s=60).design
    assert design is not None
    return design


def _groups(d: Design) -> list[Any]:
    return [g for c in d.link_classes for g in c.groups if g.links]


def _check_groups(d: Design) -> None:
    for g in _groups(d):
        pairs = g.length_histogram
        if not pairs:
            continue
        lengths = [x for x, _ in pairs]
        assert sum(n for _, n in pairs) == g.links
        assert (lengths[0], lengths[-1]) == (g.min_length_m, g.max_length_m)
        assert lengths == sorted(set(lengths))
        assert all(n >= 1 for _, n in pairs)
        assert len(pairs) <= MAX_LENGTH_BINS


def test_histograms_count_the_links_and_span_the_range(sized: Design) -> None:
    _check_groups(sized)
    assert not [v for v in validate(sized) if "histogram" in v.message]


@pytest.mark.slow
def test_examples_histograms_count_the_links(example: Design) -> None:
    _check_groups(example)
    assert all(g.length_histogram for g in _groups(example))


@pytest.mark.parametrize("family", RECORDED)
def test_every_group_of_these_families_records_its_lengths(family: str) -> None:
    assert all(g.length_histogram for g in _groups(_sized(family)))


def test_torus_records_the_groups_of_one_length() -> None:
    """The torus keeps only each band's range: a group of one length is known, the rest not."""
    d = _sized("torus")
    for g in _groups(d):
        assert bool(g.length_histogram) == (g.min_length_m == g.max_length_m)


def test_a_floor_plan_worked_by_hand() -> None:
    """One row of 8 racks 0.6 m wide, the leaf mid-row, no slack or overhead: |x - 2.4| m.

    Rack j stands at (j + 0.5) * 0.6 m, so its 8 GPUs run 2.1, 1.5, 0.9, 0.3, 0.3, 0.9, 1.5,
    2.1 m to the leaf: 16 links at each of 0.3, 0.9, 1.5 and 2.1 m.
    """
    layout = {
        "nodes_per_rack": 1,
        "racks_per_row": 8,
        "rack_width_m": 0.6,
        "routing_overhead": 0.0,
        "cable_slack_m": 0.0,
        "leaf_placement": ["middle_of_row"],
    }
    cluster = {"gpus": 64, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]}
    d = _sized("clos", layout=layout, cluster=cluster)
    pooled: dict[float, int] = {}
    for g in d.link_classes[0].groups:
        for x, n in g.length_histogram:
            pooled[x] = pooled.get(x, 0) + n
    assert pooled == {0.3: 16, 0.9: 16, 1.5: 16, 2.1: 16}


def test_binning_keeps_the_extremes_and_the_total() -> None:
    pairs = length_histogram([1.23, 1.26, 1.31, 7.77], [2, 3, 4, 5])
    assert pairs == ((1.23, 2), (1.3, 7), (7.77, 5))


def test_binning_widens_a_very_long_spread() -> None:
    lengths = np.arange(1, 200_001) / 100.0  # 0.01 m to 2,000 m, every centimetre
    pairs = length_histogram(lengths.tolist(), [1] * lengths.size)
    assert len(pairs) <= MAX_LENGTH_BINS
    assert sum(n for _, n in pairs) == lengths.size
    assert (pairs[0][0], pairs[-1][0]) == (0.01, 2000.0)


@pytest.mark.parametrize(
    ("weights", "links"), [([1, 1, 1], 7), ([5, 1, 1, 9], 3), ([3], 1), ([2, 8], 1), ([1] * 9, 2)]
)
def test_apportioning_sums_and_keeps_the_longest(weights: list[int], links: int) -> None:
    out = _apportion(np.asarray(weights, dtype=np.int64), links)
    assert int(out.sum()) == links
    assert out[-1] >= 1
    assert out[0] >= (1 if links >= 2 else 0)


# ---- design.json ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Design, dict[str, Any]]:
    d = _sized("clos")
    return d, json.loads(d.to_json())


def test_design_json_round_trip(written: tuple[Design, dict[str, Any]]) -> None:
    d, data = written
    assert read_design(data) == d


def test_an_older_design_json_still_loads(written: tuple[Design, dict[str, Any]]) -> None:
    data = copy.deepcopy(written[1])
    for c in data["link_classes"]:
        for g in c["groups"]:
            del g["length_histogram"]
    old = read_design(data)
    assert all(g.length_histogram == () for g in _groups(old))
    assert not [v for v in validate(old) if "histogram" in v.message]
    assert cables.figure(old) is not None  # drawn from the ranges, said so


def _spread_group(data: dict[str, Any]) -> dict[str, Any]:
    return next(
        g for c in data["link_classes"] for g in c["groups"] if len(g["length_histogram"]) > 1
    )


def _negative(g: dict[str, Any]) -> None:
    g["length_histogram"][0][0] = -1.0


def _more(g: dict[str, Any]) -> None:
    g["length_histogram"][0][1] += 1


def _too_long(g: dict[str, Any]) -> None:
    g["length_histogram"] = [[k / 10, 1] for k in range(MAX_LENGTH_BINS + 1)]
    g["links"] = MAX_LENGTH_BINS + 1


HOSTILE = {
    "negative-length": (_negative, "greater than or equal to 0"),
    "counts-do-not-sum": (_more, "add up to"),
    "too-long": (_too_long, f"at most {MAX_LENGTH_BINS} items"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
@pytest.mark.parametrize("command", ["validate", "simulate"])
def test_a_broken_histogram_is_bad_input(
    written: tuple[Design, dict[str, Any]], tmp_path: Path, case: str, command: str
) -> None:
    data = copy.deepcopy(written[1])
    edit, words = HOSTILE[case]
    edit(_spread_group(data))
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    args = [command, str(path)] + (["-o", str(tmp_path / "out")] if command == "simulate" else [])
    result = runner.invoke(app, args)
    assert result.exit_code == 2, result.output
    assert "length_histogram" in result.output
    assert words in result.output


def test_the_validator_checks_the_histogram_range(written: tuple[Design, dict[str, Any]]) -> None:
    d, _ = written
    c = next(c for c in d.link_classes if any(len(g.length_histogram) > 1 for g in c.groups))
    k, g = next((k, g) for k, g in enumerate(c.groups) if len(g.length_histogram) > 1)
    shifted = replace(g, min_length_m=g.min_length_m + 0.01)
    groups = c.groups[:k] + (shifted,) + c.groups[k + 1 :]
    bad = replace(
        d, link_classes=tuple(replace(x, groups=groups) if x is c else x for x in d.link_classes)
    )
    assert any("length histogram runs" in v.message for v in validate(bad))


# ---- utilisation -----------------------------------------------------------------------------
def test_utilisation_bins_by_hand() -> None:
    util = np.array([0.0, 0.0, 0.01, 0.05, 0.051, 0.5, 1.0, 1.0 + 1e-9])
    counts = utilisation_bins(util)
    assert counts.size == UTIL_BINS + 1
    assert counts[0] == 2  # idle
    assert counts[1] == 2  # (0, 5 %]
    assert counts[2] == 1  # (5 %, 10 %]
    assert counts[10] == 1  # (45 %, 50 %]
    assert counts[UTIL_BINS] == 2  # (95 %, 100 %], the tolerance above 1 included


@pytest.fixture(scope="module")
def simulated() -> PlanResult:
    result = plan(load_instance("instances/h100-1k.toml"), alternatives=False, time_limit_s=60)
    assert result.sim is not None
    return result


@pytest.mark.slow
def test_utilisation_histogram_counts_the_links(simulated: PlanResult) -> None:
    keys = ["pattern", "routing", "tier", "direction"]
    hist = simulated.sim_link_histogram
    assert len(hist)
    summed = hist.group_by(keys).agg(pl.col("links").sum(), pl.len().alias("bins"))
    joined = simulated.sim_links.select(*keys, pl.col("links").alias("expected")).join(
        summed, on=keys, how="full", coalesce=True
    )
    assert joined["links"].to_list() == joined["expected"].to_list()
    assert set(joined["bins"].to_list()) == {UTIL_BINS + 1}


def test_utilisation_histogram_idle_bin_matches_idle_fraction(simulated: PlanResult) -> None:
    keys = ["pattern", "routing", "tier", "direction"]
    idle = simulated.sim_link_histogram.filter(pl.col("bin_high") == 0).select(*keys, "links")
    joined = simulated.sim_links.join(idle, on=keys, suffix="_idle")
    assert np.allclose(joined["links_idle"] / joined["links"], joined["idle_fraction"])


@pytest.mark.slow
def test_utilisation_picture_is_drawn(simulated: PlanResult) -> None:
    pair = utilisation.figure(simulated.sim_link_histogram, simulated.sim_failures)
    assert pair is not None
    assert pair[0].startswith(b"\x89PNG")
    assert b"Simulated link utilisation: share of a tier" in pair[1]


def test_no_histogram_no_utilisation_picture() -> None:
    assert utilisation.figure(None) is None

"""Pluggable only vs LPO vs CPO at 32,768 GPUs and 800G: every figure traced to catalog entries."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from planner.api import OpticsComparison, compare_optics, load_instance, validate
from planner.design import DAYS_PER_YEAR, Design
from planner.loading import load_catalog
from planner.optics import SCENARIOS, scenario_instance
from planner.schema.catalog import Catalog

#: Relative tolerance between a reported figure and its recomputation (cent/milliwatt rounding).
FIGURE_RTOL = 1e-6
INSTANCE = "instances/b200-32k-800g.toml"


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


@pytest.fixture(scope="module")
def comparison(repo_root: Path, catalog: Catalog) -> OpticsComparison:
    return compare_optics(load_instance(repo_root / INSTANCE), catalog=catalog)


def from_catalog(d: Design, catalog: Catalog) -> dict[str, float]:
    """A design's headline figures from its counts and the catalog's entries, looked up by name.

    Nothing is read from the unit figures the design carries: switches by model name, media by
    medium name, and the modules per link from the catalog's CPO flags of the two ends.
    """
    capex = power = optics_w = modules = failures = 0.0
    for t in d.tiers:
        sw = catalog.switch_named(t.switch_model)
        capex += d.planes * t.switches * sw.cost_usd
        power += d.planes * t.switches * sw.power_w
    for c in d.link_classes:
        cpo_ends = int(catalog.switch_named(d.tiers[c.index].switch_model).cpo)
        if c.index > 0:
            cpo_ends += int(catalog.switch_named(d.tiers[c.index - 1].switch_model).cpo)
        for g in c.groups:
            m = catalog.medium_named(g.medium)
            links = d.planes * g.links
            ends = 2 if m.copper else 2 - cpo_ends
            assert g.max_length_m <= m.reach_m
            capex += links * (ends * m.cost_usd_per_end + m.cable_cost_usd)
            power += links * ends * m.power_w_per_end
            failures += links * ends * m.afr / DAYS_PER_YEAR
            if not m.copper:
                optics_w += links * ends * m.power_w_per_end
                modules += links * ends
    return {
        "capex_usd": capex,
        "power_kw": power / 1000,
        "energy_usd": power * d.energy_usd_per_w,
        "tco_usd": capex + power * d.energy_usd_per_w,
        "optics_power_kw": optics_w / 1000,
        "optics_power_share": optics_w / power,
        "transceivers": modules,
        "expected_link_failures_per_day": failures,
    }


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_every_figure_is_recomputed_from_the_catalog(
    comparison: OpticsComparison, catalog: Catalog, scenario: str
) -> None:
    result = comparison.results[scenario]
    assert result.design is not None
    row: dict[str, Any] = comparison.table.filter(comparison.table["scenario"] == scenario).row(
        0, named=True
    )
    for name, value in from_catalog(result.design, catalog).items():
        assert row[name] == pytest.approx(value, rel=FIGURE_RTOL), name
    assert validate(result.design, catalog) == []


def test_each_scenario_keeps_to_what_it_allows(comparison: OpticsComparison) -> None:
    for scenario, result in comparison.results.items():
        d = result.design
        assert d is not None
        kinds = {g.kind for c in d.link_classes for g in c.groups}
        cpo = any(t.cpo for t in d.tiers)
        assert ("lpo" in kinds) <= (scenario == "lpo")
        assert cpo <= (scenario == "cpo")


def test_the_technologies_pay_off_where_they_should(comparison: OpticsComparison) -> None:
    """LPO and CPO each cut power and link failures at 800G; CPO also cuts the module count."""
    t = {r["scenario"]: r for r in comparison.table.iter_rows(named=True)}
    for tech in ("lpo", "cpo"):
        assert t[tech]["tco_usd"] <= t["pluggable"]["tco_usd"]
        assert t[tech]["power_kw"] < t["pluggable"]["power_kw"]
        assert t[tech]["optics_power_share"] < t["pluggable"]["optics_power_share"]
        assert (
            t[tech]["expected_link_failures_per_day"]
            < t["pluggable"]["expected_link_failures_per_day"]
        )
    assert t["cpo"]["cpo_switches"] > 0
    assert t["cpo"]["transceivers"] < t["pluggable"]["transceivers"]
    assert t["pluggable"]["delta_tco_usd"] == 0


@pytest.mark.parametrize(
    ("scenario", "kinds", "cpo"),
    [
        ("pluggable", ["dac", "aec", "sr", "dr", "fr"], False),
        ("lpo", ["dac", "aec", "sr", "dr", "fr", "lpo"], False),
        ("cpo", ["dac", "aec", "sr", "dr", "fr"], True),
    ],
)
def test_scenarios_narrow_the_instance(
    repo_root: Path, scenario: str, kinds: list[str], cpo: bool
) -> None:
    inst = load_instance(repo_root / INSTANCE)
    s = scenario_instance(inst, scenario)
    assert s.search.media_kinds == kinds
    assert s.search.cpo is cpo
    # Never wider than the instance: an instance without CPO keeps it off in every scenario.
    narrow = scenario_instance(inst.with_changes({"search.cpo": False}), scenario)
    assert narrow.search.cpo is False

"""Pictures of a solve (issue 14): each one there in PNG and SVG when it has data, absent when not.

Each case plans one example instance (families clos, torus, rail_only, ocs_direct; one with the
simulation, one with the optics comparison) and writes its report set; the topology diagram must
carry the design's real switch counts, every picture must be a valid PNG and a parseable SVG.
"""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from planner.api import PlanResult, compare_optics, load_instance, plan
from planner.report import plan_tables, write_reports
from planner.report.pictures import (
    PICTURES,
    cables,
    costs,
    file_name,
    render,
    tco,
    topology,
    utilisation,
)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
SVG_NS = "{http://www.w3.org/2000/svg}"


@dataclass(frozen=True)
class Case:
    """An instance, how it is planned, and the pictures its report set must hold."""

    instance: str
    family: str
    verify: bool
    optics: bool
    pictures: frozenset[str]
    families: tuple[str, ...] = ()
    """search.families to plan with (empty: the instance's own)."""


ALWAYS = frozenset({"topology", "costs", "alternatives", "cable_lengths"})
CASES = [
    Case("small-256", "clos", False, False, ALWAYS),
    Case("torus-768", "torus", False, False, ALWAYS),
    Case("rail-32k", "rail_only", False, False, ALWAYS),
    Case("ocs-65k", "ocs_direct", False, False, ALWAYS),
    Case("h100-1k", "clos", True, False, ALWAYS | {"utilisation"}),
    Case("b200-8k", "clos", False, True, ALWAYS | {"optics"}),
    Case("rail-32k", "rail_optimized", False, False, ALWAYS, ("rail_optimized",)),
    # One priced option and lengths the family does not model: no TCO, no cable picture.
    Case("tpu-pod-4k", "ocs_torus", False, False, frozenset({"topology", "costs"}), ("ocs_torus",)),
]


@dataclass(frozen=True)
class Solved:
    case: Case
    result: PlanResult
    folder: Path


#: Cases the fast tier plans (the rest, larger, are in the slow tier).
FAST_CASES = {("small-256", "clos"), ("h100-1k", "clos")}


@pytest.fixture(
    scope="module",
    params=[
        pytest.param(c, marks=() if (c.instance, c.family) in FAST_CASES else pytest.mark.slow)
        for c in CASES
    ],
    ids=lambda c: f"{c.instance}-{c.family}",
)
def solved(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Solved:
    case: Case = request.param
    inst = load_instance(f"instances/{case.instance}.toml")
    if case.families:
        search = inst.search.model_copy(update={"families": list(case.families)})
        inst = inst.model_copy(update={"search": search})
    result = plan(inst, verify=case.verify)
    if case.optics:
        result = replace(result, optics_comparison=compare_optics(inst).table)
    folder = tmp_path_factory.mktemp(case.instance)
    write_reports(result, folder)
    return Solved(case, result, folder)


def svg_text(path: Path) -> str:
    """Every text of an SVG (matplotlib writes text as <text> with svg.fonttype 'none')."""
    root = ET.parse(path).getroot()
    return "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))


@pytest.mark.slow
def test_the_family_is_the_one_the_case_covers(solved: Solved) -> None:
    assert solved.result.design is not None
    assert solved.result.design.family == solved.case.family


def test_each_expected_picture_is_written_in_png_and_svg(solved: Solved) -> None:
    for picture in solved.case.pictures:
        png = (solved.folder / file_name(picture, "png")).read_bytes()
        assert png.startswith(PNG_SIGNATURE), picture
        root = ET.parse(solved.folder / file_name(picture, "svg")).getroot()
        assert root.tag == f"{SVG_NS}svg", picture


def test_a_picture_without_data_is_absent(solved: Solved) -> None:
    written = {p.name for p in solved.folder.glob("fig_*")}
    expected = {file_name(p, f) for p in solved.case.pictures for f in ("png", "svg")}
    assert written == expected
    assert set(solved.case.pictures) <= set(PICTURES)


def test_the_topology_carries_the_real_switch_counts(solved: Solved) -> None:
    d = solved.result.design
    assert d is not None
    text = svg_text(solved.folder / file_name("topology", "svg"))
    assert f"GPUs · {d.gpus:,}" in text
    for t in d.tiers:
        assert f"{t.role} · {d.planes * t.switches:,} × {t.switch_model}" in text
        if d.planes > 1:
            assert f"{d.planes} planes × {t.switches:,}; " in text


def test_the_topology_labels_every_bundle_with_its_links(solved: Solved) -> None:
    d = solved.result.design
    assert d is not None
    text = svg_text(solved.folder / file_name("topology", "svg"))
    for c in d.link_classes:
        for g in c.groups:
            if g.links:
                assert f"{d.planes * g.links:,} × {c.speed_gbps}G {g.medium}" in text


def test_the_cable_histogram_names_every_medium_with_its_links(solved: Solved) -> None:
    d = solved.result.design
    assert d is not None
    if "cable_lengths" not in solved.case.pictures:
        pytest.skip("no cable picture for this family")
    text = svg_text(solved.folder / file_name("cable_lengths", "svg"))
    said = "\n".join(cables.sentences(d))
    assert "cable length (m)" in text
    for c in d.link_classes:
        one_bar = f"cable lengths, {c.lower_role}-{c.upper_role}: " in said
        for g in c.groups:
            if g.links and g.max_length_m > 0:
                links = d.planes * g.links
                expected = (
                    f"{g.medium} ({links:,} link" if one_bar else f"{g.medium}: {links:,} links"
                )
                assert expected in (said if one_bar else text)


@pytest.mark.parametrize(
    ("lengths", "panels"),
    [
        # Every link 2 m long: one bar, said in a sentence, no panel.
        (((2.0, 100),), 0),
        # Lengths over 4 m: several bars, a panel.
        (((2.0, 50), (6.0, 50)), 1),
    ],
)
@pytest.mark.slow
def test_a_class_of_one_bar_is_a_sentence_not_a_chart(
    lengths: tuple[tuple[float, int], ...], panels: int
) -> None:
    d = load_design_of("small-256")
    c = d.link_classes[0]
    g = replace(
        c.groups[0],
        links=sum(n for _, n in lengths),
        min_length_m=lengths[0][0],
        max_length_m=lengths[-1][0],
        length_histogram=lengths,
    )
    one = replace(d, link_classes=(replace(c, groups=(g,)),))
    said = cables.sentences(one)
    drawn = cables.figure(one)
    assert (drawn is None) == (panels == 0)
    assert len(said) == 1 - panels
    if said:
        assert said[0].startswith(f"cable lengths, {c.lower_role}-{c.upper_role}: all ")


def load_design_of(name: str) -> Any:
    """A design of an example instance, planned without verification."""
    result = plan(load_instance(f"instances/{name}.toml"), verify=False)
    assert result.design is not None
    return result.design


#: Bars may touch (a bin's last edge is the next one's first), never overlap.
EDGE_TOL = 1e-12


@pytest.mark.parametrize(
    ("up", "down", "bars"),
    [
        # Up and down alike: one bar per bin with links.
        ([10, 0, 90], [10, 0, 90], 2),
        # Different: two bars per bin, side by side (bins without links have none).
        ([10, 0, 90], [50, 50, 0], 4),
    ],
)
def test_utilisation_bars_never_lie_on_each_other(
    up: list[int], down: list[int], bars: int
) -> None:
    from planner.report.pictures.common import new_figure

    part = pl.DataFrame(
        {
            "direction": ["up"] * 3 + ["down"] * 3,
            "bin_low": [0.0, 0.0, 0.95] * 2,
            "bin_high": [0.0, 0.05, 1.0] * 2,
            "links": up + down,
        }
    )
    ax = new_figure(2.0).add_subplot()
    utilisation._panel(ax, part, "#3465a4")
    spans = sorted((r.get_x(), r.get_x() + r.get_width()) for r in ax.patches)
    assert len(spans) == bars
    assert all(a[1] <= b[0] + EDGE_TOL for a, b in pairwise(spans))


def test_the_utilisation_histogram_has_a_panel_per_pattern(solved: Solved) -> None:
    if "utilisation" not in solved.case.pictures:
        pytest.skip("not simulated")
    text = svg_text(solved.folder / file_name("utilisation", "svg"))
    hist = solved.result.sim_link_histogram
    for pattern, routing in hist.select("pattern", "routing").unique().iter_rows():
        assert f"{pattern} · {routing}" in text


def test_the_costs_picture_names_each_kind_of_component(solved: Solved) -> None:
    text = svg_text(solved.folder / file_name("costs", "svg"))
    kinds = set(costs.breakdown(solved.result.bom, solved.result.summary)["kind"].to_list())
    assert kinds
    for kind in kinds:
        assert kind in text


def test_write_reports_can_skip_the_pictures(solved: Solved, tmp_path: Path) -> None:
    write_reports(solved.result, tmp_path / "out", pictures=False)
    assert not list((tmp_path / "out").glob("fig_*"))
    assert (tmp_path / "out" / "report.html").is_file()


@pytest.mark.slow
def test_the_pictures_are_the_same_for_the_same_plan(solved: Solved) -> None:
    """No date or random id in the files: equal plans give equal pictures."""
    tables = plan_tables(solved.result)
    first, second = render(tables, solved.result.design), render(tables, solved.result.design)
    assert first.keys() == second.keys()
    assert all(first[n] == second[n] for n in first if n.endswith(".svg"))


# ---- no data, no picture -------------------------------------------------------------------
def test_no_design_draws_no_design_pictures() -> None:
    alternatives = pl.DataFrame(
        {"family": ["clos"], "tco_usd": [None]}, schema_overrides={"tco_usd": pl.Float64}
    )
    assert render({"alternatives": alternatives}, None) == {}


def test_an_empty_bom_has_no_costs_picture() -> None:
    bom = pl.DataFrame(
        schema={"component": pl.Utf8, "total_cost_usd": pl.Float64, "total_power_w": pl.Float64}
    )
    summary = pl.DataFrame(
        {"scale_up_switches": [0], "scale_up_capex_usd": [0.0], "scale_up_power_kw": [0.0]}
    )
    assert costs.figure(bom, summary) is None


def test_one_priced_alternative_has_no_tco_picture() -> None:
    alternatives = pl.DataFrame(
        {
            "family": ["clos", "clos"],
            "option": ["a", "b"],
            "planes": [1, None],
            "tiers": [2, None],
            "capex_usd": [1.0, None],
            "energy_usd": [1.0, None],
            "tco_usd": [2.0, None],
            "winner": [True, False],
        }
    )
    assert tco.alternatives_figure(alternatives) is None
    assert tco.optics_figure(None) is None


def test_no_simulation_has_no_utilisation_picture() -> None:
    assert utilisation.figure(None) is None


def test_names_from_inputs_are_drawn_as_text(solved: Solved) -> None:
    """A catalog model named like TeX or markup is drawn as it is spelled, in a valid SVG."""
    d = solved.result.design
    assert d is not None
    hostile = '<b>$\\frac{1}{0$ & "x"'
    renamed = replace(d, tiers=tuple(replace(t, switch_model=hostile) for t in d.tiers))
    _png, svg = topology.figure(renamed)
    root = ET.fromstring(svg)
    text = "\n".join("".join(t.itertext()) for t in root.iter(f"{SVG_NS}text"))
    assert f"× {hostile}" in text


@pytest.mark.slow
def test_importing_the_planner_does_not_import_matplotlib() -> None:
    """matplotlib loads only when a picture is drawn (importing planner stays fast)."""
    code = "import sys, planner.api, planner.report, planner.report.pictures; print('matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (950.0, "$950"),
        (123_456.0, "$123,456"),
        (5_946_300.0, "$5.95M"),  # a picture never mixes $5,946,300 with $61.3M
        (61_300_000.0, "$61.3M"),
        (1_234_000_000.0, "$1.23B"),
    ],
)
def test_a_pictures_amounts_read_in_one_scale(value: float, text: str) -> None:
    from planner.report.pictures.common import usd

    assert usd(value) == text

"""report.html (issue 14): one self-contained page, checked in headless Chromium.

The browser test loads a solve's page from disk and asserts that nothing is fetched beyond the
file itself and its ``data:`` pictures, that the console stays clean, that every picture decodes
and that the headline is on the page. It skips only when Chromium is missing and ``CI`` is unset;
under CI a missing browser fails (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import re
from dataclasses import replace
from html import escape
from pathlib import Path

import polars as pl
import pytest

from planner.api import PlanResult, load_instance, plan
from planner.deadline import cut_note
from planner.report import write_reports
from planner.report.html import (
    MAX_ROWS,
    TABLE_TITLES,
    TRANSPOSE_MAX_ROWS,
    histogram_summary,
    render_page,
)
from planner.report.markdown import headline
from planner.report.tables import IDLE_PRICING_TABLE, OPTIONAL_TABLES, SIM_TABLES, TABLES
from tests.browser import load, require_chromium

HOSTILE = '<script>alert("x")</script><img src="http://example.invalid/x.png"> & </table>'


@pytest.fixture(scope="module")
def result() -> PlanResult:
    """h100-1k, simulated, with a hostile description (the page must show it as text)."""
    inst = load_instance("instances/h100-1k.toml")
    return plan(inst.model_copy(update={"description": HOSTILE}), verify=True)


@pytest.fixture(scope="module")
def page(result: PlanResult, tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("html")
    write_reports(result, folder)
    return folder / "report.html"


# ---- the page as text ----------------------------------------------------------------------
@pytest.mark.slow
def test_the_page_fetches_nothing(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)\s*=\s*["'](?!data:|#)""", text)
    assert "<script" not in text
    assert "@import" not in text
    assert "url(" not in text


def test_text_from_the_instance_is_escaped(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in text
    assert "<script" not in text
    assert 'src="http://' not in text


def test_the_page_embeds_every_picture_written(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    svgs = sorted(p.stem.removeprefix("fig_") for p in page.parent.glob("fig_*.svg"))
    assert svgs
    assert sorted(re.findall(r'<figure id="fig-([a-z_]+)">', text)) == svgs
    assert text.count('src="data:image/svg+xml;base64,') == len(svgs)


def test_the_page_states_its_assumptions(page: Path, result: PlanResult) -> None:
    text = page.read_text(encoding="utf-8")
    o = result.instance.objective
    assert f"${o.energy_usd_per_kwh:,.3f} per kWh" in text
    assert "PUE" in text
    assert f"{o.lifetime_years:g} years" in text
    assert "max switch hops" in text
    assert "of the cap" in text
    assert "network capex per GPU" in text
    assert "Where each price comes from" in text


def test_a_long_table_is_cut_with_a_note() -> None:
    df = pl.DataFrame({"n": list(range(MAX_ROWS + 5))})
    text = render_page("t", [], [], {"circuits": df}, {})
    assert f"first {MAX_ROWS:,} of {MAX_ROWS + 5:,} rows; full table in circuits.csv" in text
    assert text.count("<tr>") == MAX_ROWS + 1


def test_render_page_escapes_everything_it_is_given() -> None:
    df = pl.DataFrame({HOSTILE: [HOSTILE]})
    text = render_page(HOSTILE, [HOSTILE], [(HOSTILE, HOSTILE)], {HOSTILE: df}, {}, notes=[HOSTILE])
    assert "<script>" not in text
    assert "</table>" not in text.replace("</tbody></table>", "")


def test_a_plan_without_design_still_gets_a_page(result: PlanResult, tmp_path: Path) -> None:
    empty = replace(result, design=None, sim=None)
    write_reports(empty, tmp_path / "out")
    text = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "fabric-planner report: h100-1k" in text


def test_a_page_without_pictures_says_why(result: PlanResult, tmp_path: Path) -> None:
    """Pictures left out (the time limit's cut note on the design): the page says so and why."""
    assert result.design is not None
    note = cut_note("the pictures were left out: too little of the time limit was left")
    cut = replace(result, design=replace(result.design, notes=(*result.design.notes, note)))
    write_reports(cut, tmp_path / "out", pictures=False)
    text = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert 'id="no-pictures"' in text
    assert escape(note) in text
    assert "<img" not in text


@pytest.mark.slow
def test_an_infeasible_plan_says_why_under_its_result(tmp_path: Path) -> None:
    result = plan(load_instance("instances/infeasible-200k-3hops.toml"), verify=False)
    write_reports(result, tmp_path / "out")
    text = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "<h2>No design meets the constraints</h2>" in text
    assert text.index("No design meets") < text.index("Assumptions used")
    assert escape(result.explanation[0]) in text
    assert not list((tmp_path / "out").glob("fig_*"))


# ---- the page in a browser -----------------------------------------------------------------
@pytest.fixture(scope="module")
def chromium() -> str:
    return require_chromium()


@pytest.mark.slow
def test_the_page_in_headless_chromium(
    chromium: str, page: Path, result: PlanResult, tmp_path: Path
) -> None:
    seen = load(chromium, page, tmp_path / "report.png")
    assert seen.failed == []
    assert seen.foreign == []
    assert seen.errors == []
    assert seen.image_widths
    assert all(w > 0 for w in seen.image_widths)
    for line in headline(result.summary):
        assert line in seen.body
    assert HOSTILE in seen.body  # shown as text, never run
    assert (tmp_path / "report.png").stat().st_size > 0


@pytest.mark.slow
def test_simulate_writes_its_pictures_and_page(page: Path, tmp_path: Path) -> None:
    """``simulate`` of the saved design: its own pictures and report.html, the verdict on it."""
    from typer.testing import CliRunner

    from planner.cli import app

    out = tmp_path / "sim"
    design = page.parent / "design.json"
    run = CliRunner().invoke(app, ["simulate", str(design), "-o", str(out), "--quiet"])
    assert run.exit_code in (0, 4), run.output
    text = (out / "report.html").read_text(encoding="utf-8")
    verdict = pl.read_parquet(out / "summary.parquet")["verdict"][0]
    assert f"simulation: {verdict}" in text
    for name in ("topology", "costs", "utilisation"):
        assert (out / f"fig_{name}.svg").is_file()
    assert text.count('src="data:image/svg+xml;base64,') == len(list(out.glob("fig_*.svg")))
    assert "http://" not in text.replace("http://www.w3.org", "")


# ---- a page a person can read (titles, units, numbers, plurals, no cut-off) ----------------
#: Every table a solve or a simulation may show on its page.
SOLVE_TABLES = (
    *TABLES,
    *SIM_TABLES,
    *OPTIONAL_TABLES,
    IDLE_PRICING_TABLE,
    "tiers",
    "price_sources",
)
#: The tables each family adds (its ``extra_tables`` and ``search_tables``), titled by it.
FAMILY_TABLES = {
    "rail_optimized": ("rails",),
    "rail_only": ("rails",),
    "torus": ("torus",),
    "ocs_direct": ("ocs", "circuits", "reconfiguration"),
    "ocs_torus": ("torus_slices", "torus_circuits", "torus_failure"),
    "dragonfly": ("dragonfly",),
}


@pytest.mark.parametrize("name", SOLVE_TABLES)
def test_every_table_a_solve_may_show_has_a_title(name: str) -> None:
    assert TABLE_TITLES[name]


@pytest.mark.parametrize(("family", "tables"), sorted(FAMILY_TABLES.items()))
def test_every_table_a_family_adds_is_titled_by_the_family(
    family: str, tables: tuple[str, ...]
) -> None:
    from planner.families import family_of

    titles = family_of(family).table_titles()
    assert all(titles[name] for name in tables)
    assert set(family_of(family).design_tables()) <= set(titles)
    assert not set(titles) & set(TABLE_TITLES)  # no family table shadows a shared one


def test_every_table_on_the_page_is_titled(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    shown = re.findall(r'<h3 id="table-([a-z_]+)">([^<]*)</h3>', text)
    assert shown
    assert [(n, escape(TABLE_TITLES[n], quote=False)) for n, _ in shown] == shown


def test_the_utilisation_histogram_is_summarised(page: Path, result: PlanResult) -> None:
    text = page.read_text(encoding="utf-8")
    section = text.split('<h3 id="table-sim_link_histogram">', 1)[1].split("<h3", 1)[0]
    summary = histogram_summary(result.sim_link_histogram)
    assert summary.height < result.sim_link_histogram.height
    assert section.count("<tr>") == summary.height + 1
    assert "every row is in sim_link_histogram.csv" in section


def _cells(text: str, tag: str) -> list[str]:
    return re.findall(rf"<{tag}[^>]*>([^<]*)</{tag}>", text)


def test_headings_carry_units_not_column_names(page: Path) -> None:
    heads = _cells(page.read_text(encoding="utf-8"), "th")
    assert "unit cost (USD)" in heads
    assert "total cost (USD)" in heads
    assert not [h for h in heads if re.search(r"_(usd|kw|w|m|s|ns|gbps)$", h)]


def test_numbers_read_by_kind(page: Path) -> None:
    cells = _cells(page.read_text(encoding="utf-8"), "td")
    assert not [c for c in cells if re.fullmatch(r"-?[\d.,]+e[+-]?\d+", c)]
    assert "$0.00" not in cells
    assert re.search(r"\$\d{1,3}(,\d{3})+", " ".join(cells))


@pytest.mark.parametrize("word", [r"[a-z]\(s\)", r"\b1 switches", r"\b1 planes", r"\b1 tiers"])
def test_no_word_is_left_unplural(page: Path, word: str) -> None:
    assert not re.search(word, page.read_text(encoding="utf-8"))


#: More columns of dollars than the page holds side by side.
WIDE_COLUMNS = 16


@pytest.mark.parametrize(
    ("rows", "columns", "turned", "parts"),
    [
        (3, WIDE_COLUMNS, True, False),
        (TRANSPOSE_MAX_ROWS + 1, WIDE_COLUMNS, False, True),
        (3, 4, False, False),
    ],
)
def test_a_wide_table_is_turned_or_split_to_fit(
    rows: int, columns: int, turned: bool, parts: bool
) -> None:
    df = pl.DataFrame({f"c{k}_usd": [1e9 + r for r in range(rows)] for k in range(columns)})
    text = render_page("t", [], [], {"circuits": df}, {}, turn_wide=True)
    assert ("turned into rows" in text) == turned
    assert ("parts of its columns" in text) == parts


def test_a_one_bar_picture_is_a_sentence_on_the_page(page: Path, result: PlanResult) -> None:
    from planner.report.pictures import cables

    assert result.design is not None
    said = cables.sentences(result.design)
    assert said  # h100-1k's GPU-leaf cables are all 2 m long
    text = page.read_text(encoding="utf-8")
    for line in said:
        assert escape(line) in text


@pytest.mark.slow
def test_every_table_fits_the_page_at_1280_px(page: Path) -> None:
    """No table reaches past the page, and none hides columns behind a sideways scroll."""
    from tests.report.test_page_tables import assert_fits, widths

    assert_fits(widths(page))


@pytest.mark.slow
def test_a_narrow_screen_scrolls_a_table_in_its_own_box(chromium: str, page: Path) -> None:
    """Narrower than the page was laid out for, a table scrolls in its box, not the page."""
    from playwright.sync_api import sync_playwright

    from tests.browser import CHROMIUM_ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": 700, "height": 900})
            tab.goto(page.as_uri(), wait_until="load")
            page_width = tab.evaluate("document.documentElement.scrollWidth")
            viewport = tab.evaluate("window.innerWidth")
            loose = tab.evaluate("document.querySelectorAll('table:not(.scroll table)').length")
            boxes = tab.evaluate(
                """[...document.querySelectorAll('.scroll')].map(b => [
                    getComputedStyle(b).overflowX,
                    b.getBoundingClientRect().right <= window.innerWidth])"""
            )
        finally:
            browser.close()
    assert page_width <= viewport
    assert loose == 0
    assert boxes
    assert all(inside and overflow == "auto" for overflow, inside in boxes)

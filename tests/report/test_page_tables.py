"""report.html's tables and headline (issue 32): every column readable, no empty section.

Structural checks of the page ``planner.report.html`` renders: every column of a wide table (many
columns and many rows, or few rows of long names) is on the page, no table is wider than the page
at 1280 px in headless Chromium (nothing hides behind a sideways scroll), a table without rows is
not a section (and nothing points to it), the headline carries the interruptions and goodput the
CLI prints, and the page's template ships inside the package.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import replace
from html import unescape
from pathlib import Path

import polars as pl
import pytest

from planner.report.html import TEMPLATE, render_page
from planner.report.text import column_label, column_texts
from tests.browser import CHROMIUM_ARGS, require_chromium
from tests.conftest import REPO_ROOT

ROOT = REPO_ROOT
#: The viewport the page must fit, in CSS pixels.
VIEWPORT_PX = 1280
#: Sub-pixel rounding a browser may add to a box's width.
ROUNDING_PX = 1


def wide_many_rows() -> pl.DataFrame:
    """23 columns, 20 rows: ``sim_collectives``' shape (too many rows to turn)."""
    data: dict[str, list[object]] = {
        "pattern": [f"random_permutation_{i}" for i in range(20)],
        "routing": ["spray", "ecmp"] * 10,
    }
    for k in range(21):
        data[f"figure_number_{k}_gbps"] = [1000.0 * k + i + 0.5 for i in range(20)]
    return pl.DataFrame(data)


def wide_few_rows() -> pl.DataFrame:
    """14 columns, 8 rows with long option names: the alternatives' shape (turned)."""
    options = [f"spectrum-x-photonics-{k}02t-and-more" for k in range(8)]
    data: dict[str, list[object]] = {"family": ["dragonfly"] * 8, "option": list(options)}
    for k in range(12):
        data[f"measure_{k}_usd"] = [123_456_789.0 * (k + 1) + i for i in range(8)]
    return pl.DataFrame(data)


WIDE = {"many_rows": wide_many_rows, "few_rows": wide_few_rows}


@pytest.mark.parametrize("shape", sorted(WIDE))
def test_every_column_and_value_of_a_wide_table_is_on_the_page(shape: str) -> None:
    df = WIDE[shape]()
    text = unescape(render_page("t", [], [], {"circuits": df}, {}, turn_wide=True))
    for column in df.columns:
        assert column_label(column) in text, column
        for value in column_texts(column, df[column].to_list()):
            assert value in text, (column, value)
    assert "not shown here" not in text


def test_a_table_without_rows_is_not_a_section() -> None:
    empty = pl.DataFrame(schema={"pattern": pl.Utf8, "links": pl.Int64})
    full = pl.DataFrame({"pattern": ["a"], "links": [3]})
    text = render_page(
        "t",
        [],
        [],
        {"sim_link_histogram": empty, "sim_links": empty, "bom": full},
        {},
        summarised=("sim_link_histogram",),
        sources={"sim_link_histogram": "sim_link_histogram.csv"},
    )
    assert 'id="table-sim_link_histogram"' not in text
    assert 'id="table-sim_links"' not in text
    assert 'id="table-bom"' in text
    assert "every row is in" not in text
    assert "no rows" not in text  # no empty box either: one line says what is empty
    assert len(re.findall(r"without rows", text)) == 1


def test_the_template_ships_with_the_package() -> None:
    template = ROOT / "planner" / "templates" / TEMPLATE
    assert template.is_file()
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    wheel = config["tool"]["hatch"]["build"]["targets"]["wheel"]
    assert "planner" in wheel["packages"]
    assert not [p for p in wheel.get("exclude", []) if "template" in p]


def test_autoescaping_is_on() -> None:
    text = render_page("<b>x</b>", ["<i>y</i>"], [], {}, {})
    assert "<b>x</b>" not in text
    assert "&lt;i&gt;y&lt;/i&gt;" in text


@pytest.mark.slow
def test_the_headline_has_the_interruptions_and_goodput_the_cli_prints(tmp_path: Path) -> None:
    from planner.api import load_catalog, load_instance, plan
    from planner.reliability import assess
    from planner.reliability.text import failure_lines
    from planner.report import write_reports
    from planner.schema.reliability import Reliability

    result = plan(load_instance(ROOT / "instances" / "small-256.toml"), verify=False)
    assert result.design is not None
    rates = load_catalog().reliability
    assert rates is not None
    assessed = assess(result.design, rates, Reliability(monte_carlo_trials=0))
    write_reports(replace(result, reliability=assessed), tmp_path)
    text = (tmp_path / "report.html").read_text(encoding="utf-8")
    headline = text.split('<ul class="headline">', 1)[1].split("</ul>", 1)[0]
    for line in failure_lines(assessed):
        assert f"<li>{line}</li>" in unescape(headline)


# ---- in the browser --------------------------------------------------------------------------
def widths(page: Path) -> dict[str, object]:
    """What the browser lays out at 1280 px: page, content and every table's box."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=require_chromium(), args=CHROMIUM_ARGS)
        try:
            tab = browser.new_page(viewport={"width": VIEWPORT_PX, "height": 900})
            tab.goto(page.as_uri(), wait_until="load")
            return dict(
                tab.evaluate(
                    """() => ({
                    page: document.documentElement.scrollWidth,
                    main: document.querySelector('main').getBoundingClientRect().right,
                    tables: [...document.querySelectorAll('table')].map(t => ({
                        right: t.getBoundingClientRect().right,
                        box: t.parentElement.scrollWidth - t.parentElement.clientWidth,
                    })),
                })"""
                )
            )
        finally:
            browser.close()


def assert_fits(seen: dict[str, object]) -> None:
    """No table is wider than the page, none scrolls inside its box."""
    page = seen["page"]
    assert isinstance(page, int | float)
    assert page <= VIEWPORT_PX
    tables = seen["tables"]
    assert isinstance(tables, list)
    assert tables
    main = seen["main"]
    assert isinstance(main, int | float)
    for t in tables:
        assert t["right"] <= main + ROUNDING_PX
        assert t["box"] <= ROUNDING_PX


@pytest.mark.slow
@pytest.mark.parametrize("shape", sorted(WIDE))
def test_a_wide_table_fits_the_page_at_1280_px(shape: str, tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(
        render_page("t", [], [], {"circuits": WIDE[shape]()}, {}, turn_wide=True), encoding="utf-8"
    )
    assert_fits(widths(page))

"""A study's report.html (issue 32): every column of its table readable at 1280 px.

The study table's columns after ``verdict`` hid behind a sideways scroll; the page now splits the
table into parts that each begin with the scenario, so every column is on the page and no table
is wider than it (measured in headless Chromium).
"""

from __future__ import annotations

from html import unescape
from pathlib import Path

import polars as pl
import pytest

from planner.report.text import column_label
from planner.study.folder import flagged
from planner.study.page import STUDY_COLUMNS, study_page
from tests.report.test_page_tables import assert_fits, widths

KEYS = ["cluster.gpus", "constraints.max_oversubscription"]


def study_table() -> pl.DataFrame:
    """Nine scenarios with every column the page shows, as the sweep of docs/studies.md has them."""
    rows = []
    for gpus in (256, 512, 1024):
        for ratio in (1.0, 2.0, 3.0):
            rows.append(
                {
                    "scenario": f"gpus={gpus}+max_oversubscription={ratio:g}",
                    "cluster.gpus": gpus,
                    "constraints.max_oversubscription": ratio,
                    "status": "ok",
                    "plan_status": "optimal",
                    "family": "clos",
                    "gpus": gpus,
                    "switches": gpus // 16,
                    "capex_usd": 1905.0 * gpus / ratio,
                    "power_kw": 0.0258 * gpus,
                    "tco_usd": 2022.0 * gpus / ratio,
                    "verdict": "meets" if ratio == 1 else "fails",
                    "sim_fraction_spray": 1.0 - 0.0001 * ratio,
                    "sim_fraction_ecmp": 0.5 / ratio,
                    "step_time_s": 1.25 + ratio,
                    "idle_fraction": 0.1 * ratio,
                    "tco_plus_idle_gpus_usd": 9e6 * gpus / ratio,
                }
            )
    return flagged(pl.DataFrame(rows))


def page_text() -> str:
    return study_page("small-256", "", KEYS, study_table(), {}, computed=9, reused=0)


def test_every_study_column_is_on_the_page() -> None:
    table = study_table()
    text = unescape(page_text())
    shown = [c for c in STUDY_COLUMNS if c in table.columns]
    assert "pareto" in shown
    assert "verdict" in shown
    after = shown[shown.index("verdict") + 1 :]
    assert after
    for column in [*KEYS, *shown]:
        assert f">{column_label(column)}<" in text, column


@pytest.mark.slow
def test_the_study_page_fits_at_1280_px(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    page.write_text(page_text(), encoding="utf-8")
    assert_fits(widths(page))

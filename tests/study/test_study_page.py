"""A study's report.html: the scenarios, their front and figures on one page, clean in Chromium."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from planner.cli import app
from tests.browser import load, require_chromium

HOSTILE = '<script>alert("x")</script><img src="http://example.invalid/x.png">'
TOML = f'''\
name = "tiny"
description = """{HOSTILE}"""

[cluster]
gpus = 64
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
'''


@pytest.fixture(scope="module")
def study(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A 6-scenario study of a tiny instance, simulated (so the front has throughput)."""
    folder = tmp_path_factory.mktemp("study")
    source = folder / "tiny.toml"
    source.write_text(TOML, encoding="utf-8")
    out = folder / "out"
    grid = ["--grid", "cluster.gpus=16,32,64", "--grid", "constraints.max_oversubscription=1,3"]
    args = ["sweep", str(source), *grid, "--workers", "1", "-q", "-o", str(out)]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    return out


def test_the_page_names_every_scenario_the_front_and_the_best(study: Path) -> None:
    text = (study / "report.html").read_text(encoding="utf-8")
    table = pl.read_parquet(study / "study.parquet")
    for name in table["scenario"]:
        assert str(name) in text
    front = table.filter(pl.col("pareto"))["scenario"].to_list()
    assert f"Pareto front: {len(front)} scenario(s): " + ", ".join(front) in text
    cheapest = table.sort("capex_usd").row(0, named=True)
    assert f"least capex: {cheapest['scenario']} (${cheapest['capex_usd']:,.0f})" in text
    assert "&lt;script&gt;" in text
    assert "<script>" not in text


def test_the_page_embeds_every_study_figure(study: Path) -> None:
    text = (study / "report.html").read_text(encoding="utf-8")
    svgs = sorted(p.name for p in study.glob("*.svg"))
    assert svgs
    assert text.count('src="data:image/svg+xml;base64,') == len(svgs)


def test_the_study_page_in_headless_chromium(study: Path, tmp_path: Path) -> None:
    seen = load(require_chromium(), study / "report.html", tmp_path / "study.png")
    assert seen.failed == []
    assert seen.foreign == []
    assert seen.errors == []
    assert seen.image_widths
    assert all(w > 0 for w in seen.image_widths)
    assert "Pareto front" in seen.body
    assert HOSTILE in seen.body  # the description shown as text, never run

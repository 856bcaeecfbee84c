"""A study's report.html: the scenarios, their front and figures on one page, clean in Chromium."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from markupsafe import escape  # the page escapes as jinja2 does (autoescaping)
from typer.testing import CliRunner

from planner.cli import app
from planner.study.folder import flagged
from planner.study.page import study_page
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


@pytest.mark.slow
def test_the_page_names_every_scenario_the_front_and_the_best(study: Path) -> None:
    text = (study / "report.html").read_text(encoding="utf-8")
    table = pl.read_parquet(study / "study.parquet")
    for name in table["scenario"]:
        assert str(name) in text
    front = table.filter(pl.col("pareto"))["scenario"].to_list()
    assert f": {len(front)} scenario(s): " + ", ".join(front) in text
    assert "Pareto front over min capex_usd_per_gpu, min power_w_per_gpu" in text
    # The GPU count varies: the cheapest is the cheapest per GPU, among those that meet.
    meets = table.filter(pl.col("verdict") == "meets")
    cheapest = meets.sort("capex_usd_per_gpu").row(0, named=True)
    line = f"least capex per GPU: {cheapest['scenario']} (${cheapest['capex_usd_per_gpu']:,.0f} per GPU)"
    assert line in text
    assert "capex and power compared per GPU" in text
    assert "&lt;script&gt;" in text
    assert "<script>" not in text


def test_the_page_embeds_every_study_figure(study: Path) -> None:
    text = (study / "report.html").read_text(encoding="utf-8")
    svgs = sorted(p.name for p in study.glob("*.svg"))
    assert svgs
    assert text.count('src="data:image/svg+xml;base64,') == len(svgs)


@pytest.mark.slow
def test_the_study_page_in_headless_chromium(study: Path, tmp_path: Path) -> None:
    seen = load(require_chromium(), study / "report.html", tmp_path / "study.png")
    assert seen.failed == []
    assert seen.foreign == []
    assert seen.errors == []
    assert seen.image_widths
    assert all(w > 0 for w in seen.image_widths)
    assert "Pareto front" in seen.body
    assert HOSTILE in seen.body  # the description shown as text, never run


def made_up(verdicts: list[str]) -> pl.DataFrame:
    """Three scenarios of one size, cheapest first, with these verdicts; flagged."""
    rows = [
        {
            "scenario": name,
            "status": "ok",
            "gpus": 64,
            "capex_usd": capex,
            "power_kw": 1.0,
            "verdict": verdict,
        }
        for name, capex, verdict in zip(
            ["cheap", "middle", "dear"], [1e5, 2e5, 3e5], verdicts, strict=True
        )
    ]
    return flagged(pl.DataFrame(rows))


@pytest.mark.parametrize(
    ("verdicts", "present", "absent"),
    [
        (
            ["fails", "meets", "meets"],
            [
                "least capex: middle ($200,000)",
                "Pareto front over min capex_usd, min power_kw: 1 scenario(s): middle",
                "left out: 1 fails",
            ],
            ["least capex: cheap"],
        ),
        (
            ["fails", "fails", "fails"],
            [
                "best: none, no scenario's design meets its [verify] requirements",
                "Pareto front: 0 scenario(s): none",
            ],
            ["least capex"],
        ),
        (
            ["not verified"] * 3,
            ["least capex: cheap ($100,000)", "not verified (--no-verify, or verification off)"],
            ["least capex per GPU"],  # one size: totals (the table still has per-GPU columns)
        ),
    ],
    ids=["cheapest-fails", "none-meets", "unverified"],
)
def test_the_page_ranks_only_what_meets(
    verdicts: list[str], present: list[str], absent: list[str]
) -> None:
    text = study_page(
        "tiny",
        "",
        ["constraints.max_oversubscription"],
        made_up(verdicts),
        {},
        computed=3,
        reused=0,
    )
    for words in present:
        assert escape(words) in text
    for words in absent:
        assert escape(words) not in text

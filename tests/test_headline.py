"""The CLI's and report.md's headline lines say what the verification gave (issue 11)."""

from __future__ import annotations

import polars as pl
import pytest

from planner.api import load_instance, plan
from planner.report import headline


@pytest.fixture(scope="module")
def summary() -> pl.DataFrame:
    return plan(load_instance("instances/small-256.toml"), verify=False).summary


@pytest.mark.parametrize(
    ("verdict", "spray", "ecmp", "line"),
    [
        ("meets", 0.98, 0.51, "simulation: meets (throughput of ideal: spray 0.98, ecmp 0.51)"),
        ("incomplete", None, 0.12, "simulation: incomplete (throughput of ideal: ecmp 0.12)"),
        (
            "incomplete",
            None,
            None,
            "simulation: incomplete (no throughput figure: no traffic was simulated)",
        ),
    ],
)
def test_the_simulation_line(
    summary: pl.DataFrame, verdict: str, spray: float | None, ecmp: float | None, line: str
) -> None:
    row = summary.with_columns(
        verdict=pl.lit(verdict),
        sim_fraction_spray=pl.lit(spray, dtype=pl.Float64),
        sim_fraction_ecmp=pl.lit(ecmp, dtype=pl.Float64),
        sim_fraction_after_failure=pl.lit(None, dtype=pl.Float64),
    )
    assert headline(row)[-1] == line

"""The what-if example runs end to end and writes its study, front and figures."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest

from planner.examples.what_if import GRID


@pytest.mark.slow
def test_what_if_example_runs(tmp_path: Path) -> None:
    out = tmp_path / "what-if"
    done = subprocess.run(
        [sys.executable, "-m", "planner.examples.what_if", "--out", str(out), "--workers", "1"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "Pareto front:" in done.stdout
    study = pl.read_parquet(out / "study.parquet")
    n = 1
    for values in GRID.values():
        n *= len(values)
    assert study.height == n
    assert study["status"].to_list() == ["ok"] * n
    front = pl.read_parquet(out / "pareto.parquet")
    assert 0 < front.height <= n
    assert front["scenario"].to_list() == study.filter(pl.col("pareto"))["scenario"].to_list()
    for name in ("pareto.png", "pareto.svg", "sweep_capex_usd_gpus.png"):
        assert (out / name).stat().st_size > 0
    assert len(list((tmp_path / "what-if-parts" / "parts").glob("*.parquet"))) == n

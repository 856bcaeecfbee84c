"""The study's figures: one line per other keys' values, the front highlighted, files written."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from planner.study import with_pareto
from planner.study.figures import pareto_scatter, sweep_curves, write_figures

KEYS = ["cluster.gpus", "cluster.nic_gbps"]


@pytest.fixture(scope="module")
def table() -> pl.DataFrame:
    """A made-up study table: capex grows with GPUs and NIC speed; one scenario failed."""
    rows = [
        {
            "scenario": f"gpus={g}+nic_gbps={s}",
            "cluster.gpus": g,
            "cluster.nic_gbps": s,
            "status": "ok",
            "capex_usd": g * s * 10.0,
            "power_kw": g * 0.01 + s / 100,
        }
        for g in (64, 256, 1024, 4096)
        for s in (200, 400, 800)
    ]
    rows[-1] |= {"status": "error", "capex_usd": None, "power_kw": None}
    return pl.DataFrame(rows)


def test_sweep_curve_draws_one_line_per_other_keys_values(table: pl.DataFrame) -> None:
    fig = sweep_curves(table, KEYS, "capex_usd", "cluster.gpus")
    ax = fig.axes[0]
    assert len(ax.lines) == 3
    # The failed scenario (4096 GPUs at 800G) is left out of its line.
    assert sorted(len(line.get_xdata()) for line in ax.lines) == [3, 4, 4]
    assert ax.get_xscale() == "log"  # 64 to 4,096 GPUs
    assert ax.get_xlabel() == "cluster.gpus"


def test_sweep_curve_refuses_an_unknown_column(table: pl.DataFrame) -> None:
    with pytest.raises(ValueError, match="tco"):
        sweep_curves(table, KEYS, "tco")


def test_pareto_scatter_highlights_the_front(table: pl.DataFrame) -> None:
    flagged = with_pareto(table, ["capex_usd", "power_kw"])
    fig = pareto_scatter(flagged, minimise=["capex_usd", "power_kw"])
    ax = fig.axes[0]
    dominated, front = ax.collections[:2]
    assert len(front.get_offsets()) == flagged["pareto"].sum()
    assert len(dominated.get_offsets()) == table.height - 1 - flagged["pareto"].sum()


def test_write_figures_writes_png_and_svg(table: pl.DataFrame, tmp_path: Path) -> None:
    paths = write_figures(table, KEYS, tmp_path / "figs")
    names = sorted(p.name for p in paths)
    assert names == sorted(
        f"{stem}.{fmt}"
        for stem in ("sweep_capex_usd_gpus", "sweep_capex_usd_nic_gbps", "pareto")
        for fmt in ("png", "svg")
    )
    assert (tmp_path / "figs" / "pareto.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert b"<svg" in (tmp_path / "figs" / "pareto.svg").read_bytes()

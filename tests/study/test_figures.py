"""The study's figures: one line per other keys' values, the front highlighted, files written."""

from __future__ import annotations

import itertools
import random
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from planner.study import with_pareto
from planner.study.figures import (
    DOMINATED,
    FRONT_ELSEWHERE,
    FRONT_HERE,
    pareto_scatter,
    sweep_curves,
    write_figures,
)

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


def test_pareto_scatter_of_two_figures_is_the_whole_front(table: pl.DataFrame) -> None:
    flagged = with_pareto(table, ["capex_usd", "power_kw"])
    fig = pareto_scatter(flagged, minimise=["capex_usd", "power_kw"])
    (ax,) = [a for a in fig.axes if a.get_visible()]
    kinds = by_kind(ax)
    assert len(kinds[FRONT_HERE]) == flagged["pareto"].sum()
    assert len(kinds[FRONT_ELSEWHERE]) == 0
    assert len(kinds[DOMINATED]) == table.height - 1 - flagged["pareto"].sum()


def by_kind(ax: Any) -> dict[str, list[tuple[float, float]]]:
    """The points of a Pareto panel by kind (the label of their collection)."""
    return {
        c.get_label(): [tuple(map(float, xy)) for xy in c.get_offsets()]
        for c in ax.collections
        if c.get_label() in (FRONT_HERE, FRONT_ELSEWHERE, DOMINATED)
    }


#: Four figures: three minimised, one maximised.
FOUR_MIN = ["capex_usd", "power_kw", "step_time_s"]
FOUR_MAX = ["sim_fraction_ecmp"]


@pytest.fixture(scope="module")
def four() -> pl.DataFrame:
    """40 scenarios on four random figures; every fifth fails its [verify] requirements."""
    rng = random.Random(7)
    rows = [
        {
            "scenario": f"s{i}",
            "status": "ok",
            "gpus": 64,
            "capex_usd": rng.uniform(1e5, 1e6),
            "power_kw": rng.uniform(1, 10),
            "step_time_s": rng.uniform(0.5, 2),
            "sim_fraction_ecmp": rng.uniform(0.5, 1),
            "verdict": "fails" if i % 5 == 0 else "meets",
        }
        for i in range(40)
    ]
    return with_pareto(pl.DataFrame(rows), FOUR_MIN, FOUR_MAX)


def better(a: tuple[float, float], b: tuple[float, float], senses: tuple[int, int]) -> bool:
    """Whether ``a`` dominates ``b`` on a panel (sense +1: lower is better, -1: higher)."""
    pairs = [(s * p, s * q) for s, p, q in zip(senses, a, b, strict=True)]
    return all(p <= q for p, q in pairs) and any(p < q for p, q in pairs)


PANELS = list(itertools.combinations([*FOUR_MIN, *FOUR_MAX], 2))


def test_the_front_of_four_figures_is_drawn_on_every_pair(four: pl.DataFrame) -> None:
    fig = pareto_scatter(four, FOUR_MIN, FOUR_MAX)
    shown = [a for a in fig.axes if a.get_visible()]
    assert len(shown) == len(PANELS) == 6


@pytest.mark.parametrize("panel", range(len(PANELS)), ids=lambda i: "-".join(PANELS[i]))
def test_no_grey_point_beats_a_filled_red_one_on_its_panel(four: pl.DataFrame, panel: int) -> None:
    x, y = PANELS[panel]
    ax = [a for a in pareto_scatter(four, FOUR_MIN, FOUR_MAX).axes if a.get_visible()][panel]
    kinds = by_kind(ax)
    senses = tuple(1 if c in FOUR_MIN else -1 for c in (x, y))
    assert kinds[FRONT_HERE]
    assert not any(
        better(g, r, senses)
        for g in kinds[DOMINATED] + kinds[FRONT_ELSEWHERE]
        for r in kinds[FRONT_HERE]
    )
    # Red, filled or ringed, is exactly the front that was computed; only what meets is drawn.
    front = four.filter(pl.col("pareto"))
    red = sorted(kinds[FRONT_HERE] + kinds[FRONT_ELSEWHERE])
    assert red == sorted(zip(front[x].to_list(), front[y].to_list(), strict=True))
    drawn = len(kinds[FRONT_HERE]) + len(kinds[FRONT_ELSEWHERE]) + len(kinds[DOMINATED])
    assert drawn == four.filter(pl.col("verdict") == "meets").height


def test_failing_scenarios_are_left_off_the_front_and_the_curves(four: pl.DataFrame) -> None:
    assert not four.filter(pl.col("verdict") == "fails")["pareto"].any()
    table = four.with_columns(pl.lit(1).alias("k"))
    fig = sweep_curves(table, ["k"], "capex_usd")
    (line,) = fig.axes[0].lines
    assert len(line.get_xdata()) == four.filter(pl.col("verdict") == "meets").height
    assert "8 of 40 not drawn: 8 fails" in fig.axes[0].get_title().replace("\n", " ")


@pytest.mark.slow
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

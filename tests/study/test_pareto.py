"""The Pareto front against a brute-force O(n²) check on random tables."""

from __future__ import annotations

import math
import random
from typing import Any

import polars as pl
import pytest

from planner.study import pareto_front, with_pareto
from planner.study.pareto import default_objectives, ranking_note


def brute_force(rows: list[dict[str, Any]], minimise: list[str], maximise: list[str]) -> list[bool]:
    """Row i is on the front when it has every figure and no row dominates it."""

    def figures(r: dict[str, Any]) -> list[float] | None:
        values = [r[c] for c in minimise] + [-r[c] if r[c] is not None else None for c in maximise]
        if any(v is None or math.isnan(v) for v in values):
            return None
        return values

    points = [figures(r) for r in rows]
    flags = []
    for p in points:
        if p is None:
            flags.append(False)
            continue
        dominated = any(
            q is not None
            and all(a <= b for a, b in zip(q, p, strict=True))
            and any(a < b for a, b in zip(q, p, strict=True))
            for q in points
        )
        flags.append(not dominated)
    return flags


def random_table(seed: int, n: int, columns: int, ties: bool, missing: bool) -> pl.DataFrame:
    rng = random.Random(seed)
    data: dict[str, list[Any]] = {}
    for c in range(columns):
        values: list[Any] = [
            float(rng.randint(0, 4)) if ties else rng.uniform(0, 100) for _ in range(n)
        ]
        if missing:
            values = [None if rng.random() < 0.1 else v for v in values]
        data[f"f{c}"] = values
    return pl.DataFrame(data, schema={f"f{c}": pl.Float64 for c in range(columns)})


CASES = [
    (seed, n, columns, ties, missing, split)
    for seed, (n, columns, ties, missing, split) in enumerate(
        [
            (1, 1, False, False, 1),
            (2, 2, True, False, 1),
            (30, 1, False, False, 0),
            (50, 2, False, False, 1),
            (50, 2, True, False, 2),
            (80, 3, False, True, 1),
            (80, 3, True, True, 2),
            (120, 4, False, False, 3),
            (120, 4, True, False, 0),
            (200, 2, True, True, 1),
            (200, 5, False, True, 2),
        ]
    )
]


@pytest.mark.parametrize(("seed", "n", "columns", "ties", "missing", "split"), CASES, ids=str)
def test_front_equals_brute_force(
    seed: int, n: int, columns: int, ties: bool, missing: bool, split: int
) -> None:
    df = random_table(seed, n, columns, ties, missing)
    names = df.columns
    minimise, maximise = names[:split], names[split:]
    flags = with_pareto(df, minimise, maximise)["pareto"].to_list()
    assert flags == brute_force(df.to_dicts(), minimise, maximise)
    front = pareto_front(df, minimise, maximise)
    assert front.height == sum(flags)
    assert front.drop("pareto").equals(df.filter(pl.Series(flags)))


def test_a_row_missing_a_figure_is_not_on_the_front() -> None:
    df = pl.DataFrame({"capex_usd": [1.0, None, 3.0], "power_kw": [3.0, 0.0, 1.0]})
    assert with_pareto(df, ["capex_usd", "power_kw"])["pareto"].to_list() == [True, False, True]


def test_defaults_use_the_figures_the_table_has() -> None:
    df = pl.DataFrame(
        {
            "capex_usd": [1.0, 2.0],
            "power_kw": [1.0, 2.0],
            "step_time_s": [None, None],
            "sim_fraction_ecmp": [0.5, 0.9],
            "sim_fraction_spray": [None, None],
            "scenario": ["a", "b"],
        },
        schema_overrides={"step_time_s": pl.Float64, "sim_fraction_spray": pl.Float64},
    )
    assert default_objectives(df) == (["capex_usd", "power_kw"], ["sim_fraction_ecmp"])
    # b costs more but simulates better: both are on the front.
    assert pareto_front(df)["scenario"].to_list() == ["a", "b"]


@pytest.mark.parametrize(
    ("minimise", "maximise", "word"),
    [([], [], "at least one"), (["nope"], [], "nope")],
    ids=str,
)
def test_bad_figures_are_refused(minimise: list[str], maximise: list[str], word: str) -> None:
    df = pl.DataFrame({"capex_usd": [1.0]})
    with pytest.raises(ValueError, match=word):
        with_pareto(df, minimise, maximise)


def study_rows(rows: list[tuple[str, int, float, float, str]]) -> pl.DataFrame:
    """A study table of (scenario, gpus, capex_usd, power_kw, verdict) rows that ran."""
    return pl.DataFrame(
        [
            {
                "scenario": s,
                "status": "ok",
                "gpus": g,
                "capex_usd": c,
                "power_kw": p,
                "verdict": v,
            }
            for s, g, c, p, v in rows
        ]
    )


@pytest.mark.parametrize(
    ("rows", "front"),
    [
        # The cheapest design fails its [verify] requirements: it is never on the front.
        (
            [("cheap", 64, 100.0, 1.0, "fails"), ("sound", 64, 200.0, 2.0, "meets")],
            ["sound"],
        ),
        # A simulation cut short is not a design that meets.
        (
            [("cut", 64, 100.0, 1.0, "incomplete"), ("sound", 64, 200.0, 2.0, "meets")],
            ["sound"],
        ),
        # Nothing meets: nothing is on the front.
        ([("a", 64, 100.0, 1.0, "fails"), ("b", 64, 200.0, 0.5, "fails")], []),
        # No scenario was verified: every design is ranked.
        (
            [("a", 64, 100.0, 1.0, "not verified"), ("b", 64, 200.0, 2.0, "not verified")],
            ["a"],
        ),
    ],
    ids=["fails", "incomplete", "none-meets", "unverified"],
)
def test_only_designs_that_meet_are_on_the_front(
    rows: list[tuple[str, int, float, float, str]], front: list[str]
) -> None:
    assert pareto_front(study_rows(rows))["scenario"].to_list() == front


def test_sizes_that_differ_are_compared_per_gpu() -> None:
    # In total, 16 GPUs cost and draw less than 64; per GPU, the 64 are cheaper and leaner.
    df = study_rows(
        [("gpus=16", 16, 32_000.0, 0.8, "meets"), ("gpus=64", 64, 100_000.0, 1.3, "meets")]
    )
    assert default_objectives(df) == (["capex_usd_per_gpu", "power_w_per_gpu"], [])
    flagged = with_pareto(df)
    assert flagged["pareto"].to_list() == [False, True]
    assert flagged["capex_usd_per_gpu"].to_list() == pytest.approx([2_000.0, 1_562.5])
    assert flagged["power_w_per_gpu"].to_list() == pytest.approx([50.0, 20.3125])


def test_one_size_is_compared_in_total() -> None:
    df = study_rows([("a", 64, 100.0, 2.0, "meets"), ("b", 64, 200.0, 1.0, "meets")])
    assert default_objectives(df) == (["capex_usd", "power_kw"], [])


@pytest.mark.parametrize(
    ("rows", "words"),
    [
        (
            [("a", 64, 1.0, 1.0, "meets"), ("b", 64, 1.0, 1.0, "fails")],
            ["ranked: the 1 of 2 scenarios whose design meets", "left out: 1 fails"],
        ),
        (
            [("a", 16, 1.0, 1.0, "not verified"), ("b", 64, 1.0, 1.0, "not verified")],
            ["not verified", "the 2 of 2 scenarios with a design", "per GPU", "16 to 64"],
        ),
    ],
    ids=["verified", "unverified-sizes"],
)
def test_the_ranking_says_what_it_ranks(
    rows: list[tuple[str, int, float, float, str]], words: list[str]
) -> None:
    note = ranking_note(study_rows(rows))
    for word in words:
        assert word in note


def test_rounding_noise_is_a_tie_not_a_better_design() -> None:
    # b costs more and draws more; its fraction is "higher" only in the 16th digit.
    df = pl.DataFrame(
        {
            "capex_usd": [100.0, 200.0],
            "power_kw": [1.0, 2.0],
            "sim_fraction_spray": [0.9999999999999998, 0.9999999999999999],
        }
    )
    assert with_pareto(df)["pareto"].to_list() == [True, False]

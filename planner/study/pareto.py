"""The Pareto front of a study: the scenarios no other scenario beats on every figure.

Row ``a`` dominates row ``b`` when ``a`` is at least as good on every figure and better on one
(lower where minimised, higher where maximised), figures compared at :data:`FIGURE_DIGITS`
significant digits (a difference in the 16th digit is rounding, not a better design). A row missing a figure (a scenario without a
design, a simulation that did not run) is on no front. Rows that tie on every figure are all on
the front.

**What is ranked.** Only designs that meet their requirements are compared: when the study was
verified (some scenario has a simulation verdict), the front, the best scenarios and the
pictures take the scenarios whose verdict is ``meets`` alone; a design that ``fails`` (or whose
simulation was cut, ``incomplete``) is never "best", however cheap. A study without any
verification (``--no-verify``, or ``verify.enabled = false``) ranks every scenario with a design
and says so: its designs were not checked against their traffic (:func:`ranking_note`).

**Per GPU.** When the study's GPU count varies, capex and power are compared per GPU
(``capex_usd_per_gpu``, ``power_w_per_gpu``): a total favours the smallest cluster, whatever it
buys. Step time and the simulated fractions are compared as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import polars as pl

#: Figures minimised by default, when the table has them (and they are not all null).
DEFAULT_MINIMISE = ("capex_usd", "power_kw", "step_time_s")
#: The same, when the study's GPU count varies: capex and power per GPU.
DEFAULT_MINIMISE_PER_GPU = ("capex_usd_per_gpu", "power_w_per_gpu", "step_time_s")
#: Prefix of the figures maximised by default: the simulated throughput fractions.
DEFAULT_MAXIMISE = ("sim_fraction_",)
#: Per-GPU figures: name -> (the total it divides by ``gpus``, the factor to its unit).
PER_GPU_FIGURES: dict[str, tuple[str, float]] = {
    "capex_usd_per_gpu": ("capex_usd", 1.0),
    "power_w_per_gpu": ("power_kw", 1000.0),
}
#: Significant digits figures are compared at: a simulated fraction of 0.9999999999999998
#: ties one of 0.9999999999999999 (as ``planner.output`` writes them) instead of beating it.
FIGURE_DIGITS = 12
#: Name of the flag column.
PARETO = "pareto"
#: Column of the GPU count of each scenario.
GPUS = "gpus"
#: The verdict of a design that meets its ``[verify]`` requirements, and of one not simulated.
MEETS, NOT_VERIFIED = "meets", "not verified"


def with_per_gpu(df: pl.DataFrame) -> pl.DataFrame:
    """The table with ``capex_usd_per_gpu`` and ``power_w_per_gpu`` (when it has their totals).

    A figure the table already has is left as it is.
    """
    if GPUS not in df.columns:
        return df
    gpus = pl.col(GPUS).cast(pl.Float64)
    added = [
        (pl.col(total).cast(pl.Float64) * factor / pl.when(gpus > 0).then(gpus)).alias(name)
        for name, (total, factor) in PER_GPU_FIGURES.items()
        if total in df.columns and name not in df.columns
    ]
    return df.with_columns(added) if added else df


def sizes_vary(df: pl.DataFrame) -> bool:
    """Whether the scenarios' GPU counts differ (then capex and power are compared per GPU)."""
    return GPUS in df.columns and df[GPUS].drop_nulls().n_unique() > 1


def verified(df: pl.DataFrame) -> bool:
    """Whether some scenario of the study was simulated (has a verdict other than not verified)."""
    if "verdict" not in df.columns:
        return False
    verdicts = df["verdict"].drop_nulls()
    return bool((verdicts != NOT_VERIFIED).any())


def ranked_mask(df: pl.DataFrame) -> pl.Series:
    """Which scenarios are ranked: those that meet (a verified study), else those with a design.

    A row of a scenario in error (``status`` not ``ok``) or without a design (no capex) is
    never ranked. A table without those columns (a table of figures alone) ranks every row.
    """
    keep = pl.Series("ranked", np.ones(df.height, dtype=bool))
    if "status" in df.columns:
        keep &= (df["status"] == "ok").fill_null(False)
    if "capex_usd" in df.columns:
        keep &= df["capex_usd"].is_not_null()
    if verified(df):
        keep &= (df["verdict"] == MEETS).fill_null(False)
    return keep.alias("ranked")


@dataclass(frozen=True)
class Ranking:
    """Which scenarios a study ranks, on which figures, and why the others are left out."""

    ranked: int
    total: int
    verified: bool
    per_gpu: bool
    left_out: dict[str, int]
    """Scenarios not ranked, by reason (``fails``, ``incomplete``, ``no design``, ``error``)."""


def ranking_of(df: pl.DataFrame) -> Ranking:
    """How :func:`ranked_mask` ranks the table, counted."""
    mask = ranked_mask(df)
    left: dict[str, int] = {}
    for i, row in enumerate(df.iter_rows(named=True)):
        if mask[i]:
            continue
        if row.get("status", "ok") != "ok":
            why = "error"
        elif row.get("capex_usd", 0.0) is None:
            why = "no design"
        else:
            why = str(row.get("verdict") or "no verdict")
        left[why] = left.get(why, 0) + 1
    return Ranking(int(mask.sum()), df.height, verified(df), sizes_vary(df), left)


def ranking_note(df: pl.DataFrame) -> str:
    """One sentence: what the study's front and best scenarios rank, and what they leave out."""
    r = ranking_of(df)
    left = ", ".join(f"{n} {why}" for why, n in r.left_out.items())
    if r.verified:
        text = (
            f"ranked: the {r.ranked:,} of {r.total:,} scenarios whose design meets its [verify] "
            "requirements" + (f" (left out: {left})" if left else "")
        )
    else:
        text = (
            f"not verified (--no-verify, or verification off): the {r.ranked:,} of "
            f"{r.total:,} scenarios with a design are ranked on the plan's figures alone, "
            "unchecked against their traffic" + (f" (left out: {left})" if left else "")
        )
    if r.per_gpu:
        gpus = df[GPUS].drop_nulls().cast(pl.Int64).to_list()
        text += (
            f"; capex and power compared per GPU, since the GPU count varies "
            f"({min(gpus):,} to {max(gpus):,})"
        )
    return text


def default_objectives(df: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The default figures the ranked scenarios have values for.

    Capex and power (per GPU when the GPU count varies, :func:`sizes_vary`) and step time
    minimised, the simulated fractions maximised; each when some ranked scenario has it.
    """
    table = with_per_gpu(df)
    ranked = table.filter(ranked_mask(table))

    def has(name: str) -> bool:
        return ranked[name].dtype.is_numeric() and ranked[name].is_not_null().any()

    names = DEFAULT_MINIMISE_PER_GPU if sizes_vary(table) else DEFAULT_MINIMISE
    minimise = [c for c in names if c in table.columns and has(c)]
    maximise = [
        c for c in table.columns if any(c.startswith(p) for p in DEFAULT_MAXIMISE) and has(c)
    ]
    return minimise, maximise


def pareto_mask(df: pl.DataFrame, minimise: Sequence[str], maximise: Sequence[str]) -> pl.Series:
    """Whether each row is on the front of ``minimise`` and ``maximise`` (O(n²) comparisons).

    Every row takes part: this is the front of the figures alone (:func:`with_pareto` first
    keeps the ranked rows).
    """
    columns = [*minimise, *maximise]
    if not columns:
        raise ValueError("a Pareto front needs at least one figure to minimise or maximise")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"no column {missing[0]!r} in the table (columns: {', '.join(df.columns)})"
        )

    # Every figure as "lower is better", at FIGURE_DIGITS significant digits (rounding noise is
    # a tie, not a win); a missing value (null or NaN) takes the row off.
    def figure(c: str) -> np.ndarray:
        values = df[c].cast(pl.Float64).fill_nan(None).round_sig_figs(FIGURE_DIGITS)
        return values.fill_null(np.nan).to_numpy()

    values = np.column_stack(
        [figure(c) for c in minimise] + [-figure(c) for c in maximise]
    ).reshape(df.height, len(columns))
    complete = ~np.isnan(values).any(axis=1)
    points = values[complete]
    front = np.ones(len(points), dtype=bool)
    for i, p in enumerate(points):
        no_worse = (points <= p).all(axis=1)
        better = (points < p).any(axis=1)
        front[i] = not (no_worse & better).any()
    mask = np.zeros(df.height, dtype=bool)
    mask[np.flatnonzero(complete)[front]] = True
    return pl.Series(PARETO, mask)


def with_pareto(
    df: pl.DataFrame,
    minimise: Sequence[str] | None = None,
    maximise: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The whole table with a boolean ``pareto`` column: whether each row is on the front.

    The front is over the ranked rows alone (:func:`ranked_mask`: those that meet their
    ``[verify]`` requirements in a verified study); every other row is off it. The per-GPU
    figures are added (:func:`with_per_gpu`). With neither ``minimise`` nor ``maximise`` given,
    the defaults the ranked rows have values for (:func:`default_objectives`); with none, no row
    is on the front.
    """
    table = with_per_gpu(df)
    if minimise is None and maximise is None:
        minimise, maximise = default_objectives(table)
        if not minimise and not maximise:  # no ranked scenario has a figure: no front
            return table.with_columns(pl.lit(False).alias(PARETO))
    mask = ranked_mask(table).to_numpy()
    front = pareto_mask(table.filter(mask), minimise or (), maximise or ()).to_numpy()
    flags = np.zeros(table.height, dtype=bool)
    flags[np.flatnonzero(mask)[front]] = True
    return table.with_columns(pl.Series(PARETO, flags))


def pareto_front(
    df: pl.DataFrame,
    minimise: Sequence[str] | None = None,
    maximise: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The rows on the Pareto front (with the ``pareto`` column), in the table's order.

    See :func:`with_pareto` for which rows are ranked and the figures used by default.
    """
    return with_pareto(df, minimise, maximise).filter(pl.col(PARETO))

"""The Pareto front of a study: the scenarios no other scenario beats on every figure.

Row ``a`` dominates row ``b`` when ``a`` is at least as good on every figure and better on one
(lower where minimised, higher where maximised). A row missing a figure (a scenario without a
design, a simulation that did not run) is on no front. Rows that tie on every figure are all on
the front.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import polars as pl

#: Figures minimised by default, when the table has them (and they are not all null).
DEFAULT_MINIMISE = ("capex_usd", "power_kw", "step_time_s")
#: Prefix of the figures maximised by default: the simulated throughput fractions.
DEFAULT_MAXIMISE = ("sim_fraction_",)
#: Name of the flag column.
PARETO = "pareto"


def default_objectives(df: pl.DataFrame) -> tuple[list[str], list[str]]:
    """The default figures a table has values for: capex, power, step time; simulated fractions."""

    def has(name: str) -> bool:
        return df[name].dtype.is_numeric() and df[name].is_not_null().any()

    minimise = [c for c in DEFAULT_MINIMISE if c in df.columns and has(c)]
    maximise = [c for c in df.columns if any(c.startswith(p) for p in DEFAULT_MAXIMISE) and has(c)]
    return minimise, maximise


def pareto_mask(df: pl.DataFrame, minimise: Sequence[str], maximise: Sequence[str]) -> pl.Series:
    """Whether each row is on the front of ``minimise`` and ``maximise`` (O(n²) comparisons)."""
    columns = [*minimise, *maximise]
    if not columns:
        raise ValueError("a Pareto front needs at least one figure to minimise or maximise")
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(
            f"no column {missing[0]!r} in the table (columns: {', '.join(df.columns)})"
        )
    # Every figure as "lower is better"; a missing value (null or NaN) takes the row off.
    values = np.column_stack(
        [df[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in minimise]
        + [-df[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in maximise]
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

    With neither ``minimise`` nor ``maximise`` given, the defaults the table has values for
    (:func:`default_objectives`): capex, power and step time minimised, the simulated throughput
    fractions (``sim_fraction_*``) maximised.
    """
    if minimise is None and maximise is None:
        minimise, maximise = default_objectives(df)
    return df.with_columns(pareto_mask(df, minimise or (), maximise or ()))


def pareto_front(
    df: pl.DataFrame,
    minimise: Sequence[str] | None = None,
    maximise: Sequence[str] | None = None,
) -> pl.DataFrame:
    """The rows on the Pareto front (with the ``pareto`` column), in the table's order.

    See :func:`with_pareto` for the figures used by default.
    """
    return with_pareto(df, minimise, maximise).filter(pl.col(PARETO))

"""Report tables of a design's reliability: its component classes and its goodput."""

from __future__ import annotations

import math
from typing import Any

import polars as pl

from planner.reliability import Assessment

#: Columns of the ``reliability`` table: one row per component class.
CLASSES_SCHEMA: dict[str, Any] = {
    "component": pl.Utf8,
    "origin": pl.Utf8,
    "units": pl.Float64,
    "afr": pl.Float64,
    "failures_per_day": pl.Float64,
    "interrupt_share": pl.Float64,
    "interruptions_per_day": pl.Float64,
    "mttr_hours": pl.Float64,
    "bandwidth_loss": pl.Float64,
    "mean_units_down": pl.Float64,
}

#: Columns of the ``goodput`` table: one row per figure, closed form beside Monte Carlo.
GOODPUT_SCHEMA: dict[str, Any] = {
    "figure": pl.Utf8,
    "closed_form": pl.Float64,
    "monte_carlo": pl.Float64,
    "monte_carlo_ci95": pl.Float64,
}


def _finite(x: float | None) -> float | None:
    """``x``, or None where it is not a finite number (M without failures, one trial's spread)."""
    return x if x is not None and math.isfinite(x) else None


def classes_table(a: Assessment) -> pl.DataFrame:
    """One row per component class (``planner.reliability.classes``)."""
    rows = [
        {
            "component": c.name,
            "origin": c.group,
            "units": float(c.units),
            "afr": c.afr,
            "failures_per_day": c.failures_per_day,
            "interrupt_share": c.interrupt_share,
            "interruptions_per_day": c.interruptions_per_day,
            "mttr_hours": c.mttr_hours,
            "bandwidth_loss": c.bandwidth_loss,
            "mean_units_down": c.mean_down_units,
        }
        for c in a.classes
    ]
    return pl.DataFrame(rows, schema=CLASSES_SCHEMA)


def goodput_table(a: Assessment) -> pl.DataFrame:
    """The closed form's figures, each beside its Monte Carlo mean and 95 % half-width."""
    g, mc = a.closed, a.monte_carlo

    def row(figure: str, closed: float, sampled: float | None, ci: float | None) -> dict[str, Any]:
        return {
            "figure": figure,
            "closed_form": _finite(closed),
            "monte_carlo": _finite(sampled),
            "monte_carlo_ci95": _finite(ci),
        }

    rows = [
        row(
            "network_interruptions_per_day",
            g.network_interruptions_per_day,
            None if mc is None else mc.network_interruptions_per_day,
            None if mc is None else mc.network_interruptions_ci95,
        ),
        row("scale_up_interruptions_per_day", g.interruptions_per_day["scale_up"], None, None),
        row("outside_interruptions_per_day", g.interruptions_per_day["outside"], None, None),
        row("planned_interruptions_per_day", g.interruptions_per_day["planned"], None, None),
        row(
            "interruptions_per_day",
            g.total_interruptions_per_day,
            None if mc is None else mc.interruptions_per_day,
            None if mc is None else mc.interruptions_ci95,
        ),
        row("mtbi_hours", g.mtbi_hours, None, None),
        row("checkpoint_interval_minutes", g.checkpoint_interval_s / 60.0, None, None),
        row(
            "checkpoint_efficiency",
            g.checkpoint_efficiency,
            None if mc is None else mc.checkpoint_efficiency,
            None if mc is None else mc.checkpoint_efficiency_ci95,
        ),
        row(
            "degraded_speed",
            g.degraded_speed,
            None if mc is None else mc.degraded_speed,
            None if mc is None else mc.degraded_speed_ci95,
        ),
        row(
            "goodput_fraction",
            g.goodput_fraction,
            None if mc is None else mc.goodput_fraction,
            None if mc is None else mc.goodput_ci95,
        ),
    ]
    return pl.DataFrame(rows, schema=GOODPUT_SCHEMA)

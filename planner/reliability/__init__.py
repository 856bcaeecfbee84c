"""Failures as rates: interruptions a day, checkpoints, degraded time and goodput of a design.

``classes`` sorts a design's parts by what their failure does to the job, ``goodput`` gives the
closed form, ``monte_carlo`` draws a month of it many times, ``tables`` reports both and
``options`` lets the time lost choose the planes and co-packaged optics.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.deadline import NO_DEADLINE, Deadline, cut_note
from planner.design import Design
from planner.reliability.classes import ComponentClass, component_classes
from planner.reliability.goodput import Goodput, goodput
from planner.reliability.monte_carlo import MonteCarlo, monte_carlo
from planner.schema.reliability import ComponentRates, Reliability


@dataclass(frozen=True)
class Assessment:
    """A design's component classes, its closed form and (optionally) its Monte Carlo check."""

    classes: tuple[ComponentClass, ...]
    closed: Goodput
    monte_carlo: MonteCarlo | None
    notes: tuple[str, ...] = ()
    """What the time limit cut (``planner.deadline.cut_note``): Monte Carlo trials left out."""


def assess(
    design: Design,
    rates: ComponentRates,
    reliability: Reliability,
    idle_fraction: float | None = None,
    *,
    scale_out_idle_fraction: float | None = None,
    trials: int | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> Assessment:
    """Classes, closed form and Monte Carlo (``trials`` overrides the instance's count).

    ``idle_fraction`` and ``scale_out_idle_fraction`` are the healthy step's exposed shares
    (``planner.reliability.goodput``); the Monte Carlo stops at ``deadline`` and keeps the
    trials it finished, a note saying how many were left out.
    """
    classes = component_classes(design, rates, reliability)
    closed = goodput(classes, reliability, idle_fraction, scale_out_idle_fraction)
    mc = monte_carlo(classes, reliability, closed, trials=trials, deadline=deadline)
    asked = reliability.monte_carlo_trials if trials is None else trials
    ran = 0 if mc is None else mc.trials
    notes: tuple[str, ...] = ()
    if ran < asked:
        notes = (
            cut_note(
                f"Monte Carlo of goodput stopped after {ran:,} of {asked:,} trials of "
                f"{reliability.monte_carlo_days:g} days (the closed form stands; a longer "
                "--time-limit, or fewer reliability.monte_carlo_trials, runs them all)"
            ),
        )
    return Assessment(classes, closed, mc, notes)


__all__ = ["Assessment", "ComponentClass", "Goodput", "MonteCarlo", "assess"]

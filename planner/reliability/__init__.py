"""Failures as rates: interruptions a day, checkpoints, degraded time and goodput of a design.

``classes`` sorts a design's parts by what their failure does to the job, ``goodput`` gives the
closed form, ``monte_carlo`` draws a month of it many times, ``tables`` reports both and
``options`` lets the time lost choose the planes and co-packaged optics.
"""

from __future__ import annotations

from dataclasses import dataclass

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


def assess(
    design: Design,
    rates: ComponentRates,
    reliability: Reliability,
    idle_fraction: float | None = None,
    *,
    trials: int | None = None,
) -> Assessment:
    """Classes, closed form and Monte Carlo (``trials`` overrides the instance's count)."""
    classes = component_classes(design, rates, reliability)
    closed = goodput(classes, reliability, idle_fraction)
    return Assessment(classes, closed, monte_carlo(classes, reliability, closed, trials=trials))


__all__ = ["Assessment", "ComponentClass", "Goodput", "MonteCarlo", "assess"]

"""A month of training, drawn many times: interruptions, restarts, checkpoints and repairs.

Each trial runs the job for ``reliability.monte_carlo_days``:

* **Interruptions** arrive as a Poisson process of rate Λ (``planner.reliability.goodput``).
  After each one the job restarts for R seconds (an interruption during a restart starts it
  again), then alternates τ seconds of work and δ seconds of checkpoint; an interruption loses
  everything since the last finished checkpoint. At the end of the trial the work since the last
  checkpoint counts (the job goes on). Each interruption's origin (network, scale-up, outside,
  planned) is drawn in proportion to its rate.
* **Degraded time**: the failures of each degrading class arrive as a Poisson process and each
  lasts an exponential repair time of mean r_c. The trial begins in the steady state of that
  M/M/∞ queue, exactly: Poisson(u_c) units already down, each for an exponential residual time
  of mean r_c (memoryless); the share of the trial with at least one unit down is p_c, and the
  trial's speed is Π_c (1 - p_c (1 - v_c)). A class with u_c above ``SATURATED_MEAN_UNITS`` is
  down the whole trial (the share of time with none down, e^{-u_c}, is below what a double
  resolves next to 1), which spares drawing its millions of repairs.

A trial's goodput is its committed work over its length times its speed. The trials' mean and
a 95 % confidence interval (1.96 standard errors) are reported beside the closed form, which
they check: the closed form's E(τ) is Daly's expectation for the same process.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from planner.deadline import NO_DEADLINE, Deadline, DeadlineExpired, watch
from planner.reliability.classes import ComponentClass
from planner.reliability.goodput import SECONDS_PER_DAY, Goodput, class_speed
from planner.schema.reliability import Reliability

#: Standard errors either side of the mean in a 95 % confidence interval (normal).
Z95 = 1.96
#: Mean units down above which a class counts as degrading the whole trial: e^{-36} = 2.3e-16.
SATURATED_MEAN_UNITS = 36.0
#: Most interruptions drawn at once in a trial (bounds its memory; the deadline is read between).
CHUNK_ARRIVALS = 1 << 16
#: A chunk draws this many times the interruptions expected in what is left of the trial, plus
#: ``CHUNK_SLACK``, so that one chunk nearly always reaches the end.
CHUNK_MARGIN = 1.2
CHUNK_SLACK = 16


@dataclass(frozen=True)
class MonteCarlo:
    """The trials' means and 95 % half-widths."""

    trials: int
    """Trials run (fewer than ``trials_requested`` when the time limit stopped them)."""
    days: float
    goodput_fraction: float
    goodput_ci95: float
    checkpoint_efficiency: float
    checkpoint_efficiency_ci95: float
    degraded_speed: float
    degraded_speed_ci95: float
    interruptions_per_day: float
    interruptions_ci95: float
    network_interruptions_per_day: float
    network_interruptions_ci95: float
    trials_requested: int = 0
    """Trials asked for (0: as many as ran)."""

    @property
    def trials_cut(self) -> int:
        """Trials the time limit left out."""
        return max(self.trials_requested - self.trials, 0)


def _mean_ci(x: np.ndarray) -> tuple[float, float]:
    if len(x) < 2:
        return float(x.mean()), math.inf
    return float(x.mean()), float(Z95 * x.std(ddof=1) / math.sqrt(len(x)))


def _stretch_work_s(available_s: np.ndarray, tau: float, period: float) -> np.ndarray:
    """Committed work of stretches with ``available_s`` after their restart, each cut by a failure.

    floor(a / (τ + δ)) τ: only finished checkpoints count. With τ = δ = 0 (a free checkpoint
    taken continuously) all of it.
    """
    a = np.maximum(available_s, 0.0)
    if period <= 0:
        return a
    return np.floor(a / period) * tau


def _committed_work_s(
    rng: np.random.Generator,
    horizon_s: float,
    rate_per_s: float,
    tau: float,
    delta: float,
    r: float,
    check: Callable[[], None] = lambda: None,
) -> tuple[float, int]:
    """Committed work of one trial and the interruptions in it.

    The interruptions are drawn a chunk at a time (at most ``CHUNK_ARRIVALS``), ``check`` called
    between chunks (a deadline's watch: it raises to stop the trial). Each stretch between two
    interruptions restarts for R, then commits τ per τ + δ; the last stretch, cut by the end of
    the trial, also counts its unfinished work (at most τ: the job goes on).
    """
    period = tau + delta
    start = 0.0
    work = 0.0
    failures = 0
    while True:
        check()
        if rate_per_s > 0:
            expected = (horizon_s - start) * rate_per_s
            n = int(min(max(expected * CHUNK_MARGIN + CHUNK_SLACK, CHUNK_SLACK), CHUNK_ARRIVALS))
            arrivals = start + np.cumsum(rng.exponential(1.0 / rate_per_s, n))
        else:
            arrivals = np.empty(0)
        inside = arrivals[arrivals < horizon_s]
        if len(inside):
            starts = np.concatenate(([start], inside[:-1]))
            work += float(_stretch_work_s(inside - starts - r, tau, period).sum())
            failures += len(inside)
            start = float(inside[-1])
        if len(inside) < len(arrivals) or rate_per_s <= 0:
            break
    available = horizon_s - start - r
    if available > 0 and period <= 0:
        work += available
    elif available > 0:
        count = math.floor(available / period)
        work += count * tau + min(available - count * period, tau)
    return work, failures


def _covered_share(
    rng: np.random.Generator, horizon_s: float, per_day: float, mean_s: float
) -> float:
    """Share of [0, horizon] with at least one of the class's units down (module docstring)."""
    mean_down = per_day * mean_s / SECONDS_PER_DAY
    if mean_down > SATURATED_MEAN_UNITS:
        return 1.0
    ongoing = rng.poisson(mean_down)
    arriving = rng.poisson(per_day * horizon_s / SECONDS_PER_DAY)
    count = ongoing + arriving
    if count == 0:
        return 0.0
    start = np.concatenate((np.zeros(ongoing), np.sort(rng.uniform(0.0, horizon_s, arriving))))
    end = np.clip(start + rng.exponential(mean_s, count), 0.0, horizon_s)
    # Union of the intervals: the running maximum of the ends decides where a new piece starts.
    reach = np.maximum.accumulate(end)
    previous = np.concatenate(([0.0], reach[:-1]))
    covered = np.clip(end - np.maximum(start, previous), 0.0, None)
    return float(covered.sum() / horizon_s)


def monte_carlo(
    classes: Sequence[ComponentClass],
    reliability: Reliability,
    closed: Goodput,
    *,
    trials: int | None = None,
    deadline: Deadline = NO_DEADLINE,
) -> MonteCarlo | None:
    """The trials of the module docstring (None when ``monte_carlo_trials`` is 0).

    ``deadline`` is the command's: no trial starts once it has passed, and a trial running when
    it passes stops (its draws dropped); the trials finished are kept and ``trials`` says how
    many (None when none finished: ``trials_requested`` is what the caller asked for).
    """
    n = reliability.monte_carlo_trials if trials is None else trials
    if n <= 0 or deadline.expired:
        return None
    rng = np.random.default_rng(reliability.seed)
    horizon = reliability.monte_carlo_days * SECONDS_PER_DAY
    rate = closed.total_interruptions_per_day / SECONDS_PER_DAY
    network_share = (
        closed.network_interruptions_per_day / closed.total_interruptions_per_day
        if closed.total_interruptions_per_day > 0
        else 0.0
    )
    tau = closed.checkpoint_interval_s
    if math.isinf(tau):
        tau = horizon
    degrading = [c for c in classes if c.degradations_per_day > 0 and c.bandwidth_loss > 0]
    efficiency = np.empty(n)
    speed = np.empty(n)
    interruptions = np.empty(n)
    network = np.empty(n)
    clock = watch(deadline)
    done = 0
    try:
        for k in range(n):
            clock.check()
            work, failures = _committed_work_s(
                rng,
                horizon,
                rate,
                tau,
                reliability.checkpoint_write_s,
                reliability.restart_s,
                clock.check,
            )
            s = 1.0
            for c in degrading:
                clock.check()
                p = _covered_share(rng, horizon, c.degradations_per_day, c.mttr_hours * 3600.0)
                v = class_speed(c.bandwidth_loss, closed.class_idle_fraction(c.group))
                s *= 1.0 - p * (1.0 - v)
            efficiency[k] = work / horizon
            speed[k] = s
            interruptions[k] = failures / reliability.monte_carlo_days
            network[k] = rng.binomial(failures, network_share) / reliability.monte_carlo_days
            done = k + 1
    except DeadlineExpired:
        pass
    if done == 0:
        return None
    efficiency, speed = efficiency[:done], speed[:done]
    interruptions, network = interruptions[:done], network[:done]
    good = efficiency * speed
    g, g_ci = _mean_ci(good)
    e, e_ci = _mean_ci(efficiency)
    d, d_ci = _mean_ci(speed)
    i, i_ci = _mean_ci(interruptions)
    w, w_ci = _mean_ci(network)
    days = reliability.monte_carlo_days
    return MonteCarlo(done, days, g, g_ci, e, e_ci, d, d_ci, i, i_ci, w, w_ci, trials_requested=n)

"""OCS topology engineering: evaluation with x fixed.

``evaluate`` (closed form, quotient LP or column generation) and ``throughput_scale`` on a
circuit list.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pulp

from models.ocs_topology.data import (
    LP_RELATIVE_TOL,
    circuit_matrix,
    demand_matrix,
    is_cyclic,
    normalised_demand,
    off_diagonal,
    usable_circuits,
)
from models.ocs_topology.lp import path_lp
from models.ocs_topology.model import build_circulant

# --- evaluation with x fixed ----------------------------------------------------------------------


@dataclass(frozen=True)
class Evaluation:
    """Theta of a fixed topology: certified achievable, and a proven upper bound."""

    theta: float
    upper: float

    @property
    def exact(self) -> bool:
        """Whether the two agree to ``LP_RELATIVE_TOL``."""
        return self.upper - self.theta <= LP_RELATIVE_TOL * max(self.upper, 1e-12)


def evaluate(
    x: np.ndarray,
    d: np.ndarray,
    c: float,
    transit: bool = True,
    deadline: float = math.inf,
    stop_on_stall: bool = False,
    spines: int = 1,
) -> Evaluation:
    """Max theta for a fixed x: a closed form, the quotient LP or column generation.

    Without transit the closed form min c usable(x_ij) / D_ij over pairs with demand; with
    transit, S must be 1 (spine granularity is modelled for direct paths only).
    """
    dem = d > 0
    if not transit:
        value = float((c * usable_circuits(x[dem], spines) / d[dem]).min())
        return Evaluation(value, value)
    if spines != 1:
        raise ValueError("spine granularity is modelled for direct paths only (transit=False)")
    n = x.shape[0]
    if is_cyclic(x) and is_cyclic(d):
        y = {s: int(x[0, s]) for s in range(1, n // 2 + 1)}
        m, v = build_circulant(n, int(x[0].sum()), d[0], c, fixed=y)
        m.solve(pulp.HiGHS(msg=False))
        if m.status != pulp.LpStatusOptimal:
            raise RuntimeError(f"circulant LP: {pulp.LpStatus[m.status]}")
        value = float(v.theta.value() or 0.0)
        return Evaluation(value, value)
    lp = path_lp(d, c, capacity=c * x.astype(float), deadline=deadline, stop_on_stall=stop_on_stall)
    return Evaluation(lp.lower, lp.upper)


def throughput_scale(
    n: int,
    circuits: Sequence[tuple[int, int, int]],
    demand: Sequence[Sequence[float]] | None = None,
    circuit_gbps: float = 1.0,
    transit: bool = True,
    time_limit_s: float | None = None,
    *,
    spines: int = 1,
    injection_gbps: Sequence[float] | None = None,
) -> float:
    """Max theta such that theta D^ is routable on the fixed circuits (an LP; see ``evaluate``).

    Dimensionless: D is scaled first (module docstring, Units), with I_i = ``injection_gbps`` or,
    when None, c times the circuits block i terminates; D and a multiple of D give the same
    value. The value is achievable (a routing checked against every capacity); it is the maximum
    unless a time limit stopped the column generation first.
    """
    x = circuit_matrix(n, circuits)
    raw = demand_matrix(n, demand)
    if not off_diagonal(raw).any():
        raise ValueError("the demand matrix has no positive entry off its diagonal")
    inj = (
        circuit_gbps * x.sum(axis=1).astype(float)
        if injection_gbps is None
        else np.asarray(injection_gbps, dtype=float)
    )
    d = normalised_demand(raw, inj)
    if not d.any():
        return 0.0  # a block with traffic and nothing to inject it with
    deadline = math.inf if time_limit_s is None else time.perf_counter() + time_limit_s
    return evaluate(x, d, circuit_gbps, transit, deadline, spines=spines).theta

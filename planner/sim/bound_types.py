"""What the optimal-routing bounds exchange: switch links, switch demand and a bound.

A family that proves a bound for its structure (``planner.sim.fabric.StructureBound``) takes
and returns these; ``planner.sim.bound_scaled`` builds them and falls back to generic cuts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]

#: Max concurrent flow on a small graph: (nodes, link tail, link head, capacity_gbps, demand src,
#: demand dst, demand gbit) -> (lambda, LP variables). ``bound.block_mcf`` solves it with HiGHS.
BlockSolver = Callable[
    [int, IntArray, IntArray, FloatArray, IntArray, IntArray, FloatArray],
    tuple[float, int],
]


@dataclass(frozen=True)
class SwitchLinks:
    """Alive switch-to-switch directed links, parallel links merged (``bound.switch_links``)."""

    tail: IntArray
    head: IntArray
    capacity_gbps: FloatArray


@dataclass(frozen=True)
class SwitchDemand:
    """Gbit between first-tier switches (node ids), one entry per ordered pair, s != t."""

    src: IntArray
    dst: IntArray
    gbit: FloatArray


@dataclass(frozen=True)
class ScaledBound:
    """An upper bound on the fabric's max concurrent flow, and whether it is exact."""

    lambda_per_s: float
    exact: bool
    method: str
    """Which bound: ``leaf_cut``, ``contracted``, or the name a family gives its own (``clos``,
    ``ocs``, ``torus``)."""
    variables: int = 0
    """Variables of the small LP it solved (0 for closed forms)."""
    reason: str = ""
    """Why it is not exact, or which structure it used."""

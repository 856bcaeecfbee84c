"""OCS topology engineering: bounds on theta over all integer topologies.

The hose bound and the integer capacity bound. The LP bound comes from
``models.ocs_topology.lp``, the MILP bound from the solve.

The docstrings here say "module docstring" for the package docstring of ``models.ocs_topology``,
which holds the formulation, the bounds and the constructions in full.
"""

from __future__ import annotations

import numpy as np

from models.ocs_topology.data import BISECTION_TOL

# --- bounds ---------------------------------------------------------------------------------------


def hose_bound(uplinks: np.ndarray, d: np.ndarray, c: float) -> float:
    """min_i c U_i / max(R_i, C_i): a bound for any topology and routing."""
    load = np.maximum(d.sum(axis=1), d.sum(axis=0))
    busy = load > 0
    return float((c * uplinks[busy] / load[busy]).min())


def integer_capacity_bound(uplinks: np.ndarray, d: np.ndarray, c: float, upper: float) -> float:
    """The largest theta <= upper passing the integer capacity test (module docstring)."""
    n = len(uplinks)
    total_demand = float(d.sum())
    capacity = c * float(uplinks.sum())
    both = d.sum(axis=1) + d.sum(axis=0)
    levels = c * np.arange(int(uplinks.max()))

    def excess(theta: float) -> float:
        deficit = 0.0
        for i in range(n):
            k = int(uplinks[i])
            out = np.clip(theta * d[i, :, None] - levels[:k], 0.0, c)
            into = np.clip(theta * d[:, i, None] - levels[:k], 0.0, c)
            gain = (out + into).ravel()
            best = float(np.partition(gain, gain.size - k)[gain.size - k :].sum()) if k else 0.0
            deficit += theta * both[i] - best
        return theta * total_demand + 0.5 * deficit - capacity

    if excess(upper) <= 0:
        return upper
    lo, hi = 0.0, upper
    while hi - lo > BISECTION_TOL * upper:
        mid = 0.5 * (lo + hi)
        if excess(mid) <= 0:
            lo = mid
        else:
            hi = mid
    return hi

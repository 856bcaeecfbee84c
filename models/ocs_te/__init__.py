r"""OCS traffic engineering: split each block pair's traffic over direct and one-transit paths.

Given the circuits between aggregation blocks (the logical topology, fixed here) and a forecast of
the block-level demand, choose WCMP weights: the share of each pair's traffic on its direct
circuits and on each path through one transit block, so that the busiest circuit bundle is as
lightly loaded as it can be, with headroom for a surge over the forecast. This is the traffic
engineering of Jupiter Evolving (Poutievski et al., SIGCOMM 2022); the topology engineering that
chooses the circuits is ``models.ocs_topology``.

Data. Blocks a, b, t = 0..n-1; x_ab circuits between a and b (symmetric, integer, zero diagonal),
each carrying c_ab Gb/s in each direction, so the directed bundle e = (a, b) carries
c_e = c_ab x_ab; D_ab >= 0 the forecast, Gb/s from a to b; h >= 0 the hedge, Gb/s. The circuit
rate is one number c for every pair (``TeProblem.capacity_gbps`` a float), or a symmetric matrix
when blocks of different generations meet (a circuit runs at its slower end's rate).

Pairs. The pairs that get shares are those with D_ab > 0 and, with h > 0, every other pair with
a path (a surge may come from a pair with no forecast). Pair (a, b) has the paths
    direct   a -> b            when x_ab > 0,
    transit  a -> t -> b       for every t not in {a, b} with x_at > 0 and x_tb > 0.
A pair with demand and no path makes the problem INFEASIBLE (``TeProblem.unroutable``).

The LP (``lp``: one family per ``add_*`` function; ``CONSTRAINTS``):
    s[a,b,p] >= 0   share of pair (a, b) on path p
    m_e >= 0        largest share of one pair on bundle e (h > 0 only)
    u >= 0          utilisation of the busiest bundle
    pair.split        sum_p s[a,b,p] = 1                                   every pair
    bundle.capacity   sum_{(a,b,p) uses e} D_ab s[a,b,p] + h m_e <= c_e u   every bundle
    bundle.hedge      s[a,b,p] <= m_e                       every path p and bundle e on p
    minimise u.
The hedge is Jupiter's: if any one pair sends up to h Gb/s more than its forecast, split the same
way, every bundle still carries at most c_e u. u <= 1 means the forecast (and the surge) fits.
The capacity rows are scaled by 1 / c_e in HiGHS.

Column generation (``solver``). A pair has up to n - 2 transit paths: the full LP has about n^3
columns (16.7 million at 256 blocks), while an optimal split uses few. The restricted master
starts with every direct path and ``INITIAL_TRANSIT_HOT`` transit paths for each pair without
circuits or without room on them at the hose bound, those whose two bundles have the most room;
each round solves the master and prices the missing transit paths with its duals (``columns``):
with y_e >= 0 the dual of bundle e's capacity row (per unit of c_e u, so w_e = y_e / c_e per
Gb/s) and sigma_ab that of pair.split, the path a -> t -> b, which has no hedge row yet, has the
reduced cost
    D_ab (w_at + w_tb) - sigma_ab,
and enters when that is negative. The loop stops when no path enters or the certified u meets the
lower bound, or at the deadline with the best splits so far (FEASIBLE).

Bounds. The u reported is certified: recomputed from the splits (``utilisation``), not read from
the LP. Two lower bounds on the optimal u hold it in place:
    hose       what block a sends leaves on a's bundles (sum_v c_av x_av), what b gets arrives
               on b's, and every unit crosses one bundle, two without a direct circuit, on
               bundles of sum_e c_e in all (``hose_bound``);
    duality    any y >= 0, and z >= 0 on the hedge rows with sum_{p on e} z_pe <= (h / c_e) y_e,
               give sigma_ab = min over ALL paths p of (a, b) of
                   D_ab sum_{e on p} w_e + sum_{e on p} z_pe      (z = 0 off the master),
               and u >= sum_ab sigma_ab / max(1, sum_e y_e) (weak duality; the max(1, .) keeps
               the dual feasible when y is not normalised). Each master's duals, repaired to
               these conditions, give one, so the bound stays valid when the loop stops early
               or the LP solution is inexact.
OPTIMAL means u - bound <= ``RELATIVE_GAP_TOL`` u, or no path prices out.

Units: Gb/s throughout; u is a fraction of the bundle's capacity.
"""

from __future__ import annotations

from models.ocs_te.data import Splits, TeProblem, TeResult, bundle_loads, hose_bound, utilisation
from models.ocs_te.lp import CONSTRAINTS, TeMaster
from models.ocs_te.solver import build, solve

__all__ = [
    "CONSTRAINTS",
    "Splits",
    "TeMaster",
    "TeProblem",
    "TeResult",
    "build",
    "bundle_loads",
    "hose_bound",
    "solve",
    "utilisation",
]

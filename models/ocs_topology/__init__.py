r"""OCS topology engineering: the circuits between aggregation blocks (MILP, PuLP with HiGHS).

Blocks i = 0..n-1 (each a Clos of GPUs) have U_i uplinks into a layer of optical circuit switches.
A circuit joins two blocks directly and carries c Gb/s each way. Choose the logical topology x
(circuits between each pair of blocks) that maximises the scale theta at which the block demand
matrix D (n x n, D >= 0; uniform D_ij = 1 by default) is routable, all pairs at once, over direct
circuits and one-transit paths i -> k -> j (or direct circuits only, ``transit = False``).

Units: theta is a dimensionless fraction of ideal. D may come in any unit (bytes, flows, Gb/s);
the model first scales it so that the busiest block, relative to what it can inject, sends or
receives at exactly its injection rate I_i (Gb/s; ``injection_gbps``, by default c U_i):
    R_i = sum_j D_ij, C_i = sum_j D_ji (the diagonal D_ii, traffic that stays inside block i,
    counts here and nowhere else: it uses no circuit),
    D^ = k D with k = min_i I_i / max(R_i, C_i)   (over blocks with traffic),
and every theta below is the scale of D^ (off its diagonal). So theta = 1 means the demand is
carried at the full rate of its busiest block, theta = 0.5 at half of it; D and 1e6 D give the
same theta. When every GPU of a block sends and receives alike (permutations, shifts) and I_i is
the GPUs' NIC bandwidth, theta is the simulator's fraction of ideal (it caps at 1, the NIC).

Spine granularity (``spines`` = S, direct paths only). A block is a leaf-spine pod; spine g of
every block is cabled to its own OCS devices, a pair's x circuits are spread floor / ceil over the
S spines (``models.ocs_spread``), and a leaf sprays a flow evenly over the spines that have a
circuit to the other block, each spine evenly over its circuits. The spine with the fewest
circuits sets the pace, so a pair's circuits carry only
    usable(x) = x                  if x < S   (one circuit on x of the spines),
              = S floor(x / S)     if x >= S,
circuits' worth of traffic, and without transit the model is theta <= c usable(x_ij) / D^_ij.
With x a multiple of S on every pair with demand every spine carries the same share: the leaf
and spine links never limit a leaf more than its NICs, and under spraying theta is exactly the
simulated fraction of ideal (capped at 1). For 0 < x < S a leaf's traffic to that block uses x
of its S uplinks only, which the block-level model does not see.

The path model (``build``; one family per ``add_*`` function):
    x[i,j] in Z+    circuits between i < j: one variable per unordered pair, so x is symmetric
    theta >= 0      throughput scale
    f[i,j] >= 0     flow i -> j on direct circuits, every pair with D_ij > 0
    t[i,k,j] >= 0   flow i -> k -> j, every such pair and every k not in {i, j} (with transit)
    demand.coverage   f[i,j] + sum_k t[i,k,j] >= theta D_ij
    edge.capacity     f[a,b] + sum_j t[a,b,j] + sum_i t[i,a,b] <= c x[a,b]   every directed a != b
    block.degree      sum_j x[i,j] <= U_i
    maximise theta.
It is exact and has n^3 transit columns, so it is built only up to ``FULL_MODEL_MAX_TRANSIT`` of
them (n <= 28 for dense demand). A version restricted to 4 intermediates per pair was tried at
n = 64: HiGHS found no incumbent above theta = 0 in 40 s, so large instances use the parts below.

Bounds. ``Topology.bound`` is a proven upper bound on theta over *all* integer topologies, the least
of (w = max(D, D^T); R_i, C_i the row and column sums of D):
    hose        c U_i / max(R_i, C_i): i's traffic, and transit through i, uses i's uplinks.
    LP          the LP relaxation (x continuous). For symmetric D it equals the hose bound
                min_i c U_i / R_i, attained by the direct-only x = theta D / c. Otherwise column
                generation; its LP dual is min sum_i U_i lam_i over pi, mu, lam >= 0 with
                sum D_ij mu_ij >= 1, mu_ij <= pi_ij, mu_ij <= pi_ik + pi_kj and
                c (pi_ab + pi_ba) <= lam_a + lam_b, so *any* pi >= 0 certifies (Farley's bound)
                    theta_LP <= sum_i U_i lam_i / sum_ij D_ij d_ij(pi),
                d_ij(pi) = min(pi_ij, min_k pi_ik + pi_kj), lam raised until the x rows hold.
                It is computed from every restricted master's duals, so it stays valid when the
                loop stops early.
    integer     total capacity: every routed unit uses one edge, a transit unit one more, and a
    capacity    pair's direct flow is at most c x_ij, so
                    theta sum D + sum_{i != j} (theta D_ij - c x_ij)^+ <= c sum_i U_i.
                Block i's own best x (sum_j x_ij <= U_i) lower-bounds its pairs' deficits, out and
                in, so the left side is at least theta sum D + 1/2 sum_i (theta (R_i + C_i) -
                best_i(theta)), best_i = max sum_j min(theta D_ij, c x_j) + min(theta D_ji, c x_j)
                (a greedy over unit circuits). The left side grows with theta: bisection. It sees
                integrality: uniform demand, n = 64, U = 128 gives 2.0161 where the LP gives 2.0317.
    MILP        the path MILP's proven bound, when it is built.

Topologies (``solve``): candidates, each evaluated with x fixed, the best kept:
    mesh          ``uniform_mesh``;
    proportional  for alpha in ``ALPHAS``: the exact no-transit optimum for the weights w^alpha,
                  i.e. the largest theta with sum_j ceil(theta w_ij^alpha / c) <= U_i (monotone
                  in theta: a binary search over the values c k / w^alpha), then free uplinks
                  filled one circuit at a time to the pair with the lowest c x_ij / w_ij^alpha.
                  alpha = 1 is the integer counterpart of the LP relaxation's x = theta w / c
                  (symmetric D); smaller alpha leaves capacity for transit, which concentrated
                  demand needs (a full matching of 10x pairs at n = 64: 1.610 at alpha = 1/4 or
                  1/2, 1.000 at 1; the mesh gives 1.585);
    rounding      (asymmetric D) the LP relaxation's x rounded the same way;
    circulant     cyclic instances (equal U; D_ij depends on (j - i) mod n only, e.g. uniform):
                  the circulant MILP, exact over circulant x_ij = y_{(j-i) mod n}. The path
                  model is invariant under i -> i + 1 mod n, so averaging a solution over the
                  rotations gives an invariant one: flows per offset, n^2 columns instead of n^3
                  (``build_circulant``). Large cyclic instances use only circulant candidates;
    path MILP     when built, with a MIP start from the best candidate.
Without transit, the no-transit optimum above (alpha = 1, levels of usable(x) with spines) is
exact: no MILP is needed. The uniform mesh is evaluated under the same model and kept if it is
better (it cannot be: it is feasible; the check keeps the guarantee whatever the construction),
and its theta is reported (``Topology.mesh_theta``).

Evaluation with x fixed (``evaluate``, ``throughput_scale``), an LP: the closed form
min c usable(x_ij) / D^_ij without transit (usable(x) = x with S = 1); the quotient LP when x and D are both circulant; otherwise
column generation over all n^3 paths, priced vectorised with numpy, the restricted master solved
by HiGHS's interior point method without crossover. Its central duals avoid the degenerate stalling
of simplex duals on this max-min LP (simplex column generation on the mesh sat at theta = 2.0 for
500 rounds); a round prices in only the columns within a factor ``PRICE_BAND`` of the worst
violation. For scale: the complete LP at n = 64 (250k transit columns) takes 40-110 s with HiGHS
IPM, 16 s with PDLP, and did not finish in minutes with simplex; column generation converges in
1-4 s on most topologies and in about 10 s on the mesh under a full matching. The theta returned
is *certified achievable*: the master's flows, scaled to fit every capacity. The loop stops when
it is within ``LP_RELATIVE_TOL`` of the fixed-x Farley bound (``Topology.theta_upper``), or at a
deadline. Candidates are compared on a short evaluation (stopped once a round raises theta by less
than ``STALL_TOL`` with the gap below ``STALL_GAP``); the winner is evaluated to the tolerance
with the time left.

Physical realisability (``even_ports_per_device`` = p, even): with m devices and p ports per block
on each, every integer x with sum_j x_ij <= m p is realisable. Pad x to an (m p)-regular multigraph
(self-loops, i.e. dark port pairs, for even deficits; dummy circuits between blocks with odd
deficits, an even number of them); by Petersen's 2-factor theorem it splits into m p / 2
two-factors, and each device takes p / 2 of them, which uses exactly p ports of every block. So the
degree bound U_i = m p is all this model needs; the circuit assignment is a separate model.
"""

from __future__ import annotations

from models.ocs_topology.bounds import (
    hose_bound,
    integer_capacity_bound,
)
from models.ocs_topology.constructions import (
    fill_levels,
    no_transit_optimum,
    proportional,
    round_with_degrees,
    uniform_mesh,
)
from models.ocs_topology.data import (
    ALPHAS,
    BISECTION_TOL,
    FULL_MODEL_MAX_TRANSIT,
    INITIAL_TRANSIT,
    INTEGRALITY_TOL,
    LP_RELATIVE_TOL,
    LP_TIME_SHARE,
    MILP_TIME_SHARE,
    NEW_TRANSIT_PER_PAIR,
    OPTIMALITY_TOL,
    PRICE_BAND,
    REDUCED_COST_TOL,
    SELECTION_TIME_SHARE,
    SELECTION_TIME_SHARE_WITHOUT_MILP,
    STALL_GAP,
    STALL_TOL,
    Topology,
    TopologyProblem,
    circuit_matrix,
    circuits_needed,
    circuits_of,
    demand_matrix,
    demand_scale,
    is_cyclic,
    normalised_demand,
    off_diagonal,
    pair_weight,
    usable_circuits,
)
from models.ocs_topology.evaluation import (
    Evaluation,
    evaluate,
    throughput_scale,
)
from models.ocs_topology.lp import (
    PathLp,
    Routing,
    path_lp,
)
from models.ocs_topology.model import (
    CONSTRAINTS,
    BuiltTopology,
    CirculantVars,
    Instance,
    MilpOutcome,
    PathVars,
    add_block_degree,
    add_circulant_capacity,
    add_circulant_degree,
    add_circulant_demand,
    add_demand_coverage,
    add_edge_capacity,
    add_variables,
    build,
    build_circulant,
    build_path,
    circulant_matrix,
    lp_name,
    run_milp,
)
from models.ocs_topology.solver import (
    candidates,
    solve,
)

__all__ = [
    "ALPHAS",
    "BISECTION_TOL",
    "BuiltTopology",
    "CONSTRAINTS",
    "CirculantVars",
    "Evaluation",
    "FULL_MODEL_MAX_TRANSIT",
    "INITIAL_TRANSIT",
    "INTEGRALITY_TOL",
    "Instance",
    "LP_RELATIVE_TOL",
    "LP_TIME_SHARE",
    "MILP_TIME_SHARE",
    "MilpOutcome",
    "NEW_TRANSIT_PER_PAIR",
    "OPTIMALITY_TOL",
    "PRICE_BAND",
    "PathLp",
    "PathVars",
    "REDUCED_COST_TOL",
    "Routing",
    "SELECTION_TIME_SHARE",
    "SELECTION_TIME_SHARE_WITHOUT_MILP",
    "STALL_GAP",
    "STALL_TOL",
    "Topology",
    "TopologyProblem",
    "add_block_degree",
    "add_circulant_capacity",
    "add_circulant_degree",
    "add_circulant_demand",
    "add_demand_coverage",
    "add_edge_capacity",
    "add_variables",
    "build",
    "build_circulant",
    "build_path",
    "candidates",
    "circuit_matrix",
    "circuits_needed",
    "circuits_of",
    "circulant_matrix",
    "demand_matrix",
    "demand_scale",
    "evaluate",
    "fill_levels",
    "hose_bound",
    "integer_capacity_bound",
    "is_cyclic",
    "lp_name",
    "no_transit_optimum",
    "normalised_demand",
    "off_diagonal",
    "pair_weight",
    "path_lp",
    "proportional",
    "round_with_degrees",
    "run_milp",
    "solve",
    "throughput_scale",
    "uniform_mesh",
    "usable_circuits",
]

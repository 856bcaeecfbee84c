r"""OCS circuit assignment: realise a logical topology on optical circuit switches (CP-SAT).

Aggregation blocks b = 0..n-1 reach optical circuit switches (OCS) o = 0..m-1 through fixed
cabling: block b has P[b,o] ports on OCS o. A logical topology x (symmetric, zero diagonal,
non-negative integers; ``circuits`` lists x_ij > 0 with i < j) asks for x_ij circuits between
blocks i and j. An OCS is a crossbar: any pairing of its ports is one configuration, so a circuit
between i and j through o takes one port of i and one port of j on o, and counting is enough.

Data: P[b,o]; x_ij; optionally a current assignment y0[i,j,o]; failed OCS and failed blocks.
Live: an OCS that has not failed; a pair (i,j) whose two blocks have not failed.

Variables (only for live pairs with x_ij > 0 and live OCS with a non-empty domain):
    y[i,j,o] in [0, min(x_ij, P[i,o], P[j,o])]   circuits between i and j through OCS o
    e[i,j,o] in [0, ub(y) - y0]                  circuits added where y0 > 0:  e >= y - y0

Constraints (one family per ``add_*`` function):
    pair.realisation   exact:       sum_o y[i,j,o] = x_ij
                       best effort: sum_o y[i,j,o] <= x_ij   (any failure, or ``best_effort``)
    port.capacity      forall b, o:  sum_{j != b} y[min(b,j), max(b,j), o] <= P[b,o]
                       (written only where the variables' bounds could exceed P[b,o])
    circuit.keep       y[i,j,o] >= y0[i,j,o] on live OCS and pairs   (``keep_surviving`` only)
    failures           y = 0 on failed OCS and blocks: those variables are never created.

Churn: R = sum y (circuits realised), S0 = sum y0 (all of y0, also on failed devices),
added A = sum max(0, y - y0) = sum_{y0 = 0} y + sum_{y0 > 0} e, removed = S0 - R + A, and the
churn sum |y - y0| = removed + added = S0 - R + 2A.

Objective:
    exact:                    none (feasibility); with ``min_churn`` minimise A (R = X is fixed)
    best effort:              maximise R
    best effort + min_churn:  minimise A - W R with W = X + 1, X = sum of x_ij on live pairs.
                              Since 0 <= A <= R <= X, one more circuit realised always outweighs
                              any change in A: the single weighted solve is lexicographic
                              (max R, then min churn).

Switchable extras (never change the optimum; tests check it):
    symmetry breaking  live OCS with identical port columns are interchangeable when y0 plays no
                       part (no ``min_churn``, no ``keep_surviving``): consecutive devices of a
                       class are ordered lexicographically on the circuits of the first pairs.
    hint               a constructive start (``starting_assignment``): without y0 the
                       2-factor construction below when it applies; else y0 kept where still
                       valid, then each missing circuit placed where two free ports meet, else
                       by the cheapest shortest ejection chain (put v-w on an OCS where one end
                       has a port, eject a circuit of the full end, re-place that one, ...),
                       else by a Kempe-style alternating trail between two OCS (never stuck
                       when both OCS give every block the same ports).

Solve: CP-SAT first checks the start with every variable fixed to it. It is the answer, OPTIMAL,
when the model has no objective or the start reaches a floor (``objective_floor``: R <= R* from
pair domains and per-block port deficits, A >= R - S_v); otherwise the full search runs, and if
it holds no solution when the time is up (presolve alone takes seconds at 100k variables) the
checked start comes back FEASIBLE.

Theory. If every OCS o offers every block (with circuits) at least 2 k_o ports, K = sum_o k_o,
then any x with max_b sum_j x_bj <= 2K is realisable (Petersen's 2-factor theorem): complete x to
a 2K-regular multigraph (a dummy edge between blocks of odd deficit, loops for the rest: unused
ports), orient it along Euler circuits (in = out = K everywhere), read the arcs as a K-regular
bipartite multigraph (tail, head), split that into K perfect matchings (Euler splitting while K
is even, one Hopcroft-Karp matching while K is odd); each matching is a 2-factor, which uses at
most 2 ports of each block, and OCS o takes k_o of them. ``realisable_by_theorem`` tests the
condition and ``two_factor_assignment`` builds the assignment. With odd ports it is an edge
colouring problem: a triangle with 1 port per block on each of 2 OCS meets every degree bound
and is infeasible (chromatic index 3).

The uniform mesh of identical blocks (``models.ocs_assignment.mesh``, ``factor_mesh``): K_n split
into units that use the same ports at every block (the circle method's perfect matchings for n
even, Walecki's Hamiltonian cycles for n odd), each unit taken q or q + 1 times, the copies
dealt round robin over the spines and packed onto each spine's devices. Exact, evenly spread
over the spines, and linear in the circuits: the placement of the mesh at a million GPUs.

Re-solve after failures. Let S = sum of y0 on live OCS and pairs (the surviving circuits) and
F = S0 - S. Every solution has churn = F + sum_live |y - y0| >= F + R - S, with equality iff
y >= y0 on every live entry. Hence: if keeping every surviving circuit still allows the maximum R
(``keep_surviving`` realises as much as the free model), then *every* lexicographic optimum keeps
all of them; otherwise every maximum-R solution moves one. Both happen (a 3-block example where
a moved circuit frees the ports a lost circuit needs is in the tests), so keeping is not imposed:
it is the hint, and ``keep_surviving`` is offered as a separate, non-disruptive policy. After a
*block* fails, R <= S (its circuits cannot be realised anywhere), keeping attains it, so the
re-solve removes exactly that block's circuits and adds none.
"""

from __future__ import annotations

from models.ocs_assignment.constructions import (
    CHAIN_SLACK,
    MAX_CHAIN_STATES,
    realisable_by_theorem,
    starting_assignment,
    theorem_factors,
    two_factor_assignment,
    variable_bounds,
)
from models.ocs_assignment.data import (
    Assignment,
    AssignmentProblem,
    Key,
    Pair,
    churn,
    circuits_from_matrix,
)
from models.ocs_assignment.mesh import (
    factor_mesh,
    hamiltonian_cycles,
    mesh_units,
    one_factors,
)
from models.ocs_assignment.model import (
    CONSTRAINTS,
    MAX_SYMMETRY_WEIGHT,
    AssignmentVars,
    BuildOptions,
    BuiltAssignment,
    add_device_symmetry_breaking,
    add_keep_surviving,
    add_port_capacity,
    add_realisation,
    add_variables,
    build,
    churn_terms,
    device_symmetry,
    hint_start,
    objective_floor,
    set_objective,
    symmetric_start,
)
from models.ocs_assignment.solver import (
    solve,
)
from models.ocs_assignment.validation import (
    check_problem,
    validate_assignment,
)

__all__ = [
    "Assignment",
    "AssignmentProblem",
    "AssignmentVars",
    "BuildOptions",
    "BuiltAssignment",
    "CHAIN_SLACK",
    "CONSTRAINTS",
    "Key",
    "MAX_CHAIN_STATES",
    "MAX_SYMMETRY_WEIGHT",
    "Pair",
    "add_device_symmetry_breaking",
    "add_keep_surviving",
    "add_port_capacity",
    "add_realisation",
    "add_variables",
    "build",
    "check_problem",
    "churn",
    "churn_terms",
    "circuits_from_matrix",
    "device_symmetry",
    "factor_mesh",
    "hamiltonian_cycles",
    "hint_start",
    "mesh_units",
    "objective_floor",
    "one_factors",
    "realisable_by_theorem",
    "set_objective",
    "solve",
    "starting_assignment",
    "symmetric_start",
    "theorem_factors",
    "two_factor_assignment",
    "validate_assignment",
    "variable_bounds",
]

r"""Folded-Clos fabric sizing (OR-Tools CP-SAT).

One model prices one *structure*: a NIC split into ``p`` planes and a Clos of ``T`` tiers
(levels 1 = leaf, 2 = spine/aggregation, 3 = core). Every plane is an identical, independent
fabric of ``E`` endpoints (one NIC port per GPU) at link speed ``s = nic / p``; the model sizes one
plane and multiplies it by ``p``. The switch model of each tier is a decision. The planner solves
one model per structure and takes the best (``planner.sizing``); the minimum over structures of
the models' proven bounds is the global lower bound.

Data: E endpoints per plane; for every tier t the candidate switches m with radix k_m (ports at
speed s), cost c_m, power w_m, latency l_m and, for co-packaged optics, the engine e_m behind its
ports; the leaf placements allowed (top of rack, middle or end of row); R endpoints per rack and
plane; for every link class c (0 = endpoint to leaf, t = tier t to tier t+1) its length tails per
placement (the share of links longer than each reach threshold r_j, from the floor plan) and its
cabling plans g (``models.cabling``: a medium per length band, with the module at each of its
pluggable ends, for one placement and one pair of end engines, with per-link capex a_gj (both
ends' modules and the fibre), power b_gj and a worst latency lat_g).

Variables (per plane):
    x[t,m] in {0,1}   tier t uses switch model m               sum_m x[t,m] = 1
    n[t]              switches at tier t
    d[t], u[t]        ports per switch facing down / up           u[T] = 0
    f[t], q[t]        switches above that each tier-t switch reaches, parallel links to each
    P, L              (T = 3) pods, leaves per pod
    y[pi] in {0,1}    leaves stand at placement pi                sum_pi y[pi] = 1
    z[c,g] in {0,1}   link class c is cabled by plan g            sum_g z[c,g] = 1
    N[c,pi,j]         links of class c longer than r_j at placement pi

Constraints (one family per ``add_*`` function):
    switch.port_budget    d[t] + u[t] <= sum_m k_m x[t,m]
    clos.coverage         E <= n[1] d[1]                     (T = 1: n[1] = 1, d[1] = E)
    clos.even_spread      u[t] = f[t] q[t]                   every switch: the same q[t] links to each
    clos.wiring           T=2: f[1] = n[2], d[2] = n[1] q[1]
                          T=3: f[1] = A, n[2] = P A, d[2] = L q[1], n[1] <= P L,
                               f[2] = C, n[3] = A C, d[3] = P q[2]
    tier.oversubscription d[t] den_t <= num_t u[t]           ratio num_t/den_t allowed at tier t
    path.hops             2T - 1 <= max hops  (2T - 2 when the top tier is an OCS layer, 2T - 1
                          again when its blocks route through a transit block)
    ocs.even_ports        top tier OCS: q[T-1] = 2k (each block has an even number of ports per device)
    ocs.spine_reach       top tier OCS routed with transit (T = 3): u[2] >= P - 1 (every spine
                          can hold a circuit to every other block, so a leaf may spray over all its
                          spines and no block pair depends on a subset of them)
    path.latency          sum_t (2 - [t = T]) sum_m l_m x[t,m] + 2 sum_c sum_g lat_g z[c,g] <= max ns
                          (with transit: the spine tier and the OCS tier once more, the top link
                          class twice more)
                          (lat_g: the plan's worst link, media electronics plus propagation)
    failure.single_switch for a protected tier t+1: f[t] (1 - phi) >= 1   (keep phi of the uplinks)
                          for a protected leaf tier: (p - 1) / p >= phi  (other planes carry on)
    layout.leaf_placement y[top_of_rack] => d[1] divides R (a leaf serves whole racks' share)
    plane.protocol        x[t,m] + x[t',m'] <= 1 when m and m' speak different protocols
                          (a plane is InfiniBand or Ethernet end to end; the caller keeps only
                          switches the NIC speaks)
    media.plan            z[c,g] <= y[pi_g];  z[c,g] <= sum_{m: e_m = e} x[t,m] for each end's engine
    media.length_tails    N[c,pi,j] = ceil(links[c] share_j)   (two integer inequalities)
    budget.power          p * power <= cap;  budget.capex   p * capex <= cap

Objective: minimise p * (capex + energy_usd_per_w * power), with optional weights, where capex and
power add switches (sum_m c_m n[t] x[t,m]) and links: class c under plan g pays
sum_j (N[c,pi,j-1] - N[c,pi,j]) a_gj (N[c,pi,-1] = links[c]), and the same with b_gj for power.
Ties: designs of equal objective are common (64 pods of 2 leaves cost what 4 pods of 32 do), and
a parallel search returns whichever it meets first. ``solve_canonical`` therefore fixes the
optimum and, in a second, single-worker (deterministic) search, minimises ``tie_break``: fewest parallel links
per switch pair, leaf tier first. The same instance always gives the same design, and the one
chosen spreads each switch's uplinks widest (most paths, least lost with one switch above).
Products of integer variables use ``AddMultiplicationEquality``; products of a count with a model
or plan choice are linearised with bounds taken from the data. Why the media sit inside this model
rather than in a MILP after it: which medium a link may take depends on the switch at each end
(co-packaged ports), and the switch's worth depends on the media it saves; ``models.cabling``
shows the per-class plans are exact, so this one model gives the joint optimum.
"""

from __future__ import annotations

from models.clos_sizing.constraints import (
    CONSTRAINTS,
    RELAXABLE,
    add_budgets,
    add_coverage,
    add_even_spread,
    add_failure_tolerance,
    add_hops,
    add_latency,
    add_leaf_placement,
    add_length_tails,
    add_media_plan,
    add_model_choice,
    add_ocs_even_ports,
    add_ocs_spine_reach,
    add_oversubscription,
    add_pins,
    add_port_budget,
    add_port_capacity_cuts,
    add_protocol,
    add_variables,
    add_wiring,
    binds,
    cost_and_power,
    min_fanout_for_failure,
    path_latency_ns,
    switch_hops,
    transit_blocks,
    var_upper_bound,
)
from models.clos_sizing.problem import (
    TOP_OF_RACK,
    BuiltModel,
    ClassCabling,
    ClosVars,
    Pins,
    Requirements,
    SizingProblem,
    SizingSolution,
    SwitchOption,
    TierSolution,
    class_cabling,
    engines_of,
    reach_thresholds,
)
from models.clos_sizing.solver import (
    MAX_WEIGHT_DENOMINATOR,
    SolveOptions,
    build,
    objective_coefficients,
    objective_usd,
    set_objective,
    solve,
    solve_canonical,
    tie_break,
)

__all__ = [
    "var_upper_bound",
    "BuiltModel",
    "CONSTRAINTS",
    "ClassCabling",
    "ClosVars",
    "MAX_WEIGHT_DENOMINATOR",
    "Pins",
    "RELAXABLE",
    "Requirements",
    "SizingProblem",
    "SizingSolution",
    "SolveOptions",
    "SwitchOption",
    "TOP_OF_RACK",
    "TierSolution",
    "add_budgets",
    "add_coverage",
    "add_even_spread",
    "add_failure_tolerance",
    "add_hops",
    "add_latency",
    "add_leaf_placement",
    "add_length_tails",
    "add_media_plan",
    "add_model_choice",
    "add_ocs_even_ports",
    "add_ocs_spine_reach",
    "add_oversubscription",
    "add_pins",
    "add_port_budget",
    "add_port_capacity_cuts",
    "add_protocol",
    "add_variables",
    "add_wiring",
    "binds",
    "build",
    "class_cabling",
    "cost_and_power",
    "engines_of",
    "min_fanout_for_failure",
    "objective_coefficients",
    "objective_usd",
    "path_latency_ns",
    "reach_thresholds",
    "set_objective",
    "solve",
    "solve_canonical",
    "switch_hops",
    "tie_break",
    "transit_blocks",
]

"""Clos sizing: the variables and the constraint families, one function each.

The formulation in full is the package docstring (``models.clos_sizing``).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction

from ortools.sat.python import cp_model

from models.cabling import (
    PortKind,
    band_counts,
)
from models.clos_sizing.problem import (
    TOP_OF_RACK,
    ClosVars,
    SizingProblem,
)
from models.hops import class_crossings, hops, tier_crossings
from models.scaling import usd_to_units, w_to_units


def _new_int(m: cp_model.CpModel, lb: int, ub: int, name: str) -> cp_model.IntVar:
    return m.new_int_var(lb, max(lb, ub), name)


def _product(
    m: cp_model.CpModel, a: cp_model.IntVar, b: cp_model.IntVar, ub: int, name: str
) -> cp_model.IntVar:
    z = _new_int(m, 0, ub, name)
    m.add_multiplication_equality(z, [a, b])
    return z


def var_upper_bound(v: cp_model.IntVar) -> int:
    """The upper end of an integer variable's domain (what linearised products are bounded by)."""
    domain = v.proto.domain  # a protobuf view: negative indices are not supported
    return int(domain[len(domain) - 1])


def _choice(v: ClosVars, t: int, values: Sequence[float | int]) -> cp_model.LinearExpr:
    """Linear expression of a per-model value at tier t."""
    return sum(val * v.x[t, i] for i, val in enumerate(values))  # type: ignore[return-value]


def add_variables(m: cp_model.CpModel, p: SizingProblem) -> ClosVars:
    """Create the decision variables with domains taken from the data."""
    T, E = p.tiers, p.endpoints
    kmax = max(o.radix for opts in p.switch_options for o in opts)
    x = {
        (t, i): m.new_bool_var(f"x[{t},{o.name}]")
        for t in range(1, T + 1)
        for i, o in enumerate(p.switch_options[t - 1])
    }
    n, d, u, f, q = {}, {}, {}, {}, {}
    for t in range(1, T + 1):
        kt = max(o.radix for o in p.switch_options[t - 1])
        n_ub = E if t == 1 else kmax if T == 2 else kmax * kmax
        n[t] = _new_int(m, 1, 1 if T == 1 else n_ub, f"n[{t}]")
        d[t] = _new_int(m, 1, kt, f"d[{t}]")
        u[t] = _new_int(m, 0 if t == T else 1, 0 if t == T else kt, f"u[{t}]")
        if t < T:
            f[t] = _new_int(m, 1, kmax, f"f[{t}]")
            q[t] = _new_int(m, 1, kt, f"q[{t}]")
    links = {
        t: _product(m, n[t], u[t], var_upper_bound(n[t]) * var_upper_bound(u[t]), f"links[{t}]")
        for t in range(1, T)
    }
    pods = _new_int(m, 1, 1 if T < 3 else kmax, "pods")
    leaves_per_pod = _new_int(m, 1, E if T < 3 else kmax, "leaves_per_pod")
    n_at = {
        (t, i): _count_at_choice(m, n[t], x[t, i], f"n[{t},{o.name}]")
        for t in range(1, T + 1)
        for i, o in enumerate(p.switch_options[t - 1])
    }
    placement = {pi: m.new_bool_var(f"y[{pi}]") for pi in p.placements}
    plan = {
        (c, g): m.new_bool_var(f"z[{c},{g}]")
        for c, cab in enumerate(p.cabling)
        for g in range(len(cab.plans))
    }
    longer = {
        (c, key, j): _new_int(m, 0, var_upper_bound(links[c]), f"N[{c},{key},{j}]")
        for c, cab in enumerate(p.cabling)
        if c > 0
        for key, tails in cab.tails.items()
        for j in range(len(tails.longer))
    }
    return ClosVars(x, n, d, u, f, q, links, n_at, pods, leaves_per_pod, placement, plan, longer)


def add_model_choice(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Each tier uses exactly one switch model.  forall t: sum_m x[t,m] = 1."""
    for t in range(1, p.tiers + 1):
        m.add_exactly_one(v.x[t, i] for i in range(len(p.switch_options[t - 1])))


def add_port_budget(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Ports used on a switch never exceed its radix.  forall t: d[t] + u[t] <= sum_m k_m x[t,m]."""
    for t in range(1, p.tiers + 1):
        radix = _choice(v, t, [o.radix for o in p.switch_options[t - 1]])
        m.add(v.d[t] + v.u[t] <= radix)


def add_coverage(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Leaves offer a port to every endpoint.  E <= n[1] d[1]; one tier: d[1] = E."""
    if p.tiers == 1:
        m.add(v.d[1] == p.endpoints)
        return
    cap = _product(
        m, v.n[1], v.d[1], var_upper_bound(v.n[1]) * var_upper_bound(v.d[1]), "leaf_ports"
    )
    m.add(cap >= p.endpoints)
    # The last leaf is the only one that may be partly empty: no leaf is wholly unused.
    m.add(cap - v.d[1] < p.endpoints)


def add_even_spread(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every switch sends the same number of links to each switch above it.  u[t] = f[t] q[t]."""
    for t in range(1, p.tiers):
        m.add_multiplication_equality(v.u[t], [v.f[t], v.q[t]])


def add_wiring(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Who connects to whom, and the down ports that uses above.

    T=2: f[1] = n[2], d[2] = n[1] q[1].
    T=3: n[2] = P f[1], d[2] = L q[1], n[1] <= P L, n[3] = f[1] f[2], d[3] = P q[2].
    """
    if p.tiers == 2:
        m.add(v.f[1] == v.n[2])
        m.add_multiplication_equality(v.d[2], [v.n[1], v.q[1]])
    elif p.tiers == 3:
        m.add_multiplication_equality(v.n[2], [v.pods, v.f[1]])
        m.add_multiplication_equality(v.d[2], [v.leaves_per_pod, v.q[1]])
        pod_room = _product(
            m,
            v.pods,
            v.leaves_per_pod,
            var_upper_bound(v.pods) * var_upper_bound(v.leaves_per_pod),
            "pod_room",
        )
        m.add(v.n[1] <= pod_room)
        # No pod is wholly empty.
        m.add(pod_room - v.leaves_per_pod < v.n[1])
        m.add_multiplication_equality(v.n[3], [v.f[1], v.f[2]])
        m.add_multiplication_equality(v.d[3], [v.pods, v.q[2]])


def add_oversubscription(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Down:up bandwidth at each tier within its limit.  d[t] den_t <= num_t u[t]."""
    for t in range(1, p.tiers):
        ratio = p.requirements.max_oversubscription[t - 1]
        m.add(v.d[t] * ratio.denominator <= ratio.numerator * v.u[t])


def transit_blocks(p: SizingProblem) -> int:
    """Transit blocks on the longest path.

    1 when the blocks of an OCS top tier route with transit (``ocs_transit``), else 0.
    """
    return int(p.top_ocs and p.ocs_transit)


def switch_hops(p: SizingProblem) -> int:
    """Switches on the longest path of a structure: ``hops(T, [top is OCS], transit blocks)``."""
    return hops(p.tiers, int(p.top_ocs), transit_blocks(p))


def add_hops(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """The longest path crosses few enough switches.  switch_hops <= max hops."""
    limit = p.requirements.max_switch_hops
    if limit is not None and switch_hops(p) > limit:
        m.add_bool_or([])  # an empty clause: this structure cannot meet the limit


def add_ocs_even_ports(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every block has an even number of ports on each OCS device.  q[T-1] = 2 k.

    With p = 2k ports per device, any block-level topology with at most (devices x p) circuits
    per block can be realised on the devices (Petersen's 2-factor theorem), which is what lets
    the circuits be engineered after sizing without losing a design.
    """
    if p.top_ocs and p.tiers >= 2:
        half = _new_int(m, 1, var_upper_bound(v.q[p.tiers - 1]) // 2, "ocs_half_ports")
        m.add(v.q[p.tiers - 1] == 2 * half)


def add_ocs_spine_reach(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every spine of a block can hold a circuit to every other block.  u[2] >= P - 1.

    Spine g of every block is cabled to its own OCS devices, so a spine's circuits join it only
    to the spines g of other blocks: the layer is S = f[1] slices, one per spine. A leaf sprays
    a flow over all its spines (each is one of its equal uplinks); slice g then carries 1/S of
    every block pair's traffic, over its own circuits, directly or through a transit block's
    spine g. With u[2] >= P - 1 every slice can join every pair directly, and the same slice
    topology on every spine keeps the slices identical (``planner.families.ocs_direct.wcmp``).
    Without it, a slice joins at most u[2] of the P - 1 other blocks: on uniform demand at least
    (P - 1 - u[2]) / (P - 1) of a slice's traffic takes two circuits, and a permutation that
    sends a leaf's flows to blocks its spines do not reach overloads them.
    """
    if p.top_ocs and p.ocs_transit and p.tiers == 3:
        m.add(v.u[2] >= v.pods - 1)


def path_latency_ns(p: SizingProblem, v: ClosVars) -> cp_model.LinearExpr:
    """One-way latency of the longest path.

    Switches up and down, media electronics each way, and with transit (``transit_blocks``) the
    transit block's spine and its two circuits.
    """
    total: cp_model.LinearExpr = 0  # type: ignore[assignment]
    transit = transit_blocks(p)
    for t in range(1, p.tiers + 1):
        crossings = tier_crossings(p.tiers, t, transit)
        total += crossings * _choice(v, t, [o.latency_ns for o in p.switch_options[t - 1]])
    for c, cab in enumerate(p.cabling):
        crossings = class_crossings(p.tiers, c, transit)
        total += crossings * sum(plan.latency_ns * v.plan[c, g] for g, plan in enumerate(cab.plans))
    return total


def add_latency(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Worst one-way latency within its limit.  latency(x, c) <= max ns."""
    if p.requirements.max_latency_ns is not None:
        m.add(path_latency_ns(p, v) <= p.requirements.max_latency_ns)


def min_fanout_for_failure(phi: Fraction) -> int | None:
    """Smallest n with (n - 1)/n >= phi, or None when no n reaches it (phi >= 1)."""
    if phi >= 1:
        return None
    if phi <= 0:
        return 1
    return math.ceil(1 / (1 - phi))


def add_failure_tolerance(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Losing any one switch of a protected tier leaves every switch below phi of its uplinks.

    protected tier t+1 > 1: f[t] >= ceil(1 / (1 - phi)); protected leaf: (p - 1)/p >= phi.
    """
    phi = p.requirements.min_fraction_after_failure
    if phi is None:
        return
    for level in sorted(p.requirements.protected_tiers):
        if level == 1:
            if Fraction(p.planes - 1, p.planes) < phi:
                m.add_bool_or([])
        elif level <= p.tiers:
            need = min_fanout_for_failure(phi)
            if need is None:
                m.add_bool_or([])
            else:
                m.add(v.f[level - 1] >= need)


def add_leaf_placement(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Leaves stand at one placement; a top-of-rack leaf serves a divisor of a rack's endpoints.

    sum_pi y[pi] = 1;  y[top_of_rack] => d[1] in divisors(R).
    """
    m.add_exactly_one(v.placement.values())
    if TOP_OF_RACK in v.placement:
        R = p.endpoints_per_rack
        divisors = [k for k in range(1, R + 1) if R % k == 0]
        m.add_linear_expression_in_domain(
            v.d[1], cp_model.Domain.from_values(divisors)
        ).only_enforce_if(v.placement[TOP_OF_RACK])


def add_protocol(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """A plane speaks one protocol: no two tiers use switches of different protocols.

    x[t,m] + x[t',m'] <= 1 for every t < t' and protocol(m) != protocol(m'), both non-empty.
    """
    for t in range(1, p.tiers + 1):
        for t2 in range(t + 1, p.tiers + 1):
            for i, a in enumerate(p.switch_options[t - 1]):
                for j, b in enumerate(p.switch_options[t2 - 1]):
                    if a.protocol and b.protocol and a.protocol != b.protocol:
                        m.add_bool_or([v.x[t, i].Not(), v.x[t2, j].Not()])


def _engine_choice(p: SizingProblem, v: ClosVars, t: int, engine: PortKind) -> cp_model.LinearExpr:
    """1 when tier t's switch model has this engine (None: pluggable ports), else 0."""
    return _choice(v, t, [int(o.engine == engine) for o in p.switch_options[t - 1]])


def add_media_plan(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Every link class takes one plan, made for the chosen placement and the ends' switches.

    sum_g z[c,g] = 1;  z[c,g] <= y[pi_g];  z[c,g] <= [engine of tier c = lower_g] (c > 0),
    z[c,g] <= [engine of tier c+1 = upper_g].
    """
    for c, cab in enumerate(p.cabling):
        m.add_exactly_one(v.plan[c, g] for g in range(len(cab.plans)))
        for g, plan in enumerate(cab.plans):
            z = v.plan[c, g]
            if plan.placement is not None:
                if plan.placement in v.placement:
                    m.add_implication(z, v.placement[plan.placement])
                else:
                    m.add(z == 0)
            if c > 0:
                m.add(z <= _engine_choice(p, v, c, plan.lower_engine))
            m.add(z <= _engine_choice(p, v, c + 1, plan.upper_engine))


def add_length_tails(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Links longer than each threshold, rounded up: N = ceil(links[c] w_j / W).

    W N >= w_j links[c];  W N <= w_j links[c] + W - 1.
    """
    for (c, key, j), longer in v.longer.items():
        tails = p.cabling[c].tails[key]
        g = math.gcd(tails.longer[j], tails.total)
        w, total = tails.longer[j] // g, tails.total // g
        m.add(total * longer >= w * v.links[c])
        m.add(total * longer <= w * v.links[c] + total - 1)


def _count_at_choice(
    m: cp_model.CpModel, count: cp_model.IntVar, chosen: cp_model.LinearExpr, name: str
) -> cp_model.IntVar:
    """Z = count * chosen for a 0/1 expression, linearised with the count's own upper bound."""
    z = _new_int(m, 0, var_upper_bound(count), name)
    m.add(z <= count)
    m.add(z <= var_upper_bound(count) * chosen)
    m.add(z >= count - var_upper_bound(count) * (1 - chosen))
    return z


def _band_count_exprs(
    v: ClosVars, c: int, key: str | None, bands: int
) -> list[cp_model.LinearExpr]:
    """Links per band of class c > 0 at a placement: N[j-1] - N[j], with N[-1] = links[c]."""
    above = [v.links[c]] + [v.longer[c, key, j] for j in range(bands)]
    return [above[j] - above[j + 1] for j in range(bands)]


def cost_and_power(
    m: cp_model.CpModel, p: SizingProblem, v: ClosVars
) -> tuple[cp_model.LinearExpr, cp_model.LinearExpr]:
    """Capex and power of one plane, in CP-SAT units, as linear expressions."""
    capex: cp_model.LinearExpr = 0  # type: ignore[assignment]
    power: cp_model.LinearExpr = 0  # type: ignore[assignment]
    for t in range(1, p.tiers + 1):
        for i, o in enumerate(p.switch_options[t - 1]):
            capex += usd_to_units(o.cost_usd) * v.n_at[t, i]
            power += w_to_units(o.power_w) * v.n_at[t, i]
    for c, cab in enumerate(p.cabling):
        for g, plan in enumerate(cab.plans):
            z = v.plan[c, g]
            unit_capex = [0 if u is None else usd_to_units(u.capex_usd) for u in plan.bands]
            unit_power = [0 if u is None else w_to_units(u.power_w) for u in plan.bands]
            if c == 0:
                # E endpoint links: the band counts are numbers, the plan's price a constant.
                counts = band_counts(cab.tails_at(g), p.endpoints)
                capex += sum(n * a for n, a in zip(counts, unit_capex, strict=True)) * z
                power += sum(n * b for n, b in zip(counts, unit_power, strict=True)) * z
                continue
            exprs = _band_count_exprs(v, c, plan.placement, len(plan.bands))
            bound = var_upper_bound(v.links[c])
            for values, name in ((unit_capex, "capex"), (unit_power, "power")):
                total = sum(e * a for e, a in zip(exprs, values, strict=True) if a)
                ub = bound * max(values, default=0)
                amount = _new_int(m, 0, ub, f"{name}[{c},{g}]")
                m.add(amount == total)
                paid = _count_at_choice(m, amount, z, f"{name}_paid[{c},{g}]")
                if name == "capex":
                    capex += paid
                else:
                    power += paid
    return capex, power


def add_budgets(
    m: cp_model.CpModel,
    p: SizingProblem,
    v: ClosVars,
    capex: cp_model.LinearExpr,
    power: cp_model.LinearExpr,
) -> None:
    """Power and capex caps over all planes.  p power <= cap_w; p capex <= cap_usd."""
    r = p.requirements
    if r.max_power_w is not None:
        m.add(p.planes * power <= w_to_units(r.max_power_w))
    if r.max_capex_usd is not None:
        m.add(p.planes * capex <= usd_to_units(r.max_capex_usd))


def add_pins(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Decisions the user fixed.  x[t, pinned] = 1, n[t] = pinned, ..."""
    pins = p.pins
    for t, name in enumerate(pins.switch_models, start=1):
        if name is not None and t <= p.tiers:
            names = [o.name for o in p.switch_options[t - 1]]
            if name in names:
                m.add(v.x[t, names.index(name)] == 1)
            else:
                m.add_bool_or([])
    for values, var in (
        (pins.switches, v.n),
        (pins.downlinks, v.d),
        (pins.uplinks, v.u),
        (pins.parallel_links, v.q),
    ):
        for t, value in enumerate(values, start=1):
            if value is None:
                continue
            if t in var:
                m.add(var[t] == value)
            else:
                m.add_bool_or([])
    if pins.pods is not None:
        m.add(v.pods == pins.pods)
    if pins.leaf_placement is not None:
        if pins.leaf_placement in v.placement:
            m.add(v.placement[pins.leaf_placement] == 1)
        else:
            m.add_bool_or([])


def add_port_capacity_cuts(m: cp_model.CpModel, p: SizingProblem, v: ClosVars) -> None:
    """Valid inequalities that give the LP relaxation the port arithmetic (switchable).

    links[1] >= E / r_1;  links[2] >= E / (r_1 r_2);
    sum_m k_m n[t,m] >= ports used at tier t  (leaf: E + links[1]; middle: links[t-1] + links[t];
    top: links[T-1]). They follow from the constraints above and cut off none of their solutions.
    """
    T, E = p.tiers, p.endpoints
    ratios = p.requirements.max_oversubscription
    need = Fraction(E)
    for t in range(1, T):
        need /= ratios[t - 1]
        m.add(v.links[t] >= math.ceil(need))
    for t in range(1, T + 1):
        capacity = sum(o.radix * v.n_at[t, i] for i, o in enumerate(p.switch_options[t - 1]))
        below = E if t == 1 else v.links[t - 1]
        above = v.links[t] if t < T else 0
        m.add(capacity >= below + above)


#: Constraint families, in the order they are added; each can be left out by name (what-if, and
#: finding which constraints conflict in an infeasible instance).
CONSTRAINTS: dict[str, Callable[[cp_model.CpModel, SizingProblem, ClosVars], None]] = {
    "switch.model_choice": add_model_choice,
    "switch.port_budget": add_port_budget,
    "clos.coverage": add_coverage,
    "clos.even_spread": add_even_spread,
    "clos.wiring": add_wiring,
    "tier.oversubscription": add_oversubscription,
    "path.hops": add_hops,
    "ocs.even_ports": add_ocs_even_ports,
    "ocs.spine_reach": add_ocs_spine_reach,
    "path.latency": add_latency,
    "failure.single_switch": add_failure_tolerance,
    "layout.leaf_placement": add_leaf_placement,
    "plane.protocol": add_protocol,
    "media.plan": add_media_plan,
    "media.length_tails": add_length_tails,
    "pins": add_pins,
    "cuts.port_capacity": add_port_capacity_cuts,
}

#: Families a user can relax; the structural ones define what a Clos is.
RELAXABLE = (
    "tier.oversubscription",
    "path.hops",
    "path.latency",
    "failure.single_switch",
    "budget.power",
    "budget.capex",
    "pins",
)


def binds(p: SizingProblem, family: str) -> bool:
    """Whether a relaxable family adds any constraint to the problem's model.

    When it adds none (no such limit, no pin), the model without it is the same model: relaxing
    it alone can never turn an infeasible structure feasible, so a diagnosis need not re-solve.
    """
    r, pins = p.requirements, p.pins
    if family == "tier.oversubscription":
        return p.tiers > 1
    if family == "path.hops":
        return r.max_switch_hops is not None and switch_hops(p) > r.max_switch_hops
    if family == "path.latency":
        return r.max_latency_ns is not None
    if family == "failure.single_switch":
        return r.min_fraction_after_failure is not None and any(
            level <= p.tiers for level in r.protected_tiers
        )
    if family == "budget.power":
        return r.max_power_w is not None
    if family == "budget.capex":
        return r.max_capex_usd is not None
    if family == "pins":
        per_tier = (pins.switches, pins.downlinks, pins.uplinks, pins.parallel_links)
        return (
            any(name is not None for name in pins.switch_models[: p.tiers])
            or any(value is not None for values in per_tier for value in values)
            or pins.pods is not None
            or pins.leaf_placement is not None
        )
    return True

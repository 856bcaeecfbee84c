"""The circuits of an OCS direct-connect design: engineer, assign, re-assign after a failure.

A direct-connect design (``family = "ocs_direct"``) sizes aggregation blocks (the pods of a
leaf-spine wiring) and a layer of OCS devices. Which blocks its circuits join is decided here,
after sizing, in two steps:

1. **Topology engineering** (``models.ocs_topology``): the number of circuits x_ab between every
   two blocks, within each block's uplinks, that maximises the throughput scale of the
   block-level demand: uniform by default, or aggregated from the instance's ``[verify]`` traffic.
   The model is told what the simulated fabric routes, so that its throughput is the simulated
   one. The fabric routes valley-free (leaf, spine, circuit, spine, leaf): a packet never turns
   at an intermediate block's spine, so the circuits are engineered for direct paths
   (``transit = False``; the model's one-transit variant is there for fabrics that route through
   a block). A leaf sprays over the spines of its block that reach the other block and each
   spine over its own circuits, so a pair's x circuits carry S floor(x / S) circuits' worth
   (x when x < S, S spines per block): the model counts exactly that (``spines``). The demand is
   scaled by what the blocks inject (their GPUs' NIC bandwidth in one plane), so the throughput
   scale is a fraction of ideal: under spraying, the simulated fraction of ideal of traffic in
   which every GPU sends and receives alike (``throughput_fraction``). The model's count holds
   for circuits spread evenly over the spines, so of the optimum, the best topology in whole
   bundles (x = S y, always spread evenly) and the uniform mesh, the best one whose placement
   is even is kept (the mesh in the last resort): never worse than the mesh under the model.
2. **Circuit assignment**: which device carries each circuit, every block having
   ``ports_per_device`` ports on every device. Sizing keeps that number even, so any topology
   within the uplinks can be realised (Petersen's 2-factor theorem). Spine g of every block is
   cabled to its own devices, and a leaf sprays over the spines that reach the other block, so
   each pair's circuits are first spread evenly over the spines (``models.ocs_spread``), then
   realised on each spine's devices by the 2-factor construction; when no even spread is found
   the whole layer is assigned at once (``models.ocs_assignment``, CP-SAT).

After a device fails, the assignment is solved again from the current one: every circuit that
did not use the device stays where it is, as many of the lost circuits as the free ports allow
are set up again, and the circuits changed are counted.

Time limits and scale. The blocks of a layer are identical, so the uniform mesh has a placement
of its own (``models.ocs_assignment.mesh``): K_n split into perfect matchings (Hamiltonian
cycles for an odd number of blocks), dealt round robin over the spines, exact and evenly spread
in O(circuits). It places the mesh of a layer too large for the generic route
(``MAX_GENERIC_MESH_CIRCUITS``: at a million GPUs that route took 40 s and found no even spread),
and it is the floor every other step falls back to: ``engineer`` takes a ``Deadline``, checked
inside the spread, the 2-factor construction and the whole-layer start, and when it passes the
circuits are the uniform mesh placed that way, with a note (``Engineered.cut``) saying what was
not done. The design is valid either way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import polars as pl

from models import ocs_assignment as oa
from models import ocs_spread as sp
from models.ocs_assignment.constructions import Tick
from models.status import Status
from planner.deadline import Deadline, DeadlineExpired, cut_note, watch
from planner.design import Design
from planner.families.ocs_direct.tables import CIRCUITS_SCHEMA as CIRCUITS_SCHEMA
from planner.families.ocs_direct.tables import OCS_SCHEMA as OCS_SCHEMA
from planner.families.ocs_direct.tables import ROUTING_WCMP
from planner.families.ocs_direct.tables import Circuit as Circuit
from planner.families.ocs_direct.tables import OcsLayer as OcsLayer
from planner.families.ocs_direct.tables import circuits_table as circuits_table
from planner.families.ocs_direct.tables import layer_of as layer_of
from planner.families.ocs_direct.tables import ocs_table as ocs_table


@dataclass(frozen=True)
class Engineered:
    """Circuits of one plane, with what the topology engineering proved about them."""

    circuits: tuple[Circuit, ...]
    theta: float
    """Throughput scale of the block demand on these circuits: direct paths, spine granularity,
    a dimensionless fraction of ideal (``throughput_fraction`` before capping at 1)."""
    bound: float
    """Upper bound on the throughput scale over every topology within the uplinks."""
    status: Status
    wall_s: float
    mesh_theta: float | None = None
    """The uniform mesh's throughput scale under the same model (engineered demand only)."""
    source: str = "mesh"
    """Which circuits were kept: ``engineered`` (the model's optimum), ``bundles`` (the optimum
    in whole bundles of one circuit per spine) or ``mesh`` (``engineer``)."""
    cut: tuple[str, ...] = ()
    """What the time limit cut, as design notes (``planner.deadline.cut_note``); empty when
    nothing was."""


@dataclass(frozen=True)
class Reconfiguration:
    """Circuits after a failure, and how many changed."""

    circuits: tuple[Circuit, ...]
    removed: int
    added: int
    requested: int
    realised: int
    wall_s: float


def block_of_gpus(design: Design) -> npt.NDArray[np.int64]:
    """The block (pod) of every GPU: its leaf's pod."""
    leaf = np.arange(design.gpus, dtype=np.int64) // design.tiers[0].downlinks
    return leaf // design.leaves_per_pod


def block_demand(design: Design, src: npt.ArrayLike, dst: npt.ArrayLike) -> npt.NDArray[np.float64]:
    """Block-level demand matrix of GPU flows: count of flows from block a to block b.

    The diagonal counts flows inside a block: they use no circuit, but they are part of what a
    block injects, which sets the scale of the throughput (``models.ocs_topology``, Units).
    """
    blocks = block_of_gpus(design)
    a = blocks[np.asarray(src, dtype=np.int64)]
    b = blocks[np.asarray(dst, dtype=np.int64)]
    n = design.pods
    return np.bincount(a * n + b, minlength=n * n).astype(np.float64).reshape(n, n)


def injection_gbps(design: Design) -> tuple[float, ...]:
    """What each block injects into one plane: its GPUs' NIC bandwidth per plane, in Gb/s.

    At the design's NIC speed (``link_speed_gbps``) whatever the block's uplink rate
    (``Design.block_speed_gbps``): a block's generation is its spines' optics, not its NICs.
    """
    gpus = np.bincount(block_of_gpus(design), minlength=design.pods)
    return tuple(float(g) * float(design.link_speed_gbps) for g in gpus)


def pair_totals(circuits: tuple[Circuit, ...]) -> tuple[tuple[int, int, int], ...]:
    """Circuits per block pair, (a, b, x_ab) with a < b, summed over devices."""
    pairs: dict[tuple[int, int], int] = {}
    for a, b, _, k in circuits:
        pairs[a, b] = pairs.get((a, b), 0) + k
    return tuple((a, b, k) for (a, b), k in sorted(pairs.items()))


def throughput_fraction(design: Design, demand: npt.NDArray[np.float64] | None = None) -> float:
    """The model's prediction of the simulated fraction of ideal of a demand on these circuits.

    The topology model's throughput scale with the design's circuits fixed (direct paths, the
    demand scaled by what the blocks inject), capped at 1 (the NICs), each pair counted at what
    a spray gets from where its circuits are (``sprayed_circuits``). With every pair spread
    evenly over the spines that is the model's usable(x), and under spraying the value is the
    simulator's fraction of ideal when every GPU sends and receives alike. With blocks of mixed
    generations (``Design.block_speed_gbps``) each pair's circuits count at the slower end's
    rate (``mixed_throughput_fraction``).
    """
    from models import ocs_topology as ot

    if demand is not None and not ot.off_diagonal(demand).any():
        return 1.0  # nothing crosses a circuit: the circuits do not limit it
    layer = layer_of(design)
    if design.block_speed_gbps:
        return mixed_throughput_fraction(design, demand)
    theta = ot.throughput_scale(
        layer.blocks,
        sprayed_circuits(layer, design.circuits),
        None if demand is None else tuple(tuple(float(v) for v in row) for row in demand),
        float(design.link_speed_gbps),
        transit=False,
        injection_gbps=injection_gbps(design),
    )
    return min(1.0, theta)


def mixed_throughput_fraction(
    design: Design, demand: npt.NDArray[np.float64] | None = None
) -> float:
    """``throughput_fraction`` with each pair's circuits at the slower end's rate.

    The topology model's closed form on direct paths, min over pairs with demand of
    c_ab worth_ab / D^_ab (``models.ocs_topology``, ``evaluate`` without transit), with
    c_ab = min(r_a, r_b) (``wcmp.circuit_rates_gbps``), worth_ab what a spray gets
    (``sprayed_circuits``) and D^ the demand scaled by what the blocks inject; capped at 1.
    """
    from models import ocs_topology as ot
    from planner.families.ocs_direct import wcmp

    layer = layer_of(design)
    raw = ot.demand_matrix(layer.blocks, None if demand is None else demand.tolist())
    if not ot.off_diagonal(raw).any():
        return 1.0
    d = ot.normalised_demand(raw, np.asarray(injection_gbps(design), dtype=np.float64))
    worth = ot.circuit_matrix(layer.blocks, sprayed_circuits(layer, design.circuits))
    rate = np.broadcast_to(wcmp.circuit_rates_gbps(design), worth.shape)
    wanted = d > 0
    if not wanted.any():
        return 0.0  # a block with traffic and nothing to inject it with
    return min(1.0, float((rate[wanted] * worth[wanted] / d[wanted]).min()))


def spine_counts(
    layer: OcsLayer, circuits: tuple[Circuit, ...]
) -> dict[tuple[int, int], list[int]]:
    """Circuits of every block pair on each spine (spine g owns devices g D .. g D + D - 1)."""
    per: dict[tuple[int, int], list[int]] = {}
    for a, b, o, k in circuits:
        per.setdefault((a, b), [0] * layer.spines)[o // layer.devices_per_spine] += k
    return per


def evenly_spread(layer: OcsLayer, circuits: tuple[Circuit, ...]) -> bool:
    """Whether every pair's circuits differ by at most one between any two spines."""
    return all(max(c) - min(c) <= 1 for c in spine_counts(layer, circuits).values())


def sprayed_circuits(
    layer: OcsLayer, circuits: tuple[Circuit, ...]
) -> tuple[tuple[int, int, int], ...]:
    """Circuits' worth a leaf's spray gets per block pair, (a, b, worth) with a < b.

    A leaf splits a flow evenly over the spines with a circuit to the other block and each spine
    over its circuits, so the spine with the fewest sets the pace: (spines used) x (fewest).
    """
    out = []
    for (a, b), counts in sorted(spine_counts(layer, circuits).items()):
        used = [k for k in counts if k > 0]
        if used:
            out.append((a, b, len(used) * min(used)))
    return tuple(out)


#: Longest time (s) one solve inside ``engineer`` is given when no deadline says otherwise.
ENGINEER_TIME_S = 30.0
#: Least time (s) handed to a solver that is started at all (CP-SAT refuses a zero limit).
MIN_SOLVE_S = 0.01
#: Largest uniform mesh (circuits per plane) placed by the generic route (spread over the spines,
#: the 2-factor construction per spine, the whole layer when no even spread is found); above it
#: the mesh is placed whole (``factor_circuits``). 526,592 circuits at a million GPUs took 40 s
#: that way and ended unevenly spread; 263,296 at half a million, 6 s.
MAX_GENERIC_MESH_CIRCUITS = 300_000
#: Relative tolerance when comparing two throughput scales of the same demand.
THETA_RTOL = 1e-9
#: What the circuits of each candidate topology are, in a note's words.
KEPT = {
    "engineered": "engineered optimum",
    "bundles": "optimum in whole bundles",
    "mesh": "uniform mesh",
}


def _seconds(deadline: Deadline, cap_s: float) -> float:
    """Time for one solve: what is left of ``deadline``, at most ``cap_s``, at least a sliver."""
    return max(MIN_SOLVE_S, min(cap_s, deadline.remaining_s()))


def factor_circuits(layer: OcsLayer) -> tuple[Circuit, ...] | None:
    """The uniform mesh placed whole (``models.ocs_assignment.factor_mesh``), sorted.

    Every pair gets floor or ceil of U / (n - 1) circuits, spread evenly over the spines. None
    when the construction does not apply (an odd number of blocks with an odd number of ports
    per device, which the sizing never produces).
    """
    placed = oa.factor_mesh(
        layer.blocks, layer.spines, layer.devices_per_spine, layer.ports_per_device
    )
    if placed is None:
        return None
    return tuple(zip(*(column.tolist() for column in placed.T), strict=True))


@dataclass(frozen=True)
class PlacedMesh:
    """The uniform mesh on the devices, and how it got there."""

    circuits: tuple[Circuit, ...]
    factor: bool
    """Placed whole by ``factor_circuits``: a balanced mesh, not always ``uniform_mesh``'s."""
    cut: tuple[str, ...] = ()


def place_mesh(
    layer: OcsLayer, mesh: tuple[tuple[int, int, int], ...], deadline: Deadline
) -> PlacedMesh:
    """The uniform mesh ``mesh`` on the devices, every pair spread evenly wherever possible.

    Up to ``MAX_GENERIC_MESH_CIRCUITS`` circuits by the generic route (``assign_spread``),
    within ``deadline``; above it, or when the deadline passes first (said in ``cut``), placed
    whole by ``factor_circuits``.
    """
    cut: tuple[str, ...] = ()
    if sum(k for *_, k in mesh) <= MAX_GENERIC_MESH_CIRCUITS:
        if not deadline.expired:
            try:
                placed = assign_spread(
                    layer, mesh, time_limit_s=_seconds(deadline, ENGINEER_TIME_S)
                )
                return PlacedMesh(placed.circuits, factor=False)
            except DeadlineExpired:
                pass
        cut = (
            cut_note(
                "the uniform mesh was not spread over the spines by the generic route; it is "
                "placed whole by the factor construction instead (a balanced mesh, as evenly "
                "spread)"
            ),
        )
    factor = factor_circuits(layer)
    if factor is None:  # no factor construction: the whole layer, as the generic route ends
        placed = assign(layer, mesh, time_limit_s=_seconds(deadline, ENGINEER_TIME_S))
        return PlacedMesh(placed.circuits, factor=False, cut=cut)
    return PlacedMesh(factor, factor=True, cut=cut)


def _theta(
    design: Design,
    layer: OcsLayer,
    circuits: tuple[Circuit, ...],
    demand: npt.NDArray[np.float64] | None,
) -> float:
    """The model's throughput scale of a demand (uniform: None) on evenly spread circuits."""
    from models import ocs_topology as ot

    return ot.throughput_scale(
        layer.blocks,
        pair_totals(circuits),
        None if demand is None else tuple(tuple(float(v) for v in row) for row in demand),
        float(design.link_speed_gbps),
        transit=False,
        spines=layer.spines,
        injection_gbps=injection_gbps(design),
    )


def engineer(
    design: Design,
    demand: npt.NDArray[np.float64] | None = None,
    *,
    time_limit_s: float = ENGINEER_TIME_S,
    deadline: Deadline | None = None,
) -> Engineered:
    """Circuits of one plane for a block demand (uniform when None): engineer, then assign.

    ``deadline`` (else ``time_limit_s`` from now) bounds the work; each solve gets what is left
    of it, at most ``time_limit_s``. When it passes, the steps not done are left out and the
    circuits are the uniform mesh (``place_mesh``), with ``cut`` saying so.
    """
    from models import ocs_topology as ot

    deadline = Deadline.after(time_limit_s) if deadline is None else deadline
    if design.routing == ROUTING_WCMP:
        return _engineer_wcmp(design, demand, deadline)
    if demand is not None and not ot.off_diagonal(demand).any():
        demand = None  # no traffic between blocks: nothing to engineer for, the mesh it is
    layer = layer_of(design)
    if demand is not None and not (demand - np.diag(np.diag(demand)) > 0).any():
        demand = None  # traffic that stays inside blocks asks nothing of the circuits: uniform
    problem = ot.TopologyProblem(
        blocks=layer.blocks,
        uplinks=(layer.uplinks,) * layer.blocks,
        demand=None if demand is None else tuple(tuple(float(v) for v in row) for row in demand),
        circuit_gbps=float(design.link_speed_gbps),
        transit=False,
        spines=layer.spines,
        injection_gbps=injection_gbps(design),
    )
    start = time.perf_counter()
    topo = ot.solve(ot.build(problem), time_limit_s=_seconds(deadline, time_limit_s))
    mesh = ot.uniform_mesh(layer.blocks, layer.uplinks)
    mesh_theta = topo.mesh_theta if topo.mesh_theta is not None else topo.theta
    if demand is None:
        # Uniform demand: the balanced mesh is optimal (every pair gets floor or ceil of
        # U / (n - 1) circuits, and usable(x) is monotone), and it spreads the spare ports
        # evenly, which the level-by-level construction need not.
        placed = place_mesh(layer, mesh, deadline)
        theta, status = mesh_theta, topo.status
        if placed.factor:  # another balanced mesh: its own value under the same model
            theta = _theta(design, layer, placed.circuits, None)
            if theta < mesh_theta * (1 - THETA_RTOL):
                status = Status.FEASIBLE
        wall = time.perf_counter() - start
        return Engineered(placed.circuits, theta, topo.bound, status, wall, cut=placed.cut)
    # The model counts usable(x) for an even spread over the spines, which need not exist for
    # the optimum; whole bundles (x_ab = S y_ab) always spread evenly, and the mesh is what the
    # uniform design has. Best model value first; the first one placed evenly is kept.
    s = layer.spines
    candidates = [("engineered", topo.circuits, topo.theta)]
    if s > 1 and layer.uplinks % s == 0 and not deadline.expired:
        bundled = ot.solve(
            ot.build(
                replace(
                    problem,
                    uplinks=(layer.uplinks // s,) * layer.blocks,
                    circuit_gbps=problem.circuit_gbps * s,
                    spines=1,
                )
            ),
            time_limit_s=_seconds(deadline, time_limit_s),
        )
        bundles = tuple((a, b, s * k) for a, b, k in bundled.circuits)
        candidates.append(("bundles", bundles, bundled.theta))
    candidates.append(("mesh", mesh, mesh_theta))
    candidates.sort(key=lambda cand: -cand[2])  # stable: ties keep the order above
    skipped: list[str] = []
    for source, pairs, theta in candidates:
        if source == "mesh":
            placed = place_mesh(layer, mesh, deadline)
            circuits, cut = placed.circuits, list(placed.cut)
            if placed.factor:
                theta = _theta(design, layer, circuits, demand)
            break
        if deadline.expired:
            skipped.append(source)
            continue
        try:
            assigned = assign_spread(layer, pairs, time_limit_s=_seconds(deadline, time_limit_s))
        except DeadlineExpired:
            skipped.append(source)
            continue
        if evenly_spread(layer, assigned.circuits):
            circuits, cut = assigned.circuits, []
            break
    if skipped:
        best = max(value for name, _, value in candidates if name in skipped)
        cut.insert(
            0,
            cut_note(
                f"the circuit engineering for the demand was cut: the {' and '.join(skipped)} "
                f"topolog{'ies' if len(skipped) > 1 else 'y'} (throughput scale up to "
                f"{best:.3f}) not placed in time; the circuits are the {KEPT[source]} "
                f"({theta:.3f})"
            ),
        )
    status = topo.status if source == "engineered" else Status.FEASIBLE
    wall = time.perf_counter() - start
    return Engineered(circuits, theta, topo.bound, status, wall, mesh_theta, source, cut=tuple(cut))


def demand_gbps(design: Design, demand: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """A block demand (any unit, diagonal included) as rates: the busiest block at its injection.

    The diagonal (traffic inside blocks) counts towards what a block sends and receives, but
    takes no circuit, so it is left out of the result.
    """
    busiest = max(float(demand.sum(axis=1).max()), float(demand.sum(axis=0).max()))
    injection = max(injection_gbps(design))
    out = demand * (injection / busiest) if busiest > 0 else np.zeros_like(demand)
    np.fill_diagonal(out, 0.0)
    return out


def _engineer_wcmp(
    design: Design, demand: npt.NDArray[np.float64] | None, deadline: Deadline
) -> Engineered:
    """The circuits of a WCMP design: one slice topology on every spine (``wcmp.engineer_slices``).

    ``theta`` is what the TE LP predicts as the fraction of ideal of the demand (uniform when
    None) with the design's hedge, ``bound`` the hose bound over every topology.
    """
    from models.ocs_topology.bounds import hose_bound
    from planner.families.ocs_direct import wcmp

    start = time.perf_counter()
    rates = None if demand is None else demand_gbps(design, demand)
    if rates is not None and not rates.any():
        rates = None  # nothing crosses a circuit: engineered for uniform demand, as the mesh
    got = wcmp.engineer_slices(
        design,
        rates,
        hedge=design.routing_hedge,
        deadline_s=time.perf_counter() + deadline.remaining_s(),
    )
    te = wcmp.te_of(design, got.circuits, rates, design.routing_hedge)
    layer = layer_of(design)
    d = wcmp.uniform_demand_gbps(design) if rates is None else rates
    theta = min(1.0, 1.0 / te.max_utilisation) if te.max_utilisation > 0 else 1.0
    # Uplinks in circuits' worth at the link speed: a slower block's count for less.
    up = float(layer.uplinks) * wcmp.uplink_rates_gbps(design) / float(design.link_speed_gbps)
    bound = min(1.0, hose_bound(up, d, float(design.link_speed_gbps))) if d.any() else 1.0
    mesh = got.tried.get("mesh")
    mesh_theta = None if mesh is None or mesh <= 0 else min(1.0, 1.0 / mesh)
    cut = tuple(cut_note(c) for c in got.cut)
    status = Status.OPTIMAL if te.status is Status.OPTIMAL and not cut else Status.FEASIBLE
    wall = time.perf_counter() - start
    return Engineered(
        got.circuits, theta, max(bound, theta), status, wall, mesh_theta, got.source, cut
    )


def assign_spread(
    layer: OcsLayer, pairs: tuple[tuple[int, int, int], ...], *, time_limit_s: float = 30.0
) -> Reconfiguration:
    """Put block-pair circuits on devices, every pair's circuits spread evenly over the spines.

    A leaf sprays a block's traffic over the spines that reach the other block, so the spine
    with the fewest circuits to it sets the pace (``models.ocs_spread``). First the topology is
    split floor / ceil over the spines; then each spine's share is realised on that spine's
    devices by the 2-factor construction (exact: ports per device are even). When no even split
    exists, or a share is not realisable that way, the whole layer is assigned without spreading.
    Raises ``DeadlineExpired`` when ``time_limit_s`` passes inside a construction.
    """
    start = time.perf_counter()
    deadline = Deadline.after(time_limit_s)
    tick = watch(deadline).check
    circuits = _spread_over_spines(layer, pairs, deadline, tick)
    if circuits is None:
        return assign(layer, pairs, time_limit_s=_seconds(deadline, time_limit_s), tick=tick)
    realised = sum(k for *_, k in circuits)
    wall = time.perf_counter() - start
    return Reconfiguration(circuits, 0, realised, realised, realised, wall)


def _spread_over_spines(
    layer: OcsLayer, pairs: tuple[tuple[int, int, int], ...], deadline: Deadline, tick: Tick
) -> tuple[Circuit, ...] | None:
    """Every circuit of an even spread, placed on the devices of its spine; None if none."""
    d = layer.devices_per_spine
    if layer.spines < 2 or layer.ports_per_device % 2:
        return None
    problem = sp.SpreadProblem(layer.blocks, layer.spines, d * layer.ports_per_device, pairs)
    spread = sp.spread(problem, time_limit_s=_seconds(deadline, SPREAD_TIME_S), tick=tick)
    if not spread.status.has_solution:
        return None
    circuits: list[Circuit] = []
    for g, topo in enumerate(spread.groups):
        ports = [[layer.ports_per_device] * d for _ in range(layer.blocks)]
        y = oa.two_factor_assignment(topo, ports, tick)
        if y is None:
            return None
        circuits += [(i, j, g * d + o, k) for (i, j, o), k in y.items() if k > 0]
    return tuple(sorted(circuits))


#: Time for finding an even spread over the spines when the greedy start falls short.
SPREAD_TIME_S = 10.0


#: Largest (block pairs x devices) given to CP-SAT; above it the constructive assignment is used.
MAX_MODEL_ENTRIES = 300_000


def constructive(problem: oa.AssignmentProblem, tick: Tick = None) -> oa.Assignment:
    """The assignment model's constructive start, taken as the answer for very large layers.

    From scratch it is the exact 2-factor construction (every circuit placed); after a failure it
    keeps every surviving circuit and re-places lost ones where free ports meet, then by ejection
    chains. Optimal whenever every requested circuit is placed: nothing can be kept that was lost,
    and each placed circuit is one change. ``tick`` is called now and then (it may raise).
    """
    start = time.perf_counter()
    y = oa.starting_assignment(problem, tick=tick)
    circuits = tuple(sorted((i, j, o, k) for (i, j, o), k in y.items() if k > 0))
    removed, added = oa.churn(problem.current, circuits)
    realised = sum(k for *_, k in circuits)
    requested = sum(problem.live_target().values())
    status = Status.OPTIMAL if realised == requested else Status.FEASIBLE
    result = oa.Assignment(
        status, circuits, realised, requested, removed, added, time.perf_counter() - start
    )
    problems = oa.validate_assignment(problem, result)
    if problems:
        raise RuntimeError("constructive circuit assignment is invalid: " + "; ".join(problems))
    return result


def assign(
    layer: OcsLayer,
    pairs: tuple[tuple[int, int, int], ...],
    *,
    current: tuple[Circuit, ...] = (),
    failed_devices: frozenset[int] = frozenset(),
    keep_surviving: bool = False,
    time_limit_s: float = 30.0,
    tick: Tick = None,
) -> Reconfiguration:
    """Put block-pair circuits on devices (with the fewest changes from ``current`` if given).

    Small layers are solved by CP-SAT within ``time_limit_s``; large ones by the constructive
    start, which calls ``tick`` now and then (it may raise to stop it).
    """
    problem = oa.AssignmentProblem(
        blocks=layer.blocks,
        devices=layer.devices,
        ports=tuple((layer.ports_per_device,) * layer.devices for _ in range(layer.blocks)),
        circuits=pairs,
        current=current,
        failed_devices=failed_devices,
        min_churn=bool(current),
        keep_surviving=keep_surviving,
    )
    if len(pairs) * layer.devices > MAX_MODEL_ENTRIES:
        result = constructive(problem, tick)
    else:
        result = oa.solve(oa.build(problem), time_limit_s=time_limit_s)
    if not result.status.has_solution:
        raise RuntimeError(f"circuit assignment ended {result.status.value}")
    return Reconfiguration(
        result.circuits,
        result.removed,
        result.added,
        result.requested,
        result.realised,
        result.wall_s,
    )


#: Time for the re-solve after a failure (the constructive start is usually already optimal).
RESOLVE_TIME_S = 3.0


def fail_device(
    design: Design,
    device: int,
    *,
    time_limit_s: float = RESOLVE_TIME_S,
    deadline: Deadline | None = None,
) -> Reconfiguration:
    """Re-assign a design's circuits after one OCS device fails.

    Every circuit that did not use the device is kept; of the lost ones, as many as the free
    ports allow are set up on other devices, with the fewest changes. A solver gets
    ``time_limit_s``; with a ``deadline``, at most what is left of it, and ``DeadlineExpired``
    when it passes inside the construction of a large layer.
    """
    layer = layer_of(design)
    wanted = pair_totals(design.circuits)
    return assign(
        layer,
        wanted,
        current=design.circuits,
        failed_devices=frozenset({device}),
        keep_surviving=True,
        time_limit_s=time_limit_s if deadline is None else _seconds(deadline, time_limit_s),
        tick=None if deadline is None else watch(deadline).check,
    )


RECONFIGURATION_SCHEMA = {
    "failed": pl.Utf8,
    "circuits_before": pl.Int64,
    "circuits_lost": pl.Int64,
    "circuits_kept": pl.Int64,
    "circuits_set_up": pl.Int64,
    "circuits_after": pl.Int64,
    "circuits_changed": pl.Int64,
    "solve_s": pl.Float64,
}


def reconfiguration_table(
    design: Design, device: int, *, deadline: Deadline | None = None
) -> pl.DataFrame:
    """What happens to one plane's circuits when a device fails: kept, lost, set up again.

    ``deadline`` bounds the re-assignment (``fail_device``; ``DeadlineExpired`` when it passes).
    """
    after = fail_device(design, device, deadline=deadline)
    before = sum(k for *_, k in design.circuits)
    lost = sum(k for _, _, o, k in design.circuits if o == device)
    row = {
        "failed": f"ocs{device}",
        "circuits_before": before,
        "circuits_lost": lost,
        "circuits_kept": before - after.removed,
        "circuits_set_up": after.added,
        "circuits_after": sum(k for *_, k in after.circuits),
        "circuits_changed": after.removed + after.added,
        "solve_s": after.wall_s,
    }
    return pl.DataFrame([row], schema=RECONFIGURATION_SCHEMA)


def with_circuits(design: Design, circuits: tuple[Circuit, ...]) -> Design:
    """The design carrying these circuits (per plane)."""
    return replace(design, circuits=tuple(sorted(circuits)))

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
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt
import polars as pl

from models import ocs_assignment as oa
from models import ocs_spread as sp
from models.status import Status
from planner.design import Design
from planner.ocs_layer import CIRCUITS_SCHEMA as CIRCUITS_SCHEMA
from planner.ocs_layer import OCS_SCHEMA as OCS_SCHEMA
from planner.ocs_layer import Circuit as Circuit
from planner.ocs_layer import OcsLayer as OcsLayer
from planner.ocs_layer import circuits_table as circuits_table
from planner.ocs_layer import layer_of as layer_of
from planner.ocs_layer import ocs_table as ocs_table


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
    """What each block injects into one plane: its GPUs' NIC bandwidth per plane, in Gb/s."""
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
    simulator's fraction of ideal when every GPU sends and receives alike.
    """
    from models import ocs_topology as ot

    if demand is not None and not ot.off_diagonal(demand).any():
        return 1.0  # nothing crosses a circuit: the circuits do not limit it
    layer = layer_of(design)
    theta = ot.throughput_scale(
        layer.blocks,
        sprayed_circuits(layer, design.circuits),
        None if demand is None else tuple(tuple(float(v) for v in row) for row in demand),
        float(design.link_speed_gbps),
        transit=False,
        injection_gbps=injection_gbps(design),
    )
    return min(1.0, theta)


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


def engineer(
    design: Design,
    demand: npt.NDArray[np.float64] | None = None,
    *,
    time_limit_s: float = 30.0,
) -> Engineered:
    """Circuits of one plane for a block demand (uniform when None): engineer, then assign."""
    from models import ocs_topology as ot

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
    topo = ot.solve(ot.build(problem), time_limit_s=time_limit_s)
    mesh = ot.uniform_mesh(layer.blocks, layer.uplinks)
    mesh_theta = topo.mesh_theta if topo.mesh_theta is not None else topo.theta
    if demand is None:
        # Uniform demand: the balanced mesh is optimal (every pair gets floor or ceil of
        # U / (n - 1) circuits, and usable(x) is monotone), and it spreads the spare ports
        # evenly, which the level-by-level construction need not.
        assigned = assign_spread(layer, mesh, time_limit_s=time_limit_s)
        wall = time.perf_counter() - start
        return Engineered(assigned.circuits, mesh_theta, topo.bound, topo.status, wall)
    # The model counts usable(x) for an even spread over the spines, which need not exist for
    # the optimum; whole bundles (x_ab = S y_ab) always spread evenly, and the mesh is what the
    # uniform design has. Best model value first; the first one placed evenly is kept.
    s = layer.spines
    candidates = [("engineered", topo.circuits, topo.theta)]
    if s > 1 and layer.uplinks % s == 0:
        bundled = ot.solve(
            ot.build(
                replace(
                    problem,
                    uplinks=(layer.uplinks // s,) * layer.blocks,
                    circuit_gbps=problem.circuit_gbps * s,
                    spines=1,
                )
            ),
            time_limit_s=time_limit_s,
        )
        bundles = tuple((a, b, s * k) for a, b, k in bundled.circuits)
        candidates.append(("bundles", bundles, bundled.theta))
    candidates.append(("mesh", mesh, mesh_theta))
    candidates.sort(key=lambda cand: -cand[2])  # stable: ties keep the order above
    for candidate in candidates:
        assigned = assign_spread(layer, candidate[1], time_limit_s=time_limit_s)
        if candidate[0] == "mesh" or evenly_spread(layer, assigned.circuits):
            break
    source, _, theta = candidate
    status = topo.status if source == "engineered" else Status.FEASIBLE
    wall = time.perf_counter() - start
    return Engineered(assigned.circuits, theta, topo.bound, status, wall, mesh_theta, source)


def assign_spread(
    layer: OcsLayer, pairs: tuple[tuple[int, int, int], ...], *, time_limit_s: float = 30.0
) -> Reconfiguration:
    """Put block-pair circuits on devices, every pair's circuits spread evenly over the spines.

    A leaf sprays a block's traffic over the spines that reach the other block, so the spine
    with the fewest circuits to it sets the pace (``models.ocs_spread``). First the topology is
    split floor / ceil over the spines; then each spine's share is realised on that spine's
    devices by the 2-factor construction (exact: ports per device are even). When no even split
    exists, or a share is not realisable that way, the whole layer is assigned without spreading.
    """
    start = time.perf_counter()
    circuits = _spread_over_spines(layer, pairs, time_limit_s)
    if circuits is None:
        return assign(layer, pairs, time_limit_s=time_limit_s)
    realised = sum(k for *_, k in circuits)
    wall = time.perf_counter() - start
    return Reconfiguration(circuits, 0, realised, realised, realised, wall)


def _spread_over_spines(
    layer: OcsLayer, pairs: tuple[tuple[int, int, int], ...], time_limit_s: float
) -> tuple[Circuit, ...] | None:
    """Every circuit of an even spread, placed on the devices of its spine; None if none."""
    d = layer.devices_per_spine
    if layer.spines < 2 or layer.ports_per_device % 2:
        return None
    problem = sp.SpreadProblem(layer.blocks, layer.spines, d * layer.ports_per_device, pairs)
    spread = sp.spread(problem, time_limit_s=min(SPREAD_TIME_S, time_limit_s))
    if not spread.status.has_solution:
        return None
    circuits: list[Circuit] = []
    for g, topo in enumerate(spread.groups):
        ports = [[layer.ports_per_device] * d for _ in range(layer.blocks)]
        y = oa.two_factor_assignment(topo, ports)
        if y is None:
            return None
        circuits += [(i, j, g * d + o, k) for (i, j, o), k in y.items() if k > 0]
    return tuple(sorted(circuits))


#: Time for finding an even spread over the spines when the greedy start falls short.
SPREAD_TIME_S = 10.0


#: Largest (block pairs x devices) given to CP-SAT; above it the constructive assignment is used.
MAX_MODEL_ENTRIES = 300_000


def constructive(problem: oa.AssignmentProblem) -> oa.Assignment:
    """The assignment model's constructive start, taken as the answer for very large layers.

    From scratch it is the exact 2-factor construction (every circuit placed); after a failure it
    keeps every surviving circuit and re-places lost ones where free ports meet, then by ejection
    chains. Optimal whenever every requested circuit is placed: nothing can be kept that was lost,
    and each placed circuit is one change.
    """
    start = time.perf_counter()
    y = oa.starting_assignment(problem)
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
) -> Reconfiguration:
    """Put block-pair circuits on devices (with the fewest changes from ``current`` if given)."""
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
        result = constructive(problem)
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
    design: Design, device: int, *, time_limit_s: float = RESOLVE_TIME_S
) -> Reconfiguration:
    """Re-assign a design's circuits after one OCS device fails.

    Every circuit that did not use the device is kept; of the lost ones, as many as the free
    ports allow are set up on other devices, with the fewest changes.
    """
    layer = layer_of(design)
    wanted = pair_totals(design.circuits)
    return assign(
        layer,
        wanted,
        current=design.circuits,
        failed_devices=frozenset({device}),
        keep_surviving=True,
        time_limit_s=time_limit_s,
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


def reconfiguration_table(design: Design, device: int) -> pl.DataFrame:
    """What happens to one plane's circuits when a device fails: kept, lost, set up again."""
    after = fail_device(design, device)
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

"""The planner's packet model against htsim's NDP, EQDS and RoCE on cases not tuned before.

Not run in CI (it needs a built htsim; see ``tests/bench/RESULTS_htsim.md`` for the build).
``htsim_compare.py`` holds the first case (a k = 16 fat tree under a permutation of 2 MB flows);
this script runs the others of issue 25 and prints one row per case, routing and model::

    uv run python tests/bench/htsim_cases.py --htsim /tmp/csg-htsim/sim/datacenter \
        --work /tmp/htsim-cases --seeds 5 --planner-seeds 30

Cases (``CASES``): the same k = 16 fat tree with 64 KB flows (and its 2 MB flows again, for
hashed spraying, which ``htsim_compare.py`` does not run), with a grouped all-to-all
(consecutive groups of 64 GPUs, the expert-parallel placement, 64 KB a pair), and a two-tier
leaf/spine at 2:1 (16 leaves of 16 hosts, 8 uplinks each, 8 spines) with 64 KB, 2 MB and 32 MB
flows, and with the same grouped all-to-all (a group is 4 leaves there, so 48 of a rank's 63
peers are across the 2:1 uplinks). Routings and transports:

* **spray**: the planner's even split over every shortest path; htsim_ndp ``-strat perm`` (a
  source route per packet over a permutation of all paths: the even split);
* **hashed**: spraying by entropy, every switch hashing a packet's entropy onto a next hop
  (``-strat ecmp_host -paths 256``) under htsim_ndp and htsim_eqds; in the planner, each flow
  split into ``ENTROPIES`` sub-flows hashed by ECMP (the same switch hash the planner's ECMP
  uses), the flow done with its last sub-flow;
* **ecmp**: one path a flow (``-strat ecmp_host -paths 1``) under htsim_ndp, htsim_eqds and
  htsim_roce; the planner's ECMP over ``--planner-seeds`` hash seeds.

The planner runs with htsim's byte counts (``HTSIM_NDP``: 64-byte headers and ACKs, which
EQDS's ``EqdsSrc::_hdr_size`` and ``EqdsAckPacket::ACKSIZE`` share) and the exported latencies.
A row of a routing with seeds gives, over the seeds, the median of each run's p50 and of each
run's worst flow, and the least and greatest worst flow.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np

from planner.sim import traffic as tr
from planner.sim import traffic_patterns
from planner.sim.collectives import all_to_all
from planner.sim.fabric import Fabric, FloatArray
from planner.sim.gpu_groups import consecutive_groups
from planner.sim.htsim import connection_matrix_text, topology_text
from planner.sim.packet import HTSIM_NDP, Fidelity
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing
from tests.bench import htsim_compare
from tests.bench.htsim_compare import (
    FINISHED,
    LINK_GBPS,
    LINK_LATENCY_NS,
    RESENT,
    US,
    fat_tree,
    path_model,
)
from tests.sim.test_bound import make_fabric

#: Entropies a flow sprays over under hashed spraying (htsim's ``-paths``).
ENTROPIES = 256
#: htsim settings: NDP and EQDS queues (packets a port), their initial window, RoCE's queues.
QUEUE_PACKETS = 50
CWND_PACKETS = 50
ROCE_QUEUE_PACKETS = 100
#: Payload a packet (EQDS's ``-mtu`` is the whole packet: payload + 64 bytes of header).
PAYLOAD_BYTES = HTSIM_NDP.payload_bytes
EQDS_MTU_BYTES = HTSIM_NDP.payload_bytes + HTSIM_NDP.header_bytes
SWITCH_LATENCY_NS = 500


def leaf_spine_2to1() -> Fabric:
    """16 leaves of 16 hosts, 8 uplinks each (2:1), 8 spines, 100 Gb/s, as the planner wires it."""
    fabric = make_fabric(16, 16, 8)
    return Fabric(**{**fabric.__dict__, "link_speed_gbps": float(LINK_GBPS)})


def permutation(size_bytes: float) -> Callable[[Fabric], tr.Traffic]:
    """A random permutation (seed 1) of flows of ``size_bytes``."""
    return lambda fabric: traffic_patterns.random_permutation(fabric.gpus, size_bytes, seed=1)


def grouped_all_to_all(group: int, pair_bytes: float) -> Callable[[Fabric], tr.Traffic]:
    """An all-to-all in consecutive groups of ``group`` GPUs, ``pair_bytes`` to every peer."""
    return lambda fabric: all_to_all(consecutive_groups(fabric.gpus, group), pair_bytes * group)


@dataclass(frozen=True)
class Case:
    """A fabric, a traffic phase, and how long htsim may run."""

    fabric: Callable[[], Fabric]
    traffic: Callable[[Fabric], tr.Traffic]
    end_us: int


CASES: dict[str, Case] = {
    "k16-perm-64k": Case(fat_tree, permutation(64_000), 2_000),
    "k16-perm-2m": Case(fat_tree, permutation(2_000_000), 20_000),
    "k16-a2a64-64k": Case(fat_tree, grouped_all_to_all(64, 64_000), 20_000),
    "ls2to1-a2a64-64k": Case(leaf_spine_2to1, grouped_all_to_all(64, 64_000), 20_000),
    "ls2to1-perm-64k": Case(leaf_spine_2to1, permutation(64_000), 2_000),
    "ls2to1-perm-2m": Case(leaf_spine_2to1, permutation(2_000_000), 20_000),
    "ls2to1-perm-32m": Case(leaf_spine_2to1, permutation(32_000_000), 200_000),
}


@dataclass(frozen=True)
class Run(htsim_compare.Run):
    """Flow completion times (s) of one simulation, the packets it resent and its wall time."""

    resent_fraction: float = 0.0
    wall_s: float = 0.0


def hashed(phase: tr.Phase, entropies: int) -> tuple[tr.Traffic, int]:
    """Every flow as sub-flows, one an entropy its packets use, and the sub-flows a flow.

    A flow's packets go round-robin over its entropies, so a flow of P packets uses min(P, E)
    of them, with the bytes of its packets: sub-flow k carries the packets k, k + E, ...
    (equal flows only: the phase's sizes must be equal).
    """
    size_bytes = float(phase.size_bytes[0])
    if not np.all(phase.size_bytes == size_bytes):
        raise ValueError("hashed spraying is modelled for flows of equal size")
    packets = int(np.ceil(size_bytes / PAYLOAD_BYTES))
    used = min(packets, entropies)
    per = np.full(used, packets // used) + (np.arange(used) < packets % used)
    share = per * PAYLOAD_BYTES
    share[-1 if packets % used == 0 else packets % used - 1] -= packets * PAYLOAD_BYTES - size_bytes
    src = np.repeat(phase.src, used)
    dst = np.repeat(phase.dst, used)
    size = np.tile(share.astype(float), phase.flows)
    split = tr.Phase(src, dst, size)
    return tr.Traffic("hashed", "direct", 2, int(src.size), 0.0, 1.0, (split,)), used


def planner_runs(
    fabric: Fabric,
    traffic: tr.Traffic,
    seeds: Sequence[int],
    hashed_seeds: Sequence[int],
    max_min_hashed: bool = False,
) -> list[Run]:
    """Spraying (even, with 0 ns switches as htsim's source routes), hashed spraying and ECMP.

    Hashed spraying is the planner's (``verify.spray_entropies``, ``planner.sim.hashed_spray``);
    with ``max_min_hashed`` also the alternative it was measured against: the sub-flows as ECMP
    flows under max-min re-sharing, a flow done with its last sub-flow ("planner, max-min").
    """
    with_switches = Fidelity(HTSIM_NDP, path_model(fabric, SWITCH_LATENCY_NS))
    source_routed = Fidelity(HTSIM_NDP, path_model(fabric, 0.0))
    runs = []

    def timed(model: str, routing: str, seed: int, simulate: Callable[[], FloatArray]) -> None:
        start = time.perf_counter()
        fct = simulate()
        runs.append(Run(model, routing, seed, fct, wall_s=time.perf_counter() - start))

    def simulate(routing: Routing, seed: int, fidelity: Fidelity, entropies: int = 0) -> FloatArray:
        return run_traffic(
            fabric, traffic, routing, seed, fidelity=fidelity, spray_entropies=entropies
        )[1]

    timed("planner", "spray", 1, partial(simulate, Routing.SPRAY, 1, source_routed))
    for seed in hashed_seeds:
        timed(
            "planner",
            "hashed",
            seed,
            partial(simulate, Routing.SPRAY, seed, with_switches, ENTROPIES),
        )
    phase = traffic.phases[0]
    split, used = hashed(phase, ENTROPIES)
    for seed in hashed_seeds if max_min_hashed else []:

        def max_min(seed: int = seed) -> FloatArray:
            _, sub, _, _, _ = run_traffic(fabric, split, Routing.ECMP, seed, fidelity=with_switches)
            return sub.reshape(phase.flows, used).max(axis=1)

        timed("planner, max-min", "hashed", seed, max_min)
    for seed in seeds:
        timed("planner", "ecmp", seed, partial(simulate, Routing.ECMP, seed, with_switches))
    return runs


def htsim(binary: Path, args: list[str], log: Path, reuse: bool) -> tuple[FloatArray, int]:
    """Run one htsim driver in the log's folder: the flows' completion times (s), exit status.

    ``htsim_eqds`` can abort on an assertion (``EqdsSrc::spendCredit``) after its flows have
    finished; the caller checks that every flow did, so the status is returned, not raised.
    With ``reuse``, a log from the same command line is read instead (its last line the status).
    """
    command = " ".join([binary.name, *args])
    text = log.read_text() if reuse and log.exists() else ""
    if not (text.startswith(command + "\n") and "\nexit " in text):
        with log.open("w") as out:
            out.write(command + "\n")
            out.flush()
            done = subprocess.run(
                [str(binary), *args], stdout=out, stderr=subprocess.STDOUT, cwd=log.parent
            )
        with log.open("a") as out:
            out.write(f"\nexit {done.returncode}\n")
        text = log.read_text()
    status = int(text.rsplit("\nexit ", 1)[1].split()[0])
    times = [float(m.group(1)) for m in FINISHED.finditer(text)]
    return np.asarray(times) * US, status


#: htsim runs: (transport, routing, binary, arguments besides files, seeds and end).
HTSIM_JOBS: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("ndp", "spray", "htsim_ndp", ("-strat", "perm")),
    ("ndp", "hashed", "htsim_ndp", ("-strat", "ecmp_host", "-paths", str(ENTROPIES))),
    ("eqds", "hashed", "htsim_eqds", ("-strat", "ecmp_host", "-paths", str(ENTROPIES))),
    ("ndp", "ecmp", "htsim_ndp", ("-strat", "ecmp_host", "-paths", "1")),
    ("eqds", "ecmp", "htsim_eqds", ("-strat", "ecmp_host", "-paths", "1")),
    ("roce", "ecmp", "htsim_roce", ("-strat", "ecmp_host", "-paths", "1")),
)
TRANSPORT_ARGS = {
    "ndp": ("-mtu", str(PAYLOAD_BYTES), "-q", str(QUEUE_PACKETS), "-cwnd", str(CWND_PACKETS)),
    "eqds": ("-mtu", str(EQDS_MTU_BYTES), "-q", str(QUEUE_PACKETS), "-cwnd", str(CWND_PACKETS)),
    "roce": ("-mtu", str(PAYLOAD_BYTES), "-q", str(ROCE_QUEUE_PACKETS)),
}


def htsim_runs(
    bin_dir: Path,
    work: Path,
    case: Case,
    nodes: int,
    flows: int,
    seeds: Sequence[int],
    reuse: bool,
    only: set[str] | None,
    aborted: list[str],
) -> list[Run]:
    """Every job of ``HTSIM_JOBS`` (ECMP and hashed ones under every seed).

    A run that htsim aborts before every flow has finished (``htsim_eqds`` asserts in
    ``EqdsSrc::spendCredit`` on some seeds) is left out of the rows and listed in ``aborted``.
    """
    runs = []
    for transport, routing, binary, extra in HTSIM_JOBS:
        if only is not None and f"{transport}-{routing}" not in only:
            continue
        for seed in seeds[:1] if routing == "spray" else seeds:
            args = ["-nodes", str(nodes), "-topo", str(work / "plane.topo")]
            args += ["-tm", str(work / "phase.cm"), "-linkspeed", str(LINK_GBPS * 1000)]
            args += ["-end", str(case.end_us), *extra, *TRANSPORT_ARGS[transport]]
            args += ["-seed", str(seed)]
            log = work / f"{transport}-{routing}-{seed}.log"
            start = time.perf_counter()
            fct, status = htsim(bin_dir / binary, args, log, reuse)
            wall = time.perf_counter() - start
            counts = RESENT.search(log.read_text())
            resent = int(counts[2]) / max(int(counts[1]), 1) if counts else 0.0
            print(
                f"  {transport} {routing} seed {seed}: {fct.size} of {flows} flows, {wall:.0f} s, "
                f"resent {resent:.1%}" + (f", exit {status}" if status else ""),
                file=sys.stderr,
            )
            if fct.size != flows and status:
                aborted.append(f"{transport} {routing} seed {seed}: {fct.size} of {flows} flows")
                continue  # htsim stopped on an assertion of its own: not a draw
            if fct.size != flows:
                raise RuntimeError(f"{log}: {fct.size} of {flows} flows finished; raise end_us")
            runs.append(Run(transport, routing, seed, fct, resent, wall))
    return runs


def rows(case: str, runs: list[Run]) -> list[str]:
    """One markdown row per model and routing, with its ratios to the planner's same routing."""
    out = []
    keys = list(dict.fromkeys((r.model, r.routing) for r in runs))
    stats = {}
    for key in keys:
        group = [r for r in runs if (r.model, r.routing) == key]
        p50 = float(np.median([np.percentile(r.fct_s, 50) for r in group])) / US
        worst_us = np.asarray([r.fct_s.max() for r in group]) / US
        resent = float(np.median([r.resent_fraction for r in group]))
        stats[key] = (
            len(group),
            p50,
            float(np.median(worst_us)),
            float(worst_us.min()),
            float(worst_us.max()),
            resent,
        )
    for model, routing in keys:
        n, p50, worst, low, high, resent = stats[(model, routing)]
        ratio = ""
        if not model.startswith("planner"):
            ratio = "; ".join(
                f"{key[0]}: {mine[1] / p50:.3f} / {mine[2] / worst:.3f}"
                for key, mine in stats.items()
                if key[0].startswith("planner") and key[1] == routing
            )
        out.append(
            f"| {case} | {routing} | {model} | {n} | {p50:.1f} | {worst:.1f} | {low:.1f} / "
            f"{high:.1f} | {resent:.1%} | {ratio} |"
        )
    return out


HEADER = (
    "| case | routing | model | seeds | p50 (µs) | worst flow (µs) | worst: min / max (µs) "
    "| resent | planner / this: p50 / worst |\n|---|---|---|---|---|---|---|---|---|"
)


def main(argv: Sequence[str] | None = None) -> int:
    """Write each case's files, run the planner and htsim, print the rows."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--htsim", type=Path, required=True, help="sim/datacenter of a built htsim")
    parser.add_argument("--work", type=Path, required=True, help="files and logs, a folder a case")
    parser.add_argument("--cases", nargs="*", default=list(CASES), choices=list(CASES))
    parser.add_argument("--seeds", type=int, default=5, help="htsim's ECMP and hashed seeds")
    parser.add_argument("--planner-seeds", type=int, default=30, help="the planner's ECMP seeds")
    parser.add_argument("--hashed-seeds", type=int, default=5, help="the planner's hashed seeds")
    parser.add_argument("--only", nargs="*", default=None, help="htsim jobs, e.g. ndp-spray")
    parser.add_argument("--reuse", action="store_true", help="read htsim logs already there")
    parser.add_argument("--planner-only", action="store_true", help="skip htsim")
    parser.add_argument(
        "--max-min-hashed",
        action="store_true",
        help="also hashed spraying as sub-flows under max-min re-sharing (slow)",
    )
    args = parser.parse_args(argv)
    lines = [HEADER]
    aborted: list[str] = []
    for name in args.cases:
        case = CASES[name]
        fabric = case.fabric()
        traffic = case.traffic(fabric)
        phase = traffic.phases[0]
        work = args.work / name
        work.mkdir(parents=True, exist_ok=True)
        (work / "plane.topo").write_text(
            topology_text(
                fabric, link_latency_ns=LINK_LATENCY_NS, switch_latency_ns=SWITCH_LATENCY_NS
            )
        )
        (work / "phase.cm").write_text(
            connection_matrix_text(fabric, phase.src, phase.dst, phase.size_bytes)
        )
        print(f"{name}: {phase.flows} flows, files in {work}", file=sys.stderr)
        seeds = list(range(1, args.seeds + 1))
        runs = planner_runs(
            fabric,
            traffic,
            list(range(1, args.planner_seeds + 1)),
            list(range(1, args.hashed_seeds + 1)),
            max_min_hashed=args.max_min_hashed,
        )
        if not args.planner_only:
            only = None if args.only is None else set(args.only)
            runs += htsim_runs(
                args.htsim, work, case, fabric.gpus, phase.flows, seeds, args.reuse, only, aborted
            )
        lines += rows(name, runs)
        print("\n".join(lines[-len(set((r.model, r.routing) for r in runs)) :]), file=sys.stderr)
    print("\n".join(lines))
    if aborted:
        print("\nhtsim aborted (left out): " + "; ".join(aborted))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

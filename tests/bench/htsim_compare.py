"""The planner's flow model against htsim, packet level, on the same exported fabric and traffic.

Not run in CI (it needs a built htsim). Reproduce ``tests/bench/RESULTS_htsim.md`` with::

    git clone https://github.com/Broadcom/csg-htsim /tmp/csg-htsim
    (cd /tmp/csg-htsim/sim && make -j2)          # builds sim/datacenter/htsim_* too
    uv run python tests/bench/htsim_compare.py --htsim /tmp/csg-htsim/sim/datacenter \
        --seeds 10 --planner-seeds 30 --work /tmp/htsim-compare

The case: a k = 16 three-tier fat tree (1,024 hosts: 16 pods of 8 leaves of 8 hosts, 8 spines a
pod, 64 cores), 100 Gb/s links, under a random permutation of 2 MB flows. The ``.topo`` and
``.cm`` are written by ``planner.sim.htsim`` (the files ``--htsim`` writes). Three models:

* planner, fluid: max-min rates and re-sharing only (``verify.fidelity = "fluid"``);
* planner, packet: the same with ``planner.sim.packet`` and htsim's own transport figures
  (``HTSIM_NDP``: 64-byte headers and ACKs; ACKs of flows the other way; per-hop serialisation; the exported link and
  switch latencies);
* htsim: ``htsim_ndp`` (receiver-driven, trimming switches) with ``-strat perm`` for packet
  spraying (each source sprays over a permutation of all paths) and ``-strat ecmp_host -paths 1``
  for ECMP (switches hash every flow onto one path); and ``htsim_roce -strat ecmp_host`` (PFC,
  no congestion control) as a second ECMP reference.

ECMP runs under ``--planner-seeds`` hash seeds in the planner (cheap) and ``--seeds`` in htsim
(minutes each; ``--roce-seeds`` gives htsim_roce, the faster, more of them); the planner's seed
k is not htsim's seed k, each is a draw of the same distribution. Its rows give the median
seed's p50, p99 and max, and the worst flow's median, least and greatest over the seeds. ``--reuse`` reads htsim logs already in ``--work`` that were
made by the same command line, so more seeds can be added to a run. ``htsim_roce`` does not
repeat itself under the same ``-seed`` (three runs of seed 1 here: worst flow 1,002.7, 1,186.0
and 1,029.9 µs; even its hottest link's flow count changes), so its seeds are labels of
independent draws, and only ``--reuse`` reproduces the table; ``htsim_ndp`` repeats to the
last digit (spraying, and ECMP seed 1 run again).
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from planner.sim import traffic as tr
from planner.sim import traffic_patterns
from planner.sim.fabric import Fabric, FloatArray
from planner.sim.htsim import connection_matrix_text, topology_text
from planner.sim.packet import HTSIM_NDP, Fidelity, PathModel
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing
from tests.sim.test_bound import make_fabric

#: The case.
HOSTS_PER_LEAF = 8
LEAVES = 128
SPINES_PER_POD = 8
LEAVES_PER_POD = 8
CORES_PER_GROUP = 8
LINK_GBPS = 100
FLOW_BYTES = 2_000_000
#: The lone flow: from the first host to the last, across the pods (5 switches, 6 links).
LONE = (0, HOSTS_PER_LEAF * LEAVES - 1)
#: One-way latency of every link (electronics and ~16 m of fibre at 5 ns/m) and of every switch.
LINK_LATENCY_NS = 100
SWITCH_LATENCY_NS = 500
#: htsim settings: queue size in packets (per port), NDP's initial window in packets, end time.
QUEUE_PACKETS = 50
NDP_CWND_PACKETS = 50
ROCE_QUEUE_PACKETS = 100
END_US = 20_000
US = 1e-6
FINISHED = re.compile(r"finished at ([0-9.]+)")
#: htsim_ndp's closing count of new and retransmitted (trimmed, then resent) data packets.
RESENT = re.compile(r"New: (\d+) Rtx: (\d+)")


def fat_tree() -> Fabric:
    """The k = 16 fat tree at 100 Gb/s, wired as the planner wires a three-tier Clos."""
    fabric = make_fabric(
        HOSTS_PER_LEAF,
        LEAVES,
        SPINES_PER_POD,
        leaves_per_pod=LEAVES_PER_POD,
        cores_per_group=CORES_PER_GROUP,
    )
    return Fabric(**{**fabric.__dict__, "link_speed_gbps": float(LINK_GBPS)})


def path_model(fabric: Fabric, switch_latency_ns: float = SWITCH_LATENCY_NS) -> PathModel:
    """The latencies the export writes, as the planner's packet model reads them."""
    return PathModel(
        class_latency_ns=(float(LINK_LATENCY_NS),) * fabric.tiers,
        class_speed_gbps=(float(LINK_GBPS),) * fabric.tiers,
        switch_latency_ns=(float(switch_latency_ns),) * fabric.tiers,
    )


@dataclass(frozen=True)
class Run:
    """Flow completion times (s) of one simulation."""

    model: str
    routing: str
    seed: int
    fct_s: FloatArray

    @property
    def worst_s(self) -> float:
        """The slowest flow."""
        return float(self.fct_s.max())


def planner_runs(
    fabric: Fabric,
    traffic: tr.Traffic,
    seeds: Sequence[int],
    fidelity: Fidelity | None,
    name: str,
    ecmp: bool = True,
) -> list[Run]:
    """The planner's simulator: the lone flow and spraying once, ECMP under every seed."""
    lone = traffic_patterns.point_to_point([LONE[0]], [LONE[1]], FLOW_BYTES)
    _, times, _, _, _ = run_traffic(fabric, lone, Routing.SPRAY, seeds[0], fidelity=fidelity)
    runs = [Run(name, "lone", seeds[0], times)]
    for routing, those in ((Routing.SPRAY, seeds[:1]), (Routing.ECMP, seeds if ecmp else [])):
        for seed in those:
            _, times, _, _, _ = run_traffic(fabric, traffic, routing, seed, fidelity=fidelity)
            runs.append(Run(name, routing.value, seed, times))
    return runs


def htsim(binary: Path, args: list[str], log: Path, reuse: bool) -> FloatArray:
    """Run one htsim driver; the flows' completion times (s) from its 'finished at' lines.

    It runs in the log's folder, where htsim leaves its own ``logout.dat`` and ``idmap.txt``.
    With ``reuse``, a log already there from the same command line is read instead.
    """
    command = " ".join([binary.name, *args])
    if not (reuse and log.exists() and log.read_text().startswith(command + "\n")):
        with log.open("w") as out:
            out.write(command + "\n")
            out.flush()
            subprocess.run(
                [str(binary), *args],
                stdout=out,
                stderr=subprocess.STDOUT,
                check=True,
                cwd=log.parent,
            )
    times = [float(m.group(1)) for m in FINISHED.finditer(log.read_text())]
    return np.asarray(times) * US


def htsim_runs(
    bin_dir: Path,
    work: Path,
    nodes: int,
    flows: int,
    seeds: Sequence[int],
    reuse: bool,
    roce_seeds: Sequence[int] | None = None,
) -> list[Run]:
    """htsim_ndp spraying, htsim_ndp ECMP and htsim_roce ECMP on the exported files.

    ``roce_seeds``: htsim_roce's ECMP seeds when they differ from htsim_ndp's (a RoCE run takes
    about 25 s here, an NDP ECMP run 6 min, so RoCE's distribution is the cheaper to fill in).

    First a lone flow across the pods (``lone.cm``) under each driver: the per-flow model
    without any sharing.
    """
    common = ["-nodes", str(nodes), "-topo", str(work / "plane.topo")]
    common += ["-linkspeed", str(LINK_GBPS * 1000), "-end", str(END_US)]
    lone = ["-tm", str(work / "lone.cm")]
    phase = ["-tm", str(work / "phase.cm")]
    ndp = ["-mtu", str(HTSIM_NDP.payload_bytes), "-q", str(QUEUE_PACKETS)]
    ndp += ["-cwnd", str(NDP_CWND_PACKETS)]
    roce = ["-mtu", str(HTSIM_NDP.payload_bytes), "-q", str(ROCE_QUEUE_PACKETS)]
    ecmp = ["-strat", "ecmp_host", "-paths", "1"]
    jobs = [
        ("htsim ndp", "lone", seeds[0], "htsim_ndp", [*lone, "-strat", "perm", *ndp]),
        ("htsim roce", "lone", seeds[0], "htsim_roce", [*lone, *ecmp, *roce]),
        ("htsim ndp", "spray", seeds[0], "htsim_ndp", [*phase, "-strat", "perm", *ndp]),
    ]
    roce_seeds = seeds if roce_seeds is None else roce_seeds
    for s in sorted({*seeds, *roce_seeds}):
        if s in seeds:
            jobs.append(("htsim ndp", "ecmp", s, "htsim_ndp", [*phase, *ecmp, *ndp]))
        if s in roce_seeds:
            jobs.append(("htsim roce", "ecmp", s, "htsim_roce", [*phase, *ecmp, *roce]))
    runs = []
    for model, routing, seed, binary, extra in jobs:
        start = time.perf_counter()
        log = work / f"{binary}-{routing}-{seed}.log"
        fct = htsim(bin_dir / binary, [*common, *extra, "-seed", str(seed)], log, reuse)
        resent = RESENT.search(log.read_text())
        trims = ""
        if resent and binary == "htsim_ndp":  # htsim_roce prints the line with zeros
            trims = f", {int(resent[2])} resent of {int(resent[1])} new packets"
        print(
            f"  {model} {routing} seed {seed}: {fct.size} flows, "
            f"{time.perf_counter() - start:.0f} s{trims}",
            file=sys.stderr,
        )
        want = 1 if routing == "lone" else flows
        if fct.size != want:
            raise RuntimeError(f"{log}: {fct.size} of {want} flows finished; raise END_US")
        runs.append(Run(model, routing, seed, fct))
    return runs


def table(runs: list[Run]) -> str:
    """Markdown: p50, p99 and max FCT per model and routing (ECMP: the median seed's run), and
    the worst flow's median, least and greatest over the seeds."""
    lines = [
        "| model | routing | seeds | p50 FCT (µs) | p99 FCT (µs) | max FCT (µs) "
        "| worst flow over seeds: median / min / max (µs) |",
        "|---|---|---|---|---|---|---|",
    ]
    keys = list(dict.fromkeys((r.model, r.routing) for r in runs))
    for routing in ("lone", "spray", "ecmp"):
        for model, rt in keys:
            if rt != routing:
                continue
            group = sorted(
                (r for r in runs if (r.model, r.routing) == (model, rt)), key=lambda r: r.worst_s
            )
            mid = group[(len(group) - 1) // 2]
            worst = np.asarray([r.worst_s for r in group]) / US
            p50, p99 = np.percentile(mid.fct_s, [50, 99]) / US
            lines.append(
                f"| {model} | {rt} | {len(group)} | {p50:.1f} | {p99:.1f} | {mid.worst_s / US:.1f} "
                f"| {np.median(worst):.1f} / {worst.min():.1f} / {worst.max():.1f} |"
            )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Write the files, run both simulators, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--htsim", type=Path, required=True, help="sim/datacenter of a built htsim")
    parser.add_argument("--seeds", type=int, default=10, help="htsim's ECMP seeds (1, 2, ...)")
    parser.add_argument(
        "--roce-seeds", type=int, default=None, help="htsim_roce's ECMP seeds (default --seeds)"
    )
    parser.add_argument(
        "--planner-seeds", type=int, default=30, help="the planner's ECMP hash seeds (1, 2, ...)"
    )
    parser.add_argument("--reuse", action="store_true", help="read htsim logs already in --work")
    parser.add_argument("--work", type=Path, default=None, help="keep the files and logs here")
    parser.add_argument("--planner-only", action="store_true", help="skip htsim")
    args = parser.parse_args(argv)
    seeds = list(range(1, args.seeds + 1))
    planner_seeds = list(range(1, args.planner_seeds + 1))
    fabric = fat_tree()
    traffic = traffic_patterns.random_permutation(fabric.gpus, FLOW_BYTES, seed=1)
    phase = traffic.phases[0]
    work = args.work or Path(tempfile.mkdtemp(prefix="htsim-compare-"))
    work.mkdir(parents=True, exist_ok=True)
    (work / "plane.topo").write_text(
        topology_text(fabric, link_latency_ns=LINK_LATENCY_NS, switch_latency_ns=SWITCH_LATENCY_NS)
    )
    (work / "phase.cm").write_text(
        connection_matrix_text(fabric, phase.src, phase.dst, phase.size_bytes)
    )
    (work / "lone.cm").write_text(connection_matrix_text(fabric, [LONE[0]], [LONE[1]], FLOW_BYTES))
    print(f"files in {work}", file=sys.stderr)
    fidelity = Fidelity(HTSIM_NDP, path_model(fabric))
    runs = planner_runs(fabric, traffic, planner_seeds, None, "planner, fluid")
    runs += planner_runs(fabric, traffic, planner_seeds, fidelity, "planner, packet")
    # htsim_ndp's source-routed spraying (-strat perm) never enters a FatTreeSwitch, so it
    # applies no Switch_Latency_ns (its lone flow takes the same time with 0 or 500 ns): the
    # planner's spraying with the latency htsim applies.
    as_perm = Fidelity(HTSIM_NDP, path_model(fabric, switch_latency_ns=0.0))
    runs += planner_runs(
        fabric, traffic, planner_seeds, as_perm, "planner, packet, 0 ns switches", ecmp=False
    )
    if not args.planner_only:
        roce_seeds = None if args.roce_seeds is None else list(range(1, args.roce_seeds + 1))
        runs += htsim_runs(
            args.htsim, work, fabric.gpus, phase.flows, seeds, args.reuse, roce_seeds
        )
    print(table(runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Benchmark: OCS direct-connect routed by traffic engineering, what a user waits for.

For each size, ``instances/ocs-65k.toml`` at that many GPUs is solved as a user runs it
(``fabric-planner solve``, verification included, in a fresh process: wall time and peak memory),
then, on the design it wrote, the TE LP of each ``[verify]`` traffic's block demand is timed
alone (``planner.families.ocs_direct.wcmp.te_of``), and the simulated figures are read from the
reports: fraction of ideal, of the optimal-routing bound, the share of block traffic sent direct
and the mean block-level path.

Run: ``uv run python tests/bench/bench_wcmp.py [--sizes 65536 262144] [--time-limit 60]``. Not
collected by pytest. ``tests/bench/RESULTS.md`` holds the committed figures.

A million GPUs is not in the default sizes: with the example's one-port NICs (one plane), the
catalog's 136-port OCS (an even number of ports per block on every device) joins at most 68
blocks, and a leaf-spine block holds at most 8,192 GPUs, so there is no direct-connect design of
1,048,576 GPUs. With four-port NICs there is one (four planes at 100G, 68 blocks); solve it by
hand: ``uv run fabric-planner solve instances/ocs-65k.toml --set cluster.gpus=1048576 --set
'cluster.nic_ports=[1,2,4]' --time-limit 600``. ``tests/bench/bench_te.py`` times the TE LP
alone at the block counts of other million-GPU shapes.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import polars as pl

ROOT = Path(__file__).parents[2]
INSTANCE = ROOT / "instances" / "ocs-65k.toml"


def solve(gpus: int, time_limit_s: float, out: Path) -> tuple[float, float, int]:
    """``fabric-planner solve`` in a fresh process: (wall s, peak RSS MiB, exit status)."""
    start = time.perf_counter()
    code = (
        "import resource, sys\n"
        "from planner.cli import main\n"
        "try:\n"
        "    main()\n"
        "except SystemExit as exc:\n"
        "    status = exc.code or 0\n"
        "else:\n"
        "    status = 0\n"
        "print('PEAK', resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    args = [
        sys.executable,
        "-c",
        code,
        "solve",
        str(INSTANCE),
        "--set",
        f"cluster.gpus={gpus}",
        "-o",
        str(out),
        "--force",
        "--time-limit",
        str(time_limit_s),
    ]
    done = subprocess.run(args, capture_output=True, text=True, cwd=ROOT, check=False)
    wall = time.perf_counter() - start
    peak = next(
        (int(line.split()[1]) for line in done.stderr.splitlines() if line.startswith("PEAK")), 0
    )
    return wall, peak / 1024.0, done.returncode


def te_seconds(out: Path) -> dict[str, tuple[float, float]]:
    """Per [verify] traffic of the solved design: (TE LP seconds, max utilisation)."""
    from planner.api import load_instance
    from planner.design_file import design_from_dict
    from planner.families import FAMILIES
    from planner.families.ocs_direct import circuits as ocs
    from planner.families.ocs_direct import wcmp
    from planner.sim.traffic_kinds import build_traffic

    design = design_from_dict(json.loads((out / "design.json").read_text()), FAMILIES)
    inst = load_instance(INSTANCE)
    fabric = wcmp.wcmp_fabric(design, design.routing_hedge)
    blocks = ocs.block_of_gpus(design)
    result = {}
    for spec in inst.verify.traffic:
        t = build_traffic(spec, design.gpus, design.gpus_per_node, inst.verify.seed)
        phase = t.phases[0]
        demand = wcmp.block_rates(
            blocks, design.pods, phase.src, phase.dst, phase.size_bytes, fabric
        )
        start = time.perf_counter()
        te = wcmp.te_of(design, design.circuits, demand, design.routing_hedge)
        result[spec.label] = (time.perf_counter() - start, te.max_utilisation)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[65_536, 262_144])
    parser.add_argument(
        "--time-limit", type=float, default=None, help="s; default 60 at 65k, 120 above"
    )
    a = parser.parse_args()
    rows = []
    for gpus in a.sizes:
        limit = a.time_limit or (60.0 if gpus <= 65_536 else 120.0)
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "out"
            wall, peak, status = solve(gpus, limit, out)
            te = te_seconds(out) if (out / "design.json").exists() else {}
            design = json.loads((out / "design.json").read_text())
            coll = pl.read_parquet(out / "sim_collectives.parquet")
            for r in coll.filter(pl.col("scenario") == "healthy").iter_rows(named=True):
                te_s, util = te.get(r["pattern"], (float("nan"), float("nan")))
                rows.append(
                    {
                        "gpus": gpus,
                        "blocks": design["pods"],
                        "exit": status,
                        "solve_s": wall,
                        "peak_mib": peak,
                        "traffic": r["pattern"],
                        "te_s": te_s,
                        "te_fraction": 1.0 / util if util else float("nan"),
                        "fraction_of_ideal": r["fraction_of_ideal"],
                        "fraction_of_bound": r["fraction_of_bound"],
                        "direct_share": r["direct_share"],
                        "mean_block_path": r["mean_group_path"],
                    }
                )
    print(
        "| GPUs | blocks | exit | solve (s) | peak MiB | traffic | TE LP (s) | TE 1/u | simulated of ideal | of bound | direct | mean block path |"
    )
    print("|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['gpus']:,} | {r['blocks']} | {r['exit']} | {r['solve_s']:.1f} | "
            f"{r['peak_mib']:,.0f} | {r['traffic']} | {r['te_s']:.2f} | {r['te_fraction']:.3f} | "
            f"{r['fraction_of_ideal']:.3f} | {r['fraction_of_bound']:.3f} | "
            f"{r['direct_share']:.3f} | {r['mean_block_path']:.3f} |"
        )


if __name__ == "__main__":
    main()

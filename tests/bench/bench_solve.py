"""Benchmark: sizing every family from 1,024 to 1,048,576 GPUs within the time limit.

Run ``uv run python tests/bench/bench_solve.py --help`` for the options; without any it sizes
every family (clos, rail_optimized, rail_only, torus, ocs_direct, ocs_torus) at 1,024, 16,384,
131,072 and 1,048,576 GPUs with the default 60 s limit and prints, per case, the wall seconds of
``plan(..., verify=False)`` (the first plan of a process: loading the solvers included) and of
its search alone, the status, the gap to the proven bound and the peak memory. Each
case runs in a fresh Python process, so its peak resident memory is its own (imports included).
``--write-instances DIR`` writes each case's instance file instead, to time the CLI on it
(``/usr/bin/time -v uv run fabric-planner solve DIR/<case>.toml --no-verify``).

Other cases of the 1M-GPU issue (every command bounded by its time limit):

- ``--verify``: plan with the verification on (the instance's default ``[verify]``), as
  ``fabric-planner solve`` without ``--no-verify``; the row says the verdict and how many
  simulation steps the limit cut.
- ``--ocs-ports N``: the catalog's OCS has N ports instead of 136 (a user catalog written into a
  temporary folder, or next to the instances with ``--write-instances``): with 576 ports the
  million-chip OCS torus pod (256 cubes of 16^3 and its spares) fits one pod.
- ``--command torus``: time ``plan_torus`` (``fabric-planner torus``) on the ``ocs_torus`` cases
  instead of ``plan``.
- ``--cap-gib G``: each case's address space is capped at G GiB (RLIMIT_AS, as ``ulimit -v``), so
  a case that would exhaust the machine ends with a MemoryError in its row instead.

Not part of the default test run: timings are reported, never asserted. Targets: issue 2,
131,072 GPUs <= 5 s and 1,048,576 <= 30 s for the Clos; the 1M-GPU issue, every family ends
within its time limit, proven optimal or with its gap stated.

How each family is configured (what it can size at a million GPUs):

- ``clos``, ``rail_optimized``, ``rail_only``: ``instances/cluster-1m.toml``'s cluster (800G
  ConnectX-8, 1, 2 or 4 planes, non-blocking, at most 5 switch hops); the rail families add an
  8-GPU NVLink 5 domain (7,200 Gb/s per GPU, enough for rail-only's cross-rail traffic).
- ``torus``: the same cluster, no hop limit (a torus of a million GPUs has a diameter in the
  tens) and ``max_oversubscription = 16`` (uniform all-to-all at 1/16 of line rate under DOR).
- ``ocs_direct``: 400G ConnectX-7 split into up to 4 planes (the catalog's duplex optics, which
  an OCS needs, run on 100G lanes; 100G planes give 256-port blocks, 64 of which fit the
  136-port OCS).
- ``ocs_torus``: a TPU-style pod of one slice of the GPU count, on the smallest cubes (4, 8 or 16
  chips a side) of which it needs at most 64; a million chips need 256 cubes of 4,096, more
  than the 136-port OCS joins (sized, and proven infeasible).
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from planner.families import FAMILIES as REGISTRY

#: Every registered family, in the registry's order.
FAMILIES = tuple(REGISTRY)
#: Ports of the catalog's OCS (``palomar-136``), as the default catalog states them.
CATALOG_OCS_PORTS = 136
#: Address space of each case, GiB (the machine has 24; other work shares it).
CAP_GIB = 12.0
SIZES = (1024, 16_384, 131_072, 1_048_576)
TIME_LIMIT_S = 60.0
#: Cube sides an OCS torus pod may take (16 is the schema's largest), and the most cubes a slice
#: should need: the 136-port OCS joins 68 cubes, spares included.
CUBE_SIDES = (4, 8, 16)
MAX_CUBES = 64


def _cluster_1m(gpus: int) -> dict[str, Any]:
    return {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 800, "nic_ports": [1, 2, 4]}


def _slice(chips: int, cube: int) -> list[int]:
    """Three chip counts, multiples of ``cube``, whose product is ``chips`` (a power of two)."""
    shape = [cube, cube, cube]
    while math.prod(shape) < chips:
        shape[shape.index(min(shape))] *= 2
    return sorted(shape, reverse=True)


def catalog_with_ocs_ports(ports: int, folder: Path) -> Path:
    """The default catalog with its OCS at ``ports`` ports, written into ``folder``."""
    from importlib import resources

    text = (resources.files("planner") / "catalog" / "default.toml").read_text(encoding="utf-8")
    line = f"ports = {CATALOG_OCS_PORTS}\n"
    if text.count(line) != 1:
        raise SystemExit(f"the default catalog no longer has one OCS of {CATALOG_OCS_PORTS} ports")
    path = folder / f"catalog-ocs-{ports}.toml"
    path.write_text(text.replace(line, f"ports = {ports}\n"), encoding="utf-8")
    return path


def instance_data(family: str, gpus: int, catalog: Path | None = None) -> dict[str, Any]:
    """The instance of one bench case, as the data of an instance file (``catalog``: a user's)."""
    data = _instance_data(family, gpus)
    if catalog is not None:
        data["search"] = {**data["search"], "catalog": str(catalog)}
    return data


def _instance_data(family: str, gpus: int) -> dict[str, Any]:
    layout = {"nodes_per_rack": 4, "racks_per_row": 32}
    constraints: dict[str, Any] = {"max_oversubscription": 1.0, "max_switch_hops": 5}
    cluster = {**_cluster_1m(gpus), "nic": "connectx-8"}
    data: dict[str, Any] = {"name": f"bench-{family}-{gpus}"}
    if family in ("rail_optimized", "rail_only"):
        cluster["scale_up"] = {"gpus": 8, "gbps_per_gpu": 7200}
    elif family == "torus":
        constraints = {"max_oversubscription": 16.0}
    elif family == "ocs_direct":
        cluster = {**cluster, "nic_gbps": 400, "nic": "connectx-7"}
    elif family == "ocs_torus":
        cube = next((c for c in CUBE_SIDES if gpus // c**3 <= MAX_CUBES), CUBE_SIDES[-1])
        data["cluster"] = {"gpus": gpus, "gpus_per_node": 4}
        data["search"] = {"families": [family]}
        data["torus"] = {"cube": cube, "slices": [_slice(gpus, cube)], "link_gbps": 400}
        return data
    data.update(cluster=cluster, layout=layout, constraints=constraints)
    data["search"] = {"families": [family]}
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    raise TypeError(f"no TOML for {value!r}")


def to_toml(data: dict[str, Any]) -> str:
    """An instance file for the data: top-level values, then one table per section."""
    lines = [f"{k} = {_toml_value(v)}" for k, v in data.items() if not isinstance(v, dict)]
    for section, table in data.items():
        if isinstance(table, dict):
            lines += ["", f"[{section}]"]
            lines += [f"{k} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"


def run_case(
    family: str,
    gpus: int,
    time_limit_s: float,
    *,
    verify: bool = False,
    ocs_ports: int | None = None,
    command: str = "plan",
) -> dict[str, Any]:
    """Plan one case in this process: wall seconds, status, gap, peak memory, a note."""
    import tempfile

    from planner.api import plan, plan_torus
    from planner.deadline import cut_notes
    from planner.loading import load_catalog
    from planner.schema.instance import Instance

    with tempfile.TemporaryDirectory() as folder:
        path = None if ocs_ports is None else catalog_with_ocs_ports(ocs_ports, Path(folder))
        inst = Instance.model_validate(instance_data(family, gpus, path))
        catalog = load_catalog("default" if path is None else str(path))
        start = time.perf_counter()
        if command == "torus":
            pod = plan_torus(inst, catalog=catalog, time_limit_s=time_limit_s)
            wall = time.perf_counter() - start
            row = pod.pod.row(0, named=True)
            checked = pod.slices["torus_ok"].to_list() + pod.failure["torus_ok"].to_list()
            return {
                "family": family,
                "gpus": gpus,
                "wall_s": wall,
                "status": row["status"],
                "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                "note": (
                    f"torus: {row['cubes']} cubes of {row['cube']}^3, "
                    f"{int(pod.slices['circuits'].sum()):,} circuits, checks "
                    f"{checked.count(True)} ok / {checked.count(False)} broken / "
                    f"{checked.count(None)} cut"
                    if row["spares"] is not None
                    else row["reason"]
                ),
            }
        result = plan(inst, catalog=catalog, time_limit_s=time_limit_s, verify=verify)
        wall = time.perf_counter() - start
    d = result.design
    note = (
        f"{d.planes} plane(s), {len(d.tiers)} switch group(s), ${d.objective_usd / 1e6:,.1f}M"
        if d is not None
        else (result.explanation[0] if result.explanation else "")
    )
    if d is not None and cut_notes(d.notes):
        note += f"; {len(cut_notes(d.notes))} post-solve step(s) cut"
    if result.sim is not None:
        note += f"; verdict {result.sim.verdict}, {len(result.sim.cut)} simulation step(s) cut"
    return {
        "family": family,
        "gpus": gpus,
        "wall_s": wall,
        "search_s": result.search.wall_s,
        "status": result.status.value,
        "gap": None if d is None else d.gap,
        "peak_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "note": note,
    }


def run_isolated(family: str, gpus: int, args: argparse.Namespace) -> dict[str, Any]:
    """``run_case`` in a fresh Python process (its own peak memory), its address space capped."""
    argv = [sys.executable, __file__, "--case", family, str(gpus)]
    argv += ["--time-limit", str(args.time_limit), "--command", args.command]
    argv += ["--verify"] if args.verify else []
    argv += [] if args.ocs_ports is None else ["--ocs-ports", str(args.ocs_ports)]
    cap = int(args.cap_gib * 2**30)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap, cap))

    done = subprocess.run(argv, capture_output=True, text=True, check=False, preexec_fn=limit)
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"family": family, "gpus": gpus, "status": "crashed", "note": tail}
    row: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return row


def _row(r: dict[str, Any]) -> str:
    wall = f"{r['wall_s']:8.2f}" if "wall_s" in r else f"{'-':>8}"
    search = f"{r['search_s']:8.2f}" if "search_s" in r else f"{'-':>8}"
    gap = "-" if r.get("gap") is None else f"{r['gap']:.2%}"
    peak = f"{r['peak_mib']:8.0f}" if "peak_mib" in r else f"{'-':>8}"
    return (
        f"{r['family']:<15} {r['gpus']:>10,} {wall} {search} {r['status']:>11} {gap:>8} {peak}"
        f"  {r['note']}"
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(
            "Size every family at 1k..1M GPUs (plan with verification off) and print wall "
            "seconds, status, gap and peak memory per case, each case in its own process."
        )
    )
    parser.add_argument(
        "--families",
        nargs="+",
        choices=FAMILIES,
        default=list(FAMILIES),
        metavar="FAMILY",
        help=f"families to size (default: all of {', '.join(FAMILIES)})",
    )
    parser.add_argument(
        "--sizes",
        nargs="+",
        type=int,
        default=list(SIZES),
        metavar="GPUS",
        help="GPU counts, powers of two of at least 1,024 (default: %(default)s)",
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=TIME_LIMIT_S,
        metavar="S",
        help="time limit of each plan, seconds (default: %(default)s)",
    )
    parser.add_argument(
        "--write-instances",
        type=Path,
        metavar="DIR",
        help="write each case's instance file into DIR (for timing the CLI) and exit",
    )
    parser.add_argument(
        "--verify",
        action="store_true",
        help="plan with the verification on (the instance's default [verify])",
    )
    parser.add_argument(
        "--ocs-ports",
        type=int,
        metavar="N",
        help=f"ports of the catalog's OCS (a user catalog; default: {CATALOG_OCS_PORTS})",
    )
    parser.add_argument(
        "--command",
        choices=("plan", "torus"),
        default="plan",
        help="what to time: plan (fabric-planner solve) or, for ocs_torus, plan_torus "
        "(fabric-planner torus) (default: %(default)s)",
    )
    parser.add_argument(
        "--cap-gib",
        type=float,
        default=CAP_GIB,
        metavar="G",
        help="address space of each case in GiB, as ulimit -v (default: %(default)s)",
    )
    parser.add_argument("--case", nargs=2, metavar=("FAMILY", "GPUS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    bad = [g for g in args.sizes if g < 1024 or g & (g - 1)]
    if bad:
        parser.error(f"--sizes: {bad} are not powers of two of at least 1,024")
    if args.command == "torus" and args.case is None and set(args.families) - {"ocs_torus"}:
        parser.error(
            "--command torus: plan_torus plans ocs_torus cases only (--families ocs_torus)"
        )
    if args.ocs_ports is not None and args.ocs_ports < 2:
        parser.error("--ocs-ports: an OCS has at least 2 ports")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.case is not None:
        family, gpus = args.case
        row = run_case(
            family,
            int(gpus),
            args.time_limit,
            verify=args.verify,
            ocs_ports=args.ocs_ports,
            command=args.command,
        )
        print(json.dumps(row))
        return 0
    cases = [(f, g) for f in args.families for g in args.sizes]
    if args.write_instances is not None:
        args.write_instances.mkdir(parents=True, exist_ok=True)
        catalog = (
            None
            if args.ocs_ports is None
            else catalog_with_ocs_ports(args.ocs_ports, args.write_instances).resolve()
        )
        for family, gpus in cases:
            path = args.write_instances / f"bench-{family}-{gpus}.toml"
            path.write_text(to_toml(instance_data(family, gpus, catalog)))
            print(path)
        return 0
    what = "plan_torus" if args.command == "torus" else "plan"
    checks = (
        ""
        if args.command == "torus"
        else (", verification on" if args.verify else ", verification off")
    )
    ports = "" if args.ocs_ports is None else f", {args.ocs_ports}-port OCS"
    print(f"time limit {args.time_limit:g} s per {what}{checks}{ports}, cap {args.cap_gib:g} GiB")
    head = (
        f"{'family':<15} {'GPUs':>10} {'wall s':>8} {'search s':>8} {'status':>11} {'gap':>8} "
        f"{'peak MiB':>8}"
    )
    print(head + "  design or why none")
    for family, gpus in cases:
        print(_row(run_isolated(family, gpus, args)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

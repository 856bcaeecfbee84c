"""Benchmark: one 100-scenario study through each executor, and whether their rows agree.

Run: ``uv run python tests/bench/bench_sweep.py [--workers 2]``. Not run in CI. The study is the
tests' (``tests/study/conftest.py``: a 64-GPU instance, 25 sizes x 2 NIC speeds x 2 ratio caps,
verification off), planned serially in this process, on a local pool of fresh processes and on a
Dask ``LocalCluster`` (processes, one thread each). Wall time counts what a user waits for: the
pool's and the cluster's start-up included (the cluster's start is also given alone). Writes
``RESULTS_sweep.md`` next to this file.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from planner.study import SerialExecutor, process_pool, sweep
from tests.study.conftest import GRID_100, TIME_LIMIT_S, comparable, tiny

RESULTS = Path(__file__).with_name("RESULTS_sweep.md")


def timed(run: Callable[[], pl.DataFrame]) -> tuple[float, pl.DataFrame]:
    """Wall time of ``run`` and what it returned."""
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    inst = tiny()

    def study(executor: object) -> pl.DataFrame:
        return sweep(inst, GRID_100, executor, verify=False, time_limit_s=TIME_LIMIT_S)  # type: ignore[arg-type]

    rows: list[tuple[str, float, str]] = []
    serial_s, reference = timed(lambda: study(SerialExecutor()))
    rows.append(("serial, in this process", serial_s, "reference"))

    def pooled() -> pl.DataFrame:
        with process_pool(args.workers) as pool:
            return study(pool)

    pool_s, pooled_rows = timed(pooled)
    same = comparable(pooled_rows).equals(comparable(reference))
    rows.append((f"process pool of {args.workers}", pool_s, "identical" if same else "DIFFERENT"))

    from distributed import Client, LocalCluster

    start = time.perf_counter()
    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True)
    client = Client(cluster)
    cluster_s = time.perf_counter() - start
    try:
        dask_s, dask_rows = timed(lambda: study(client.get_executor()))
    finally:
        client.close()
        cluster.close()
    same = comparable(dask_rows).equals(comparable(reference))
    rows.append(
        (
            f"Dask LocalCluster of {args.workers} (start {cluster_s:.1f} s included)",
            dask_s + cluster_s,
            "identical" if same else "DIFFERENT",
        )
    )
    lines = [
        "# A 100-scenario study through each executor (issue 14)",
        "",
        "`uv run python tests/bench/bench_sweep.py`: the tests' 100-scenario study of a 64-GPU",
        "instance (verification off), serial, on a process pool and on a Dask LocalCluster;",
        "rows compared with the serial run's, wall-clock columns left out.",
        "",
        "| executor | wall s | rows |",
        "|---|---:|---|",
        *[f"| {name} | {wall:.1f} | {what} |" for name, wall, what in rows],
    ]
    RESULTS.write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

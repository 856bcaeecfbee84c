"""A what-if study: what do oversubscription and cluster size save, and what do they cost.

Plans ``instances/small-256.toml`` for 256, 512 and 1,024 GPUs, each non-blocking (1:1) and
oversubscribed (2:1, 3:1), verifies each design by simulation, prints the study table and its
Pareto front (capex and power against simulated throughput), and writes the tables and figures::

    uv run python -m planner.examples.what_if [--out DIR] [--workers N]

The finished scenarios are kept beside it, in ``DIR-parts/``: a re-run (after Ctrl-C, say)
plans only the scenarios not finished yet.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import polars as pl

from planner.api import load_instance, write_set
from planner.output import table_writers
from planner.study import SerialExecutor, pareto_front, process_pool, sweep, with_pareto
from planner.study.figures import figure_files

#: The instance studied: small enough that each scenario plans and simulates in about a second.
INSTANCE = Path(__file__).resolve().parents[2] / "instances" / "small-256.toml"
#: The grid: every combination is a scenario (9).
GRID: dict[str, list[Any]] = {
    "cluster.gpus": [256, 512, 1024],
    "constraints.max_oversubscription": [1.0, 2.0, 3.0],
}
#: Columns printed.
SHOWN = ["scenario", "capex_usd", "power_kw", "oversubscription", "sim_fraction_ecmp", "verdict"]


def main(argv: list[str] | None = None) -> None:
    """Run the study, print it and write it into ``--out`` (default reports/what-if)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("reports") / "what-if")
    parser.add_argument("--workers", type=int, default=None, help="1: no process pool")
    args = parser.parse_args(argv)

    inst = load_instance(INSTANCE)

    def progress(done: int, total: int, scenario: str) -> None:
        print(f"[{done}/{total}] {scenario}", flush=True)

    executor = SerialExecutor() if args.workers == 1 else process_pool(args.workers)
    with executor:
        study = sweep(
            inst,
            GRID,
            executor,
            results=args.out.with_name(f"{args.out.name}-parts"),
            progress=progress,
        )
    study = with_pareto(study)
    front = pareto_front(study)
    with pl.Config(tbl_cols=-1, tbl_rows=-1, tbl_width_chars=160, fmt_str_lengths=50):
        print(study.select(SHOWN))
        print("Pareto front:")
        print(front.select(SHOWN))
    files = table_writers("study", study) | table_writers("pareto", front)
    files |= figure_files(study, list(GRID))
    for path in write_set(args.out, files, command="examples.what_if"):
        print(f"wrote {path}")


if __name__ == "__main__":
    main()

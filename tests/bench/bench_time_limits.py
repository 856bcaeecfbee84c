"""Benchmark of issue 32: every example's ``solve`` ends within its time limit, on a loaded machine.

Run: ``uv run python tests/bench/bench_time_limits.py [--only NAME ...] [--busy N]``.
Not run in CI. Each example instance (``instances/*.toml``) is solved with its default options
(the CLI's default time limit) by the installed ``fabric-planner``
command as a subprocess, one at a time, while ``--busy`` other processes (default 1) each keep a
core busy with a tight loop. It prints a markdown table: instance, limit_s, wall_s, over_s
(wall - limit, the acceptance being over_s <= 5), peak RSS MiB (the child's max RSS from
``os.wait4``, children included) and the exit status (0 a design, 1 none, 4 verification fails).
The wall time counts from the command's start to its exit, the interpreter's start-up included,
as a user's stopwatch does.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
#: ru_maxrss is in KiB on Linux.
KIB_PER_MIB = 1024
#: The acceptance of issue 32: a command ends within its limit plus this.
GRACE_S = 5.0
#: A run is stopped after its limit plus this (the table then says so).
KILL_AFTER_S = 300.0


@dataclass(frozen=True)
class Run:
    """One solve: its limit, wall time, peak memory and how it ended."""

    instance: str
    limit_s: float
    wall_s: float
    peak_rss_mib: float
    status: str

    @property
    def over_s(self) -> float:
        """Seconds past the limit (negative: within it)."""
        return self.wall_s - self.limit_s


def default_limit_s() -> float:
    """The CLI's default ``--time-limit`` (an instance file has no time limit of its own)."""
    from planner.defaults import DEFAULT_TIME_LIMIT_S

    return float(DEFAULT_TIME_LIMIT_S)


def _command() -> str:
    exe = Path(sys.executable).with_name("fabric-planner")
    return str(exe) if exe.exists() else "fabric-planner"


def solve(path: Path, limit_s: float) -> Run:
    """``fabric-planner solve PATH`` with its default options, into a temporary folder."""
    with tempfile.TemporaryDirectory() as out:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [_command(), "solve", str(path), "-o", out, "--force", "-q"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        killed = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > limit_s + KILL_AFTER_S:
                os.killpg(proc.pid, signal.SIGKILL)
                killed = True
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.02)
        wall_s = time.perf_counter() - start
        proc.returncode = 0  # reaped above; keep Popen from waiting again
    if killed:
        what = f"killed at {limit_s + KILL_AFTER_S:.0f} s"
    elif os.WIFSIGNALED(status):
        what = f"signal {os.WTERMSIG(status)}"
    else:
        what = f"exit {os.WEXITSTATUS(status)}"
    return Run(path.stem, limit_s, wall_s, usage.ru_maxrss / KIB_PER_MIB, what)


def spin() -> None:
    """Keep one core busy until killed."""
    x = 0
    while True:
        x = (x + 1) % 1_000_003


def table(runs: list[Run], busy: int) -> str:
    """The markdown table of the runs."""
    lines = [
        f"`solve` of every example, default options, {busy} other core(s) kept busy, "
        f"{os.cpu_count()} cores; acceptance: over_s <= {GRACE_S:g}.",
        "",
        "| instance | limit_s | wall_s | over_s | peak RSS MiB | exit |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for r in runs:
        flag = "" if r.over_s <= GRACE_S else " **over**"
        lines.append(
            f"| {r.instance} | {r.limit_s:g} | {r.wall_s:.1f} | {r.over_s:+.1f}{flag} | "
            f"{r.peak_rss_mib:,.0f} | {r.status} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", default=None, help="substrings of instance names")
    parser.add_argument("--busy", type=int, default=1, help="processes keeping a core busy")
    args = parser.parse_args()
    paths = sorted((ROOT / "instances").glob("*.toml"))
    if args.only:
        paths = [p for p in paths if any(s in p.stem for s in args.only)]
    spinners = [mp.Process(target=spin, daemon=True) for _ in range(args.busy)]
    for p in spinners:
        p.start()
    runs: list[Run] = []
    try:
        for path in paths:
            run = solve(path, default_limit_s())
            runs.append(run)
            print(
                f"{run.instance}: {run.wall_s:.1f} s of {run.limit_s:g} ({run.over_s:+.1f}), "
                f"{run.peak_rss_mib:,.0f} MiB, {run.status}",
                file=sys.stderr,
                flush=True,
            )
    finally:
        for p in spinners:
            p.kill()
            p.join()
    print(table(runs, args.busy))


if __name__ == "__main__":
    main()

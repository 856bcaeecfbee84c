"""Benchmark: how long a user waits before the command line answers (issue 32).

Times, as fresh processes of the installed ``fabric-planner`` script, what must answer at once:
``--help``, ``solve --help``, ``schema``, ``schema --catalog``, and a bad instance's error (a TOML
syntax error, an unknown field). Each is the least of ``--repeat`` runs (the machine's noise only
adds), with the peak memory of that run. It also runs the fast test tier, optionally while one
process keeps a core busy, and prints each run's wall time (``--tests N``).

    uv run --dev python tests/bench/bench_startup.py [--repeat 7] [--tests 0] [--busy]

Targets (issue 32): --help under 0.3 s, a bad-input error under 0.5 s on an idle machine; the
fast tier under two minutes with a core busy. Figures go in tests/bench/RESULTS.md.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: Bad instance files: what the error must answer for.
BAD = {
    "bad input: TOML syntax": "name = \n",
    "bad input: unknown field": 'name = "x"\n[cluster]\ngpus = 8\nbogus = 1\n',
}


def script() -> str:
    """The installed console script beside this interpreter."""
    found = Path(sys.executable).with_name("fabric-planner")
    if not found.exists():
        raise SystemExit("fabric-planner is not installed beside this Python: run with uv run")
    return str(found)


def timed(args: list[str], cwd: Path) -> tuple[float, float, int]:
    """Wall seconds, peak RSS (MiB) and exit status of one run (its own rusage, by wait4)."""
    start = time.perf_counter()
    child = subprocess.Popen(args, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    return wall, usage.ru_maxrss / 1024.0, child.returncode


def burn() -> None:
    """Keep one core busy until killed."""
    while True:
        pass


def main() -> None:
    """Print the table of start-up times (and of fast-tier runs with --tests)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs of each command")
    parser.add_argument("--tests", type=int, default=0, help="fast-tier runs to time")
    parser.add_argument("--busy", action="store_true", help="keep one core busy meanwhile")
    args = parser.parse_args()
    exe = script()
    hog = multiprocessing.Process(target=burn, daemon=True) if args.busy else None
    if hog is not None:
        hog.start()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            cwd = Path(tmp)
            cases = {
                "--help": [exe, "--help"],
                "solve --help": [exe, "solve", "--help"],
                "schema": [exe, "schema"],
                "schema --catalog": [exe, "schema", "--catalog"],
            }
            for label, text in BAD.items():
                name = label.split(": ")[1].replace(" ", "-") + ".toml"
                (cwd / name).write_text(text, encoding="utf-8")
                cases[label] = [exe, "solve", name, "-o", "out"]
            print(f"machine: {os.cpu_count()} cores, one busy: {args.busy}")
            print("| command | least of runs (s) | median (s) | peak RSS (MiB) | exit |")
            print("|---|---:|---:|---:|---:|")
            for label, command in cases.items():
                runs = [timed(command, cwd) for _ in range(args.repeat)]
                walls = sorted(r[0] for r in runs)
                print(
                    f"| `{label}` | {walls[0]:.3f} | {walls[len(walls) // 2]:.3f} | "
                    f"{runs[0][1]:.0f} | {runs[0][2]} |"
                )
                shutil.rmtree(cwd / "out", ignore_errors=True)
        for k in range(args.tests):
            start = time.perf_counter()
            done = subprocess.run(
                [sys.executable, "-m", "pytest", "-p", "no:cacheprovider"],
                cwd=REPO,
                capture_output=True,
                text=True,
                check=False,
            )
            tail = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""
            print(
                f"fast tier run {k + 1}: {time.perf_counter() - start:.1f} s, exit {done.returncode}: {tail}"
            )
    finally:
        if hog is not None:
            hog.terminate()


if __name__ == "__main__":
    main()

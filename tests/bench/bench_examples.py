"""Benchmark: the default ``solve`` of every example instance, ``compare-fabrics`` on ocs-65k, and
the README's study (``sweep``, serial and on a pool of two processes).

Run: ``uv run python tests/bench/bench_examples.py --label before|after|speed2|final|tiers|scaleup|pictures|trust|packet [--only NAME ...]``.
Not run in CI. Every case runs the installed ``fabric-planner`` command as a subprocess, one at a
time, with its address space capped (``--cap-gib``, RLIMIT_AS, as ``ulimit -v`` does) and a wall
time limit (``--timeout-s``). It records wall time, peak memory (the child's max RSS from
``os.wait4``, children included) and the exit status, and writes them into the ``label`` column of
the markdown table ``RESULTS_examples.md`` next to this file (the other column is kept), so the
before and after figures sit side by side.

Targets (issue 11): every default solve, verification included, <= 60 s and <= 4 GiB;
``cluster-131k`` <= 30 s; ``compare-fabrics instances/ocs-65k.toml`` <= 120 s and <= 4 GiB.
Exit status of a solve: 0 a design was found, 1 none exists (``infeasible-200k-3hops`` is meant
to), 4 the verification verdict is 'fails'.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RESULTS = Path(__file__).with_name("RESULTS_examples.md")
BYTES_PER_GIB = 2**30
KIB_PER_GIB = 2**20
#: Columns of the table: code before issue 11, after its first pass, after its second (speed2),
#: with packet-level fidelity and streamed phases (final), with the tiered spraying loads (tiers),
#: with the scale-up domain in every simulation and the rail families in the search (scaleup),
#: and with every solve drawing its pictures and report.html, and the study cases (pictures).
LABELS = ("before", "after", "speed2", "final", "tiers", "scaleup", "pictures", "trust", "packet")
#: The README's study: 3 sizes x 3 oversubscription caps of small-256.
README_GRID = (
    "--grid",
    "cluster.gpus=256,512,1024",
    "--grid",
    "constraints.max_oversubscription=1,2,3",
)


@dataclass(frozen=True)
class Case:
    """One command of the benchmark."""

    name: str
    args: tuple[str, ...]


@dataclass(frozen=True)
class Outcome:
    """What one case did: wall time, peak RSS and how it ended."""

    wall_s: float
    peak_rss_gib: float
    status: str


def cases() -> list[Case]:
    """Default solve of every instance in instances/, then compare-fabrics on ocs-65k."""
    out = [
        Case(f"solve {p.name}", ("solve", str(p)))
        for p in sorted((ROOT / "instances").glob("*.toml"))
    ]
    out.append(Case("compare-fabrics ocs-65k.toml", ("compare-fabrics", "instances/ocs-65k.toml")))
    study = ("sweep", "instances/small-256.toml", *README_GRID)
    out.append(Case("sweep small-256 3x3, --workers 1", (*study, "--workers", "1")))
    out.append(Case("sweep small-256 3x3, pool of 2", (*study, "--workers", "2")))
    return out


def _command() -> str:
    exe = Path(sys.executable).with_name("fabric-planner")
    return str(exe) if exe.exists() else "fabric-planner"


def run_case(case: Case, cap_gib: float, timeout_s: float) -> Outcome:
    """Run one case under the caps; peak RSS from os.wait4 (the child and its children)."""
    cap_bytes = int(cap_gib * BYTES_PER_GIB)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (cap_bytes, cap_bytes))
        os.setsid()

    with tempfile.TemporaryDirectory() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [_command(), *case.args, "-o", out, "--force", "-q"],
            cwd=ROOT,
            stdout=subprocess.DEVNULL,
            stderr=err,
            preexec_fn=limit,
        )
        timed_out = False
        while True:
            pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
            if pid:
                break
            if time.perf_counter() - start > timeout_s:
                os.killpg(proc.pid, signal.SIGKILL)
                timed_out = True
                pid, status, usage = os.wait4(proc.pid, 0)
                break
            time.sleep(0.05)
        wall = time.perf_counter() - start
        proc.returncode = 0  # reaped above; keep Popen from waiting again
        err.seek(0)
        stderr = err.read().decode(errors="replace")
    peak = usage.ru_maxrss / KIB_PER_GIB  # ru_maxrss is in KiB on Linux
    if timed_out:
        what = f"stopped at {timeout_s:.0f} s"
    elif "MemoryError" in stderr or "Unable to allocate" in stderr or "bad_alloc" in stderr:
        what = f"killed at {cap_gib:g} GiB"
    elif os.WIFSIGNALED(status):
        what = f"signal {os.WTERMSIG(status)}"
    else:
        what = f"exit {os.WEXITSTATUS(status)}"
    return Outcome(wall, peak, what)


# ---- the markdown table ------------------------------------------------------------------------
HEADER = (
    "| case | "
    + " | ".join(f"{label}: wall s | {label}: peak GiB | {label}: status" for label in LABELS)
    + " |"
)
RULE = "|---|" + "---:|---:|---|" * len(LABELS)
_ROW = re.compile(r"^\| (?P<case>[^|]+?) \|(?P<cells>.*)\|$")


def read_table(path: Path) -> tuple[list[str], dict[str, list[str]]]:
    """Text before the table, and the cells of every case row (three per label)."""
    if not path.exists():
        return [], {}
    intro, rows, in_table = [], {}, False
    for line in path.read_text().splitlines():
        if line.startswith("| case |"):  # this header or an earlier one with fewer labels
            in_table = True
            continue
        if in_table and line.startswith("|---"):
            continue
        m = _ROW.match(line) if in_table else None
        if m:
            cells = [c.strip() for c in m["cells"].split("|")]
            rows[m["case"]] = cells + ["-"] * (3 * len(LABELS) - len(cells))
        elif not in_table:
            intro.append(line)
        else:
            break
    return intro, rows


def write_table(path: Path, intro: list[str], rows: dict[str, list[str]]) -> None:
    lines = intro or [
        "# Example instances: default solve and compare-fabrics (issue 11)",
        "",
        "`uv run python tests/bench/bench_examples.py --label before|after`; one case at a time, "
        "2-core machine shared with other work, address space capped (RLIMIT_AS) and a wall time "
        "limit. Peak = max RSS of the command and its children. Targets: <= 60 s and <= 4 GiB each, "
        "cluster-131k <= 30 s, compare-fabrics ocs-65k <= 120 s and <= 4 GiB.",
        "",
    ]
    body = [HEADER, RULE] + [
        f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows.items()
    ]
    path.write_text("\n".join([*lines, *body]) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", choices=LABELS, required=True)
    parser.add_argument("--cap-gib", type=float, default=10.0, help="address-space cap per case")
    parser.add_argument("--timeout-s", type=float, default=600.0, help="wall time limit per case")
    parser.add_argument("--only", nargs="*", default=None, help="substrings of case names to run")
    args = parser.parse_args()
    intro, rows = read_table(RESULTS)
    col = 3 * LABELS.index(args.label)
    for case in cases():
        if args.only and not any(s in case.name for s in args.only):
            continue
        result = run_case(case, args.cap_gib, args.timeout_s)
        cells = rows.get(case.name, ["-"] * (3 * len(LABELS)))
        cells[col : col + 3] = [f"{result.wall_s:.1f}", f"{result.peak_rss_gib:.2f}", result.status]
        rows[case.name] = cells
        write_table(RESULTS, intro, rows)
        print(f"{case.name}: {result.wall_s:.1f} s, {result.peak_rss_gib:.2f} GiB, {result.status}")


if __name__ == "__main__":
    main()

"""Benchmark: failures as rates, what a user waits for (not run in CI).

Run: ``uv run python tests/bench/bench_goodput.py``. Prints a Markdown table of three cases,
each in its own process (so its peak RSS is its own):

* ``solve llama3-16k-goodput``: the CLI's whole ``solve`` of the Llama 3 example (search,
  parallelism search, reliability closed form, 200 Monte Carlo months, every report file);
* ``assess 65k``: the closed form and 1,000 Monte Carlo months on the 65,536-GPU OCS example's
  design (the most component classes, the most interruptions a day);
* ``walk 4k dual-ToR``: the failure-priced walk of ``tests/reliability/test_reliability_options.py`` at a
  12-hour restart (2 NICs x optics options, each planned and simulated).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

ASSESS_65K = """
import time
from planner.api import load_catalog, load_instance, plan
from planner.reliability import assess
from planner.schema.reliability import Reliability
inst = load_instance("instances/ocs-65k.toml")
design = plan(inst, time_limit_s=120, verify=False, alternatives=False).design
start = time.perf_counter()
a = assess(design, load_catalog().reliability, Reliability(monte_carlo_trials=1000))
print("INNER", time.perf_counter() - start, a.closed.goodput_fraction, a.monte_carlo.goodput_fraction)
"""

WALK_4K = """
import sys, time
sys.path.append("tests/reliability")
from pathlib import Path
import tempfile
from test_reliability_options import PLANES_INSTANCE
from planner.api import load_instance, plan
path = Path(tempfile.mkdtemp()) / "walk.toml"
path.write_text(PLANES_INSTANCE.replace("RESTART", "720.0"))
start = time.perf_counter()
result = plan(load_instance(path), time_limit_s=120, alternatives=False)
print("INNER", time.perf_counter() - start, result.design.planes, result.design.nic)
"""


def _run(argv: list[str]) -> tuple[float, float, str]:
    """Wall seconds, peak RSS (MiB, GNU time's %M) and the last output line of one process."""
    start = time.perf_counter()
    out = subprocess.run(
        ["/usr/bin/time", "-f", "PEAK %M", *argv], cwd=ROOT, capture_output=True, text=True
    )
    wall = time.perf_counter() - start
    if out.returncode not in (0, 4):  # 4: found, but [verify] fails (still a measured run)
        raise SystemExit(f"{argv}: exit {out.returncode}\n{out.stderr[-2000:]}")
    peak = next((int(x.split()[1]) for x in out.stderr.splitlines() if x.startswith("PEAK ")), 0)
    lines = out.stdout.strip().splitlines()
    return wall, peak / 1024.0, lines[-1] if lines else ""


def main() -> None:
    """Run the three cases and print the table."""
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cmd = ["uv", "run", "fabric-planner", "solve", "instances/llama3-16k-goodput.toml"]
        wall, peak, last = _run([*cmd, "-o", str(Path(tmp) / "out"), "--json", "-q"])
        summary = json.loads(last) if last.startswith("{") else {}
        rows.append(
            (
                "solve llama3-16k-goodput",
                wall,
                peak,
                f"goodput {summary.get('goodput_fraction', float('nan')):.4f}, network "
                f"{summary.get('network_interruptions_per_day', float('nan')):.3f}/day",
            )
        )
    for label, code in (("assess 65k", ASSESS_65K), ("walk 4k dual-ToR", WALK_4K)):
        wall, peak, last = _run([sys.executable, "-c", code])
        rows.append((label, wall, peak, last.removeprefix("INNER ")))
    print("| case | wall (s) | peak RSS (MiB) | inner figures |")
    print("|---|---:|---:|---|")
    for label, wall, peak, text in rows:
        print(f"| {label} | {wall:.1f} | {peak:,.0f} | {text} |")


if __name__ == "__main__":
    main()

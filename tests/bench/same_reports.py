"""Benchmark of a refactoring: every example instance's report folder, before and after.

Run ``uv run python tests/bench/same_reports.py run DIR [--only NAME ...]`` at one commit and again
at another into a second folder, then ``uv run python tests/bench/same_reports.py compare DIR1
DIR2``. ``run`` solves every instance of ``instances/`` with ``--time-limit`` (default 600 s, so no
step is cut by a busy machine) into ``DIR/<instance>/``. ``compare`` lists every file that differs
once its timings are masked: the columns and keys that hold seconds measured on the wall clock
(``wall_s``, ``solve_s``, ...), the cells of report.md's and report.html's tables that print them; a PNG is not compared (its
bytes carry a drawing date), an SVG by the words it draws. Not run in CI.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

import polars as pl

ROOT = Path(__file__).resolve().parents[2]

#: Column and key names that hold a measured time, not a planned figure.
TIMING = re.compile(r"(^|_)(wall|solve|time|elapsed|seconds|runtime)(_s)?$|_s$|_wall_|^timings?$")
#: Text that prints a measured duration: "12.3 s", "in 4.1 s", "(0.52 s)".
DURATION = re.compile(r"\d+(\.\d+)?\s?(s|ms|seconds)\b")
#: A table heading (report.md, report.html) of a measured time: "solve (s)", "wall (s)".
TIMING_LABEL = re.compile(r"\b(solve|wall|elapsed|runtime)\b[^|<]*\((s|ms)\)")
#: A cell of an HTML table.
CELL = re.compile(r"<(td|th)([^>]*)>(.*?)</\1>", re.S)
#: Pictures whose bytes carry a drawing date and font subsets: a PNG is not compared, an SVG by
#: the words it draws (``_svg_words``).
PICTURES = {".png"}
#: The SVG namespace.
SVG_NS = "{http://www.w3.org/2000/svg}"


def run(out: Path, only: list[str], time_limit_s: float) -> int:
    """Solve every example instance into ``out``; returns how many commands crashed (exit 3)."""
    out.mkdir(parents=True, exist_ok=True)
    crashed = 0
    for toml in sorted((ROOT / "instances").glob("*.toml")):
        if only and toml.stem not in only:
            continue
        target = out / toml.stem
        cmd = ["fabric-planner", "solve", str(toml), "-o", str(target), "--force"]
        cmd += ["--time-limit", str(time_limit_s)]
        proc = subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT)
        (out / f"{toml.stem}.exit").write_text(f"{proc.returncode}\n")
        (out / f"{toml.stem}.stdout").write_text(DURATION.sub("<t>", proc.stdout))
        print(f"{toml.stem}: exit {proc.returncode}", flush=True)
        crashed += proc.returncode == 3
    return crashed


def _mask_json(value: object) -> object:
    if isinstance(value, dict):
        return {k: "<t>" if TIMING.search(k) else _mask_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_mask_json(v) for v in value]
    if isinstance(value, str):
        return DURATION.sub("<t>", value)
    return value


def _mask_markdown(text: str) -> str:
    """Markdown tables with the cells of their timing columns masked."""
    out, timing = [], set[int]()
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if not line.startswith("|"):
            timing = set()
        elif i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            timing = {j for j, c in enumerate(line.split("|")) if TIMING_LABEL.search(c)}
        elif timing and not line.startswith("|---"):
            cells = line.split("|")
            line = "|".join("<t>" if j in timing else c for j, c in enumerate(cells))
        out.append(line)
    return "\n".join(out)


def _mask_html(text: str) -> str:
    """HTML tables with their timing cells masked: a timing column's, or a turned table's row."""
    out = []
    for table in re.split(r"(?=<table)", text):
        timing: set[int] = set()
        rows = []
        for row in re.split(r"(?=<tr)", table):
            cells = CELL.findall(row)
            if cells and all(kind == "th" for kind, _, _ in cells):
                timing = {j for j, (_, _, t) in enumerate(cells) if TIMING_LABEL.search(t)}
            elif cells:
                turned = TIMING_LABEL.search(cells[0][2])
                masked = iter(range(len(cells)))

                def mask(
                    m: re.Match[str],
                    masked: object = masked,
                    turned: object = turned,
                    timing: set[int] = timing,
                ) -> str:
                    j = next(masked)  # type: ignore[call-overload]
                    hide = j in timing or (turned and j == 1)
                    return f"<{m[1]}{m[2]}><t></{m[1]}>" if hide else m[0]

                row = CELL.sub(mask, row)
            rows.append(row)
        out.append("".join(rows))
    return DURATION.sub("<t>", "".join(out))


def _svg_words(path: Path) -> list[str]:
    """Every text an SVG draws, in order: titles, labels, notes, legends."""
    import xml.etree.ElementTree as ET

    root = ET.fromstring(path.read_bytes())
    return ["".join(t.itertext()) for t in root.iter(f"{SVG_NS}text")]


def _masked(path: Path) -> object:
    """The file's content with its measured times masked."""
    suffix = path.suffix
    if suffix in {".csv", ".parquet"}:
        df = pl.read_csv(path, infer_schema=False) if suffix == ".csv" else pl.read_parquet(path)
        timing = [c for c in df.columns if TIMING.search(c)]
        df = df.with_columns(pl.lit("<t>").alias(c) for c in timing)
        return df.cast(pl.String).rows()
    if suffix == ".json" or path.name == ".fabric-planner":
        try:
            return _mask_json(json.loads(path.read_text()))
        except ValueError:
            return path.read_bytes()
    if suffix == ".svg":
        return _svg_words(path)
    if suffix == ".md":
        return DURATION.sub("<t>", _mask_markdown(path.read_text()))
    if suffix == ".html":
        return _mask_html(path.read_text())
    if suffix == ".stdout":  # the folder it wrote differs between runs
        return DURATION.sub("<t>", path.read_text().replace(str(path.parent), "<dir>"))
    if suffix in {".txt", ".exit"}:
        return DURATION.sub("<t>", path.read_text())
    return path.read_bytes()


def compare(a: Path, b: Path) -> int:
    """Print every file that differs between the two runs; returns how many differ."""
    names = {p.relative_to(a) for p in a.rglob("*") if p.is_file()}
    names |= {p.relative_to(b) for p in b.rglob("*") if p.is_file()}
    differ = 0
    for rel in sorted(names):
        pa, pb = a / rel, b / rel
        if not pa.exists() or not pb.exists():
            print(f"only in {'the first' if pa.exists() else 'the second'}: {rel}")
            differ += 1
        elif rel.suffix in PICTURES or rel.name == ".fabric-planner":
            continue
        elif _masked(pa) != _masked(pb):
            print(f"differs: {rel}")
            differ += 1
    print(f"{len(names)} files, {differ} differ")
    return differ


def main() -> int:
    """Command line: ``run`` or ``compare``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="solve every example instance into DIR")
    r.add_argument("dir", type=Path)
    r.add_argument("--only", nargs="*", default=[], help="instance names (file stems)")
    r.add_argument("--time-limit", type=float, default=600.0)
    c = sub.add_parser("compare", help="list the files that differ between two runs")
    c.add_argument("first", type=Path)
    c.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "run":
        return 1 if run(args.dir, args.only, args.time_limit) else 0
    return 1 if compare(args.first, args.second) else 0


if __name__ == "__main__":
    sys.exit(main())

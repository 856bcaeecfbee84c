"""The hostile-input generator run against the CLI (issue 9's acceptance test).

Every case runs in a fresh folder. It must end with an allowed exit status (2 for bad input in
most cases), a message naming the file or field at fault, no traceback, no file outside the
output folder, within 60 s. Most cases run in-process through typer's CliRunner; a sample runs
as real subprocesses under a 2 GiB address-space limit (RLIMIT_AS) and a 60 s timeout, and so do
the cases that are unsafe in the test's own process (a read that would never end or fill memory).
Cases that plan or simulate for real are marked slow; cases that expose a bug outside the inputs'
files are xfail(strict=True) with the bug as reason.
"""

from __future__ import annotations

import io
import json
import math
import os
import resource
import shutil
import subprocess
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.errors import InputError
from tests.hostile.family_designs import FAMILY_INSTANCES, plan_family_designs
from tests.hostile.generator import (
    COMMANDS,
    PART,
    STUDY_ARGS,
    Case,
    Designs,
    Folder,
    Link,
    StudyCopy,
    cases,
    counts,
    small_text,
)

ALL = cases()
BY_ID = {c.id: c for c in ALL}
#: Wall-clock and memory limits of one case.
TIME_LIMIT_S = 60.0
MEMORY_LIMIT_BYTES = 2 * 2**30
#: Cases also run as subprocesses: devices, huge and deep files, huge numbers, names that try to
#: leave the folder, over several commands.
SUBPROCESS_SAMPLE = (
    "solve/instance-path/dev-zero",
    "simulate/path/dev-urandom",
    "catalog/path/catalog-fifo",
    "torus/instance/huge-10mb-unknown-keys",
    "compare-fabrics/instance/deep-arrays",
    "evaluate/set/int-5000-digits",
    "validate/design-text/huge",
    "simulate/design/name-dotdot",
    "solve/instance/row-columns-1000",
    "schema/usage/unknown-option",
    "sweep/instance/deep-arrays",
    "sweep/grid/too-many-scenarios",
    "sweep/study-folder/study-json-garbage",
    "simulate/workload/written-for-other-gpus",
    "validate/design-ocs_torus/no-module-at-the-nic",
)
#: Cases run only as subprocesses (unsafe in this process), with the sample above.
SUBPROCESS_ONLY = tuple(c.id for c in ALL if c.subprocess_only)


def base_study(folder: Path) -> dict[str, Any]:
    """The base study folder (``STUDY_ARGS`` run in ``folder``): its files, first part key, and
    that part with hostile values (NaN and infinite figures, names that try to leave)."""
    import polars as pl

    (folder / "instance.toml").write_text(small_text(), encoding="utf-8")
    here = {"instance.toml": str(folder / "instance.toml"), "out": str(folder / "out")}
    result = CliRunner().invoke(app, [here.get(a, a) for a in STUDY_ARGS])
    assert result.exit_code == 0, result.output
    out = folder / "out"
    files = {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}
    record = json.loads(files["study.json"])
    key = record["scenarios"][0]["key"]
    part = pl.read_parquet(io.BytesIO(files[f"parts/{key}.parquet"]))
    hostile = part.with_columns(
        pl.lit(math.nan).alias("capex_usd"),
        pl.lit(math.inf).alias("power_kw"),
        pl.lit("../../escape").alias("scenario"),
        pl.lit("<script>alert(1)</script>").alias("family"),
    )
    buffer = io.BytesIO()
    hostile.write_parquet(buffer)
    return {"files": files, "part": key, "hostile-part": buffer.getvalue()}


@pytest.fixture(scope="module")
def designs(tmp_path_factory: pytest.TempPathFactory) -> Designs:
    """Real design.json data written by the planner (see ``generator.Designs``)."""
    from planner.api import load_instance, plan
    from planner.schema.instance import Instance
    from tests.hostile.generator import INSTANCES

    ocs = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )
    out: Designs = {}
    for name, inst in (
        ("small", load_instance(INSTANCES / "small-256.toml")),
        ("h100", load_instance(INSTANCES / "h100-1k.toml")),
        ("ocs", ocs),
    ):
        result = plan(inst, verify=False, alternatives=False, time_limit_s=30)
        assert result.design is not None
        out[name] = json.loads(result.design.to_json())
    out |= plan_family_designs()
    out["study"] = base_study(tmp_path_factory.mktemp("base-study"))
    return out


def materialise(case: Case, folder: Path, designs: Designs) -> None:
    """Write the case's files into ``folder``, in order (a later entry replaces an earlier one).

    None makes a FIFO, ``Link`` a symbolic link, ``Folder`` an empty folder, ``StudyCopy`` the
    base study folder's files; ``PART`` in a path is the base study's first part key.
    """
    for name, content in case.files.items():
        path = folder / name.replace(PART, str(designs["study"]["part"]))
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_dir() and not path.is_symlink() and not isinstance(content, StudyCopy):
            shutil.rmtree(path)
        elif path.exists() or path.is_symlink():
            path.unlink()
        if content is None:
            os.mkfifo(path)
        elif isinstance(content, bytes):
            path.write_bytes(content)
        elif isinstance(content, Link):
            path.symlink_to(content.target)
        elif isinstance(content, Folder):
            path.mkdir()
        elif isinstance(content, StudyCopy):
            for relative, data in designs["study"]["files"].items():
                target = path / relative
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(data)
        else:
            made = content(designs)
            path.write_bytes(made if isinstance(made, bytes) else json.dumps(made).encode())


def snapshot(root: Path) -> set[str]:
    """Every path under ``root`` (files and folders), relative, symlinks not followed."""
    found = set()
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            found.add(os.path.relpath(os.path.join(dirpath, name), root))
    return found


def run_in_process(args: tuple[str, ...]) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of the CLI run in this process, as ``main`` would end."""
    result = CliRunner().invoke(app, list(args), catch_exceptions=True)
    exc = result.exception
    stderr = result.stderr
    if exc is None or isinstance(exc, SystemExit):
        return result.exit_code, result.stdout, stderr
    if isinstance(exc, InputError):  # main() turns an escaping InputError into exit status 2
        return 2, result.stdout, stderr + f"error: {exc}\n"
    text = "".join(traceback.format_exception(exc))
    return 99, result.stdout, stderr + text


def run_subprocess(args: tuple[str, ...], cwd: Path) -> tuple[int, str, str]:
    """Exit status, stdout and stderr of ``python -m planner`` under the memory and time limits."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT_BYTES, MEMORY_LIMIT_BYTES))

    proc = subprocess.run(
        [sys.executable, "-m", "planner", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        errors="replace",
        preexec_fn=limit,
        timeout=TIME_LIMIT_S,
        env=os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )
    return proc.returncode, proc.stdout, proc.stderr


def check(case: Case, code: int, stdout: str, stderr: str, work: Path, before: set[str]) -> None:
    """The acceptance rules of one case."""
    assert "Traceback" not in stderr, stderr[-3000:]
    assert "Traceback" not in stdout, stdout[-3000:]
    assert code in case.exit, f"exit {code}, expected {sorted(case.exit)}:\n{stderr[-2000:]}"
    if code == 2:
        assert stderr.strip(), "no message on stderr"
    if code == 1:  # validate lists its violations on stdout; the others explain on stderr
        assert (stderr + stdout).strip(), "no message"
    for words in case.words:
        assert words in stderr, f"{words!r} not in the message:\n{stderr[-2000:]}"
    new = snapshot(work) - before
    outside = sorted(
        p for p in new if not any(p == o or p.startswith(o + os.sep) for o in case.outputs)
    )
    assert not outside, f"files written outside {case.outputs}: {outside[:5]}"


#: Quick-looking cases that take seconds (a million OCS circuits read and checked): never the
#: fast tier's sample of their kind.
HEAVY = frozenset({"validate/design/circuits-1m-entries", "simulate/design/circuits-1m-entries"})


def _fast_sample(cases: list[Case]) -> set[str]:
    """The cases of the fast tier: the first quick case of every kind (category).

    The fast tier (``uv run --dev pytest``) meets every category of hostile input once; the slow tier
    (``-m slow``) runs every other case, so the two together run them all.
    """
    seen: set[str] = set()
    sample: set[str] = set()
    for case in cases:
        if case.slow or case.subprocess_only or case.kind in seen or case.id in HEAVY:
            continue
        seen.add(case.kind)
        sample.add(case.id)
    return sample


FAST = _fast_sample(ALL)


def _param(case: Case) -> Any:
    marks: list[Any] = []
    if case.output_side:
        marks.append(pytest.mark.xfail(strict=False, reason=case.output_side))
    if case.known_bug:
        marks.append(pytest.mark.xfail(strict=True, reason=case.known_bug))
    if case.id not in FAST:
        marks.append(pytest.mark.slow)
    return pytest.param(case, id=case.id, marks=marks)


@pytest.mark.parametrize("case", [_param(c) for c in ALL if not c.subprocess_only])
def test_hostile_input_in_process(
    case: Case, designs: Designs, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    work = tmp_path / "case"
    work.mkdir()
    materialise(case, work, designs)
    before, around = snapshot(work), set(os.listdir(tmp_path.parent))
    escaped_before = Path("/tmp/escape").exists()
    monkeypatch.chdir(work)
    start = time.perf_counter()
    code, stdout, stderr = run_in_process(case.args)
    elapsed = time.perf_counter() - start
    check(case, code, stdout, stderr, work, before)
    assert set(os.listdir(tmp_path.parent)) <= around | {tmp_path.name}, "a file escaped upwards"
    assert escaped_before or not Path("/tmp/escape").exists(), "a name chose /tmp/escape"
    assert elapsed < TIME_LIMIT_S


def _subprocess_param(case_id: str) -> Any:
    case = BY_ID[case_id]
    # A fresh interpreter per case costs seconds: the fast tier runs the first of the sample.
    fast = case_id == SUBPROCESS_SAMPLE[0] and not case.slow
    marks: list[Any] = [] if fast else [pytest.mark.slow]
    if case.known_bug:
        marks.append(pytest.mark.xfail(strict=True, reason=case.known_bug))
    return pytest.param(case_id, id=case_id, marks=marks)


@pytest.mark.parametrize(
    "case_id", [_subprocess_param(c) for c in SUBPROCESS_SAMPLE + SUBPROCESS_ONLY]
)
def test_hostile_input_in_a_subprocess(case_id: str, designs: Designs, tmp_path: Path) -> None:
    case = BY_ID[case_id]
    work = tmp_path / "case"
    work.mkdir()
    materialise(case, work, designs)
    before = snapshot(work)
    code, stdout, stderr = run_subprocess(case.args, work)
    check(case, code, stdout, stderr, work, before)


def test_the_generator_is_broad() -> None:
    by_command, by_kind = counts(ALL)
    assert len(ALL) >= 300
    assert set(by_command) == set(COMMANDS)
    assert len(BY_ID) == len(ALL), "case ids repeat"
    for kind in ("deep nesting", "huge int", "bad utf-8", "lone cr", "device", "huge file"):
        assert any(kind in k for k in by_kind), kind
    assert set(SUBPROCESS_SAMPLE) <= set(BY_ID)
    surfaces = {k.split(":")[0] for k in by_kind}
    families = tuple(FAMILY_INSTANCES)
    for surface in (
        "sweep --grid",
        "study folder",
        "workload",
        *(f"design.json ({f})" for f in families),
    ):
        assert surface in surfaces, surface
    # Every family's design.json meets every category of mutation.
    for family in families:
        kinds = {k.split(": ")[1] for k in by_kind if k.startswith(f"design.json ({family})")}
        assert {"zero count", "wrong type", "wiring", "modules", "random mutation"} <= kinds

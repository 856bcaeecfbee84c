"""Issue 9, the output side: names, folders, whole sets, locks, Ctrl-C, exit statuses, help, figures."""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from planner import output
from planner.cli import app
from planner.output import LOCK, MARKER, STAGING_PREFIX, is_complete, read_manifest, safe_name

runner = CliRunner()
#: The exit statuses of docs/commands.md, pinned here on purpose (scripts depend on the numbers).
EXIT_INTERNAL, EXIT_FAILS, EXIT_INTERRUPTED = 3, 4, 130
REPO = Path(__file__).resolve().parents[2]

SMALL = """
name = "small"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
"""

#: Verification that the small design cannot meet: one plane (so two tiers, where ECMP hashes
#: collide), ECMP judged, every flow must reach line rate.
SIM_FAILING = [
    "--set",
    'verify.verdict_routing="ecmp"',
    "--set",
    "verify.min_throughput_fraction=1.0",
]
FAILING = ["--set", "cluster.nic_ports=[1]", *SIM_FAILING]


def invoke(*args: str | Path, env: dict[str, str] | None = None) -> Result:
    return runner.invoke(app, [str(a) for a in args], env=env)


def digests(folder: Path) -> dict[str, str]:
    """Every visible file's SHA-256 (and the manifest's), by name."""
    return {
        p.name: hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.iterdir())
        if p.is_file() and p.name != LOCK
    }


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("solved")
    inst = folder / "small.toml"
    inst.write_text(SMALL)
    result = invoke("solve", inst, "-o", folder / "out", "-q")
    assert result.exit_code == 0, result.stderr
    return folder / "out"


@pytest.fixture(scope="module")
def two_tier(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small instance as leaf-spine: htsim's FatTree needs 2 or 3 tiers."""
    folder = tmp_path_factory.mktemp("two-tier")
    inst = folder / "small.toml"
    # Pinned in the file, not with --set: a --set run is named after its changes.
    inst.write_text(SMALL + "[search.pin]\ntiers = 2\n")
    result = invoke("solve", inst, "-o", folder / "out", "-q", "--no-verify")
    assert result.exit_code == 0, result.stderr
    return folder / "out"


@pytest.fixture
def small(tmp_path: Path) -> Path:
    path = tmp_path / "small.toml"
    path.write_text(SMALL)
    return path


def files_outside(root: Path, allowed: Path) -> list[Path]:
    """Files under ``root`` that are not under ``allowed``."""
    return [p for p in root.rglob("*") if p.is_file() and allowed not in p.parents]


# ---- 1. names from inputs never choose a path outside the output folder ------------------------
HOSTILE_NAMES = [
    "../../escaped",
    "/tmp/absolute-escape",
    "a\x00b",
    "..",
    ".",
    "",
    "x/../../y",
    "-n",
]


@pytest.mark.parametrize("name", HOSTILE_NAMES)
def test_safe_name_is_one_harmless_component(name: str) -> None:
    clean = safe_name(name)
    assert clean
    assert "/" not in clean
    assert "\x00" not in clean
    assert not clean.startswith(".")
    assert (Path("/base") / clean).parent == Path("/base")


@pytest.mark.parametrize(
    "name", ["../../escaped", "/tmp/abs-escape-fp", "a\x00b", "..", "x/../../y"]
)
def test_simulate_and_htsim_write_only_inside_their_folders(
    two_tier: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    absolute = tmp_path / "abs-escape"  # an absolute path, outside the work folder
    name = str(absolute) if name == "ABSOLUTE" else name
    data = json.loads((two_tier / "design.json").read_text())
    data["instance"] = name
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    design = work / "design.json"
    design.write_text(json.dumps(data))
    monkeypatch.chdir(work)
    result = invoke("simulate", design, "--htsim", work / "ht", "-q")
    # Two defences: the design.json schema refuses such a name (exit 2), and were one to pass,
    # safe_name keeps every file it names inside the chosen folders.
    assert result.exit_code in (0, 2, EXIT_FAILS), result.output
    assert not absolute.with_suffix(".topo").exists()
    assert not absolute.exists()
    outside = [p for p in files_outside(tmp_path, work) if p.name != "design.json"]
    assert outside == []
    if result.exit_code == 2:
        assert "instance" in result.output
        return
    assert [p.name for p in (work / "reports").iterdir()] == [safe_name(name)]
    assert sorted(p.suffix for p in (work / "ht").iterdir() if not p.name.startswith(".")) == [
        ".cm",
        ".topo",
    ]


# ---- 2. every folder follows the report folder's rule ------------------------------------------
def test_htsim_refuses_a_folder_of_foreign_files(two_tier: Path, tmp_path: Path) -> None:
    ht = tmp_path / "ht"
    ht.mkdir()
    (ht / "small.topo").write_text("mine")
    result = invoke("simulate", two_tier / "design.json", "-o", tmp_path / "out", "--htsim", ht)
    assert result.exit_code == 2
    assert "Traceback" not in result.output
    assert (ht / "small.topo").read_text() == "mine"


@pytest.mark.slow
def test_htsim_with_force_keeps_a_foreign_file_of_the_same_name(
    two_tier: Path, tmp_path: Path
) -> None:
    ht = tmp_path / "ht"
    ht.mkdir()
    (ht / "small.topo").write_text("mine")
    result = invoke(
        "simulate", two_tier / "design.json", "-o", tmp_path / "out", "--htsim", ht, "--force"
    )
    assert result.exit_code == 2
    assert "small.topo" in result.stderr
    assert (ht / "small.topo").read_text() == "mine"


@pytest.mark.slow
def test_htsim_files_are_readable_by_everyone(two_tier: Path, tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        result = invoke(
            "simulate", two_tier / "design.json", "-o", tmp_path / "o", "--htsim", tmp_path / "h"
        )
    finally:
        os.umask(old)
    assert result.exit_code == 0, result.output
    written = list((tmp_path / "h").glob("small.*"))
    assert sorted(p.suffix for p in written) == [".cm", ".topo"]
    for p in written:
        assert p.stat().st_mode & 0o777 == 0o644


@pytest.mark.slow
def test_a_directory_where_a_report_belongs_exits_2(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    (out / "summary.csv").unlink()
    (out / "summary.csv").mkdir()
    result = invoke("solve", small, "-o", out, "-q", "--no-verify")
    assert result.exit_code == 2, result.output
    assert "summary.csv (a folder)" in result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.slow
def test_force_never_replaces_a_foreign_file_that_shares_a_report_name(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "summary.csv").write_text("my own summary")
    (out / "notes.txt").write_text("keep me")
    result = invoke("solve", small, "-o", out, "-q", "--force", "--no-verify")
    assert result.exit_code == 2
    assert "summary.csv" in result.stderr
    assert (out / "summary.csv").read_text() == "my own summary"
    assert (out / "notes.txt").read_text() == "keep me"


@pytest.mark.slow
def test_a_report_file_changed_by_hand_is_not_replaced(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    (out / "report.md").write_text("my notes on the report")
    result = invoke("solve", small, "-o", out, "-q", "--no-verify", "--force")
    assert result.exit_code == 2
    assert (out / "report.md").read_text() == "my notes on the report"


def test_torus_without_force_refuses_a_foreign_folder(tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = invoke("torus", REPO / "instances" / "tpu-pod-4k.toml", "-o", out)
    assert result.exit_code == 2
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


# ---- 3. the set is atomic; one writer at a time ------------------------------------------------
@pytest.mark.slow
def test_a_write_failing_half_way_leaves_the_old_set_whole(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    before = digests(out)
    assert is_complete(out)
    calls = {"n": 0}
    real = pl.DataFrame.write_parquet

    def failing(self: pl.DataFrame, *args: object, **kwargs: object) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(pl.DataFrame, "write_parquet", failing)
    result = invoke("solve", small, "-o", out, "-q", "--no-verify", "--set", "cluster.gpus=512")
    assert result.exit_code == 2
    assert "No space left" in result.stderr
    assert digests(out) == before
    assert is_complete(out)
    assert not [p for p in out.iterdir() if p.name.startswith(STAGING_PREFIX)]


@pytest.mark.slow
def test_a_run_killed_during_the_swap_is_finished_by_the_next(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    real = os.replace
    calls = {"n": 0}

    def dying(src: str, dst: str, **fds: int) -> None:
        if fds.get("src_dir_fd") != fds.get("dst_dir_fd"):  # from the staging folder
            calls["n"] += 1
            if calls["n"] == 2:
                raise KeyboardInterrupt  # as if killed between two renames
        real(src, dst, **fds)

    monkeypatch.setattr(os, "replace", dying)
    result = invoke("solve", small, "-o", out, "-q", "--no-verify", "--set", "cluster.gpus=512")
    assert result.exit_code == EXIT_INTERRUPTED
    manifest = read_manifest(out)
    assert manifest is not None
    assert not manifest.complete
    assert not is_complete(out)
    monkeypatch.setattr(os, "replace", real)
    # The next writer finishes the swap first, then writes its own set.
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    assert is_complete(out)
    assert pl.read_csv(out / "summary.csv")["gpus"][0] == 256


@pytest.mark.slow
def test_the_manifest_names_every_file_of_the_set(solved: Path) -> None:
    manifest = read_manifest(solved)
    assert manifest is not None
    assert manifest.complete
    visible = {p.name for p in solved.iterdir() if p.name not in (MARKER, LOCK)}
    assert set(manifest.files) == visible
    assert is_complete(solved)


def test_a_second_writer_is_refused_while_the_first_holds_the_folder(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    # A run locks the folder itself (its own descriptor, as another process would hold it).
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        result = invoke("solve", small, "-o", out, "-q", "--no-verify")
    finally:
        os.close(fd)
    assert result.exit_code == 2
    assert "another fabric-planner run is writing" in result.stderr
    assert list(out.iterdir()) == []


def test_a_run_leaves_no_lock_file(solved: Path) -> None:
    assert not (solved / LOCK).exists()
    assert sorted(p.name for p in solved.iterdir() if p.name.startswith(".")) == [MARKER]


# ---- 4. Ctrl-C stops the run -------------------------------------------------------------------
@pytest.mark.slow
def test_ctrl_c_during_a_cp_sat_solve_stops_the_run_with_130(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "planner",
            "solve",
            str(REPO / "instances" / "cluster-131k.toml"),
            "-o",
            str(out),
            "--time-limit",
            "120",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    assert proc.stderr is not None
    first = proc.stderr.readline()  # the first sub-solve is done; the next one is running
    assert first.startswith("["), first
    time.sleep(1.0)
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert time.monotonic() - sent < 15
    assert "interrupted" in err
    assert "Traceback" not in err
    assert not out.exists()  # the folder is as it was: there was none


# ---- 5. exit statuses ----------------------------------------------------------------------------
def test_an_internal_error_exits_3_with_a_hint_and_no_traceback(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import planner.api

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("boom")

    monkeypatch.setattr(planner.api, "plan", broken)
    result = invoke("solve", small, "-o", tmp_path / "out", "-q")
    assert result.exit_code == EXIT_INTERNAL
    assert "internal error: RuntimeError: boom" in result.stderr
    assert "FABRIC_PLANNER_DEBUG=1" in result.stderr
    assert "Traceback" not in result.output
    debug = invoke("solve", small, "-o", tmp_path / "out2", "-q", env={"FABRIC_PLANNER_DEBUG": "1"})
    assert isinstance(debug.exception, RuntimeError)


@pytest.mark.slow
def test_a_failing_verdict_exits_4_unless_allowed(small: Path, tmp_path: Path) -> None:
    result = invoke("solve", small, "-o", tmp_path / "a", "--json", "-q", *FAILING)
    assert result.exit_code == EXIT_FAILS, result.output
    assert json.loads(result.stdout)["verdict"] == "fails"
    assert "fails" in result.stderr
    allowed = invoke("solve", small, "-o", tmp_path / "b", "-q", "--allow-fail", *FAILING)
    assert allowed.exit_code == 0


@pytest.mark.slow
def test_simulate_exits_4_when_the_design_fails(two_tier: Path, tmp_path: Path) -> None:
    result = invoke("simulate", two_tier / "design.json", "-o", tmp_path / "o", "-q", *SIM_FAILING)
    assert result.exit_code == EXIT_FAILS


# ---- 6. simulate writes one consistent set -------------------------------------------------------
@pytest.mark.slow
def test_simulate_rewrites_summary_and_report_with_its_own_figures(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    one_plane = ["--set", "cluster.nic_ports=[1]"]
    assert invoke("solve", small, "-o", out, "-q", *one_plane).exit_code == 0
    assert pl.read_csv(out / "summary.csv")["verdict"][0] == "meets"
    result = invoke("simulate", out / "design.json", "-o", out, "-q", *SIM_FAILING)
    assert result.exit_code == EXIT_FAILS
    summary = pl.read_csv(out / "summary.csv")
    collectives = pl.read_parquet(out / "sim_collectives.parquet")
    assert summary["verdict"][0] == "fails"
    ecmp = collectives.filter(pl.col("routing") == "ecmp", pl.col("scenario") == "healthy")
    assert summary["sim_fraction_ecmp"][0] == pytest.approx(ecmp["fraction_of_ideal"].min())
    assert "verdict: **fails**" in (out / "report.md").read_text()
    assert (out / "alternatives.csv").is_file()  # same design: the search's tables stay
    assert "## Alternatives" in (out / "report.md").read_text()
    assert is_complete(out)


# ---- 8. help text, solver chatter ----------------------------------------------------------------
@pytest.mark.parametrize(("command", "text"), [("solve", "[verify]"), ("torus", "[torus]")])
def test_help_shows_toml_section_names(command: str, text: str) -> None:
    result = invoke(command, "--help")
    assert text in result.stdout


def test_simulate_set_help_suggests_a_field_it_accepts() -> None:
    result = invoke("simulate", "--help")
    assert "verify.seed=2" in " ".join(result.stdout.split())
    assert "cluster.gpus" not in result.stdout


@pytest.mark.slow
def test_no_highs_banner_on_stdout(tmp_path: Path) -> None:
    inst = tmp_path / "ocs.toml"
    inst.write_text(
        'name = "ocs-small"\n[cluster]\ngpus = 2048\ngpus_per_node = 8\nnic_gbps = 400\n'
    )
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "planner",
            "compare-fabrics",
            str(inst),
            "-o",
            str(tmp_path / "o"),
            "-q",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    assert "HiGHS" not in proc.stdout
    assert proc.stdout.startswith("electrical")


# ---- 9. figures without float noise; the catalog -------------------------------------------------
@pytest.mark.slow
def test_csv_and_json_carry_no_float_noise(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    # The fluid model, where a full-rate fraction of ideal is exactly 1 (packet-level latency
    # puts it just below): the rounding of that 1 is what is checked.
    result = invoke("solve", small, "-o", out, "--json", "-q", "--set", "verify.fidelity=fluid")
    assert result.exit_code == 0
    for p in out.glob("*.csv"):
        assert "9999999999" not in p.read_text(), p.name
        assert "0000000001" not in p.read_text(), p.name
    assert "9999999999" not in result.stdout
    sim = pl.read_csv(out / "sim_collectives.csv")
    assert 1.0 in sim["fraction_of_ideal"].to_list()


def test_catalog_lists_ocs_entries_with_full_sources() -> None:
    result = invoke("catalog", "--kind", "ocs")
    assert result.exit_code == 0
    assert "palomar-136" in result.stdout
    assert "priced like a high-end 51.2T packet switch" in result.stdout


@pytest.mark.parametrize("flags", [("--json",), ("--format", "json")])
def test_catalog_json_has_every_kind_and_every_source(flags: tuple[str, ...]) -> None:
    result = invoke("catalog", *flags)
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert set(data) == {"switch", "medium", "nic", "ocs"}
    assert all(entry["source"] for kind in data.values() for entry in kind)


def test_catalog_csv_reads_back() -> None:
    from io import StringIO

    result = invoke("catalog", "--kind", "medium", "--format", "csv")
    table = pl.read_csv(StringIO(result.stdout))
    assert "dr-400g" in table["name"].to_list()
    assert table["cost_source"].str.len_chars().max() > 60  # not cut


# ---- 10. a failure that cuts GPUs off --------------------------------------------------------------
@pytest.mark.slow
def test_losing_a_leaf_writes_the_report_and_says_the_traffic_never_completes(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    # One plane: a lost leaf cuts its GPUs off (with two planes the other plane carries them).
    result = invoke(
        "solve",
        small,
        "-o",
        out,
        "-q",
        "--set",
        "cluster.nic_ports=[1]",
        "--set",
        'verify.failures=[{switches=["leaf0"]}]',
    )
    assert result.exit_code in (0, EXIT_FAILS), result.output
    assert "Traceback" not in result.output
    report = (out / "report.md").read_text()
    assert "never" in report
    failures = pl.read_parquet(out / "sim_failures.parquet").filter(pl.col("scenario") == "leaf0")
    assert (failures["disconnected_flows"] > 0).all()


@pytest.mark.parametrize("name", ["../../escaped", "/tmp/abs", "a/b", "..", ".hidden"])
def test_solve_default_folder_stays_under_reports(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    work = tmp_path / "work" / "deep"
    work.mkdir(parents=True)
    monkeypatch.chdir(work)
    result = invoke("solve", small, "-q", "--no-verify", "--set", f"name={json.dumps(name)}")
    assert result.exit_code in (0, 2), result.output  # written safely, or the name refused
    assert "Traceback" not in result.output
    assert [p for p in files_outside(tmp_path, work / "reports") if p != small] == []
    if result.exit_code == 0:
        assert [p.name for p in (work / "reports").iterdir()] == [safe_name(name)]


@pytest.mark.slow
def test_an_analysis_joins_the_folder_set_and_a_later_solve_keeps_it(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    torus = invoke("torus", REPO / "instances" / "tpu-pod-4k.toml", "-o", out)
    assert torus.exit_code == 0, torus.output
    assert (out / "summary.csv").is_file()
    assert (out / "torus_pod.csv").is_file()
    assert is_complete(out)
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    assert (out / "torus_pod.csv").is_file()
    manifest = read_manifest(out)
    assert manifest is not None
    assert "torus_pod.csv" in manifest.files
    assert is_complete(out)


@pytest.mark.slow
def test_a_marker_that_is_not_json_protects_the_files_beside_it(
    small: Path, tmp_path: Path
) -> None:
    # A non-JSON marker (the text older versions wrote, or anyone's) used to count every
    # report-named file as the planner's: solve overwrote summary.csv and deleted sim_links.csv.
    out = tmp_path / "out"
    out.mkdir()
    (out / MARKER).write_text("This folder holds fabric-planner output; solve may rewrite it.\n")
    (out / "summary.csv").write_text("mine")
    (out / "sim_links.csv").write_text("mine")
    refused = invoke("solve", small, "-o", out, "-q", "--no-verify")
    assert refused.exit_code == 2
    assert "is not a fabric-planner manifest (not JSON" in refused.stderr
    assert "--force" in refused.stderr
    forced = invoke("solve", small, "-o", out, "-q", "--no-verify", "--force")
    assert forced.exit_code == 2
    assert "summary.csv" in forced.stderr
    assert (out / "summary.csv").read_text() == "mine"
    assert (out / "sim_links.csv").read_text() == "mine"
    assert sorted(p.name for p in out.iterdir()) == [MARKER, "sim_links.csv", "summary.csv"]


@pytest.fixture
def study_folder(small: Path, tmp_path: Path) -> Path:
    """A real study of the small instance: its set, and parts/ with a part per scenario."""
    out = tmp_path / "study"
    result = invoke(
        "sweep", small, "--grid", "cluster.gpus=128,256", "--workers", "1", "--no-verify",
        "-o", out, "-q",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    return out


@pytest.mark.slow
def test_solve_replaces_a_study_only_with_force_and_keeps_its_parts(
    small: Path, study_folder: Path
) -> None:
    before = digests(study_folder)
    parts = sorted(p.name for p in (study_folder / "parts").iterdir())
    refused = invoke("solve", small, "-o", study_folder, "-q", "--no-verify")
    assert refused.exit_code == 2
    assert "holds the output of `sweep`" in refused.stderr
    assert "beside them parts/" in refused.stderr
    assert digests(study_folder) == before
    forced = invoke("solve", small, "-o", study_folder, "-q", "--no-verify", "--force")
    assert forced.exit_code == 0, forced.output
    assert not (study_folder / "study.json").exists()
    assert (study_folder / "summary.csv").is_file()
    assert sorted(p.name for p in (study_folder / "parts").iterdir()) == parts
    assert is_complete(study_folder)


def test_htsim_does_not_replace_a_report_folder_without_force(
    two_tier: Path, tmp_path: Path
) -> None:
    reports = tmp_path / "reports"
    shutil.copytree(two_tier, reports)
    before = digests(reports)
    result = invoke(
        "simulate", two_tier / "design.json", "-o", tmp_path / "o", "--htsim", reports, "-q"
    )
    assert result.exit_code == 2
    assert "holds the output of `solve`" in result.stderr
    assert digests(reports) == before
    assert not (tmp_path / "o").exists()


def test_compare_fabrics_with_no_design_exits_1(tmp_path: Path) -> None:
    inst = tmp_path / "too-big.toml"
    inst.write_text(
        'name = "too-big"\n[cluster]\ngpus = 200000\ngpus_per_node = 8\nnic_gbps = 400\n'
        "[constraints]\nmax_switch_hops = 1\n"
    )
    result = invoke("compare-fabrics", inst, "-o", tmp_path / "out", "-q", "--time-limit", "20")
    assert result.exit_code == 1, result.output
    assert "no design" in result.stderr


def test_rounding_keeps_twelve_significant_digits_and_writes_strict_json() -> None:
    df = pl.DataFrame({"x": [0.9999999999999999, 123456789.123456789, float("inf"), None]})
    text = output.rounded(df).write_csv()
    assert text.splitlines()[1:] == ["1.0", "123456789.123", "inf", ""]
    assert json.loads(output.json_text({"a": 0.30000000000000004, "b": float("inf")})) == {
        "a": 0.3,
        "b": None,
    }
    assert output.SIGNIFICANT_DIGITS == 12


@pytest.mark.slow
def test_htsim_into_the_report_folder_joins_its_set(two_tier: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("simulate", two_tier / "design.json", "-o", out, "--htsim", out, "-q")
    assert result.exit_code == 0, result.output
    manifest = read_manifest(out)
    assert manifest is not None
    assert {"small.topo", "small.cm", "summary.csv"} <= set(manifest.files)
    assert is_complete(out)

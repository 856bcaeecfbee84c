"""The command line: report files, exit statuses, overrides, folder safety, validate, schema, catalog."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner, Result

from planner.alternatives import ALTERNATIVES_SCHEMA
from planner.cli import app
from planner.families import read_design
from planner.output import is_complete, read_manifest
from planner.report import MARKER
from planner.report.tables import SUMMARY_SCHEMA, TABLES

#: Absolute tolerance on report money figures, in dollars.
USD_ATOL = 1e-6

SMALL = """
name = "small"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
"""

PINNED = (
    SMALL
    + """
[search.pin]
planes = 2
tiers = 1
switch_models = "sn5600"
"""
)

INFEASIBLE = """
name = "too-big"
[cluster]
gpus = 200000
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
[constraints]
max_switch_hops = 3
"""

REPORT_FILES = [f"{t}.{ext}" for t in TABLES for ext in ("csv", "parquet")] + [
    "design.json",
    "report.md",
    MARKER,
]

runner = CliRunner()


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def invoke(*args: str | Path) -> Result:
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def solved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One solve of the small instance, shared by the tests that only read its reports."""
    folder = tmp_path_factory.mktemp("solved")
    inst = write(folder, "small.toml", SMALL)
    result = invoke("solve", inst, "-o", folder / "out", "--quiet")
    assert result.exit_code == 0, result.stderr
    return folder / "out"


@pytest.fixture
def small(tmp_path: Path) -> Path:
    return write(tmp_path, "small.toml", SMALL)


# ---- solve ---------------------------------------------------------------------------------
@pytest.mark.parametrize("name", REPORT_FILES)
@pytest.mark.slow
def test_solve_writes_every_report_file(solved: Path, name: str) -> None:
    assert (solved / name).is_file()
    assert (solved / name).stat().st_size > 0


@pytest.mark.parametrize("table", TABLES)
def test_csv_and_parquet_hold_the_same_table(solved: Path, table: str) -> None:
    from_csv = pl.read_csv(solved / f"{table}.csv")
    from_parquet = pl.read_parquet(solved / f"{table}.parquet")
    assert from_parquet.columns == from_csv.columns
    assert from_parquet.height == from_csv.height
    assert from_parquet.height >= 1


def test_summary_has_every_column_and_one_row(solved: Path) -> None:
    summary = pl.read_parquet(solved / "summary.parquet")
    assert summary.columns == list(SUMMARY_SCHEMA)
    assert summary.height == 1
    assert summary["status"][0] == "optimal"
    assert summary["gpus"][0] == 256


def test_summary_totals_equal_the_design_objective_terms(solved: Path) -> None:
    s = pl.read_parquet(solved / "summary.parquet").row(0, named=True)
    terms = read_design((solved / "design.json").read_text()).objective_terms()
    assert s["capex_usd"] == pytest.approx(terms["capex_usd"], abs=USD_ATOL)
    assert s["energy_usd"] == pytest.approx(terms["energy_usd"], abs=USD_ATOL)
    assert s["objective_usd"] == pytest.approx(terms["objective_usd"], abs=USD_ATOL)
    assert s["tco_usd"] == pytest.approx(s["capex_usd"] + s["energy_usd"], abs=USD_ATOL)
    assert s["power_kw"] == pytest.approx(terms["power_w"] / 1000)


def test_bom_adds_up_to_the_summary_capex(solved: Path) -> None:
    bom = pl.read_parquet(solved / "bom.parquet")
    summary = pl.read_parquet(solved / "summary.parquet")
    assert bom["total_cost_usd"].sum() == pytest.approx(summary["capex_usd"][0], abs=1.0)
    assert bom["total_power_w"].sum() == pytest.approx(summary["power_kw"][0] * 1000, abs=1.0)


def test_alternatives_show_the_winner_first_and_every_option(solved: Path) -> None:
    alt = pl.read_parquet(solved / "alternatives.parquet")
    summary = pl.read_parquet(solved / "summary.parquet")
    assert alt.columns == list(ALTERNATIVES_SCHEMA)
    assert alt["winner"].sum() == 1
    assert alt["winner"][0]
    assert alt["tco_usd"][0] == pytest.approx(summary["tco_usd"][0])
    assert alt["delta_tco_usd"][0] == pytest.approx(0.0)
    assert "mixed" in alt["option"].to_list()
    assert "sn5600" in alt["option"].to_list()
    assert alt["delta_tco_usd"].drop_nulls().min() == pytest.approx(0.0)


def test_report_md_names_the_status_and_the_bom(solved: Path) -> None:
    text = (solved / "report.md").read_text()
    assert "status: optimal" in text
    assert "## Bill of materials" in text
    assert "## Alternatives" in text


@pytest.mark.slow
def test_solve_prints_a_human_summary(small: Path, tmp_path: Path) -> None:
    result = invoke("solve", small, "-o", tmp_path / "out")
    assert result.exit_code == 0
    assert "status: optimal" in result.stdout
    assert "tco: $" in result.stdout
    assert str(tmp_path / "out") in result.stdout
    assert "[1/" in result.stderr  # progress


@pytest.mark.slow
def test_solve_writes_under_reports_by_default(
    small: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke("solve", small, "--quiet")
    assert result.exit_code == 0
    assert (tmp_path / "reports" / "small" / "summary.csv").is_file()


@pytest.mark.slow
def test_json_prints_only_the_summary_row(small: Path, tmp_path: Path) -> None:
    result = invoke("solve", small, "-o", tmp_path / "out", "--json", "--quiet")
    assert result.exit_code == 0
    row = json.loads(result.stdout)
    assert list(row) == list(SUMMARY_SCHEMA)
    assert row["status"] == "optimal"
    assert result.stderr == ""


@pytest.mark.parametrize("gpus", [512, 1024])
@pytest.mark.slow
def test_set_overrides_a_field(small: Path, tmp_path: Path, gpus: int) -> None:
    result = invoke(
        "solve", small, "-o", tmp_path / "out", "--json", "-q", "--set", f"cluster.gpus={gpus}"
    )
    assert result.exit_code == 0
    assert json.loads(result.stdout)["gpus"] == gpus


@pytest.mark.parametrize(
    "override", ["cluster.gpus=abc", "cluster.nope=1", "no-equals-sign", "cluster.gpus.x=1"]
)
def test_bad_override_exits_2(small: Path, tmp_path: Path, override: str) -> None:
    result = invoke("solve", small, "-o", tmp_path / "out", "-q", "--set", override)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")


@pytest.mark.slow
def test_compare_optics_writes_the_table_and_a_rerun_without_removes_it(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    result = invoke("solve", small, "-o", out, "--no-verify", "--compare-optics")
    assert result.exit_code == 0, result.stderr
    assert "optics:" in result.stdout
    table = pl.read_parquet(out / "optics_comparison.parquet")
    assert table["scenario"].to_list() == ["pluggable", "lpo", "cpo"]
    assert pl.read_csv(out / "optics_comparison.csv").height == 3
    assert "## Optics" in (out / "report.md").read_text()
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    assert not (out / "optics_comparison.csv").exists()
    assert not (out / "optics_comparison.parquet").exists()


# ---- the report folder ---------------------------------------------------------------------
@pytest.mark.slow
def test_a_second_solve_into_the_same_folder_works(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q").exit_code == 0
    assert invoke("solve", small, "-o", out, "-q").exit_code == 0
    assert (out / MARKER).is_file()


def test_a_folder_with_foreign_files_is_refused(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = invoke("solve", small, "-o", out, "-q")
    assert result.exit_code == 2
    assert "--force" in result.stderr
    assert "Traceback" not in result.output
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]


@pytest.mark.slow
def test_force_writes_into_a_foreign_folder_and_keeps_its_files(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    result = invoke("solve", small, "-o", out, "-q", "--force")
    assert result.exit_code == 0
    assert (out / "notes.txt").read_text() == "keep me"
    assert (out / "summary.csv").is_file()


def test_output_that_is_a_file_is_refused(small: Path, tmp_path: Path) -> None:
    target = write(tmp_path, "a-file", "x")
    result = invoke("solve", small, "-o", target, "-q")
    assert result.exit_code == 2
    assert target.read_text() == "x"


# ---- no design, bad input ------------------------------------------------------------------
@pytest.mark.slow
def test_infeasible_instance_exits_1_and_names_the_radix(tmp_path: Path) -> None:
    inst = write(tmp_path, "too-big.toml", INFEASIBLE)
    result = invoke("solve", inst, "-o", tmp_path / "out", "-q", "--time-limit", "30")
    assert result.exit_code == 1
    assert "no design meets the constraints:" in result.stderr
    assert "radix" in result.stderr
    summary = pl.read_csv(tmp_path / "out" / "summary.csv")
    assert summary["status"][0] == "infeasible"
    assert summary["tco_usd"].is_null().all()
    assert not (tmp_path / "out" / "design.json").exists()
    assert "radix" in (tmp_path / "out" / "report.md").read_text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name = 'x'\n[cluster\ngpus = 8", "TOML"),
        ("name = 'x'\n[cluster]\ngpus = 8\ncolour = 'red'", "unknown field"),
        ("name = 'x'\n[cluster]\ngpus = 9", "gpus_per_node"),
    ],
    ids=["syntax", "unknown-field", "bad-value"],
)
def test_bad_instance_exits_2_without_traceback(tmp_path: Path, text: str, message: str) -> None:
    inst = write(tmp_path, "bad.toml", text)
    result = invoke("solve", inst, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.output


def test_missing_instance_exits_2(tmp_path: Path) -> None:
    result = invoke("solve", tmp_path / "nothere.toml")
    assert result.exit_code == 2
    assert "file not found" in result.stderr


# ---- evaluate ------------------------------------------------------------------------------
def test_evaluate_without_pins_exits_2(small: Path, tmp_path: Path) -> None:
    result = invoke("evaluate", small, "-o", tmp_path / "out")
    assert result.exit_code == 2
    assert "search.pin" in result.stderr


@pytest.mark.slow
def test_evaluate_prices_the_pinned_design(tmp_path: Path) -> None:
    inst = write(tmp_path, "pinned.toml", PINNED)
    result = invoke("evaluate", inst, "-o", tmp_path / "out", "--json", "-q")
    assert result.exit_code == 0
    row = json.loads(result.stdout)
    assert (row["planes"], row["tiers"], row["switch_models"]) == (2, 1, "leaf=sn5600")


# ---- validate ------------------------------------------------------------------------------
def test_validate_accepts_the_written_design(solved: Path) -> None:
    result = invoke("validate", solved / "design.json")
    assert result.exit_code == 0
    assert result.stdout.strip() == "ok"


@pytest.mark.parametrize(("field", "factor"), [("capex_usd", 2.0), ("power_w", 0.5)])
def test_validate_rejects_a_tampered_design(
    solved: Path, tmp_path: Path, field: str, factor: float
) -> None:
    data = json.loads((solved / "design.json").read_text())
    data[field] *= factor
    tampered = write(tmp_path, "design.json", json.dumps(data))
    result = invoke("validate", tampered)
    assert result.exit_code == 1
    assert "totals" in result.stdout


@pytest.mark.parametrize(
    ("text", "message"),
    [("{not json", "not valid JSON"), ('{"a": 1}', "not a design.json"), ("[1, 2]", "JSON object")],
    ids=["bad-json", "wrong-fields", "not-an-object"],
)
def test_validate_rejects_what_is_not_a_design(tmp_path: Path, text: str, message: str) -> None:
    result = invoke("validate", write(tmp_path, "d.json", text))
    assert result.exit_code == 2
    assert message in result.stderr


# ---- schema, catalog, entry points ---------------------------------------------------------
@pytest.mark.parametrize(("flags", "field"), [((), "cluster"), (("--catalog",), "switch")])
def test_schema_prints_json_schema(flags: tuple[str, ...], field: str) -> None:
    result = invoke("schema", *flags)
    assert result.exit_code == 0
    schema = json.loads(result.stdout)
    assert field in schema["properties"]


@pytest.mark.parametrize(
    ("flags", "present", "absent"),
    [
        ((), "sn5600", None),
        (("--kind", "switch"), "sn5600", "dr-400g"),
        (("--kind", "medium"), "dr-400g", "sn5600"),
    ],
)
def test_catalog_lists_components(flags: tuple[str, ...], present: str, absent: str | None) -> None:
    result = invoke("catalog", *flags)
    assert result.exit_code == 0
    assert present in result.stdout
    if absent is not None:
        assert absent not in result.stdout


def test_catalog_with_a_missing_file_exits_2(tmp_path: Path) -> None:
    result = invoke("catalog", "--catalog", tmp_path / "nothere.toml")
    assert result.exit_code == 2
    assert "file not found" in result.stderr


@pytest.mark.slow
def test_python_m_planner_reports_bad_input_without_traceback(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "planner", "solve", str(tmp_path / "nothere.toml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("error: ")
    assert "Traceback" not in proc.stderr


def test_the_package_exports_the_api_functions() -> None:
    import planner
    import planner.api

    assert planner.validate is planner.api.validate
    assert planner.plan is planner.api.plan
    assert planner.load_instance is planner.api.load_instance
    assert planner.compare_optics is planner.api.compare_optics
    assert set(planner.__all__) <= set(dir(planner))


@pytest.mark.slow
def test_a_streamed_verification_says_how_it_sampled(small: Path, tmp_path: Path) -> None:
    result = invoke(
        "solve",
        small,
        "-o",
        tmp_path / "out",
        "-q",
        "--set",
        "verify.memory_budget_gib=2e-5",  # above the routing table, far below the routes
        "--set",
        'verify.traffic=[{kind="uniform_all_to_all", size_bytes=1e6}]',  # 65,280 flows
    )
    assert result.exit_code == 0, result.output
    # 256 x 7 of the 65,280 stay inside their 8-GPU scale-up domain: 63,488 on the fabric.
    assert "63,488 flows routed in" in result.stderr
    assert "its time is exact" in result.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    section = text.split("### What the figures rest on", 1)[1]
    assert "upper bounds on 10,000 flows sampled uniformly" in section
    assert "over verify.memory_budget_gib = 2e-05" in section


def test_an_unstreamed_verification_claims_no_sample(solved: Path) -> None:
    assert "What the figures rest on" not in (solved / "report.md").read_text()


# ---- --formats -----------------------------------------------------------------------------
#: Every command that writes a folder, with the arguments it needs besides its folder.
WRITERS = ["solve", "evaluate", "compare-fabrics", "life", "mix", "torus", "simulate", "sweep"]


def _writer_args(command: str, small: Path, solved: Path) -> list[str | Path]:
    if command == "simulate":
        return [command, solved / "design.json"]
    if command == "sweep":
        return [command, small, "--grid", "cluster.gpus=128,256"]
    return [command, small]


def suffixes(folder: Path) -> set[str]:
    """The suffixes of the visible files of a folder."""
    return {p.suffix for p in folder.iterdir() if p.is_file() and not p.name.startswith(".")}


#: Files every report set holds, whatever its formats.
ALWAYS = {".md", ".html", ".json"}


@pytest.mark.parametrize("command", WRITERS)
@pytest.mark.parametrize("value", ["csv,xlsx", "", "csv;png"])
def test_an_unknown_format_exits_2_naming_the_allowed_ones(
    small: Path, solved: Path, tmp_path: Path, command: str, value: str
) -> None:
    out = tmp_path / "out"
    result = invoke(*_writer_args(command, small, solved), "-o", out, "--formats", value)
    assert result.exit_code == 2, result.output
    assert result.stderr.startswith("error: --formats")
    assert "csv, parquet, png, svg" in result.stderr
    assert not out.exists()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("csv,png", {".csv", ".png"}),
        ("parquet,svg", {".parquet", ".svg"}),
        ("csv", {".csv"}),
        (" PNG , csv ", {".csv", ".png"}),
    ],
)
@pytest.mark.slow
def test_solve_writes_only_the_chosen_formats_and_the_page_keeps_its_pictures(
    small: Path, tmp_path: Path, value: str, expected: set[str]
) -> None:
    out = tmp_path / "out"
    result = invoke("solve", small, "-o", out, "-q", "--no-verify", "--formats", value)
    assert result.exit_code == 0, result.output
    assert suffixes(out) == expected | ALWAYS
    page = (out / "report.html").read_text()
    assert page.count("data:image/svg+xml;base64,") == 4  # topology, costs, alternatives, cables


@pytest.mark.slow
def test_a_run_with_fewer_formats_removes_only_the_files_the_planner_wrote(
    small: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    assert invoke("solve", small, "-o", out, "-q", "--no-verify").exit_code == 0
    with (out / "bom.parquet").open("ab") as f:
        f.write(b"changed by hand")
    (out / "notes.parquet").write_bytes(b"mine")
    result = invoke("solve", small, "-o", out, "-q", "--no-verify", "--force", "--formats", "csv")
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.glob("*.parquet")) == ["bom.parquet", "notes.parquet"]
    assert not list(out.glob("*.png")) + list(out.glob("*.svg"))
    assert (out / "notes.parquet").read_bytes() == b"mine"
    manifest = read_manifest(out)
    assert manifest is not None
    assert {Path(n).suffix for n in manifest.files} == {".csv"} | ALWAYS
    assert is_complete(out)


@pytest.mark.slow
def test_torus_writes_only_the_chosen_table_format(tmp_path: Path) -> None:
    out = tmp_path / "out"
    pod = Path(__file__).resolve().parents[2] / "instances" / "tpu-pod-4k.toml"
    result = invoke("torus", pod, "-o", out, "--formats", "parquet")
    assert result.exit_code == 0, result.output
    assert suffixes(out) == {".parquet"}
    assert (out / "torus_pod.parquet").is_file()


@pytest.mark.slow
def test_simulate_writes_only_the_chosen_formats(solved: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result = invoke("simulate", solved / "design.json", "-o", out, "-q", "--formats", "svg")
    assert result.exit_code == 0, result.output
    assert suffixes(out) == {".svg"} | ALWAYS
    assert "data:image/svg+xml;base64," in (out / "report.html").read_text()


@pytest.mark.slow
def test_sweep_writes_only_the_chosen_formats(small: Path, tmp_path: Path) -> None:
    out = tmp_path / "study"
    result = invoke(
        "sweep", small, "--grid", "cluster.gpus=128,256", "--workers", "1", "--no-verify",
        "-o", out, "-q", "--formats", "csv",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert suffixes(out) == {".csv", ".html", ".json"}
    assert (out / "study.csv").is_file()
    assert "data:image/svg+xml;base64," in (out / "report.html").read_text()


@pytest.mark.parametrize("command", WRITERS)
def test_every_writing_command_offers_formats(command: str) -> None:
    result = invoke(command, "--help")
    assert "--formats" in result.stdout


#: Every command, in the order ``--help`` lists them: the order they register in.
COMMAND_ORDER = [
    "solve",
    "torus",
    "compare-fabrics",
    "evaluate",
    "life",
    "mix",
    "sweep",
    "validate",
    "simulate",
    "catalog",
    "schema",
]


def test_help_lists_every_command_in_its_order() -> None:
    result = invoke("--help")
    assert result.exit_code == 0, result.output
    listing = result.stdout.split("Commands:\n", 1)[1]
    assert [line.split()[0] for line in listing.splitlines() if line.strip()] == COMMAND_ORDER

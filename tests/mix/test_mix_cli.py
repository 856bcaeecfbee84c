"""``fabric-planner mix``: the set it writes, what it prints, and refusals with status 2."""

from __future__ import annotations

import tomllib
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.mix.plan import DESIGNS_SCHEMA, JOBS_SCHEMA
from tests.mix.cases import cluster, toml_text

runner = CliRunner()


def _write(path: Path, data: dict[str, object]) -> Path:
    path.write_text(toml_text(data), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    folder = tmp_path_factory.mktemp("mix")
    inst = _write(folder / "mix.toml", cluster(256))
    result = runner.invoke(app, ["mix", str(inst), "-o", str(folder / "out")])
    assert result.exit_code == 0, result.output
    return folder / "out", result.stdout


def test_the_set_holds_the_tables_the_picture_and_the_page(written: tuple[Path, str]) -> None:
    out, _ = written
    names = {p.name for p in out.iterdir() if not p.name.startswith(".")}
    assert {
        "mix_designs.csv",
        "mix_designs.parquet",
        "mix_jobs.csv",
        "mix_jobs.parquet",
        "fig_mix_placement.png",
        "fig_mix_placement.svg",
        "mix.md",
    } <= names
    assert dict(pl.read_parquet(out / "mix_designs.parquet").schema) == DESIGNS_SCHEMA
    assert dict(pl.read_parquet(out / "mix_jobs.parquet").schema) == JOBS_SCHEMA
    assert (out / "fig_mix_placement.png").read_bytes().startswith(b"\x89PNG")
    page = (out / "mix.md").read_text()
    assert "Chosen for the mix" in page
    assert "Chosen for one job" in page


def test_it_prints_each_candidate_and_both_choices(written: tuple[Path, str]) -> None:
    out, stdout = written
    designs = pl.read_parquet(out / "mix_designs.parquet")
    for c in designs["candidate"].unique().to_list():
        assert c in stdout
    mix = designs.filter("chosen_for_mix")["candidate"][0]
    assert f"chosen for the mix: {mix}" in stdout
    one = designs.filter("chosen_for_one_job")["candidate"][0]
    assert f"chosen for one job: {one}" in stdout


def test_progress_goes_to_stderr_and_quiet_silences_it(tmp_path: Path) -> None:
    inst = _write(tmp_path / "mix.toml", cluster(256) | {"search": {"families": ["clos"]}})
    loud = runner.invoke(app, ["mix", str(inst), "-o", str(tmp_path / "a")])
    assert loud.exit_code == 0, loud.output
    lines = [line for line in loud.stderr.splitlines() if line.startswith("mix: ")]
    assert lines[0].startswith("mix: clos: planned, network $")
    assert sum(", pack: " in line or ", first_fit: " in line for line in lines) == 2
    assert not [line for line in loud.stdout.splitlines() if line.startswith("mix: ")]
    quiet = runner.invoke(app, ["mix", str(inst), "-o", str(tmp_path / "b"), "--quiet"])
    assert quiet.exit_code == 0, quiet.output
    assert not [line for line in quiet.stderr.splitlines() if line.startswith("mix: ")]
    assert "chosen for the mix: clos" in quiet.stdout


def test_an_instance_without_jobs_exits_2_and_writes_nothing(tmp_path: Path) -> None:
    data = cluster(256)
    del data["jobs"]
    inst = _write(tmp_path / "x.toml", data)
    result = runner.invoke(app, ["mix", str(inst), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "no [jobs] section" in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("jobs", "field", "words"),
    [
        ({"gpu_share": [1.0]}, "jobs", "gpu_share goes with sizes_gpus"),
        ({"sizes_gpus": [8], "gpu_share": [1.0], "source": "x"}, "jobs", "either sizes_gpus"),
        (
            {"queue": None, "sizes_gpus": [1, 8], "gpu_share": [0.5, 0.4], "source": "x"},
            "jobs",
            "sums to 0.9000",
        ),
        ({"queue": None, "sizes_gpus": [1, 8], "gpu_share": [0.5, 0.5]}, "jobs", "source"),
        (
            {"queue": None, "sizes_gpus": [8, 1], "gpu_share": [0.5, 0.5], "source": "x"},
            "jobs",
            "ascending",
        ),
        ({"queue": [4, 1024]}, "jobs", "larger than the cluster"),
        ({"policies": ["pack", "pack"]}, "jobs", "each at most once"),
        ({"routings": ["adaptive"]}, "jobs.routings", "ecmp"),
    ],
)
def test_a_bad_jobs_section_names_its_field_and_exits_2(
    tmp_path: Path, jobs: dict[str, object], field: str, words: str
) -> None:
    data = cluster(256)
    data["jobs"] = {k: v for k, v in (data["jobs"] | jobs).items() if v is not None}  # type: ignore[operator]
    inst = _write(tmp_path / "x.toml", data)
    result = runner.invoke(app, ["mix", str(inst), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2, result.output
    assert field in result.stderr
    assert words in result.stderr
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


def test_a_mix_without_a_price_needs_a_workload(tmp_path: Path) -> None:
    data = cluster(256)
    data["jobs"] = {k: v for k, v in data["jobs"].items() if k != "gpu_usd_per_hour"}  # type: ignore[attr-defined]
    inst = _write(tmp_path / "x.toml", data)
    result = runner.invoke(app, ["mix", str(inst), "-o", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "gpu_usd_per_hour" in result.stderr


def test_the_shipped_example_reads(tmp_path: Path) -> None:
    text = (Path(__file__).parents[2] / "instances" / "mix-16k.toml").read_text()
    jobs = tomllib.loads(text)["jobs"]
    assert sum(jobs["gpu_share"]) == pytest.approx(1.0)
    assert "arxiv.org/abs/2410.21680" in jobs["source"]

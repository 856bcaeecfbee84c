"""Resuming a study folder: changed inputs are planned again and said, damaged parts are planned
again (the damaged file kept aside), and a ``study.json`` the planner cannot use is named."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.study import SerialExecutor, run_sweep
from planner.study.parts import (
    DAMAGED_SUFFIX,
    PART_METADATA,
    PARTS_DIR,
    part_path,
    read_part,
    write_part,
)
from tests.study.conftest import TIME_LIMIT_S, tiny

runner = CliRunner()

TINY_TOML = """\
name = "tiny"

[cluster]
gpus = 64
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
"""
#: Two scenarios of the tiny instance.
GRID_2: dict[str, list[Any]] = {"cluster.gpus": [16, 64]}


def priced_catalog(path: Path, price_usd: float) -> Path:
    """The default catalog with every ``cost_usd`` set to ``price_usd``."""
    text = (Path(planner.__file__).parent / "catalog" / "default.toml").read_text(encoding="utf-8")
    path.write_text(
        re.sub(r"(?m)^cost_usd = [0-9][0-9_.e+]*$", f"cost_usd = {price_usd}", text),
        encoding="utf-8",
    )
    return path


def sweep_args(source: Path, out: Path, *extra: str) -> list[str]:
    """The sweep of ``source`` over ``cluster.gpus=16,64`` into ``out``, in this process."""
    return [
        "sweep",
        str(source),
        "--grid",
        "cluster.gpus=16,64",
        "--workers",
        "1",
        "--no-verify",
        "-q",
        "-o",
        str(out),
        *extra,
    ]


@pytest.fixture
def swept(tmp_path: Path) -> tuple[Path, Path]:
    """The two-scenario study of an instance with its own catalog file: (instance, folder)."""
    catalog = priced_catalog(tmp_path / "mine.toml", 10_000.0)
    source = tmp_path / "tiny.toml"
    source.write_text(TINY_TOML + f'\n[search]\ncatalog = "{catalog}"\n', encoding="utf-8")
    out = tmp_path / "study"
    result = runner.invoke(app, sweep_args(source, out))
    assert result.exit_code == 0, result.output
    return source, out


def parts_of(folder: Path) -> list[Path]:
    return sorted((folder / PARTS_DIR).glob("*.parquet"))


# ---- changed inputs: resumed, planned again, and said ----------------------------------------
@pytest.mark.slow
def test_a_changed_catalog_resumes_and_plans_the_scenarios_again_saying_why(
    swept: tuple[Path, Path], tmp_path: Path
) -> None:
    source, out = swept
    before = pl.read_parquet(out / "study.parquet")
    old_parts = {p.name: p.read_bytes() for p in parts_of(out)}
    priced_catalog(tmp_path / "mine.toml", 90_000.0)  # the architect edits a price
    result = runner.invoke(app, sweep_args(source, out))
    assert result.exit_code == 0, result.output
    assert "scenarios: 2 computed, 0 reused" in result.stdout
    assert "2 of 2 scenarios planned again" in result.stderr
    assert "the catalog's content" in result.stderr
    after = pl.read_parquet(out / "study.parquet")
    assert (after["capex_usd"] > before["capex_usd"]).all()
    # The parts of the old prices are kept: editing the price back reuses them.
    for name, data in old_parts.items():
        assert (out / PARTS_DIR / name).read_bytes() == data
    priced_catalog(tmp_path / "mine.toml", 10_000.0)
    back = runner.invoke(app, sweep_args(source, out))
    assert back.exit_code == 0, back.output
    assert "scenarios: 0 computed, 2 reused" in back.stdout
    assert "planned again" not in back.stderr


@pytest.mark.slow
@pytest.mark.parametrize(
    ("extra", "why"),
    [(("--time-limit", "7"), "--time-limit or --no-verify")],
)
def test_other_settings_resume_and_say_what_changed(
    swept: tuple[Path, Path], extra: tuple[str, ...], why: str
) -> None:
    source, out = swept
    result = runner.invoke(app, sweep_args(source, out, *extra))
    assert result.exit_code == 0, result.output
    assert "scenarios: 2 computed, 0 reused" in result.stdout
    assert why in result.stderr


@pytest.mark.slow
def test_an_edited_instance_file_plans_only_the_scenarios_it_changes(
    swept: tuple[Path, Path],
) -> None:
    source, out = swept
    # gpus is swept: the base's value is overridden in both scenarios, so nothing changes...
    source.write_text(source.read_text().replace("gpus = 64", "gpus = 32"), encoding="utf-8")
    same = runner.invoke(app, sweep_args(source, out))
    assert same.exit_code == 0, same.output
    assert "scenarios: 0 computed, 2 reused" in same.stdout
    # ...while a field every scenario keeps changes them all.
    source.write_text(
        source.read_text().replace("nic_gbps = 400", "nic_gbps = 200"), encoding="utf-8"
    )
    changed = runner.invoke(app, sweep_args(source, out))
    assert changed.exit_code == 0, changed.output
    assert "2 of 2 scenarios planned again" in changed.stderr
    assert "the instance" in changed.stderr


# ---- damaged parts ------------------------------------------------------------------------------
def _truncated(data: bytes) -> bytes:
    return data[: len(data) // 2]


def _metadata_not_json(path: Path) -> bytes:
    frame = pl.read_parquet(path)
    frame.write_parquet(path, metadata={PART_METADATA: "{not json"})
    return path.read_bytes()


DAMAGES = {
    "truncated": lambda p: _truncated(p.read_bytes()),
    "garbage": lambda p: b"\x00\xff not a part",
    "empty": lambda p: b"",
    "metadata-not-json": _metadata_not_json,
}


@pytest.mark.slow
@pytest.mark.parametrize("damage", sorted(DAMAGES))
def test_a_damaged_part_is_planned_again_and_kept_aside(tmp_path: Path, damage: str) -> None:
    folder = tmp_path / "study"
    run_sweep(
        tiny(), GRID_2, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    hurt, good = parts_of(folder)
    bad = DAMAGES[damage](hurt)
    hurt.write_bytes(bad)
    good_bytes = good.read_bytes()
    run = run_sweep(
        tiny(), GRID_2, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    assert (run.computed, run.reused) == (1, 1)
    assert len(run.damaged) == 1
    assert hurt.name in run.damaged[0]
    assert good.read_bytes() == good_bytes  # a good part is never touched
    assert hurt.with_name(hurt.name + DAMAGED_SUFFIX).read_bytes() == bad  # kept aside
    schema = dict(pl.read_parquet(good).schema)
    assert read_part(folder, hurt.stem, schema).row is not None  # whole again


@pytest.mark.slow
def test_the_command_says_a_damaged_part_is_planned_again(swept: tuple[Path, Path]) -> None:
    source, out = swept
    hurt = parts_of(out)[0]
    hurt.write_bytes(_truncated(hurt.read_bytes()))
    result = runner.invoke(app, sweep_args(source, out))
    assert result.exit_code == 0, result.output
    assert "scenarios: 1 computed, 1 reused" in result.stdout
    assert f"{hurt.name} was damaged" in result.stderr
    assert "planned again" in result.stderr


def test_a_readable_table_without_a_parts_metadata_is_still_refused(tmp_path: Path) -> None:
    schema = {"scenario": pl.Utf8, "status": pl.Utf8}
    key = "2" * 20
    write_part(tmp_path, key, {"scenario": "x", "status": "ok"}, schema)
    path = part_path(tmp_path, key)
    pl.DataFrame({"scenario": ["mine"]}).write_parquet(path)
    with pytest.raises(planner.errors.InputError, match="not a part fabric-planner wrote"):
        read_part(tmp_path, key, schema)
    with pytest.raises(planner.errors.InputError, match="not a part fabric-planner wrote"):
        write_part(tmp_path, key, {"scenario": "x", "status": "ok"}, schema)
    assert pl.read_parquet(path)["scenario"].to_list() == ["mine"]


# ---- study.json that the planner cannot use -------------------------------------------------------
def _link(path: Path) -> None:
    path.rename(path.with_name("elsewhere.json"))
    path.symlink_to("elsewhere.json")


def _folder(path: Path) -> None:
    path.unlink()
    path.mkdir()


def _edited(path: Path) -> None:
    path.write_text("garbage", encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize(
    ("make", "words"),
    [(_link, "is a link"), (_folder, "is a folder"), (_edited, "changed since")],
)
def test_a_study_json_the_planner_cannot_use_is_named(
    swept: tuple[Path, Path], make: Any, words: str, force: bool
) -> None:
    source, out = swept
    make(out / "study.json")
    result = runner.invoke(app, sweep_args(source, out, *(["--force"] if force else [])))
    assert result.exit_code == 2, result.output
    assert "study.json" in result.stderr
    assert words in result.stderr
    # --force would not help: the message does not send the user there.
    assert "even with --force" in result.stderr


@pytest.mark.slow
def test_a_missing_study_json_is_named_and_force_reuses_the_parts(
    swept: tuple[Path, Path],
) -> None:
    source, out = swept
    (out / "study.json").unlink()
    refused = runner.invoke(app, sweep_args(source, out))
    assert refused.exit_code == 2, refused.output
    assert "study.json" in refused.stderr
    assert "--force" in refused.stderr
    forced = runner.invoke(app, sweep_args(source, out, "--force"))
    assert forced.exit_code == 0, forced.output
    assert "scenarios: 0 computed, 2 reused" in forced.stdout
    assert json.loads((out / "study.json").read_text())["complete"] is True


@pytest.mark.slow
def test_a_part_whose_row_names_another_scenario_is_planned_again(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    first = run_sweep(
        tiny(), GRID_2, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    path = parts_of(folder)[0]
    meta = pl.read_parquet_metadata(path)[PART_METADATA]
    edited = pl.read_parquet(path).with_columns(pl.lit("../../escape").alias("scenario"))
    edited.write_parquet(path, metadata={PART_METADATA: meta})
    run = run_sweep(
        tiny(), GRID_2, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    assert (run.computed, run.reused, run.stale) == (1, 1, 1)
    assert run.table["scenario"].to_list() == first.table["scenario"].to_list()


@pytest.mark.slow
def test_the_same_scenarios_in_another_order_resume(swept: tuple[Path, Path]) -> None:
    source, out = swept
    args = sweep_args(source, out)
    args[args.index("cluster.gpus=16,64")] = "cluster.gpus=64,16"
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "scenarios: 0 computed, 2 reused (resumed)" in result.stdout
    assert pl.read_parquet(out / "study.parquet")["scenario"].to_list() == ["gpus=64", "gpus=16"]


@pytest.mark.slow
def test_a_finished_studys_missing_part_is_planned_again_and_said(
    swept: tuple[Path, Path],
) -> None:
    source, out = swept
    parts_of(out)[0].unlink()
    result = runner.invoke(app, sweep_args(source, out))
    assert result.exit_code == 0, result.output
    assert "scenarios: 1 computed, 1 reused" in result.stdout
    assert "1 of 2 scenarios planned again: their part is missing from parts/" in result.stderr


@pytest.mark.slow
def test_only_the_scenarios_of_the_edited_catalog_are_planned_again(tmp_path: Path) -> None:
    cheap = priced_catalog(tmp_path / "cheap.toml", 10_000.0)
    dear = priced_catalog(tmp_path / "dear.toml", 20_000.0)
    source = tmp_path / "tiny.toml"
    source.write_text(TINY_TOML, encoding="utf-8")
    out = tmp_path / "study"
    args = sweep_args(source, out)
    args[args.index("--grid") + 1] = (
        f"search.catalog={json.dumps(str(cheap))},{json.dumps(str(dear))}"
    )
    assert runner.invoke(app, args).exit_code == 0
    priced_catalog(dear, 30_000.0)
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "scenarios: 1 computed, 1 reused" in result.stdout
    assert "1 of 2 scenarios planned again: the catalog's content changed" in result.stderr

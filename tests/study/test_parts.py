"""Parts: keyed by content, checked against their key when read, and never a foreign file touched."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from typer.testing import CliRunner

import planner
from planner.cli import app
from planner.errors import InputError
from planner.study import SerialExecutor, run_sweep
from planner.study.parts import (
    DAMAGED_SUFFIX,
    PARTS_DIR,
    PARTS_MARKER,
    part_path,
    read_part,
    write_part,
)
from tests.study.conftest import TIME_LIMIT_S, comparable, tiny

#: A small study: 2 x 2 scenarios of the tiny instance.
GRID_4: dict[str, list[Any]] = {"cluster.gpus": [16, 64], "cluster.nic_gbps": [200, 400]}

runner = CliRunner()


class NoExecutor(Executor):
    """Fails the test if anything is submitted."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        raise AssertionError("a scenario was planned")


def study_in(folder: Path, executor: Executor | None = None, **changes: Any) -> Any:
    """Run the small study (of the tiny instance with ``changes``) into ``folder``."""
    inst = tiny().with_changes(changes) if changes else tiny()
    return run_sweep(
        inst,
        GRID_4,
        executor or SerialExecutor(),
        verify=False,
        time_limit_s=TIME_LIMIT_S,
        results=folder,
    )


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, pl.DataFrame]:
    """The small study run to the end into a folder: the folder and the table."""
    folder = tmp_path / "study"
    return folder, study_in(folder).table


def parts_of(folder: Path) -> list[Path]:
    return sorted((folder / PARTS_DIR).glob("*.parquet"))


@pytest.mark.slow
def test_swapped_parts_are_planned_again_not_trusted(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, table = finished
    first, second = parts_of(folder)[:2]
    swap = first.with_name("swap")
    os.replace(first, swap)
    os.replace(second, first)
    os.replace(swap, second)
    run = study_in(folder)
    assert (run.computed, run.reused, run.stale) == (2, 2, 2)
    assert comparable(run.table).equals(comparable(table))


@pytest.mark.slow
def test_a_part_holds_its_key(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, _ = finished
    for path in parts_of(folder):
        meta = pl.read_parquet_metadata(path)
        assert f'"key": "{path.stem}"' in meta["fabric_planner_part"]


def _priced_catalog(path: Path, price_usd: float) -> Path:
    """The default catalog with every ``cost_usd`` set to ``price_usd``."""
    text = (Path(planner.__file__).parent / "catalog" / "default.toml").read_text(encoding="utf-8")
    path.write_text(
        re.sub(r"(?m)^cost_usd = [0-9][0-9_.e+]*$", f"cost_usd = {price_usd}", text),
        encoding="utf-8",
    )
    return path


@pytest.mark.slow
def test_a_changed_catalog_file_plans_every_scenario_again(tmp_path: Path) -> None:
    catalog = _priced_catalog(tmp_path / "mine.toml", 10_000.0)
    folder = tmp_path / "study"
    cheap = study_in(folder, **{"search.catalog": str(catalog)})
    _priced_catalog(catalog, 90_000.0)  # the same file name, other contents
    dear = study_in(folder, **{"search.catalog": str(catalog)})
    assert (dear.computed, dear.reused) == (4, 0)
    assert all(
        d > c for c, d in zip(cheap.table["capex_usd"], dear.table["capex_usd"], strict=True)
    )


@pytest.mark.slow
def test_an_unchanged_catalog_file_is_reused(tmp_path: Path) -> None:
    catalog = _priced_catalog(tmp_path / "mine.toml", 10_000.0)
    folder = tmp_path / "study"
    study_in(folder, **{"search.catalog": str(catalog)})
    again = study_in(folder, NoExecutor(), **{"search.catalog": str(catalog)})
    assert (again.computed, again.reused) == (0, 4)


def test_an_error_row_is_never_written_as_a_part(tmp_path: Path) -> None:
    row = {"scenario": "x", "status": "error", "error": "RuntimeError: boom"}
    with pytest.raises(ValueError, match="only a scenario that ran"):
        write_part(tmp_path, "0" * 20, row, {"scenario": pl.Utf8, "status": pl.Utf8})
    assert not part_path(tmp_path, "0" * 20).exists()


def test_an_error_part_of_an_older_run_is_stale(tmp_path: Path) -> None:
    schema = {"scenario": pl.Utf8, "status": pl.Utf8}
    key = "1" * 20
    write_part(tmp_path, key, {"scenario": "x", "status": "ok"}, schema)
    path = part_path(tmp_path, key)
    # The same part rewritten as an older version would have kept an error.
    meta = pl.read_parquet_metadata(path)["fabric_planner_part"]
    pl.DataFrame({"scenario": ["x"], "status": ["error"]}).write_parquet(
        path, metadata={"fabric_planner_part": meta}
    )
    found = read_part(tmp_path, key, schema)
    assert (found.row, found.stale) == (None, True)


@pytest.mark.slow
def test_a_file_at_a_parts_name_that_is_no_parquet_is_planned_again_and_kept_aside(
    finished: tuple[Path, pl.DataFrame],
) -> None:
    folder, _ = finished
    victim = parts_of(folder)[0]
    victim.write_text("my notes, not a part\n", encoding="utf-8")
    run = study_in(folder)
    assert (run.computed, run.reused) == (1, 3)
    assert victim.name in run.damaged[0]
    kept = victim.with_name(victim.name + DAMAGED_SUFFIX)
    assert kept.read_text(encoding="utf-8") == "my notes, not a part\n"


@pytest.mark.slow
def test_a_table_at_a_parts_name_without_a_parts_metadata_is_refused_and_left(
    finished: tuple[Path, pl.DataFrame],
) -> None:
    folder, _ = finished
    victim = parts_of(folder)[0]
    pl.DataFrame({"mine": [1]}).write_parquet(victim)
    data = victim.read_bytes()
    with pytest.raises(InputError, match="not a part fabric-planner wrote") as info:
        study_in(folder)
    assert victim.name in str(info.value)
    assert victim.read_bytes() == data


def test_a_linked_parts_folder_is_refused_and_its_target_untouched(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / ".keep.tmp").write_text("mine", encoding="utf-8")
    (target / "data.txt").write_text("mine", encoding="utf-8")
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / PARTS_DIR).symlink_to(target, target_is_directory=True)
    with pytest.raises(InputError, match="is a link"):
        study_in(folder, NoExecutor())
    assert sorted(p.name for p in target.iterdir()) == [".keep.tmp", "data.txt"]


def test_a_parts_folder_the_planner_did_not_make_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "study"
    (folder / PARTS_DIR).mkdir(parents=True)
    (folder / PARTS_DIR / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(InputError, match="did not make"):
        study_in(folder, NoExecutor())
    assert [p.name for p in (folder / PARTS_DIR).iterdir()] == ["notes.txt"]


@pytest.mark.slow
def test_the_planners_parts_folder_carries_its_marker(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, _ = finished
    assert (folder / PARTS_DIR / PARTS_MARKER).is_file()


# ---- the same rules through the command ----------------------------------------------------
TINY_TOML = """\
name = "tiny"

[cluster]
gpus = 64
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
"""


@pytest.fixture
def swept(tmp_path: Path) -> tuple[list[str], Path]:
    """A 2-scenario study run by the command: its arguments (without --force) and its folder."""
    source = tmp_path / "tiny.toml"
    source.write_text(TINY_TOML, encoding="utf-8")
    out = tmp_path / "out"
    args = ["sweep", str(source), "--grid", "cluster.gpus=16,64", "--workers", "1"]
    args += ["--no-verify", "-q", "-o", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    return args, out


@pytest.mark.slow
def test_force_leaves_foreign_files_in_parts_alone(swept: tuple[list[str], Path]) -> None:
    args, out = swept
    foreign = {".notes.tmp": "mine", "notes.txt": "mine too"}
    for name, text in foreign.items():
        (out / PARTS_DIR / name).write_text(text, encoding="utf-8")
    result = runner.invoke(app, [*args, "--force"])
    assert result.exit_code == 0, result.output
    for name, text in foreign.items():
        assert (out / PARTS_DIR / name).read_text(encoding="utf-8") == text


@pytest.mark.slow
def test_a_killed_runs_temporary_part_is_removed(swept: tuple[list[str], Path]) -> None:
    args, out = swept
    left = out / PARTS_DIR / f".{'a' * 20}.0123abcd.tmp"
    left.write_bytes(b"half a part")
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    assert not left.exists()


@pytest.mark.slow
def test_the_command_refuses_a_linked_parts_folder(
    swept: tuple[list[str], Path], tmp_path: Path
) -> None:
    args, out = swept
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / ".old.tmp").write_text("mine", encoding="utf-8")
    (out / PARTS_DIR).rename(tmp_path / "moved-parts")
    (out / PARTS_DIR).symlink_to(target, target_is_directory=True)
    before = (out / "study.json").read_bytes()
    result = runner.invoke(app, [*args, "--force"])
    assert result.exit_code == 2, result.output
    assert "is a link" in result.output
    assert [p.name for p in target.iterdir()] == [".old.tmp"]
    assert (out / "study.json").read_bytes() == before  # nothing written

"""A study run serially, in a process pool and on Dask gives the same rows; it survives errors
and resumes from its parts."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from planner.study import SerialExecutor, process_pool, run_sweep, sweep, worker_count
from planner.study.parts import PARTS_DIR
from planner.study.run import MAX_WORKERS
from planner.study.scenarios import PLAN_COLUMNS
from tests.study.conftest import GRID_100, TIME_LIMIT_S, comparable, tiny

#: A small study for the tests that are not about scale: 2 x 2 scenarios.
GRID_4: dict[str, list[Any]] = {"cluster.gpus": [16, 64], "cluster.nic_gbps": [200, 400]}


@pytest.mark.slow
def test_the_reference_study_has_a_row_per_scenario(serial_100: pl.DataFrame) -> None:
    assert serial_100.height == 100
    assert serial_100["scenario"].n_unique() == 100
    assert serial_100["status"].to_list() == ["ok"] * 100
    assert serial_100["plan_status"].to_list() == ["optimal"] * 100
    # One column per swept key, with the scenario's value, in grid order (last key fastest).
    assert serial_100["cluster.gpus"].to_list()[:4] == [8, 8, 8, 8]
    assert serial_100["constraints.max_oversubscription"].to_list()[:4] == [1.0, 2.0, 1.0, 2.0]
    assert serial_100["gpus"].to_list() == serial_100["cluster.gpus"].to_list()


@pytest.mark.slow
def test_columns_are_scenario_keys_status_error_then_the_summary(serial_100: pl.DataFrame) -> None:
    assert serial_100.columns == [
        "scenario",
        *GRID_100,
        "status",
        "error",
        *PLAN_COLUMNS,
    ]


@pytest.mark.slow
def test_rows_are_labelled_by_scenario(serial_100: pl.DataFrame) -> None:
    row = serial_100.row(0, named=True)
    assert row["scenario"] == "gpus=8+nic_gbps=200+max_oversubscription=1"
    assert row["instance"] == "tiny.gpus-8.nic_gbps-200.max_oversubscription-1"


@pytest.mark.slow
def test_a_process_pool_gives_the_serial_rows(serial_100: pl.DataFrame) -> None:
    start = time.perf_counter()
    with process_pool(2) as pool:
        pooled = sweep(tiny(), GRID_100, pool, verify=False, time_limit_s=TIME_LIMIT_S)
    print(f"process pool: {time.perf_counter() - start:.1f} s for {pooled.height} scenarios")
    assert comparable(pooled).equals(comparable(serial_100))


@pytest.mark.slow
def test_a_dask_cluster_gives_the_serial_rows(serial_100: pl.DataFrame) -> None:
    from distributed import Client, LocalCluster

    with (
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None
        ) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        on_dask = sweep(
            tiny(), GRID_100, client.get_executor(), verify=False, time_limit_s=TIME_LIMIT_S
        )
        print(f"dask: {time.perf_counter() - start:.1f} s for {on_dask.height} scenarios")
    assert comparable(on_dask).equals(comparable(serial_100))


@pytest.mark.slow
def test_the_default_executor_is_a_process_pool() -> None:
    default = sweep(tiny(), GRID_4, verify=False, time_limit_s=TIME_LIMIT_S)
    serial = sweep(tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S)
    assert comparable(default).equals(comparable(serial))


def raising_for(gpus: int) -> Callable[..., Any]:
    """``planner.api.plan`` that raises for the scenarios of ``gpus`` GPUs (a bug, say)."""
    from planner import api

    real = api.plan

    def plan(inst: Any, **kwargs: Any) -> Any:
        if inst.cluster.gpus == gpus:
            raise RuntimeError(f"no plan for {gpus} GPUs today")
        return real(inst, **kwargs)

    return plan


@pytest.mark.slow
def test_a_scenario_that_raises_is_an_error_row_and_the_others_run(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("planner.api.plan", raising_for(16))
    df = sweep(tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S)
    by_gpus = {r["cluster.gpus"]: r for r in df.iter_rows(named=True)}
    assert df["status"].to_list() == ["error", "error", "ok", "ok"]
    assert "RuntimeError: no plan for 16 GPUs today" in by_gpus[16]["error"]
    assert by_gpus[16]["capex_usd"] is None
    assert by_gpus[64]["error"] is None
    assert by_gpus[64]["capex_usd"] > 0


@pytest.mark.slow
def test_an_error_is_never_kept_and_the_next_run_plans_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr("planner.api.plan", raising_for(16))
        first = run_sweep(
            tiny(),
            GRID_4,
            SerialExecutor(),
            verify=False,
            time_limit_s=TIME_LIMIT_S,
            results=tmp_path,
        )
    assert first.table["status"].to_list() == ["error", "error", "ok", "ok"]
    assert not first.complete
    assert len(list((tmp_path / PARTS_DIR).glob("*.parquet"))) == 2
    # The cause is gone: the scenarios in error are planned again, the others read back.
    second = run_sweep(
        tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=tmp_path
    )
    assert (second.computed, second.reused) == (2, 2)
    assert second.table["status"].to_list() == ["ok"] * 4
    assert second.complete


class LosingExecutor(Executor):
    """Loses every second task, as a pool whose worker was killed would."""

    def __init__(self) -> None:
        self.calls = 0

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        self.calls += 1
        future: Future[Any] = Future()
        if self.calls % 2 == 0:
            future.set_exception(RuntimeError("worker lost"))
        else:
            future.set_result(fn(*args, **kwargs))
        return future


@pytest.mark.slow
def test_scenarios_the_executor_loses_are_errors_not_kept(tmp_path: Path) -> None:
    run = run_sweep(
        tiny(), GRID_4, LosingExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=tmp_path
    )
    assert run.lost == 2
    assert run.table["status"].to_list() == ["ok", "error", "ok", "error"]
    assert "worker lost" in run.table["error"][1]
    assert len(list((tmp_path / PARTS_DIR).glob("*.parquet"))) == 2
    again = run_sweep(
        tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=tmp_path
    )
    assert (again.computed, again.reused, again.lost) == (2, 2, 0)
    assert again.table["status"].to_list() == ["ok"] * 4


@pytest.mark.slow
def test_progress_counts_every_scenario_once() -> None:
    seen: list[tuple[int, int, str]] = []
    df = sweep(
        tiny(),
        GRID_4,
        SerialExecutor(),
        verify=False,
        time_limit_s=TIME_LIMIT_S,
        progress=lambda done, total, name: seen.append((done, total, name)),
    )
    assert [(d, t) for d, t, _ in seen] == [(1, 4), (2, 4), (3, 4), (4, 4)]
    assert sorted(n for _, _, n in seen) == sorted(df["scenario"])


class NoExecutor(Executor):
    """Fails the test if anything is submitted."""

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future[Any]:
        raise AssertionError("a finished scenario was planned again")


@pytest.fixture
def finished(tmp_path: Path) -> tuple[Path, pl.DataFrame]:
    """A study run to the end into a results folder: the folder and the table."""
    df = sweep(
        tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=tmp_path
    )
    return tmp_path, df


@pytest.mark.slow
def test_each_finished_scenario_is_one_part(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, df = finished
    parts = sorted((folder / PARTS_DIR).glob("*.parquet"))
    assert len(parts) == df.height
    assert all(p.suffix == ".parquet" for p in parts)
    assert pl.concat([pl.read_parquet(p) for p in parts])["scenario"].sort().to_list() == sorted(
        df["scenario"]
    )


@pytest.mark.slow
def test_a_rerun_reuses_every_part_and_gives_the_same_rows(
    finished: tuple[Path, pl.DataFrame],
) -> None:
    folder, df = finished
    run = run_sweep(
        tiny(), GRID_4, NoExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    assert (run.computed, run.reused) == (0, 4)
    assert run.table.equals(df)


@pytest.mark.slow
def test_a_rerun_computes_only_the_missing_scenarios(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, df = finished
    parts = sorted((folder / PARTS_DIR).glob("*.parquet"))
    parts[1].unlink()
    kept = {p: p.stat().st_mtime_ns for p in parts if p.exists()}
    run = run_sweep(
        tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    assert (run.computed, run.reused) == (1, 3)
    assert {p: p.stat().st_mtime_ns for p in kept} == kept
    assert comparable(run.table).equals(comparable(df))


@pytest.mark.slow
def test_another_setting_does_not_reuse_the_parts(finished: tuple[Path, pl.DataFrame]) -> None:
    folder, _ = finished
    run = run_sweep(
        tiny(), GRID_4, SerialExecutor(), verify=False, time_limit_s=7.0, results=folder
    )
    assert (run.computed, run.reused) == (4, 0)


@pytest.mark.slow
def test_a_study_with_a_stretched_grid_reuses_the_scenarios_it_shares(
    finished: tuple[Path, pl.DataFrame],
) -> None:
    folder, _ = finished
    grid = {"cluster.gpus": [16, 64, 128], "cluster.nic_gbps": [200, 400]}
    run = run_sweep(
        tiny(), grid, SerialExecutor(), verify=False, time_limit_s=TIME_LIMIT_S, results=folder
    )
    assert (run.computed, run.reused) == (2, 4)
    assert run.table.height == 6


def test_a_scenario_with_verification_has_simulated_figures() -> None:
    df = sweep(tiny(), {"cluster.gpus": [32]}, SerialExecutor(), time_limit_s=TIME_LIMIT_S)
    assert df["verdict"].to_list() == ["meets"]
    assert df["sim_fraction_ecmp"][0] is not None


@pytest.mark.parametrize(
    ("requested", "scenarios", "cores", "count", "why"),
    [
        (10_000, 20, 2, 2, "this machine has 2 cores"),
        (8, 3, 16, 3, "the study has 3 scenarios"),
        (None, 3, 16, 3, ""),  # the default is capped silently
        (None, 100, 4, 4, ""),
        (4, 100, 16, 4, ""),
        (1_000, 10_000, 1_000, MAX_WORKERS, f"at most {MAX_WORKERS} processes"),
    ],
    ids=str,
)
def test_workers_are_capped_at_scenarios_cores_and_a_hard_maximum(
    monkeypatch: pytest.MonkeyPatch,
    requested: int | None,
    scenarios: int,
    cores: int,
    count: int,
    why: str,
) -> None:
    monkeypatch.setattr("planner.study.run.default_workers", lambda: cores)
    assert worker_count(requested, scenarios) == (count, why)


def test_a_process_pool_never_exceeds_the_hard_maximum() -> None:
    pool = process_pool(10_000)  # no process starts before a task is submitted
    try:
        assert pool._max_workers == MAX_WORKERS
    finally:
        pool.shutdown()

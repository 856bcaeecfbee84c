"""Running a study: every scenario planned on an executor, finished ones kept for a resume.

The worker (:func:`run_scenario`) is a top-level function of plain, picklable data in and out:
it runs in a process pool, on Dask workers (``distributed.Client(...).get_executor()``) or in
this process (:class:`SerialExecutor`) alike. A scenario whose plan raises comes back as an
``error`` row; an executor that loses a scenario (a worker killed, a pool broken) gives an
``error`` row too. Neither is kept on disk (an error is never a result): a re-run plans the
scenario again, so an error whose cause was fixed goes away.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

import polars as pl

from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.study.parts import (
    DAMAGED_SUFFIX,
    PARTS_DIR,
    part_path,
    parts_dir,
    read_part,
    table,
    write_part,
)
from planner.study.scenarios import (
    PLAN_COLUMNS,
    GridOrChanges,
    Scenario,
    Study,
    build_study,
    column_value,
)

#: ``progress(done, total, scenario)``: ``done`` of ``total`` scenarios are finished (computed
#: or found on disk), the last being ``scenario`` (its name).
StudyProgress = Callable[[int, int, str], None]
#: ``status`` of a scenario that ran (its plan's status is in ``plan_status``) and of one that
#: raised (the message is in ``error``).
OK, ERROR = "ok", "error"

#: Most processes a local pool starts, whatever is asked (each loads the solvers: ~200 MiB).
MAX_WORKERS = 64

P = ParamSpec("P")
T = TypeVar("T")


class SerialExecutor(Executor):
    """Runs each call when it is submitted, in this process: a study without parallelism."""

    _max_workers = 1
    """One call at a time (read by the study to submit one scenario after the other)."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        """Run ``fn(*args, **kwargs)`` now; the returned future holds its result or exception."""
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except Exception as exc:
            future.set_exception(exc)
        return future


def default_workers() -> int:
    """The CPU cores this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def worker_count(requested: int | None, scenarios: int) -> tuple[int, str]:
    """How many local processes plan a study of ``scenarios``, and why, when fewer than asked.

    ``min(requested, scenarios, cores, MAX_WORKERS)`` (``requested`` None: one per core): a
    process beyond the scenarios would idle and one beyond the cores would only share them,
    each loading the solvers. The reason is empty when the count is what was asked (or the
    default's cores).
    """
    cores = default_workers()
    caps = [
        (cores, f"this machine has {cores} core{'s' if cores != 1 else ''}"),
        (max(1, scenarios), f"the study has {scenarios} scenario{'s' if scenarios != 1 else ''}"),
        (MAX_WORKERS, f"at most {MAX_WORKERS} processes"),
    ]
    want = cores if requested is None else requested
    count, why = want, ""
    for cap, reason in caps:
        if cap < count:
            count, why = cap, reason
    return max(1, count), ("" if requested is None or count == requested else why)


def process_pool(workers: int | None = None) -> ProcessPoolExecutor:
    """A local pool of ``workers`` processes (default: one per core), started fresh ("spawn").

    Fresh processes, not forks: the solvers' threads of this process are not copied into them.
    At most :data:`MAX_WORKERS`.
    """
    return ProcessPoolExecutor(
        max_workers=min(workers or default_workers(), MAX_WORKERS),
        mp_context=multiprocessing.get_context("spawn"),
    )


@dataclass(frozen=True)
class Task:
    """What a worker needs to plan one scenario: plain, picklable data."""

    instance: Instance
    catalog: Catalog | None
    """The scenario's catalog (read when the study was built, so its key names this content)."""
    verify: bool
    time_limit_s: float


def run_scenario(task: Task) -> dict[str, Any]:
    """Plan one scenario; its row of plain values: ``status``, ``error`` and the plan's summary.

    The summary's ``status`` becomes ``plan_status``. Whatever the plan raises becomes an
    ``error`` row with the exception's type and message.
    """
    from planner.api import plan

    inst = task.instance
    try:
        result = plan(
            inst,
            catalog=task.catalog,
            time_limit_s=task.time_limit_s,
            verify=task.verify and inst.verify.enabled,
            # The study keeps the summary row, which the alternatives table does not change.
            alternatives=False,
        )
        summary = result.summary.row(0, named=True)
    except Exception as exc:
        return error_row(inst, f"{type(exc).__name__}: {exc}")
    row: dict[str, Any] = {"status": OK, "error": None}
    for name, value in summary.items():
        row["plan_status" if name == "status" else name] = value
    return row


def error_row(inst: Instance, message: str) -> dict[str, Any]:
    """The row of a scenario that raised: what it was (instance, GPUs) and the message."""
    row: dict[str, Any] = dict.fromkeys(PLAN_COLUMNS)
    row.update(status=ERROR, error=message, instance=inst.name, gpus=inst.cluster.gpus)
    return row


@dataclass(frozen=True)
class StudyRun:
    """A study's table and how many of its scenarios were computed or found on disk."""

    table: pl.DataFrame
    computed: int
    reused: int
    lost: int
    """Scenarios the executor lost (error rows not kept on disk; a re-run computes them)."""
    stale: int = 0
    """Parts found that were not their scenario's (another key, format or columns, an error):
    planned again and replaced."""
    damaged: tuple[str, ...] = ()
    """One line per damaged part found (which file, why, which scenario): planned again, the
    damaged file kept aside (``planner.study.parts``)."""

    @property
    def complete(self) -> bool:
        """Whether every scenario ran and is kept: no error row (a re-run plans those again)."""
        return bool((self.table["status"] == OK).all())


def sweep(
    instance: Instance,
    grid_or_change_sets: GridOrChanges,
    executor: Executor | None = None,
    *,
    verify: bool = True,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    results: str | Path | None = None,
    progress: StudyProgress | None = None,
    catalog: Catalog | None = None,
) -> pl.DataFrame:
    """Plan the instance once per scenario and return the study table, one row per scenario.

    Parameters
    ----------
    instance
        The base instance every scenario changes.
    grid_or_change_sets
        A grid, ``{"cluster.gpus": [8192, 32768], "cluster.nic_gbps": [400, 800]}``, whose
        cartesian product is taken (last key fastest), or a list of change sets as
        ``Instance.with_changes`` takes them. Every scenario is validated before anything
        runs, as ``solve`` validates its instance (schema, catalog file, component names, NIC
        speeds, parallelism): bad input is an InputError naming the scenario and the field.
        Change sets that give the same instance once validated are planned once.
    executor
        Any ``concurrent.futures.Executor``; default a local pool of fresh processes, one per
        core (a script calls ``sweep`` under ``if __name__ == "__main__":``: they import it).
        For Dask: ``distributed.Client(address).get_executor()``. ``SerialExecutor()`` runs
        the scenarios one after the other in this process.
    verify
        Simulate each scenario's design under its ``[verify]`` section (when the instance
        enables it).
    time_limit_s
        Time limit of each scenario's plan.
    results
        A folder: each scenario that ran is written there as ``parts/<key>.parquet``, and a
        re-run with the same folder reuses the scenarios whose part exists and holds their key
        (``planner.study.parts``); scenarios in error, and those whose part is damaged
        (``StudyRun.damaged``), are planned again.
    progress
        ``progress(done, total, scenario)``, called in this process after each scenario that
        finishes or is found in ``results`` (``done`` of ``total``, the last one's name). The
        plans' own progress (``plan``'s ``progress``/``sim_progress``) is not shown: they run
        in other processes.
    catalog
        The catalog of every scenario; default the one each scenario's instance names.

    Returns
    -------
    pl.DataFrame
        In scenario order: ``scenario`` (its name, e.g. ``gpus=8192+nic_gbps=800``), one column
        per changed key, ``status`` (``ok`` or ``error``), ``error`` (the message, or null),
        then the plan's summary columns (``PlanResult.summary``; its ``status`` is
        ``plan_status``). Each scenario's instance is named ``<base>.<scenario>``.
    """
    return run_sweep(
        instance,
        grid_or_change_sets,
        executor,
        verify=verify,
        time_limit_s=time_limit_s,
        results=results,
        progress=progress,
        catalog=catalog,
    ).table


def run_sweep(
    instance: Instance,
    grid_or_change_sets: GridOrChanges,
    executor: Executor | None = None,
    *,
    verify: bool = True,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    results: str | Path | None = None,
    progress: StudyProgress | None = None,
    catalog: Catalog | None = None,
    study: Study | None = None,
) -> StudyRun:
    """:func:`sweep`, also counting the scenarios computed, reused and lost.

    ``study``, when given, is ``grid_or_change_sets`` already built (``study_of``).
    """
    if study is None:
        study = study_of(instance, grid_or_change_sets, verify, time_limit_s, catalog)
    folder = None if results is None else Path(results)
    total = len(study.scenarios)
    rows: dict[str, dict[str, Any]] = {}
    stale = 0
    damaged: list[str] = []
    if folder is not None:
        parts_dir(folder, create=False)  # a link or a foreign folder: bad input, before any run
    for s in study.scenarios:
        if folder is None:
            break
        found = read_part(folder, s.key, study.schema)
        if found.row is not None and not _labels_match(study, s, found.row):
            found = replace(found, row=None, stale=True)  # its key, another scenario's labels
        stale += found.stale
        if found.damaged:
            name = part_path(folder, s.key).name
            damaged.append(
                f"{PARTS_DIR}/{name} was damaged ({found.damaged}): scenario {s.name} is planned "
                f"again, and the damaged file kept as {PARTS_DIR}/{name}{DAMAGED_SUFFIX}"
            )
        if found.row is not None:
            rows[s.key] = found.row
            if progress is not None:
                progress(len(rows), total, s.name)
    reused = len(rows)
    todo = [s for s in study.scenarios if s.key not in rows]
    lost = 0
    if todo:
        own = executor is None
        pool = process_pool(worker_count(None, len(todo))[0]) if executor is None else executor
        futures: dict[Future[dict[str, Any]], Scenario] = {}
        try:
            for future in _completed(
                pool, todo, Task(instance, None, verify, time_limit_s), futures
            ):
                s = futures[future]
                try:
                    row = scenario_row(study, s, future.result())
                except Exception as exc:  # the executor lost it: shown, not kept
                    row = scenario_row(
                        study, s, error_row(s.instance, f"{type(exc).__name__}: {exc}")
                    )
                    lost += 1
                else:
                    # An error is never kept: the next run plans the scenario again.
                    if folder is not None and row["status"] == OK:
                        write_part(folder, s.key, row, study.schema)
                rows[s.key] = row
                if progress is not None:
                    progress(len(rows), total, s.name)
        finally:
            for future in futures:
                future.cancel()
            if own:
                pool.shutdown(wait=True, cancel_futures=True)
    frame = table(study.schema, [rows[s.key] for s in study.scenarios])
    return StudyRun(frame, len(todo), reused, lost, stale, tuple(damaged))


def _completed(
    pool: Executor,
    todo: list[Scenario],
    settings: Task,
    futures: dict[Future[dict[str, Any]], Scenario],
) -> Iterator[Future[dict[str, Any]]]:
    """Submit the scenarios and yield their futures as they finish, in ``futures`` as submitted.

    An executor that says how many workers it has (``_max_workers``: process and thread pools,
    :class:`SerialExecutor`) gets twice that many scenarios at a time, so that finished ones are
    written (and reported) while the study runs; any other (Dask) gets them all at once.
    """
    workers = getattr(pool, "_max_workers", None)
    window = len(todo) if not isinstance(workers, int) else max(1, 2 * workers)
    waiting = iter(todo)
    pending: set[Future[dict[str, Any]]] = set()
    order: dict[Future[dict[str, Any]], int] = {}

    def submit(n: int) -> None:
        for s in itertools.islice(waiting, n):
            try:
                task = replace(settings, instance=s.instance, catalog=s.catalog)
                future = pool.submit(run_scenario, task)
            except Exception as exc:  # a broken pool, a task Dask cannot send: that row's error
                future = Future()
                future.set_exception(exc)
            futures[future] = s
            pending.add(future)
            order[future] = len(order)

    submit(window)
    while pending:
        done, _ = wait(pending, return_when=FIRST_COMPLETED)
        for future in sorted(done, key=order.__getitem__):
            pending.discard(future)
            yield future
            submit(1)


def study_of(
    instance: Instance,
    grid_or_change_sets: GridOrChanges,
    verify: bool = True,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    catalog: Catalog | None = None,
) -> Study:
    """The study's scenarios, validated, merged, named and keyed (InputError before anything runs).

    Each scenario is checked as ``solve`` checks its instance (schema, catalog file, components,
    NIC speeds, parallelism) and keyed by content (``planner.study.scenarios.build_study``).
    """
    settings = {"verify": verify, "time_limit_s": time_limit_s}
    return build_study(instance, grid_or_change_sets, settings=settings, catalog=catalog)


def _labels_match(study: Study, s: Scenario, row: Mapping[str, Any]) -> bool:
    """Whether a part's row is labelled as its scenario: its name and its changed values."""
    expected = scenario_row(study, s, {})
    return all(row.get(column) == value for column, value in expected.items())


def scenario_row(study: Study, s: Scenario, result: Mapping[str, Any]) -> dict[str, Any]:
    """A worker's result as the scenario's row of the study table."""
    row: dict[str, Any] = {"scenario": s.name}
    for key in study.keys:
        value = s.changes.get(key)
        row[key] = None if key not in s.changes else column_value(value, study.schema[key])
    row.update(result)
    return row

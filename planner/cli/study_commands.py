"""The ``sweep`` command: a what-if study, one plan per combination of ``--grid`` values."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner.cli.options import (
    ALL_FORMATS,
    DEFAULT_REPORTS_DIR,
    FormatsOpt,
    InstanceArg,
    QuietOpt,
    SetOpt,
    VerifyOpt,
    load_with_changes,
)
from planner.cli.typer_app import EXIT_FOUND, EXIT_NONE, ProgressLine, app, user_errors
from planner.defaults import DEFAULT_TIME_LIMIT_S
from planner.errors import InputError
from planner.output import output_formats, parse_formats

if TYPE_CHECKING:
    from planner import study

GridOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--grid",
        help="A swept field and its values, PATH=V1,V2,... (each value read as TOML, as --set "
        "reads it), e.g. cluster.gpus=8192,32768. Repeatable: the study is every combination.",
        show_default=False,
    ),
]


#: Closes the TOML array a --grid's values are read as: whatever follows the values (a closing
#: bracket, a comment) shows as this element missing.
GRID_END = '"fabric-planner:end-of-grid"'
#: A value given as a bare word (not TOML): letters, digits and ``._-+/:@~``, no spaces.
BARE_WORD = re.compile(r"[A-Za-z0-9._+/:@~-]+")
#: Characters that make a --grid's values TOML (a quoted string, a list, a table): never bare
#: words.
QUOTING = "\"'[]{}"
#: What closes each opening quote, bracket or brace.
_CLOSING = {'"': '"', "'": "'", "[": "]", "{": "}"}


def unclosed(raw: str) -> tuple[int, bool] | None:
    """The first quote, bracket or brace of ``raw`` that is not matched: (where, opens), or None.

    ``opens`` is True for one that opens and is never closed, False for a bracket or brace that
    closes nothing. A double-quoted string honours backslash escapes (TOML's basic string), a
    single-quoted one none (a literal string); what is inside a string does not count.
    """
    opened: list[tuple[str, int]] = []
    i = 0
    while i < len(raw):
        c = raw[i]
        if opened and opened[-1][0] in "\"'":
            quote = opened[-1][0]
            if c == "\\" and quote == '"':
                i += 2
                continue
            if c == quote:
                opened.pop()
        elif c in _CLOSING:
            opened.append((c, i))
        elif opened and c == _CLOSING[opened[-1][0]]:
            opened.pop()
        elif c in "]}":
            return i, False
        i += 1
    return (opened[0][1], True) if opened else None


def _unreadable(key: str, raw: str) -> str:
    """The message for --grid values that hold quotes, brackets or braces but are not TOML."""
    fault = unclosed(raw)
    rule = (
        "a value that opens a quote (\" or '), a [ or a { is one value up to where it closes, "
        "its commas and = included"
    )
    if fault is not None and fault[1]:
        return f"--grid {key[:80]}: {raw[fault[0] :][:80]} is not closed: {rule}"
    if fault is not None:
        at = fault[0]
        end = raw.find(",", at)
        word = raw[raw.rfind(",", 0, at) + 1 : None if end < 0 else end].strip()
        return f"--grid {key[:80]}: cannot read {word[:80]!r}: its {raw[at]} closes nothing; {rule}"
    return (
        f"--grid {key[:80]}: cannot read {raw[:80]!r} as values separated by commas: {rule}, "
        "and nothing but a comma may follow it"
    )


def parse_grid(items: list[str] | None) -> dict[str, list[Any]]:
    """``--grid PATH=V1,V2,...`` options as a grid; values are read like ``--set``'s.

    The path is everything before the first ``=``; the values, everything after it, are one
    TOML array's elements (``16,32``, ``"a,b","c"``, ``[1],[1,2]``) or, when they hold no
    quote, bracket or brace and are not TOML, bare words (``clos,rail_only``). The quoting rule:
    a quoted, bracketed or braced value is one value, whatever commas and ``=`` it holds
    (``"a=b,c"``, ``[{kind="all_to_all",size_bytes=1e6}]``). Reading is strict: a line break, a
    quote or bracket left open, text after a closing quote or bracket, a comment, or a bare word
    with spaces or ``=`` is an error naming the ``--grid``; nothing is silently dropped. Values that are the same once validated
    (``1`` and ``1.0`` for an integer field) are merged by the study (``Study.merged``).
    """
    from planner import api

    if not items:
        raise InputError(
            "sweep needs at least one --grid PATH=V1,V2,..., e.g. --grid cluster.gpus=8192,32768"
        )
    grid: dict[str, list[Any]] = {}
    for item in items:
        if "=" not in item:
            raise InputError(
                f"--grid {item[:80]!r}: expected PATH=V1,V2,..., for example cluster.gpus=8192,32768"
            )
        key, raw = (part.strip() for part in item.split("=", 1))
        if key in grid:
            raise InputError(f"--grid {key[:80]}: given twice; list all its values in one --grid")
        if "\n" in raw or "\r" in raw:
            raise InputError(
                f"--grid {key[:80]}: the values hold a line break; give them on one line, "
                "separated by commas"
            )
        try:
            # The path's and the values' limits, as --set checks them.
            api.parse_override(item)
            if not raw:
                grid[key] = []  # the study says "no values"
                continue
            # As one TOML array first (values may be lists, quoted strings with commas): the
            # array must end exactly where the values do.
            _, values = api.parse_override(f"{key}=[{raw}, {GRID_END}]")
            if isinstance(values, list) and values and values[-1] == GRID_END.strip('"'):
                grid[key] = values[:-1]
                continue
            # A quote, bracket or brace makes the values TOML: one left open is said as such,
            # never split at its commas into bare words.
            if any(c in raw for c in QUOTING):
                raise InputError(_unreadable(key, raw))
            # Else bare words (clos,rail_only), each read as TOML where it is (16,many).
            words = [word.strip() for word in raw.split(",")]
            if "" in words:
                raise InputError(
                    f"--grid {key[:80]}: an empty value (two commas in a row, or one at an end)"
                )
            bad = [word for word in words if not BARE_WORD.fullmatch(word)]
            if bad:
                raise InputError(
                    f"--grid {key[:80]}: cannot read {bad[0][:80]!r}: each value is a TOML "
                    'value (16, 2.5, true, "text", [1, 2]) or a bare word of letters, digits '
                    "and ._-+/:@~, separated by commas, with nothing after the last one; a "
                    'value holding anything else (a space, =, a comma): quote it, "a=b,c"'
                )
            grid[key] = [api.parse_override(f"{key}={word}")[1] for word in words]
        except InputError as exc:
            raise InputError(str(exc).replace("--set", "--grid", 1)) from None
    return grid


@contextmanager
def study_executor(
    workers: int | None, dask: str | None, scenarios: int = 1, quiet: bool = False
) -> Iterator[Any]:
    """The executor of a study: Dask's, local processes, or this process alone.

    Local processes are capped at ``min(--workers, scenarios, cores)`` (and
    ``planner.study.run.MAX_WORKERS``); a cap below what ``--workers`` asked is said on stderr.
    One process is this process (no pool). ``--dask`` connects within ``DASK_CONNECT_S``
    seconds, or exits 2 saying why (``planner.study.cluster.connect``).
    """
    from planner import api, study

    if dask is not None and workers is not None:
        raise InputError("--dask and --workers: choose one (a Dask cluster has its own workers)")
    if dask is None:
        count, why = study.worker_count(workers, scenarios)
        if why and not quiet:
            typer.echo(
                f"--workers {workers}: {count} process{'es' if count != 1 else ''}, since {why}",
                err=True,
            )
        if count == 1:
            yield study.SerialExecutor()
            return
        pool = study.process_pool(count)
        try:
            yield pool
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        return
    api.require_extra("distributed", "--dask")
    from planner.study.cluster import connect

    client = connect(dask, DASK_CONNECT_S)
    try:
        yield client.get_executor()
    finally:
        client.close()


#: How long ``--dask`` waits for the scheduler, in seconds.
DASK_CONNECT_S = 20.0
#: Most rows of the study table printed (the rest are in study.csv).
MAX_PRINTED_ROWS = 40
#: Columns of the study table printed, when the table has them.
PRINTED_COLUMNS = (
    "scenario",
    "status",
    "plan_status",
    "family",
    "capex_usd",
    "power_kw",
    "verdict",
    "step_time_s",
    "pareto",
)


@app.command("sweep")
def sweep_cmd(
    instance: InstanceArg,
    grid: GridOpt = None,
    set_: SetOpt = None,
    workers: Annotated[
        int | None,
        typer.Option(
            "--workers",
            min=1,
            help="Processes that plan scenarios side by side (default: one per core; at most "
            "one per scenario, one per core and 64, the cap said on stderr; 1: this process "
            "alone).",
            show_default=False,
        ),
    ] = None,
    dask: Annotated[
        str | None,
        typer.Option(
            "--dask",
            help="Plan the scenarios on a running Dask cluster: its scheduler's address, e.g. "
            "tcp://10.0.0.5:8786.",
            show_default=False,
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Study folder (default: reports/<instance name>-study/).",
            show_default=False,
        ),
    ] = None,
    force: Annotated[
        bool,
        typer.Option(
            "--force",
            help="Write into a folder that holds other files, another study or another "
            "command's output.",
        ),
    ] = False,
    quiet: QuietOpt = False,
    verify: VerifyOpt = True,
    time_limit: Annotated[
        float,
        typer.Option("--time-limit", min=0.1, help="Time limit of each scenario, in seconds."),
    ] = DEFAULT_TIME_LIMIT_S,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Plan an instance once per combination of --grid values; write the study and its Pareto front.

    Every scenario is checked before the first one runs (as solve checks its instance). Only
    designs that meet their [verify] requirements are ranked (per GPU when the GPU count varies).
    A study killed midway resumes when the same command runs again: finished scenarios are kept
    in the folder's parts/ and not planned again; scenarios in error are planned again.
    """
    with user_errors():
        # The study's sets (study.json first, then its tables and figures) are written by
        # planner.study; they take the formats from here.
        with output_formats(parse_formats(formats)):
            code = run_study(
                instance, grid, set_, workers, dask, output, force, quiet, verify, time_limit
            )
    raise typer.Exit(code)


def run_study(
    instance: Path,
    grid: list[str] | None,
    changes: list[str] | None,
    workers: int | None,
    dask: str | None,
    output: Path | None,
    force: bool,
    quiet: bool,
    verify: bool,
    time_limit: float,
) -> int:
    """Load, validate every scenario, run the study into its folder, print it; the exit status."""
    inst = load_with_changes(instance, changes)
    # The API and the study load once the instance is known to be good.
    from planner import api, study

    # Every scenario checked as solve checks its instance (schema, catalog, components, NIC
    # speeds, parallelism) before anything runs or is written.
    the_study = study.study_of(inst, parse_grid(grid), verify, time_limit)
    if dask is not None and workers is not None:
        raise InputError("--dask and --workers: choose one (a Dask cluster has its own workers)")
    # Said even with -q (it is no progress): fewer scenarios are planned than were given.
    for note in the_study.merged:
        typer.echo(f"merged: {note}", err=True)
    outdir = (
        output if output is not None else DEFAULT_REPORTS_DIR / f"{api.safe_name(inst.name)}-study"
    )
    # Connect to Dask (or make the pool) before the folder is touched: a wrong address is bad
    # input that leaves nothing behind.
    with (
        study_executor(workers, dask, len(the_study.scenarios), quiet) as executor,
        api.claimed(outdir, force=force),
    ):
        opened = study.open_study(outdir, inst.name, the_study, force=force)
        resuming = opened.resuming
        # Said even with -q: results are replaced, not only progress shown.
        for note in opened.replanned:
            typer.echo(f"{note}", err=True)
        progress = None if quiet else ProgressLine()
        try:
            run = study.run_sweep(
                inst,
                {},
                executor,
                verify=verify,
                time_limit_s=time_limit,
                results=outdir,
                progress=progress,
                study=the_study,
            )
        except KeyboardInterrupt:
            if progress is not None:
                progress.close()
            typer.echo(
                f"\nthe finished scenarios are kept in {outdir / 'parts'}: run the same "
                "command again to resume",
                err=True,
            )
            raise
        finally:
            if progress is not None:
                progress.close()
        for note in run.damaged:  # said even with -q, as the changed inputs are
            typer.echo(note, err=True)
        table = study.write_study(outdir, inst.name, the_study, run, force=force)
    # The headline (the scenario names the keys' values); columns with no value left out.
    columns = [*PRINTED_COLUMNS]
    if study.sizes_vary(table):  # the front compares capex and power per GPU: show them
        at = columns.index("power_kw") + 1
        columns[at:at] = ["capex_usd_per_gpu", "power_w_per_gpu"]
    printed = table.select(
        c for c in columns if c in table.columns and table[c].null_count() < table.height
    )
    with pl_config():
        typer.echo(str(printed.head(MAX_PRINTED_ROWS)))
    if table.height > MAX_PRINTED_ROWS:
        typer.echo(f"... {table.height - MAX_PRINTED_ROWS} more scenarios in study.csv")
    typer.echo(study.ranking_note(table))
    front = table.filter(table["pareto"])["scenario"].to_list()
    typer.echo(f"pareto front: {', '.join(front) if front else 'none'}")
    typer.echo(
        f"scenarios: {run.computed} computed, {run.reused} reused"
        + (" (resumed)" if resuming and run.reused else "")
        + (
            f", {run.stale} part(s) that were not their scenario's planned again"
            if run.stale
            else ""
        )
    )
    typer.echo(f"reports: {outdir}")
    errors = table.filter(table["status"] != "ok")
    none = no_design_note(table, the_study, instance, changes)
    if none:
        typer.echo(none, err=True)
    if errors.is_empty():
        return EXIT_NONE if none else EXIT_FOUND
    typer.echo(f"{errors.height} of {table.height} scenarios ended in error:", err=True)
    for r in errors.head(5).iter_rows(named=True):
        typer.echo(f"  - {r['scenario']}: {r['error']}", err=True)
    typer.echo(
        "scenarios in error are not kept: run the same command again to plan them again"
        + (f" ({run.lost} of them were lost by the executor)" if run.lost else ""),
        err=True,
    )
    return EXIT_NONE


#: A key of a TOML inline table written without quotes.
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")


def toml_value(value: Any) -> str:
    """A change's value as TOML, as ``--set`` reads it back (inline tables for tables)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return json.dumps(value)  # a JSON number or string is a TOML one
    if isinstance(value, list | tuple):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (
            f"{k if _BARE_KEY.fullmatch(str(k)) else json.dumps(str(k))} = {toml_value(v)}"
            for k, v in value.items()
        )
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(str(value))


def no_design_note(
    table: Any, the_study: study.Study, instance: Path, changes: list[str] | None
) -> str:
    """What to say when no scenario that ran has a design (empty when some has one).

    As ``solve`` exits 1 when no design exists, so does a study none of whose plans found one:
    the note counts their statuses, names the swept values every scenario shares (the likely
    cause) and gives the ``solve`` command that plans the first scenario alone, whose report
    says which constraints conflict.
    """
    ran = table.filter(table["status"] == "ok")
    if ran.is_empty() or ran["capex_usd"].is_not_null().any():
        return ""
    counts = ran["plan_status"].fill_null("no status").value_counts(sort=True)
    found = ", ".join(f"{n} {status}" for status, n in counts.iter_rows())
    lines = [f"no scenario has a design: the plans of all {ran.height} found none ({found})"]
    if "time_limit" in ran["plan_status"].to_list():
        lines.append("  a plan cut by its time limit may find one with a longer --time-limit")
    scenarios = {s.name: s for s in the_study.scenarios}
    ran_scenarios = [scenarios[name] for name in ran["scenario"].to_list() if name in scenarios]
    shared = [
        key
        for key in the_study.keys
        if all(key in s.changes for s in ran_scenarios)
        and len({json.dumps(s.changes[key], sort_keys=True) for s in ran_scenarios}) == 1
    ]
    for key in shared:
        value = json.dumps(ran_scenarios[0].changes[key], sort_keys=True)
        lines.append(f"  {key} = {value} in every scenario")
    if ran_scenarios:
        first = ran_scenarios[0]
        items = [*(changes or []), *(f"{k}={toml_value(v)}" for k, v in first.changes.items())]
        command = ["fabric-planner", "solve", str(instance)]
        for item in items:
            command += ["--set", item]
        lines.append(
            "  to see which constraints conflict, plan one scenario alone: "
            + " ".join(shlex.quote(word) for word in command)
        )
    return "\n".join(lines)


@contextmanager
def pl_config() -> Iterator[None]:
    """Polars' table printing for the study: every column, no type row, long enough strings."""
    import polars as pl

    with pl.Config(
        tbl_cols=-1,
        tbl_rows=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        fmt_str_lengths=60,
        tbl_width_chars=200,
        fmt_float="full",
        float_precision=3,
        thousands_separator=",",
    ):
        yield

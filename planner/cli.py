"""The ``fabric-planner`` command line: a thin layer over ``planner.api``, the only planner module it imports.

Exit status (the README's table): 0 success; 1 no design exists (or ``validate`` found
violations); 2 bad input, never with a traceback, only ``error: <message>``; 3 an internal error
(a bug: ``internal error: ...`` and a request to report it; the traceback only with
``FABRIC_PLANNER_DEBUG=1``); 4 a design was found but its verification by simulation ``fails``
(``solve``/``evaluate`` unless ``--allow-fail``; ``simulate``); 130 interrupted by Ctrl-C, with the
output folder left as it was.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import typer

# planner.api is cheap to import: the solver libraries load on its first call that needs them,
# so bad input is reported before they load.
from planner import api, study
from planner.api import (
    DEFAULT_CATALOG,
    DEFAULT_TIME_LIMIT_S,
    Catalog,
    Design,
    InputError,
    Instance,
    Status,
    Verify,
    bandwidth_loop_lines,
    catalog_csv,
    catalog_entries,
    catalog_lines,
    claimed,
    cut_notes,
    derived_instance,
    headline,
    idle_pricing_lines,
    interruptible,
    json_text,
    load_catalog,
    load_design,
    load_instance,
    output_formats,
    parse_formats,
    parse_override,
    prepare_outdir,
    safe_name,
    time_limit_advice,
    write_reports,
    write_set,
    write_sim_reports,
    write_table,
)
from planner.study.cluster import connect as connect_scheduler

#: Folder, relative to the current directory, under which ``solve`` writes reports/<instance name>/.
DEFAULT_REPORTS_DIR = Path("reports")
#: The command an htsim export folder's manifest names (``simulate --htsim DIR``).
HTSIM_COMMAND = "simulate --htsim"
#: Exit statuses.
EXIT_FOUND, EXIT_NONE, EXIT_BAD_INPUT = 0, 1, 2
#: A bug in the planner (not "no design"): message, hint to report it, traceback only on request.
EXIT_INTERNAL = 3
#: A design was found (or simulated) but its verification verdict is ``fails``.
EXIT_FAILS = 4
#: Interrupted (Ctrl-C): 128 + SIGINT, as shells report it.
EXIT_INTERRUPTED = 130
#: Set to 1 to get the traceback of an internal error.
DEBUG_ENV = "FABRIC_PLANNER_DEBUG"

app = typer.Typer(
    name="fabric-planner",
    help="Plan the scale-out network of an AI cluster: the cheapest fabric "
    "(capex + lifetime energy) that meets the constraints of an instance file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
    # Help texts name TOML sections like [verify] and [torus]; rich markup would eat them.
    rich_markup_mode=None,
)


class Kind(StrEnum):
    """Component kinds of the catalog."""

    switch = "switch"
    medium = "medium"
    nic = "nic"
    ocs = "ocs"


class Format(StrEnum):
    """Output formats of ``catalog``."""

    table = "table"
    csv = "csv"
    json = "json"


@contextmanager
def user_errors() -> Iterator[None]:
    """Map what a command raises to a message and an exit status (see the module docstring).

    InputError: ``error: <message>``, status 2. Ctrl-C (also inside a CP-SAT solve):
    ``interrupted``, status 130. Anything else is a bug: ``internal error: ...``, status 3, and
    the traceback only when FABRIC_PLANNER_DEBUG=1.
    """
    try:
        with interruptible():
            yield
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None
    except KeyboardInterrupt:
        typer.echo("\ninterrupted: stopped; the output folder is as it was", err=True)
        raise typer.Exit(EXIT_INTERRUPTED) from None
    except BaseException as exc:  # pyo3's PanicException (polars) is a BaseException
        if isinstance(exc, SystemExit | GeneratorExit | typer.Exit | typer.Abort):
            raise
        if type(exc).__module__.startswith("typer"):
            raise
        if os.environ.get(DEBUG_ENV) == "1":
            raise
        typer.echo(
            f"internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in fabric-planner, not a problem with your input. Please report it "
            f"with the command you ran; run it again with {DEBUG_ENV}=1 for the traceback.",
            err=True,
        )
        raise typer.Exit(EXIT_INTERNAL) from None


class ProgressLine:
    """A progress line on stderr: rewritten in place on a terminal, one line per step otherwise."""

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self.open = False

    def __call__(self, done: int, total: int, label: str) -> None:
        """Show that ``done`` of ``total`` solves are finished, the last one being ``label``."""
        self._show(f"[{done}/{total}] {label}")

    def note(self, label: str) -> None:
        """Show a step that has no count (the simulation's)."""
        self._show(f"simulate: {label}")

    def _show(self, text: str) -> None:
        if self.tty:
            typer.echo(f"\r\x1b[K{text}", err=True, nl=False)
            self.open = True
        else:
            typer.echo(text, err=True)

    def close(self) -> None:
        """End the line in place so that what follows starts on a new line."""
        if self.open:
            typer.echo("", err=True)
            self.open = False


# ---- options shared by solve and evaluate ---------------------------------------------------
InstanceArg = Annotated[Path, typer.Argument(help="Instance file (TOML).", show_default=False)]
OutputOpt = Annotated[
    Path | None,
    typer.Option(
        "--output",
        "-o",
        help="Report folder (default: reports/<instance name>/).",
        show_default=False,
    ),
]
SetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Change a field before solving, PATH=VALUE (the value is read as TOML), "
        "e.g. cluster.gpus=65536. Repeatable.",
        show_default=False,
    ),
]
TimeLimitOpt = Annotated[
    float,
    typer.Option(
        "--time-limit",
        min=0.1,
        help="Time limit of the whole command (search, engineering, verification), in seconds.",
    ),
]
JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print the summary row as a JSON object on stdout, nothing else."),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Write into a folder that holds other files or another command's output (only "
        "files fabric-planner wrote are ever replaced or removed).",
    ),
]
#: Every format, the default of --formats: what was always written.
ALL_FORMATS = "csv,parquet,png,svg"
FormatsOpt = Annotated[
    str,
    typer.Option(
        "--formats",
        help="Formats written, comma-separated: csv and/or parquet for the tables, png and/or "
        "svg for the pictures, e.g. csv,png. report.md, report.html (pictures embedded) and "
        "design.json are always written.",
    ),
]
QuietOpt = Annotated[
    bool, typer.Option("--quiet", "-q", help="No progress or report location on stderr.")
]
VerifyOpt = Annotated[
    bool,
    typer.Option(
        "--verify/--no-verify",
        help="Simulate the chosen design under the instance's [verify] section.",
    ),
]
AllowFailOpt = Annotated[
    bool,
    typer.Option(
        "--allow-fail",
        help="Exit 0 even when the verification verdict is 'fails' (default: exit status 4).",
    ),
]
CatalogOpt = Annotated[
    str,
    typer.Option(
        "--catalog", help="'default' for the shipped catalog, or the path of a catalog file."
    ),
]


def load_with_changes(path: Path, changes: list[str] | None) -> Instance:
    """Read an instance and apply ``--set`` overrides.

    A changed instance gets a name derived from its changes (``h100-1k.gpus-65536``), so its
    default report folder is not the base's, and records them for the reports
    (``api.derived_instance``).
    """
    inst = load_instance(path)
    if changes:
        inst = derived_instance(inst, dict(parse_override(item) for item in changes))
    return inst


def run_plan(
    evaluate: bool,
    instance: Path,
    output: Path | None,
    changes: list[str] | None,
    time_limit: float,
    as_json: bool,
    force: bool,
    quiet: bool,
    verify: bool = True,
    compare_optics: bool = False,
    allow_fail: bool = False,
    formats: str = ALL_FORMATS,
) -> int:
    """Load, plan (or evaluate), write the reports and print the outcome; return the exit status."""
    chosen = parse_formats(formats)
    inst = load_with_changes(instance, changes)
    # The solver libraries load (in api.plan / api.evaluate) only once the input is known to be good.
    outdir = output if output is not None else DEFAULT_REPORTS_DIR / safe_name(inst.name)
    # Claim (and lock) the folder before spending the time limit, not after.
    with claimed(outdir, force=force, command="evaluate" if evaluate else "solve"):
        progress = None if quiet else ProgressLine()
        run = api.evaluate if evaluate else api.plan
        # One end for the whole command; with --compare-optics the solve gets half of it.
        deadline = api.Deadline.after(time_limit)
        try:
            sim_progress = None if progress is None else progress.note
            result = run(
                inst,
                time_limit_s=time_limit / 2 if compare_optics else time_limit,
                progress=progress,
                verify=verify and inst.verify.enabled,
                sim_progress=sim_progress,
                deadline=api.Deadline.after(time_limit / 2) if compare_optics else deadline,
            )
            if compare_optics:
                comparison = api.compare_optics(
                    inst, time_limit_s=time_limit, progress=progress, deadline=deadline
                )
                result = replace(result, optics_comparison=comparison.table)
        finally:
            if progress is not None:
                progress.close()
        write_reports(result, outdir, force=force, formats=chosen)
    summary = result.summary
    if as_json:
        typer.echo(json_text(summary.row(0, named=True)))
        if not quiet:
            typer.echo(f"reports: {outdir}", err=True)
    else:
        for line in headline(summary):
            typer.echo(line)
        if result.optics_comparison is not None:
            for line in optics_lines(result.optics_comparison):
                typer.echo(line)
        typer.echo(f"reports: {outdir}")
    if result.bandwidth_loop is not None and not quiet:
        for line in bandwidth_loop_lines(result.bandwidth_loop):
            typer.echo(f"bandwidth loop: {line}", err=True)
    if result.idle_pricing is not None and not quiet:
        for line in idle_pricing_lines(result.idle_pricing):
            typer.echo(f"idle GPUs priced: {line}", err=True)
    if result.found:
        assert result.design is not None
        for note in cut_notes(result.design.notes):
            typer.echo(note, err=True)
        if result.sim is not None:
            for note in result.sim.notes:
                typer.echo(f"verification: {note}", err=True)
        if result.sim is not None and result.sim.cut:
            advice = time_limit_advice(result.sim, workload=inst.workload is not None)
            typer.echo(f"verification: {result.sim.verdict}: {advice}", err=True)
        if result.sim is not None:
            for step in result.sim.over_memory:
                typer.echo(f"verification: not simulated for memory: {step}", err=True)
        if result.sim is not None and result.sim.verdict == "fails":
            typer.echo("verification: the design fails its [verify] requirements:", err=True)
            for reason in result.sim.reasons:
                typer.echo(f"  - {reason}", err=True)
            return EXIT_FOUND if allow_fail else EXIT_FAILS
        return EXIT_FOUND
    title = (
        "no design meets the constraints:"
        if result.status is Status.INFEASIBLE
        else f"no design found ({result.status.value}):"
    )
    typer.echo(title, err=True)
    for line in result.explanation:
        typer.echo(f"  - {line}", err=True)
    return EXIT_NONE


def optics_lines(table: Any) -> list[str]:
    """The optics comparison in a few lines: TCO, power, optics share, modules, failures."""
    lines = ["optics:"]
    for r in table.iter_rows(named=True):
        if r["tco_usd"] is None:
            lines.append(f"  {r['scenario']:<9} {r['status']}")
            continue
        delta = "" if r["delta_tco_usd"] is None else f" ({r['delta_tco_usd']:+,.0f})"
        lines.append(
            f"  {r['scenario']:<9} tco ${r['tco_usd']:,.0f}{delta}, "
            f"{r['power_kw']:,.1f} kW, optics {r['optics_power_share']:.0%} of power, "
            f"{r['transceivers']:,} transceivers, {r['expected_link_failures_per_day']:.2f} "
            f"link failures/day"
        )
    return lines


@app.command()
def solve(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    as_json: JsonOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    verify: VerifyOpt = True,
    compare_optics: Annotated[
        bool,
        typer.Option(
            "--compare-optics",
            help="Also plan with pluggable optics only, with LPO allowed and with CPO allowed, "
            "and write the optics_comparison table.",
        ),
    ] = False,
    allow_fail: AllowFailOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Find the cheapest fabric for an instance and write its reports."""
    with user_errors():
        code = run_plan(
            False,
            instance,
            output,
            set_,
            time_limit,
            as_json,
            force,
            quiet,
            verify,
            compare_optics,
            allow_fail,
            formats,
        )
    raise typer.Exit(code)


def open_outdir(
    instance: Path, changes: list[str] | None, output: Path | None, force: bool
) -> tuple[Instance, Path]:
    """Load the instance and check its report folder before any time is spent."""
    inst = load_with_changes(instance, changes)
    outdir = output if output is not None else DEFAULT_REPORTS_DIR / safe_name(inst.name)
    prepare_outdir(outdir, force=force)
    return inst, outdir


@app.command()
def torus(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    force: ForceOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
) -> None:
    """Size a TPU-style torus pod ([torus]): cubes, spares, OCS devices, slices and circuits."""
    with user_errors():
        chosen = parse_formats(formats)
        inst, outdir = open_outdir(instance, set_, output, force)
        with claimed(outdir, force=force, command="torus"):
            result = api.plan_torus(inst, time_limit_s=time_limit)
            write_table(dict(result.tables), outdir, force=force, command="torus", formats=chosen)
        pod = result.pod.row(0, named=True)
        typer.echo(f"status: {pod['status']}")
        if pod["spares"] is None:
            typer.echo(f"no pod: {pod['reason']}", err=True)
            typer.echo(f"reports: {outdir}")
            raise typer.Exit(EXIT_NONE)
        typer.echo(
            f"pod: {pod['cubes']} cubes of {pod['cube']}^3 ({pod['slice_cubes']} in slices + "
            f"{pod['spares']} spares, {pod['probability']:.5f} composable), {pod['chips']:,} chips"
        )
        typer.echo(
            f"ocs: {pod['ocs_devices']} x {pod['ocs_model']}, {pod['ocs_ports_used']} of "
            f"{pod['ocs_ports']} ports used; capex ${pod['capex_usd']:,.0f}, {pod['power_kw']:,.1f} kW"
        )
        checked = {True: "ok", False: "BROKEN", None: "not checked (time limit)"}
        for r in result.slices.iter_rows(named=True):
            typer.echo(
                f"slice {r['slice']}: {r['shape']}{' twisted' if r['twisted'] else ''}, "
                f"{r['cubes']} cubes, {r['circuits']} circuits, torus {checked[r['torus_ok']]}"
            )
        for r in result.failure.iter_rows(named=True):
            typer.echo(
                f"cube {r['failed_cube']} fails: spare {r['spare_cube']} takes its place, "
                f"{r['circuits_removed']} circuits removed, {r['circuits_added']} added, "
                f"{r['circuits_kept']} kept"
            )
        typer.echo(f"reports: {outdir}")
        for note in result.cut:
            typer.echo(note, err=True)
    raise typer.Exit(EXIT_FOUND)


@app.command("compare-fabrics")
def compare_fabrics(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Electrical Clos vs OCS direct-connect: price both, simulate both, write fabric_comparison."""
    with user_errors():
        chosen = parse_formats(formats)
        inst, outdir = open_outdir(instance, set_, output, force)
        progress = None if quiet else ProgressLine()
        with claimed(outdir, force=force, command="compare-fabrics"):
            try:
                result = api.compare_fabrics(
                    inst,
                    time_limit_s=time_limit,
                    progress=progress,
                    sim_progress=None if progress is None else progress.note,
                )
            finally:
                if progress is not None:
                    progress.close()
            write_table(
                result.table,
                outdir,
                "fabric_comparison",
                force=force,
                command="compare-fabrics",
                formats=chosen,
            )
        for r in result.table.iter_rows(named=True):
            if r["capex_usd"] is None:
                typer.echo(f"{r['fabric']:<15} {r['status']}")
                continue
            if r["traffic"] is None:
                typer.echo(
                    f"{r['fabric']:<15} capex ${r['capex_usd']:,.0f}, {r['power_kw']:,.1f} kW, "
                    f"{r['max_switch_hops']} hops, not simulated (time limit)"
                )
                continue
            typer.echo(
                f"{r['fabric']:<15} capex ${r['capex_usd']:,.0f}, {r['power_kw']:,.1f} kW, "
                f"{r['max_switch_hops']} hops, {r['traffic']} ({r['routing']}): "
                f"{r['fraction_of_ideal']:.3f} of ideal"
            )
        typer.echo(f"reports: {outdir}")
        for name, fabric in result.results.items():
            for note in [] if fabric.design is None else cut_notes(fabric.design.notes):
                typer.echo(f"{name}: {note}", err=True)
            if fabric.sim is not None and fabric.sim.cut:
                advice = time_limit_advice(fabric.sim)
                typer.echo(f"verification: {fabric.sim.verdict}: {name}: {advice}", err=True)
        found = result.table["capex_usd"].is_not_null().any()
        if not found:
            typer.echo("no design: neither fabric could be built for this instance", err=True)
    raise typer.Exit(EXIT_FOUND if found else EXIT_NONE)


@app.command()
def evaluate(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    as_json: JsonOpt = False,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    verify: VerifyOpt = True,
    allow_fail: AllowFailOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Price exactly the design pinned in the instance's search.pin and write its reports."""
    with user_errors():
        code = run_plan(
            True,
            instance,
            output,
            set_,
            time_limit,
            as_json,
            force,
            quiet,
            verify,
            allow_fail=allow_fail,
            formats=formats,
        )
    raise typer.Exit(code)


# ---- sweep: a what-if study ----------------------------------------------------------------
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


def parse_grid(items: list[str] | None) -> dict[str, list[Any]]:
    """``--grid PATH=V1,V2,...`` options as a grid; values are read like ``--set``'s.

    The values are one TOML array's elements (``16,32``, ``"a,b","c"``, ``[1],[1,2]``) or,
    when they are not TOML, bare words (``clos,rail_only``). Reading is strict: a line break,
    text after a closing bracket or a comment, or a word with spaces or brackets is an error
    naming the ``--grid``; nothing is silently dropped. Values that are the same once validated
    (``1`` and ``1.0`` for an integer field) are merged by the study (``Study.merged``).
    """
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
            parse_override(item)
            if not raw:
                grid[key] = []  # the study says "no values"
                continue
            # As one TOML array first (values may be lists, quoted strings with commas): the
            # array must end exactly where the values do.
            _, values = parse_override(f"{key}=[{raw}, {GRID_END}]")
            if isinstance(values, list) and values and values[-1] == GRID_END.strip('"'):
                grid[key] = values[:-1]
                continue
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
                    "and ._-+/:@~, separated by commas, with nothing after the last one"
                )
            grid[key] = [parse_override(f"{key}={word}")[1] for word in words]
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
    client = connect_scheduler(dask, DASK_CONNECT_S)
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
    # Every scenario checked as solve checks its instance (schema, catalog, components, NIC
    # speeds, parallelism) before anything runs or is written.
    the_study = study.study_of(inst, parse_grid(grid), verify, time_limit)
    if dask is not None and workers is not None:
        raise InputError("--dask and --workers: choose one (a Dask cluster has its own workers)")
    if not quiet:
        for note in the_study.merged:
            typer.echo(f"merged: {note}", err=True)
    outdir = output if output is not None else DEFAULT_REPORTS_DIR / f"{safe_name(inst.name)}-study"
    # Connect to Dask (or make the pool) before the folder is touched: a wrong address is bad
    # input that leaves nothing behind.
    with (
        study_executor(workers, dask, len(the_study.scenarios), quiet) as executor,
        claimed(outdir, force=force),
    ):
        resuming = study.open_study(outdir, inst.name, the_study, force=force)
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
    if errors.is_empty():
        return EXIT_FOUND
    typer.echo(f"{errors.height} of {table.height} scenarios ended in error:", err=True)
    for r in errors.head(5).iter_rows(named=True):
        typer.echo(f"  - {r['scenario']}: {r['error']}", err=True)
    typer.echo(
        "scenarios in error are not kept: run the same command again to plan them again"
        + (f" ({run.lost} of them were lost by the executor)" if run.lost else ""),
        err=True,
    )
    return EXIT_NONE


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


@app.command()
def validate(
    design: Annotated[
        Path, typer.Argument(help="A design.json written by solve or evaluate.", show_default=False)
    ],
    catalog: Annotated[
        str | None,
        typer.Option(
            "--catalog",
            help="Catalog to check the unit figures against: 'default' or a file path "
            "(default: the one the design was priced from).",
        ),
    ] = None,
) -> None:
    """Check a design alone: ports, wiring, ratios, paths, failures, totals, catalog figures."""
    with user_errors():
        d = load_design(design)
        cat = load_catalog(catalog or d.catalog)
        try:
            violations = api.validate(d, cat)
        except (TypeError, ValueError, AttributeError, ZeroDivisionError) as exc:
            raise InputError(
                f"a field has the wrong type or value ({exc})", source=str(design)
            ) from None
    if not violations:
        typer.echo("ok")
        raise typer.Exit(EXIT_FOUND)
    for v in violations:
        typer.echo(str(v))
    raise typer.Exit(EXIT_NONE)


def verify_settings(
    instance: Path | None, changes: list[str] | None, design: Design | None = None
) -> Verify:
    """The [verify] section of an instance (or the defaults), with ``--set verify.*`` applied.

    With a ``design`` and an instance that has a ``[workload]``, the workload's traffic is
    included as ``solve`` includes it (``api.verify_for``).
    """
    inst_changes = dict(parse_override(item) for item in changes or [])
    bad = [k for k in inst_changes if not k.startswith("verify.")]
    if bad:
        raise InputError(f"--set {bad[0]}: simulate takes only verify.* fields")
    if instance is not None:
        inst = load_with_changes(instance, changes)
        if design is None:
            return inst.verify
        try:
            return api.verify_for(inst, design)
        except ValueError as exc:  # the workload's traffic beside [verify]'s: too many patterns
            raise InputError(f"verify: {exc}") from None
    base = Instance.model_validate({"name": "simulate", "cluster": {"gpus": 8}})
    return base.with_changes(inst_changes).verify if inst_changes else base.verify


SimSetOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        help="Change a field of the [verify] section, verify.FIELD=VALUE (the value is read as "
        'TOML), e.g. verify.seed=2 or verify.routing=["spray"]. Repeatable.',
        show_default=False,
    ),
]


@app.command("simulate")
def simulate_cmd(
    design_json: Annotated[
        Path, typer.Argument(help="A design.json written by solve or evaluate.", show_default=False)
    ],
    instance: Annotated[
        Path | None,
        typer.Option("--instance", help="Take the [verify] section from this instance file."),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            "--output",
            "-o",
            help="Report folder (default: reports/<instance name of the design>/).",
            show_default=False,
        ),
    ] = None,
    set_: SimSetOpt = None,
    htsim: Annotated[
        Path | None,
        typer.Option(
            "--htsim",
            help="Also write htsim's topology (.topo) and connection matrix (.cm) of the first "
            "traffic's first phase into this folder.",
        ),
    ] = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    time_limit: Annotated[
        float | None,
        typer.Option(
            "--time-limit",
            min=0.1,
            help="Time limit of the simulation, in seconds (default: none); steps not started "
            "in time are listed and the verdict is 'incomplete'.",
        ),
    ] = None,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Simulate a design under traffic, routing and failures; write the design's report set."""
    with user_errors():
        chosen = parse_formats(formats)
        design = load_design(design_json)
        verify = verify_settings(instance, set_, design)
        # The simulator loads (in api.simulate) only once the input is known to be good.
        outdir = output if output is not None else DEFAULT_REPORTS_DIR / safe_name(design.instance)
        prepare_outdir(outdir, force=force)
        same = htsim is not None and htsim.resolve() == outdir.resolve()
        if htsim is not None and not same:
            prepare_outdir(htsim, force=force)
        with (
            claimed(outdir, force=force, command="simulate"),
            _maybe_claimed(None if same else htsim, force, HTSIM_COMMAND),
        ):
            progress = None if quiet else ProgressLine()
            try:
                sim = api.simulate(
                    design,
                    verify,
                    progress=None if progress is None else progress.note,
                    time_limit_s=time_limit,
                )
            except ValueError as exc:  # traffic that does not fit the design (group sizes, ...)
                raise InputError(f"verify: {exc}") from None
            finally:
                if progress is not None:
                    progress.close()
            htsim_files = (
                api.export_htsim(design, verify, note=lambda line: typer.echo(line, err=True))
                if htsim is not None
                else {}
            )
            source = None if instance is None else load_with_changes(instance, set_)
            write_sim_reports(
                sim,
                outdir,
                design,
                force=force,
                extra=htsim_files if same else None,
                instance=source,
                formats=chosen,
            )
            if htsim is not None and not same:
                write_set(htsim, htsim_files, force=force, command=HTSIM_COMMAND)
        cols = ["pattern", "routing", "scenario", "time_s", "busbw_gbps", "fraction_of_ideal"]
        typer.echo(str(sim.collectives.select(cols)))
        typer.echo(f"verdict: {sim.verdict}")
        for reason in sim.reasons:
            typer.echo(f"  - {reason}")
        for note in sim.notes:
            typer.echo(f"note: {note}")
        typer.echo(f"reports: {outdir}")
        if sim.cut:
            typer.echo(f"verification: {sim.verdict}: {time_limit_advice(sim)}", err=True)
        for step in sim.over_memory:
            typer.echo(f"verification: not simulated for memory: {step}", err=True)
    raise typer.Exit(EXIT_FAILS if sim.verdict == "fails" else EXIT_FOUND)


@contextmanager
def _maybe_claimed(folder: Path | None, force: bool, command: str) -> Iterator[None]:
    if folder is None:
        yield
        return
    with claimed(folder, force=force, command=command):
        yield


@app.command("catalog")
def catalog_cmd(
    catalog: CatalogOpt = DEFAULT_CATALOG,
    kind: Annotated[
        Kind | None, typer.Option("--kind", help="Only this kind of component.")
    ] = None,
    fmt: Annotated[
        Format,
        typer.Option(
            "--format",
            help="table: aligned text; csv: one CSV per kind (with a kind column when several); "
            "json: every entry with all its figures and sources, by kind.",
        ),
    ] = Format.table,
    as_json: Annotated[bool, typer.Option("--json", help="Same as --format json.")] = False,
) -> None:
    """List the catalog's components with their key figures and the source of each price."""
    with user_errors():
        cat = load_catalog(catalog)
        kinds = [kind.value] if kind else [k.value for k in Kind]
        if as_json or fmt is Format.json:
            typer.echo(
                json_text({k: catalog_entries(cat, k) for k in kinds}, indent=2, sort_keys=False)
            )
            raise typer.Exit(EXIT_FOUND)
        if fmt is Format.csv:
            typer.echo(catalog_csv(cat, kinds), nl=False)
            raise typer.Exit(EXIT_FOUND)
        for line in catalog_lines(cat, kinds):
            typer.echo(line)


@app.command()
def schema(
    catalog: Annotated[
        bool, typer.Option("--catalog", help="The catalog file's schema instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of the instance file (or of the catalog file)."""
    model: type[Instance] | type[Catalog] = Catalog if catalog else Instance
    typer.echo(json.dumps(model.model_json_schema(), indent=2))


def main() -> None:
    """Entry point of the ``fabric-planner`` script and of ``python -m planner``."""
    try:
        app(prog_name="fabric-planner")
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        sys.exit(EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        typer.echo("\ninterrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)

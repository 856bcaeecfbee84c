"""Commands that plan one instance: ``solve``, ``torus``, ``compare-fabrics`` and ``evaluate``."""

from __future__ import annotations

import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from planner.cli.options import (
    ALL_FORMATS,
    DEFAULT_REPORTS_DIR,
    AllowFailOpt,
    ForceOpt,
    FormatsOpt,
    InstanceArg,
    JsonOpt,
    OutputOpt,
    QuietOpt,
    SetOpt,
    TimeLimitOpt,
    VerifyOpt,
    load_with_changes,
)
from planner.cli.typer_app import EXIT_FAILS, EXIT_FOUND, EXIT_NONE, ProgressLine, app, user_errors
from planner.defaults import DEFAULT_TIME_LIMIT_S
from planner.output import parse_formats

if TYPE_CHECKING:
    from planner import api


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
    # The API, and with it the solver and table libraries, loads only once the input is known to
    # be good: bad input is refused at once.
    from planner import api

    outdir = output if output is not None else DEFAULT_REPORTS_DIR / api.safe_name(inst.name)
    # Claim (and lock) the folder before spending the time limit, not after.
    with api.claimed(outdir, force=force, command="evaluate" if evaluate else "solve"):
        progress = None if quiet else ProgressLine()
        run = api.evaluate if evaluate else api.plan
        # One end for the whole command, from the process's start when the process is the
        # command; the steps leave a share of it for writing the reports.
        deadline = api.Deadline.for_command(time_limit, since_process_start=is_the_command())
        steps = deadline.keep_for_reports()
        try:
            sim_progress = None if progress is None else progress.note
            result = run(
                inst,
                time_limit_s=time_limit / 2 if compare_optics else time_limit,
                progress=progress,
                verify=verify and inst.verify.enabled,
                sim_progress=sim_progress,
                # With --compare-optics the solve gets half of the steps' time.
                deadline=steps.sooner(steps.remaining_s() / 2) if compare_optics else steps,
            )
            if compare_optics:
                comparison = api.compare_optics(
                    inst, time_limit_s=time_limit, progress=progress, deadline=steps
                )
                result = replace(result, optics_comparison=comparison.table)
            pictures = deadline.pictures_fit()
            if not pictures:
                result = without_pictures(result)
            if progress is not None:
                progress(1, 1, f"writing the reports into {outdir}")
        finally:
            if progress is not None:
                progress.close()
        api.write_reports(result, outdir, force=force, formats=chosen, pictures=pictures)
        if not pictures and result.design is None and not quiet:
            typer.echo(api.Deadline.cut_note(PICTURES_LEFT_OUT), err=True)
    summary = result.summary
    if as_json:
        typer.echo(api.json_text(summary.row(0, named=True)))
        if not quiet:
            typer.echo(f"reports: {outdir}", err=True)
    else:
        for line in api.headline(summary):
            typer.echo(line)
        if result.reliability is not None:
            for line in api.failure_lines(result.reliability):
                typer.echo(line)
        if result.optics_comparison is not None:
            for line in optics_lines(result.optics_comparison):
                typer.echo(line)
        typer.echo(f"reports: {outdir}")
    if result.bandwidth_loop is not None and not quiet:
        for line in api.bandwidth_loop_lines(result.bandwidth_loop):
            typer.echo(f"bandwidth loop: {line}", err=True)
    if result.idle_pricing is not None and not quiet:
        for line in api.idle_pricing_lines(result.idle_pricing):
            typer.echo(f"idle GPUs priced: {line}", err=True)
    if result.reliability_options is not None and not quiet:
        for line in api.options_lines(result.reliability_options):
            typer.echo(f"failures priced: {line}", err=True)
    if result.found:
        assert result.design is not None
        for note in api.cut_notes(result.design.notes):
            typer.echo(note, err=True)
        if result.sim is not None:
            for note in result.sim.notes:
                typer.echo(f"verification: {note}", err=True)
        if result.sim is not None and result.sim.cut:
            advice = api.time_limit_advice(result.sim, workload=inst.workload is not None)
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
        if result.status is api.Status.INFEASIBLE
        else f"no design found ({result.status.value}):"
    )
    typer.echo(title, err=True)
    for line in result.explanation:
        typer.echo(f"  - {line}", err=True)
    return EXIT_NONE


#: What a report whose pictures the time limit left out says (report.md and stderr).
PICTURES_LEFT_OUT = (
    "the pictures (fig_*.png, fig_*.svg) were left out: too little of the time limit was left "
    "to draw them after the steps before the writing; the tables, report.md and report.html "
    "are whole (raise --time-limit to have them)"
)


def is_the_command() -> bool:
    """Whether this process is the ``fabric-planner`` command (or ``python -m planner``).

    Its time limit then counts from the process's start; a call from Python, or a test that
    runs the app in its own process, counts from the call.
    """
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return Path(sys.argv[0]).name == "fabric-planner" or (
        spec is not None and spec.name == "planner.__main__"
    )


def without_pictures(result: api.PlanResult) -> api.PlanResult:
    """The result with a note that its pictures were left out (report.md lists it)."""
    from planner import api

    if result.design is None:
        return result
    note = api.Deadline.cut_note(PICTURES_LEFT_OUT)
    return replace(result, design=replace(result.design, notes=(*result.design.notes, note)))


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
) -> tuple[api.Instance, Path]:
    """Load the instance and check its report folder before any time is spent."""
    inst = load_with_changes(instance, changes)
    from planner import api  # once the input is known to be good

    outdir = output if output is not None else DEFAULT_REPORTS_DIR / api.safe_name(inst.name)
    api.prepare_outdir(outdir, force=force)
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
        from planner import api

        with api.claimed(outdir, force=force, command="torus"):
            result = api.plan_torus(inst, time_limit_s=time_limit)
            api.write_table(
                dict(result.tables), outdir, force=force, command="torus", formats=chosen
            )
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
        from planner import api

        progress = None if quiet else ProgressLine()
        with api.claimed(outdir, force=force, command="compare-fabrics"):
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
            api.write_table(
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
            for note in [] if fabric.design is None else api.cut_notes(fabric.design.notes):
                typer.echo(f"{name}: {note}", err=True)
            if fabric.sim is not None and fabric.sim.cut:
                advice = api.time_limit_advice(fabric.sim)
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

"""``fabric-planner life``: plan an instance's [life] per family and write its phase table."""

from __future__ import annotations

import typer

from planner.cli.options import (
    ALL_FORMATS,
    ForceOpt,
    FormatsOpt,
    InstanceArg,
    OutputOpt,
    SetOpt,
    TimeLimitOpt,
)
from planner.cli.plan_commands import open_outdir
from planner.cli.typer_app import EXIT_FOUND, app, user_errors
from planner.defaults import DEFAULT_TIME_LIMIT_S
from planner.output import parse_formats


@app.command("life")
def life(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    force: ForceOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Plan the instance's [life] (phases, generations, refresh) per family; write life_phases."""
    with user_errors():
        chosen = parse_formats(formats)
        inst, outdir = open_outdir(instance, set_, output, force)
        from planner import api

        api.life_of(inst)  # an instance without a [life] is refused before the folder is claimed

        with api.claimed(outdir, force=force, command="life"):
            result = api.plan_life(inst, time_limit_s=time_limit)
            api.write_life(result, outdir, force=force, formats=chosen)
        first = None
        for r in result.totals.iter_rows(named=True):
            first = first or r
            typer.echo(
                f"{r['family']:<12} capex ${r['capex_usd']:,.0f} "
                f"({r['capex_usd'] / first['capex_usd']:.2f}), "
                f"life ${r['total_present_usd']:,.0f} present, "
                f"power {r['final_power_kw']:,.0f} kW at the end "
                f"({r['final_power_kw'] / first['final_power_kw']:.2f})"
            )
        for r in result.table.iter_rows(named=True):
            fraction = r["fraction_of_ideal"]
            typer.echo(
                f"  {r['family']:<12} phase {r['phase']} ({r['at_years']:g} y): "
                f"{r['gpus']:,} GPUs, {r['top_devices']} x {r['top_model']}, "
                f"{r['links_recabled']:,} links re-cabled, {r['circuits_changed']:,} circuits "
                f"changed, "
                + ("not simulated" if fraction is None else f"{fraction:.3f} of ideal")
                + ("" if not r["violations"] else f", {r['violations']} violations")
            )
        typer.echo(f"reports: {outdir}")
    raise typer.Exit(EXIT_FOUND)

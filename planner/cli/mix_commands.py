"""``fabric-planner mix``: place an instance's [jobs] mix on each family and choose for it."""

from __future__ import annotations

import typer

from planner.cli.options import (
    ALL_FORMATS,
    ForceOpt,
    FormatsOpt,
    InstanceArg,
    OutputOpt,
    QuietOpt,
    SetOpt,
    TimeLimitOpt,
)
from planner.cli.plan_commands import open_outdir
from planner.cli.typer_app import EXIT_FOUND, app, user_errors
from planner.defaults import DEFAULT_TIME_LIMIT_S
from planner.output import parse_formats


@app.command("mix")
def mix(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
    formats: FormatsOpt = ALL_FORMATS,
) -> None:
    """Run the instance's [jobs] mix on each family's design; write mix_designs and mix_jobs."""
    with user_errors():
        chosen = parse_formats(formats)
        inst, outdir = open_outdir(instance, set_, output, force)
        from planner import api

        api.jobs_of(inst)  # an instance without [jobs] is refused before the folder is claimed

        def tell(line: str) -> None:
            typer.echo(f"mix: {line}", err=True)

        with api.claimed(outdir, force=force, command="mix"):
            result = api.plan_mix(inst, time_limit_s=time_limit, progress=None if quiet else tell)
            api.write_mix(result, outdir, force=force, formats=chosen)
        priced = inst.jobs.routings[0] if inst.jobs else ""
        for r in result.designs.iter_rows(named=True):
            typer.echo(
                f"{r['candidate']:<16} {r['policy']:<9} network ${r['network_usd']:,.0f}, "
                f"fragmentation {r['fragmentation_gpus']:,.0f} GPUs, mean slowdown "
                f"{r[f'mean_slowdown_{priced}']:.3f} ({priced}), lost {r['lost_gpus']:,.0f} "
                f"GPUs (${r['lost_value_usd']:,.0f}), total ${r['total_usd']:,.0f}"
            )
        for line in result.skipped:
            typer.echo(f"not planned: {line}")
        typer.echo(f"chosen for the mix: {result.chosen_for_mix}")
        typer.echo(f"chosen for one job: {result.chosen_for_one_job}")
        typer.echo(f"reports: {outdir}")
    raise typer.Exit(EXIT_FOUND)

"""Commands that take a written design: ``validate`` and ``simulate``."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from planner.cli.options import (
    ALL_FORMATS,
    DEFAULT_REPORTS_DIR,
    ForceOpt,
    FormatsOpt,
    QuietOpt,
    load_with_changes,
)
from planner.cli.typer_app import EXIT_FAILS, EXIT_FOUND, EXIT_NONE, ProgressLine, app, user_errors
from planner.errors import InputError

if TYPE_CHECKING:
    from planner import api

#: The command an htsim export folder's manifest names (``simulate --htsim DIR``).
HTSIM_COMMAND = "simulate --htsim"


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
    from planner import api

    with user_errors():
        d = api.load_design(design)
        cat = api.load_catalog(catalog or d.catalog)
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
    instance: Path | None, changes: list[str] | None, design: api.Design | None = None
) -> api.Verify:
    """The [verify] section of an instance (or the defaults), with ``--set verify.*`` applied.

    With a ``design`` and an instance that has a ``[workload]``, the workload's traffic is
    included as ``solve`` includes it (``api.verify_for``).
    """
    from planner import api

    inst_changes = dict(api.parse_override(item) for item in changes or [])
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
    base = api.Instance.model_validate({"name": "simulate", "cluster": {"gpus": 8}})
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
    from planner import api

    with user_errors():
        chosen = api.parse_formats(formats)
        design = api.load_design(design_json)
        verify = verify_settings(instance, set_, design)
        # The simulator loads (in api.simulate) only once the input is known to be good.
        outdir = (
            output if output is not None else DEFAULT_REPORTS_DIR / api.safe_name(design.instance)
        )
        api.prepare_outdir(outdir, force=force)
        same = htsim is not None and htsim.resolve() == outdir.resolve()
        if htsim is not None and not same:
            api.prepare_outdir(htsim, force=force)
        with (
            api.claimed(outdir, force=force, command="simulate"),
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
            api.write_sim_reports(
                sim,
                outdir,
                design,
                force=force,
                extra=htsim_files if same else None,
                instance=source,
                formats=chosen,
            )
            if htsim is not None and not same:
                api.write_set(htsim, htsim_files, force=force, command=HTSIM_COMMAND)
        cols = ["pattern", "routing", "scenario", "time_s", "busbw_gbps", "fraction_of_ideal"]
        typer.echo(str(sim.collectives.select(cols)))
        typer.echo(f"verdict: {sim.verdict}")
        for reason in sim.reasons:
            typer.echo(f"  - {reason}")
        for note in sim.notes:
            typer.echo(f"note: {note}")
        typer.echo(f"reports: {outdir}")
        if sim.cut:
            typer.echo(f"verification: {sim.verdict}: {api.time_limit_advice(sim)}", err=True)
        for step in sim.over_memory:
            typer.echo(f"verification: not simulated for memory: {step}", err=True)
    raise typer.Exit(EXIT_FAILS if sim.verdict == "fails" else EXIT_FOUND)


@contextmanager
def _maybe_claimed(folder: Path | None, force: bool, command: str) -> Iterator[None]:
    from planner import api

    if folder is None:
        yield
        return
    with api.claimed(folder, force=force, command=command):
        yield

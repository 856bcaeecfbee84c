"""The ``fabric-planner`` command line: a thin layer over ``planner.api`` and ``planner.report``.

Exit status: 0 a design was found (or the checked design is sound), 1 none exists (or the design
has violations), 2 bad input. Bad input never prints a traceback, only ``error: <message>``.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import polars as pl
import typer

from models.status import Status
from planner.design import Design
from planner.errors import InputError
from planner.loading import DEFAULT_CATALOG, load_catalog, load_instance, parse_override, read_text
from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.schema.verify import Verify
from planner.validation import validate_design

#: Folder, relative to the current directory, under which ``solve`` writes reports/<instance name>/.
DEFAULT_REPORTS_DIR = Path("reports")
#: Exit statuses.
EXIT_FOUND, EXIT_NONE, EXIT_BAD_INPUT = 0, 1, 2

app = typer.Typer(
    name="fabric-planner",
    help="Plan the scale-out network of an AI cluster: the cheapest fabric "
    "(capex + lifetime energy) that meets the constraints of an instance file.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)


class Kind(StrEnum):
    """Component kinds of the catalog."""

    switch = "switch"
    medium = "medium"
    nic = "nic"


@contextmanager
def user_errors() -> Iterator[None]:
    """Turn an InputError into ``error: <message>`` on stderr and exit status 2."""
    try:
        yield
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(EXIT_BAD_INPUT) from None


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
    float, typer.Option("--time-limit", min=0.1, help="Time limit of the whole search, in seconds.")
]
JsonOpt = Annotated[
    bool,
    typer.Option("--json", help="Print the summary row as a JSON object on stdout, nothing else."),
]
ForceOpt = Annotated[
    bool, typer.Option("--force", help="Write into a folder that holds other files.")
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
CatalogOpt = Annotated[
    str,
    typer.Option(
        "--catalog", help="'default' for the shipped catalog, or the path of a catalog file."
    ),
]


def load_with_changes(path: Path, changes: list[str] | None) -> Instance:
    """Read an instance and apply ``--set`` overrides."""
    inst = load_instance(path)
    if changes:
        inst = inst.with_changes(dict(parse_override(item) for item in changes))
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
) -> int:
    """Load, plan (or evaluate), write the reports and print the outcome; return the exit status."""
    inst = load_with_changes(instance, changes)
    # The solver libraries load only once the input is known to be good.
    from planner import api
    from planner.report import headline, prepare_outdir, write_reports

    outdir = output if output is not None else DEFAULT_REPORTS_DIR / inst.name
    # Refuse a foreign folder before spending the time limit, not after.
    prepare_outdir(outdir, force=force)
    progress = None if quiet else ProgressLine()
    run = api.evaluate if evaluate else api.plan
    try:
        sim_progress = None if progress is None else progress.note
        result = run(
            inst,
            time_limit_s=time_limit,
            progress=progress,
            verify=verify and inst.verify.enabled,
            sim_progress=sim_progress,
        )
        if compare_optics:
            comparison = api.compare_optics(inst, time_limit_s=time_limit, progress=progress)
            result = replace(result, optics_comparison=comparison.table)
    finally:
        if progress is not None:
            progress.close()
    write_reports(result, outdir, force=force)
    summary = result.summary
    if as_json:
        typer.echo(json.dumps(summary.row(0, named=True), default=str))
        if not quiet:
            typer.echo(f"reports: {outdir}", err=True)
    else:
        for line in headline(summary):
            typer.echo(line)
        if result.optics_comparison is not None:
            for line in optics_lines(result.optics_comparison):
                typer.echo(line)
        typer.echo(f"reports: {outdir}")
    if result.found:
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
) -> None:
    """Find the cheapest fabric for an instance and write its reports."""
    with user_errors():
        code = run_plan(
            False, instance, output, set_, time_limit, as_json, force, quiet, verify, compare_optics
        )
    raise typer.Exit(code)


def open_outdir(
    instance: Path, changes: list[str] | None, output: Path | None, force: bool
) -> tuple[Instance, Path]:
    """Load the instance and claim its report folder before any time is spent."""
    inst = load_with_changes(instance, changes)
    from planner.report import prepare_outdir

    outdir = output if output is not None else DEFAULT_REPORTS_DIR / inst.name
    prepare_outdir(outdir, force=force)
    return inst, outdir


@app.command()
def torus(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    force: ForceOpt = False,
) -> None:
    """Size a TPU-style torus pod ([torus]): cubes, spares, OCS devices, slices and circuits."""
    with user_errors():
        inst, outdir = open_outdir(instance, set_, output, force)
        from planner import api
        from planner.report import write_table

        result = api.plan_torus(inst)
        for name, table in result.tables.items():
            write_table(table, outdir, name, force=True)
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
        for r in result.slices.iter_rows(named=True):
            typer.echo(
                f"slice {r['slice']}: {r['shape']}{' twisted' if r['twisted'] else ''}, "
                f"{r['cubes']} cubes, {r['circuits']} circuits, torus {'ok' if r['torus_ok'] else 'BROKEN'}"
            )
        for r in result.failure.iter_rows(named=True):
            typer.echo(
                f"cube {r['failed_cube']} fails: spare {r['spare_cube']} takes its place, "
                f"{r['circuits_removed']} circuits removed, {r['circuits_added']} added, "
                f"{r['circuits_kept']} kept"
            )
        typer.echo(f"reports: {outdir}")
    raise typer.Exit(EXIT_FOUND)


@app.command("compare-fabrics")
def compare_fabrics(
    instance: InstanceArg,
    output: OutputOpt = None,
    set_: SetOpt = None,
    time_limit: TimeLimitOpt = DEFAULT_TIME_LIMIT_S,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Electrical Clos vs OCS direct-connect: price both, simulate both, write fabric_comparison."""
    with user_errors():
        inst, outdir = open_outdir(instance, set_, output, force)
        from planner import api
        from planner.report import write_table

        progress = None if quiet else ProgressLine()
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
        write_table(result.table, outdir, "fabric_comparison", force=force)
        for r in result.table.iter_rows(named=True):
            if r["capex_usd"] is None:
                typer.echo(f"{r['fabric']:<15} {r['status']}")
                continue
            typer.echo(
                f"{r['fabric']:<15} capex ${r['capex_usd']:,.0f}, {r['power_kw']:,.1f} kW, "
                f"{r['max_switch_hops']} hops, {r['traffic']} ({r['routing']}): "
                f"{r['fraction_of_ideal']:.3f} of ideal"
            )
        typer.echo(f"reports: {outdir}")
    raise typer.Exit(EXIT_FOUND)


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
) -> None:
    """Price exactly the design pinned in the instance's search.pin and write its reports."""
    with user_errors():
        code = run_plan(True, instance, output, set_, time_limit, as_json, force, quiet, verify)
    raise typer.Exit(code)


def read_design(path: Path) -> Design:
    """Read a design.json, with a clear message when it is not one."""
    text = read_text(path)
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a JSON object written by fabric-planner (design.json)", source=str(path)
        )
    try:
        return Design.from_dict(data)
    except KeyError as exc:
        raise InputError(f"not a design.json: missing field {exc}", source=str(path)) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"not a design.json: {exc}", source=str(path)) from None


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
        d = read_design(design)
        cat = load_catalog(catalog or d.catalog)
        try:
            violations = validate_design(d, cat)
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


def verify_settings(instance: Path | None, changes: list[str] | None) -> Verify:
    """The [verify] section of an instance (or the defaults), with ``--set verify.*`` applied."""
    inst_changes = dict(parse_override(item) for item in changes or [])
    bad = [k for k in inst_changes if not k.startswith("verify.")]
    if bad:
        raise InputError(f"--set {bad[0]}: simulate takes only verify.* fields")
    if instance is not None:
        return load_with_changes(instance, changes).verify
    base = Instance.model_validate({"name": "simulate", "cluster": {"gpus": 8}})
    return base.with_changes(inst_changes).verify if inst_changes else base.verify


@app.command("simulate")
def simulate_cmd(
    design_json: Annotated[
        Path, typer.Argument(help="A design.json written by solve or evaluate.", show_default=False)
    ],
    instance: Annotated[
        Path | None,
        typer.Option("--instance", help="Take the [verify] section from this instance file."),
    ] = None,
    output: OutputOpt = None,
    set_: SetOpt = None,
    htsim: Annotated[
        Path | None,
        typer.Option(
            "--htsim",
            help="Also write htsim's topology (.topo) and connection matrix (.cm) of the first traffic's first phase into this folder.",
        ),
    ] = None,
    force: ForceOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Simulate a design under traffic, routing and failures; write the sim_* tables."""
    with user_errors():
        design = read_design(design_json)
        verify = verify_settings(instance, set_)
        from planner import api  # the simulator loads only once the input is known to be good
        from planner.report import prepare_outdir, write_sim_reports

        outdir = output if output is not None else DEFAULT_REPORTS_DIR / design.instance
        prepare_outdir(outdir, force=force)
        progress = None if quiet else ProgressLine()
        try:
            sim = api.simulate(design, verify, progress=None if progress is None else progress.note)
        except ValueError as exc:  # traffic that does not fit the design (group sizes, ...)
            raise InputError(f"verify: {exc}") from None
        finally:
            if progress is not None:
                progress.close()
        write_sim_reports(sim, outdir, force=force)
        if htsim is not None:
            write_htsim(design, verify, htsim)
        cols = ["pattern", "routing", "scenario", "time_s", "busbw_gbps", "fraction_of_ideal"]
        typer.echo(str(sim.collectives.select(cols)))
        typer.echo(f"verdict: {sim.verdict}")
        for reason in sim.reasons:
            typer.echo(f"  - {reason}")
        typer.echo(f"reports: {outdir}")
    raise typer.Exit(EXIT_FOUND if sim.verdict == "meets" else EXIT_NONE)


def write_htsim(design: Design, verify: Verify, folder: Path) -> None:
    """Htsim topology and connection matrix of the first traffic's first phase."""
    from planner.sim.fabric import build_fabric
    from planner.sim.htsim import write_connection_matrix, write_topology
    from planner.sim.simulate import build_traffic

    fabric = build_fabric(design)
    phase = build_traffic(verify.traffic[0], design, verify.seed).phases[0]
    folder.mkdir(parents=True, exist_ok=True)
    try:
        write_topology(fabric, folder / f"{design.instance}.topo")
    except ValueError as exc:
        typer.echo(f"htsim topology not written: {exc}", err=True)
    write_connection_matrix(
        fabric,
        phase.src,
        phase.dst,
        phase.size_bytes / fabric.planes,
        folder / f"{design.instance}.cm",
    )


@app.command("catalog")
def catalog_cmd(
    catalog: CatalogOpt = DEFAULT_CATALOG,
    kind: Annotated[
        Kind | None, typer.Option("--kind", help="Only this kind of component.")
    ] = None,
) -> None:
    """List the catalog's components with their key figures and the source of each price."""
    from planner.report import catalog_table

    with user_errors():
        cat = load_catalog(catalog)
    kinds = [kind.value] if kind else [k.value for k in Kind]
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=250,
        fmt_str_lengths=60,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
    ):
        for i, k in enumerate(kinds):
            if i:
                typer.echo("")
            typer.echo(f"{k}:")
            typer.echo(str(catalog_table(cat, k)))


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

"""Arguments and options that several commands share, and how ``--set`` changes an instance."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from planner import api


#: Folder, relative to the current directory, under which ``solve`` writes reports/<instance name>/.
DEFAULT_REPORTS_DIR = Path("reports")

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


def load_with_changes(path: Path, changes: list[str] | None) -> api.Instance:
    """Read an instance and apply ``--set`` overrides.

    A changed instance gets a name derived from its changes (``h100-1k.gpus-65536``), so its
    default report folder is not the base's, and records them for the reports
    (``api.derived_instance``).

    Bad input is refused before the heavy libraries load: the file is read against the schema
    alone first (every field but the family names), and only then against the family registry,
    which loads every family's model.
    """
    from planner.loading import load_instance, parse_override

    load_instance(path)
    overrides = dict(parse_override(item) for item in changes or [])
    from planner import api

    inst = api.load_instance(path)
    if overrides:
        inst = api.derived_instance(inst, overrides)
    return inst

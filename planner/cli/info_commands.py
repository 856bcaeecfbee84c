"""Commands that print reference information: ``catalog`` and ``schema``."""

from __future__ import annotations

from enum import StrEnum
from typing import TYPE_CHECKING, Annotated

import typer

from planner.cli.typer_app import EXIT_FOUND, app, user_errors
from planner.defaults import DEFAULT_CATALOG

if TYPE_CHECKING:
    pass


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


CatalogOpt = Annotated[
    str,
    typer.Option(
        "--catalog", help="'default' for the shipped catalog, or the path of a catalog file."
    ),
]


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
    from planner import api

    with user_errors():
        cat = api.load_catalog(catalog)
        kinds = [kind.value] if kind else [k.value for k in Kind]
        if as_json or fmt is Format.json:
            typer.echo(
                api.json_text(
                    {k: api.catalog_entries(cat, k) for k in kinds}, indent=2, sort_keys=False
                )
            )
            raise typer.Exit(EXIT_FOUND)
        if fmt is Format.csv:
            typer.echo(api.catalog_csv(cat, kinds), nl=False)
            raise typer.Exit(EXIT_FOUND)
        for line in api.catalog_lines(cat, kinds):
            typer.echo(line)


@app.command()
def schema(
    catalog: Annotated[
        bool, typer.Option("--catalog", help="The catalog file's schema instead.")
    ] = False,
) -> None:
    """Print the JSON Schema of the instance file (or of the catalog file)."""
    from planner.schema.files import shipped

    typer.echo(shipped("catalog" if catalog else "instance"))

"""The ``fabric-planner`` command line: a thin layer over ``planner.api`` (and ``planner.study``).

``typer_app`` holds the Typer app, the exit statuses and how a command's errors end;
``options`` the arguments and options several commands share. Each ``*_commands`` module
registers its commands on the app when imported: ``plan_commands`` (solve, torus,
compare-fabrics, evaluate), ``life_commands`` (life), ``mix_commands`` (mix), ``study_commands`` (sweep), ``design_commands`` (validate,
simulate) and ``info_commands`` (catalog, schema). ``planner.api`` is cheap to import: the solver
libraries load on its first call that needs them, so bad input is reported before they load.
"""

from __future__ import annotations

import sys

import typer

from planner.cli.typer_app import EXIT_BAD_INPUT, EXIT_INTERRUPTED, app
from planner.errors import InputError

# The command modules register their commands when imported, in this order: the order --help
# lists them in (tests/cli/test_cli.py checks it), so isort leaves these lines as they are.
# isort: off
from planner.cli import plan_commands, life_commands, mix_commands
from planner.cli import study_commands, design_commands, info_commands
# isort: on

__all__ = ["app", "main"]

#: The modules whose commands the app holds, in the order they register.
COMMAND_MODULES = (
    plan_commands,
    life_commands,
    mix_commands,
    study_commands,
    design_commands,
    info_commands,
)


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

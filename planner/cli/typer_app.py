"""The Typer app of ``fabric-planner`` and how its commands end: exit statuses, errors, progress.

Exit status (docs/commands.md's table): 0 success; 1 no design exists (or ``validate`` found
violations); 2 bad input, never with a traceback, only ``error: <message>``; 3 an internal error
(a bug: ``internal error: ...`` and a request to report it; the traceback only with
``FABRIC_PLANNER_DEBUG=1``); 4 a design was found but its verification by simulation ``fails``
(``solve``/``evaluate`` unless ``--allow-fail``; ``simulate``); 130 interrupted by Ctrl-C, with the
output folder left as it was.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer

from planner.errors import InputError
from planner.interrupt import interruptible

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
    """Progress on stderr, one step at a time.

    On a terminal, one line rewritten in place (rich's: a spinner, the time since the first step
    and the step); otherwise one plain line per step, as logs and CI keep them.
    """

    def __init__(self) -> None:
        self.tty = sys.stderr.isatty()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, done: int, total: int, label: str) -> None:
        """Show that ``done`` of ``total`` solves are finished, the last one being ``label``."""
        self._show(f"[{done}/{total}] {label}")

    def note(self, label: str) -> None:
        """Show a step that has no count (the simulation's)."""
        self._show(f"simulate: {label}")

    def _show(self, text: str) -> None:
        if not self.tty:
            typer.echo(text, err=True)
            return
        if self._progress is None:
            # rich loads with the first step shown, not with --help.
            from rich.console import Console
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(),
                TimeElapsedColumn(),
                # Steps name TOML sections like [verify]: no markup.
                TextColumn("{task.description}", markup=False),
                console=Console(stderr=True),
            )
            self._task = self._progress.add_task(text, total=None)
            self._progress.start()
        self._progress.update(self._task, description=text)

    def close(self) -> None:
        """Stop the line where it is, so that what follows starts on a new line."""
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

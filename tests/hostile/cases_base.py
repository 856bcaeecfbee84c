"""What every hostile case is built from: the ``Case`` dataclass and the kinds of a case's files
(``Content``: bytes, an edit of a real design, a link, a folder, a copy of the base study, a FIFO),
the exit statuses a case may end with, the paths of the repository and its example instances,
and the helpers the case groups share (the example instances' texts, edits of a real design.json,
each command's command line over ``instance.toml``, the base study's sweep). It imports none of
the other modules of the generator.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
INSTANCES = REPO / "instances"

#: Every command of the CLI.
COMMANDS = (
    "solve",
    "evaluate",
    "compare-fabrics",
    "torus",
    "simulate",
    "validate",
    "catalog",
    "schema",
    "sweep",
)

#: Real designs written by the planner, by name: "small" (small-256, one switch), "h100"
#: (h100-1k, leaf and spine), "ocs" (1,024 GPUs, OCS direct-connect), one of every family by
#: the family's name (``tests.hostile.family_designs``), and "study": the base study folder
#: (``STUDY_ARGS`` run once), as {"files": {relative path: bytes}, "part": the first
#: scenario's key, "hostile-part": a part of that key with hostile values}.
Designs = dict[str, dict[str, Any]]
#: A file's content: bytes, or an edit of a real design.json's data made when the case runs.
DesignEdit = Callable[[Designs], Any]


@dataclass(frozen=True)
class Link:
    """A symbolic link to ``target`` (relative to the link's folder, or absolute)."""

    target: str


@dataclass(frozen=True)
class Folder:
    """An empty folder."""


@dataclass(frozen=True)
class StudyCopy:
    """The base study folder's files ("study" of ``Designs``), copied to this path."""


Content = bytes | DesignEdit | Link | Folder | StudyCopy | None
"""None: make a FIFO at that path. A path may hold ``{part}``: the base study's first part key."""
#: Placeholder in a file path for the first scenario's part key of the base study.
PART = "{part}"

BAD = frozenset({2})
NONE_OR_BAD = frozenset({1, 2})
ANY_ANSWER = frozenset({0, 1, 2})


@dataclass(frozen=True)
class Case:
    """One hostile run: files in a fresh folder, a command line, what it may end with."""

    id: str
    command: str
    kind: str
    args: tuple[str, ...]
    files: dict[str, Content] = field(default_factory=dict)
    exit: frozenset[int] = BAD
    words: tuple[str, ...] = ()
    """Words the message must hold (stderr), e.g. the file and the field at fault."""
    outputs: tuple[str, ...] = ("out",)
    """Folders (relative to the case folder) the command may write into."""
    output_side: str = ""
    """Why the case fails today because of a part owned elsewhere (the output side: cli.py,
    report.py, api.py; or the catalog schema, or the OCS models): marks it xfail, non-strict, so
    the merge of that side turns it on."""
    known_bug: str = ""
    """A bug this case exposes outside the inputs' files, fixed elsewhere or still open: marks it
    xfail(strict=True), so its fix turns the mark into a failure to remove."""
    slow: bool = False
    """The run plans or simulates for real (a study that resumes, a workload simulated)."""
    subprocess_only: bool = False
    """Unsafe in the test's own process (a read that never ends, or one that fills memory): run
    only as a subprocess under the memory and time limits."""


def small_text() -> str:
    return (INSTANCES / "small-256.toml").read_text(encoding="utf-8")


def torus_text() -> str:
    return (INSTANCES / "tpu-pod-4k.toml").read_text(encoding="utf-8")


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _design_json(
    edit: Callable[[dict[str, Any]], None] | None = None, base: str = "small"
) -> DesignEdit:
    def make(designs: Designs) -> Any:
        data = json.loads(json.dumps(designs[base]))
        if edit is not None:
            edit(data)
        return data

    return make


def set_path(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of design data: set the value at a dotted path ('tiers.0.switches')."""

    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def drop_key(key: str) -> Callable[[dict[str, Any]], None]:
    """An edit of design data: remove a top-level key."""
    return lambda d: d.pop(key)


# ---- command lines and the real design the cases run on ------------------------------------------
def _instance_args(command: str) -> tuple[str, ...]:
    return {
        "solve": ("solve", "instance.toml", "-o", "out", "--no-verify", "--time-limit", "5", "-q"),
        "evaluate": (
            "evaluate",
            "instance.toml",
            "-o",
            "out",
            "--no-verify",
            "--time-limit",
            "5",
            "-q",
        ),
        "compare-fabrics": (
            "compare-fabrics",
            "instance.toml",
            "-o",
            "out",
            "--time-limit",
            "5",
            "-q",
        ),
        "torus": ("torus", "instance.toml", "-o", "out"),
        "simulate": ("simulate", "design.json", "--instance", "instance.toml", "-o", "out", "-q"),
        "sweep": sweep_args(),
    }[command]


def sweep_args(*grids: str, out: str = "out") -> tuple[str, ...]:
    """A sweep of instance.toml in this process, no verification: ``SWEEP_GRID`` by default."""
    items = tuple(a for g in grids or (SWEEP_GRID,) for a in ("--grid", g))
    return ("sweep", "instance.toml", *items, *SWEEP_OPTIONS, "-o", out)


#: The base study's grid: two scenarios of small-256 that plan in a fraction of a second.
SWEEP_GRID = "cluster.gpus=64,128"
#: Options of every generated sweep: one process (the serial executor), no simulation.
SWEEP_OPTIONS = ("--workers", "1", "--no-verify", "--time-limit", "5", "-q")
#: The command that made the base study folder of ``Designs["study"]`` (run in "out").
STUDY_ARGS = sweep_args()

INSTANCE_COMMANDS = ("solve", "evaluate", "compare-fabrics", "torus", "simulate", "sweep")
REAL_DESIGN = _design_json()

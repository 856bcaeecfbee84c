"""Study folder cases: the base study folder (planned once) with one file or folder made hostile
(``study.json``, ``parts/``, the manifest, the lock), then the same sweep run into it, which
resumes, replaces or refuses, never reads without end, never writes outside the folder.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from tests.hostile.cases_base import (
    BAD,
    PART,
    STUDY_ARGS,
    Case,
    Content,
    DesignEdit,
    Folder,
    Link,
    StudyCopy,
    small_text,
)

#: What a run says of a file at a part's name that it did not write (it never reads it).
FOREIGN_PART = ("not a part fabric-planner wrote",)
#: Words of a damaged part's notice (planned again, ``planner.study.parts``).
DAMAGED_PART = ("was damaged", "planned again")


# ---- study folders: what a resumed sweep finds in its folder ----------------------------------
def _study_file(name: str, edit: Callable[[bytes], bytes]) -> DesignEdit:
    """A file of the base study folder, edited."""
    return lambda designs: edit(designs["study"]["files"][name])


def _manifest(listing: dict[str, str] | None = None, **changes: Any) -> DesignEdit:
    """The base study's manifest with fields changed and files added to its listing."""

    def edit(data: bytes) -> bytes:
        manifest = json.loads(data) | changes
        manifest["files"] = manifest["files"] | (listing or {})
        return json.dumps(manifest).encode()

    return _study_file(".fabric-planner", edit)


def study_folder_cases() -> list[Case]:
    """A study folder (the base study, planned once) with one file or folder made hostile, then
    the same sweep run into it: it resumes, replaces, or refuses; it never reads without end,
    never writes outside the folder and never ends in a traceback."""
    small = small_text().encode()
    part = f"out/parts/{PART}.parquet"
    deep = b"[" * 100_000 + b"]" * 100_000
    resumes = frozenset({0})
    # (name, kind, files over the copy, extra options, exit, words, known bug, subprocess only)
    rows: list[
        tuple[
            str,
            str,
            dict[str, Content],
            tuple[str, ...],
            frozenset[int],
            tuple[str, ...],
            str,
            bool,
        ]
    ] = [
        ("resume", "valid", {}, (), resumes, (), "", False),
        ("resume-forced", "valid", {}, ("--force",), resumes, (), "", False),
        (
            "study-json-garbage",
            "study.json",
            {"out/study.json": b"\x00\xff garbage"},
            (),
            BAD,
            ("out", "--force"),
            "",
            False,
        ),
        (
            "study-json-null",
            "study.json",
            {"out/study.json": b"null"},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-folder",
            "study.json",
            {"out/study.json": Folder()},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-huge",
            "study.json",
            {"out/study.json": b'{"x": "' + b"x" * (20 * 2**20) + b'"}'},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-deep",
            "study.json",
            {"out/study.json": deep},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-fifo",
            "study.json",
            {"out/study.json": None},
            (),
            BAD,
            (),
            "",
            True,
        ),
        (
            "study-json-dev-zero",
            "study.json",
            {"out/study.json": Link("/dev/zero")},
            (),
            BAD,
            (),
            "",
            True,
        ),
        ("parts-a-file", "parts", {"out/parts": b"x"}, (), BAD, ("parts",), "", False),
        (
            "parts-link-outside",
            "parts",
            {"out/parts": Link("../outside"), "outside/keep": b""},
            (),
            BAD,
            ("parts",),
            "",
            False,
        ),
        # A damaged part (not readable Parquet) is planned again, the file kept aside.
        ("part-garbage", "parts", {part: b"garbage"}, (), resumes, DAMAGED_PART, "", False),
        (
            "part-truncated",
            "parts",
            {part: lambda d: d["study"]["files"][f"parts/{d['study']['part']}.parquet"][:500]},
            (),
            resumes,
            DAMAGED_PART,
            "",
            False,
        ),
        (
            "part-other-table",
            "parts",
            {part: lambda d: d["study"]["files"]["study.parquet"]},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "part-hostile-values",
            "parts",
            {part: lambda d: d["study"]["hostile-part"]},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "part-folder",
            "parts",
            {part: Folder()},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        ("part-fifo", "parts", {part: None}, (), BAD, FOREIGN_PART, "", False),
        ("part-dev-zero", "parts", {part: Link("/dev/zero")}, (), BAD, FOREIGN_PART, "", False),
        ("part-passwd", "parts", {part: Link("/etc/passwd")}, (), BAD, FOREIGN_PART, "", False),
        (
            "part-link-outside",
            "parts",
            {part: Link("../../outside/x.parquet"), "outside/keep": b""},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "tmp-folder",
            "parts",
            {"out/parts/.evil.tmp": Folder()},
            (),
            resumes,
            (),
            "",
            False,
        ),
        ("tmp-fifo", "parts", {"out/parts/.evil.tmp": None}, (), resumes, (), "", False),
        (
            "tmp-link-outside",
            "parts",
            {"out/parts/.evil.tmp": Link("../../outside/victim"), "outside/victim": b"keep"},
            (),
            resumes,
            (),
            "",
            False,
        ),
        (
            "manifest-garbage",
            "manifest",
            {"out/.fabric-planner": b"garbage"},
            (),
            BAD,
            ("out",),
            "",
            False,
        ),
        (
            "manifest-folder",
            "manifest",
            {"out/.fabric-planner": Folder()},
            (),
            BAD,
            ("out",),
            "",
            False,
        ),
        (
            "manifest-other-command",
            "manifest",
            {"out/.fabric-planner": _manifest(command="solve")},
            (),
            BAD,
            ("solve", "--force"),
            "",
            False,
        ),
        (
            "manifest-lists-outside-forced",
            "manifest",
            {
                "out/.fabric-planner": _manifest({"../outside/victim": "0" * 64}),
                "outside/victim": b"keep",
            },
            ("--force",),
            BAD,
            ("not written by fabric-planner",),
            "",
            False,
        ),
        (
            "manifest-staging-outside",
            "manifest",
            {
                "out/.fabric-planner": _manifest(staging="../outside", complete=False),
                "outside/victim": b"keep",
            },
            (),
            frozenset({0, 2}),
            (),
            "",
            False,
        ),
        (
            "lock-folder",
            "lock",
            {"out/.fabric-planner.lock": Folder()},
            (),
            resumes,
            (),
            "",
            False,
        ),
        ("lock-fifo", "lock", {"out/.fabric-planner.lock": None}, (), resumes, (), "", False),
    ]
    out = []
    for name, kind, files, extra, codes, words, bug, unsafe in rows:
        runs = 0 in codes
        out.append(
            Case(
                f"sweep/study-folder/{name}",
                "sweep",
                f"study folder: {kind}",
                STUDY_ARGS + extra,
                {"instance.toml": small, "out": StudyCopy(), **files},
                exit=codes,
                words=words,
                known_bug=bug,
                slow=runs or unsafe,
                subprocess_only=unsafe,
            )
        )
    return out

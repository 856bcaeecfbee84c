"""Pydantic's validation errors as the messages a user acts on: the field, its line, the value.

Below the schema's users and beside its models: ``planner.loading`` validates the files it reads
with :func:`validate_data`, and ``Instance.with_changes`` validates a changed instance with it, so
both report a refused field the same way.
"""

from __future__ import annotations

import functools
import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from planner.errors import InputError

M = TypeVar("M", bound=BaseModel)

#: Most schema errors listed in one message; the count of the others follows.
MAX_ERRORS_SHOWN = 20


def key_line(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Line (1-based) where the field at ``loc`` is written in a TOML text, if it can be found.

    Follows ``[table]`` headers and ``key = value`` lines, which covers how instance files are
    written; inline tables and arrays of tables fall back to the nearest enclosing key.
    """
    keys = tuple(str(k) for k in loc if isinstance(k, str))
    index = _key_lines(text)
    for n in range(len(keys), 0, -1):
        if (line := index.get(keys[:n])) is not None:
            return line
    return None


_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\s\"]+?)\s*\]\]?\s*(#.*)?$")
_ASSIGN = re.compile(r"^\s*([A-Za-z0-9_\-\"]+(?:\s*\.\s*[A-Za-z0-9_\-\"]+)*)\s*=")


@functools.lru_cache(maxsize=4)
def _key_lines(text: str) -> dict[tuple[str, ...], int]:
    """First line of every table header and key path of a TOML text, built once per text."""
    table: list[str] = []
    index: dict[tuple[str, ...], int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if m := _HEADER.match(line):
            table = [p.strip().strip('"') for p in m.group(1).split(".")]
            path = table
        elif m := _ASSIGN.match(line):
            path = table + [p.strip().strip('"') for p in m.group(1).split(".")]
        else:
            continue
        index.setdefault(tuple(path), number)
    return index


def _format_errors(exc: ValidationError, text: str | None) -> str:
    errors = exc.errors(include_url=False)
    lines = []
    for err in errors[:MAX_ERRORS_SHOWN]:
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling; `fabric-planner schema` lists the fields)"
        elif "input" in err and err["type"] not in ("missing",):
            msg = f"{msg}; got {shown(err['input'])}"
        where = ""
        if text is not None and (line := key_line(text, loc)) is not None:
            where = f"line {line}: "
        lines.append(f"{where}{field}: {msg}")
    if len(errors) > MAX_ERRORS_SHOWN:
        lines.append(f"... and {len(errors) - MAX_ERRORS_SHOWN:,} more errors")
    return "\n  ".join(["invalid input:"] + lines)


def shown(value: Any, limit: int = 80) -> str:
    """A value as JSON, cut to ``limit`` characters, whatever its size or depth."""
    if isinstance(value, str) and len(value) > limit:
        value = value[:limit]
    try:
        text = json.dumps(value, default=str)
    except (RecursionError, ValueError):
        text = f"a {type(value).__name__} nested too deep to show"
    return text[:limit]


def validate_data(
    model: type[M],
    data: dict[str, Any],
    *,
    text: str | None = None,
    source: str | None = None,
    context: dict[str, Any] | None = None,
) -> M:
    """Validate a plain dict into ``model``, turning pydantic's errors into an InputError.

    ``context`` is pydantic's validation context (an instance's family names, for one).
    """
    try:
        return model.model_validate(data, context=context)
    except ValidationError as exc:
        raise InputError(_format_errors(exc, text), source=source) from None

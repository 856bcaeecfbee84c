"""Reading instance and catalog files into validated models, with errors a user can act on."""

from __future__ import annotations

import json
import re
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from planner.errors import InputError
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance

M = TypeVar("M", bound=BaseModel)

DEFAULT_CATALOG = "default"


def read_text(path: Path) -> str:
    """A file's text, or an InputError that names the file and what went wrong."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError("file not found", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the file ({exc})", source=str(path)) from None


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    text = read_text(path)
    try:
        return tomllib.loads(text), text
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=str(path)) from None


def key_line(text: str, loc: tuple[int | str, ...]) -> int | None:
    """Line (1-based) where the field at ``loc`` is written in a TOML text, if it can be found.

    Follows ``[table]`` headers and ``key = value`` lines, which covers how instance files are
    written; inline tables and arrays of tables fall back to the nearest enclosing key.
    """
    keys = [str(k) for k in loc if isinstance(k, str)]
    table: list[str] = []
    best: int | None = None
    best_depth = 0
    header = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\-\s\"]+?)\s*\]\]?\s*(#.*)?$")
    assign = re.compile(r"^\s*([A-Za-z0-9_\-\"]+(?:\s*\.\s*[A-Za-z0-9_\-\"]+)*)\s*=")
    for number, line in enumerate(text.splitlines(), start=1):
        if m := header.match(line):
            table = [p.strip().strip('"') for p in m.group(1).split(".")]
            path = table
        elif m := assign.match(line):
            path = table + [p.strip().strip('"') for p in m.group(1).split(".")]
        else:
            continue
        depth = 0
        for a, b in zip(path, keys, strict=False):
            if a != b:
                break
            depth += 1
        if depth == len(path) and depth > best_depth:
            best, best_depth = number, depth
    return best


def _format_errors(exc: ValidationError, text: str | None) -> str:
    lines = []
    for err in exc.errors(include_url=False):
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "(top level)"
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling; `fabric-planner schema` lists the fields)"
        elif "input" in err and err["type"] not in ("missing",):
            shown = json.dumps(err["input"], default=str)
            msg = f"{msg}; got {shown[:80]}"
        where = ""
        if text is not None and (line := key_line(text, loc)) is not None:
            where = f"line {line}: "
        lines.append(f"{where}{field}: {msg}")
    return "\n  ".join(["invalid input:"] + lines)


def validate_data(
    model: type[M], data: dict[str, Any], *, text: str | None = None, source: str | None = None
) -> M:
    """Validate a plain dict into ``model``, turning pydantic's errors into an InputError."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise InputError(_format_errors(exc, text), source=source) from None


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance file (TOML)."""
    path = Path(path)
    data, text = _read_toml(path)
    inst = validate_data(Instance, data, text=text, source=str(path))
    catalog = inst.search.catalog
    if catalog != DEFAULT_CATALOG and not Path(catalog).is_absolute():
        # A relative catalog path is read against the instance's folder, wherever it is run from.
        inst = inst.with_changes({"search.catalog": str(instance_dir(path) / catalog)})
    return inst


def load_catalog(
    name_or_path: str = DEFAULT_CATALOG, *, relative_to: Path | None = None
) -> Catalog:
    """The shipped catalog ('default') or a user's catalog file."""
    if name_or_path == DEFAULT_CATALOG:
        ref = resources.files("planner") / "catalog" / "default.toml"
        text = ref.read_text(encoding="utf-8")
        return validate_data(Catalog, tomllib.loads(text), text=text, source="default catalog")
    path = Path(name_or_path)
    if not path.is_absolute() and relative_to is not None:
        path = relative_to / path
    data, text = _read_toml(path)
    return validate_data(Catalog, data, text=text, source=str(path))


def parse_override(item: str) -> tuple[str, Any]:
    """Parse a ``path=value`` override; the value is read as TOML, else taken as a string."""
    if "=" not in item:
        raise InputError(f"--set {item!r}: expected path=value, for example cluster.gpus=65536")
    path, raw = (s.strip() for s in item.split("=", 1))
    if not path:
        raise InputError(f"--set {item!r}: the field path is empty")
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return path, value


def apply_changes(inst: Instance, changes: dict[str, Any]) -> Instance:
    """A new instance with dotted paths replaced, validated as a whole."""
    data = inst.model_dump(mode="python", exclude_unset=True)
    for dotted, value in changes.items():
        parts = dotted.split(".")
        node = data
        for i, part in enumerate(parts[:-1]):
            child = node.get(part)
            if child is None:
                child = node[part] = {}
            if not isinstance(child, dict):
                raise InputError(
                    f"{'.'.join(parts[: i + 1])} is a value, not a table: cannot set {dotted}"
                )
            node = child
        node[parts[-1]] = value
    return validate_data(Instance, data, source="changes " + ", ".join(changes))


def instance_dir(path: str | Path) -> Path:
    """Folder of an instance file, against which a relative catalog path is read."""
    return Path(path).resolve().parent

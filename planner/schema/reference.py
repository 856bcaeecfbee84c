"""The instance-file reference and the index of example instances, as markdown pages.

``docs/instance-reference.md`` lists every field of an instance file, table by table: its type,
default, bounds and meaning. It is made from the shipped JSON Schema (``planner.schema.files``),
which is the pydantic models' own. ``docs/examples.md`` indexes the example instances by what
they plan. ``python -m planner.schema.reference`` writes both pages again, and
``tests/test_docs.py`` fails whenever either page differs from what this module makes.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.schema.files import shipped

#: Where the pages go, from the project's root.
REFERENCE_PAGE = Path("docs") / "instance-reference.md"
EXAMPLES_PAGE = Path("docs") / "examples.md"
#: Where the example instances are, from the project's root.
INSTANCES = Path("instances")

#: Bounds of a field, as the JSON Schema words them, and how the reference shows them.
BOUNDS = (
    ("minimum", ">= {}"),
    ("exclusiveMinimum", "> {}"),
    ("maximum", "<= {}"),
    ("exclusiveMaximum", "< {}"),
    ("minLength", "at least {} characters"),
    ("maxLength", "at most {} characters"),
    ("minItems", "at least {} item(s)"),
    ("maxItems", "at most {} item(s)"),
    ("pattern", "matches `{}`"),
)


@dataclass(frozen=True)
class Table:
    """One table of the file: its dotted path, what it is, and its schema object."""

    path: str
    description: str
    schema: dict[str, Any]


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """A schema node with a top-level ``$ref`` replaced by what it names."""
    ref = node.get("$ref")
    return defs[ref.rsplit("/", 1)[1]] if isinstance(ref, str) else node


def _object_of(node: dict[str, Any], defs: dict[str, Any]) -> tuple[dict[str, Any], str] | None:
    """The object a field holds, and the suffix of its path ("" or "[]").

    The field itself, an optional one, or an array's items; None for a scalar or a list of
    scalars.
    """
    node = _resolve(node, defs)
    if node.get("type") == "object" and "properties" in node:
        return node, ""
    if node.get("type") == "array" and isinstance(node.get("items"), dict):
        inner = _object_of(node["items"], defs)
        return (inner[0], "[]") if inner else None
    options = [o for o in node.get("anyOf", []) if o.get("type") != "null"]
    if len(options) == 1:
        return _object_of(options[0], defs)
    return None


def _type(node: dict[str, Any], defs: dict[str, Any]) -> str:
    """A field's type in a few words."""
    if "$ref" in node:
        target = _resolve(node, defs)
        if "enum" in target:
            return " \\| ".join(f'`"{v}"`' for v in target["enum"])
        return "table"
    if "const" in node:
        return f"`{json.dumps(node['const'])}`"
    if "enum" in node:
        return " \\| ".join(f"`{json.dumps(v)}`" for v in node["enum"])
    if "anyOf" in node:  # an optional field's null is its absence (default "absent")
        kinds = [_type(o, defs) for o in node["anyOf"] if o.get("type") != "null"]
        return " or ".join(dict.fromkeys(kinds)) or "any"
    kind = node.get("type")
    if kind == "array":
        items = node.get("items")
        return f"list of {_type(items, defs)}" if isinstance(items, dict) else "list"
    if kind == "object":
        extra = node.get("additionalProperties")
        return f"table of {_type(extra, defs)}" if isinstance(extra, dict) else "table"
    return {"integer": "integer", "number": "number", "string": "string", "boolean": "boolean"}.get(
        str(kind), "any"
    )


def _bounds(node: dict[str, Any], defs: dict[str, Any]) -> str:
    node = _resolve(node, defs)
    for option in node.get("anyOf", []):
        if option.get("type") != "null":
            node = {**option, **{k: v for k, v in node.items() if k != "anyOf"}}
            break
    parts = [text.format(node[key]) for key, text in BOUNDS if key in node]
    items = node.get("items")
    if node.get("type") == "array" and isinstance(items, dict):
        inner = [text.format(items[key]) for key, text in BOUNDS if key in items]
        if inner:
            parts.append("each " + ", ".join(inner))
    return ", ".join(parts)


def _cell(text: str) -> str:
    """Text for one table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def _default(field: dict[str, Any], required: bool) -> str:
    if required:
        return "required"
    if "default" not in field:
        return ""
    if field["default"] is None:
        return "absent"
    return f"`{json.dumps(field['default'])}`"


def tables(schema: dict[str, Any]) -> Iterator[Table]:
    """Every table of the instance file, the top one first, each before the tables inside it."""
    defs = schema.get("$defs", {})
    pending = [Table("", schema.get("description", ""), schema)]
    while pending:
        table = pending.pop(0)
        yield table
        inner = []
        for name, field in table.schema.get("properties", {}).items():
            held = _object_of(field, defs)
            if held is None:
                continue
            obj, suffix = held
            path = f"{table.path}.{name}" if table.path else name
            description = field.get("description") or obj.get("description", "")
            inner.append(Table(path + suffix, description, obj))
        pending[0:0] = inner


def instance_reference(schema: dict[str, Any] | None = None) -> str:
    """The reference page of the instance file, from its JSON Schema (the shipped one)."""
    schema = schema if schema is not None else json.loads(shipped("instance"))
    defs = schema.get("$defs", {})
    out = [
        "# Instance file reference",
        "",
        "Every field of an instance file, table by table, made from the schema the planner "
        "validates instances against (`fabric-planner schema` prints it as JSON Schema). What "
        "the fields are for, with examples, is in [instance.md](instance.md). Generated by "
        "`python -m planner.schema.reference`; `tests/test_docs.py` checks it matches the schema.",
        "",
        "An unknown field is an error, as is a value out of its bounds.",
    ]
    for table in tables(schema):
        title = f"`[{table.path}]`" if table.path else "The top level"
        out += ["", f"## {title}", ""]
        if table.description:
            out += [" ".join(table.description.split()), ""]
        out += ["| field | type | default | bounds | meaning |", "|---|---|---|---|---|"]
        required = set(table.schema.get("required", []))
        for name, field in table.schema.get("properties", {}).items():
            meaning = field.get("description") or _resolve(field, defs).get("description", "")
            row = (
                f"`{name}`",
                _type(field, defs),
                _default(field, name in required),
                _bounds(field, defs),
                meaning,
            )
            out.append("| " + " | ".join(_cell(c) for c in row) + " |")
    return "\n".join(out) + "\n"


def _first_sentence(text: str) -> str:
    flat = " ".join(text.split())
    end = flat.find(". ")
    return flat if end < 0 else flat[: end + 1]


def examples_index(folder: Path = INSTANCES) -> str:
    """The index page of the example instances: name, GPUs, families searched, what it asks."""
    rows = []
    for path in sorted(folder.glob("*.toml")):
        data = tomllib.loads(path.read_text(encoding="utf-8"))
        cluster = data.get("cluster", {})
        families = data.get("search", {}).get("families")
        rows.append(
            (
                f"[`{path.stem}`](../instances/{path.name})",
                f"{cluster.get('gpus', 0):,}",
                ", ".join(families) if families else "all",
                "yes" if "workload" in data else "",
                _first_sentence(str(data.get("description", ""))),
            )
        )
    out = [
        "# Example instances",
        "",
        "Every instance in `instances/`, with what it plans. Run one with "
        "`uv run fabric-planner solve instances/<name>.toml`. Generated by "
        "`python -m planner.schema.reference`; `tests/test_docs.py` checks it matches the files.",
        "",
        "| instance | GPUs | families searched | workload | what it asks |",
        "|---|---:|---|---|---|",
    ]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def main() -> None:
    """Write both pages again (run from the project's root)."""
    for page, text in ((REFERENCE_PAGE, instance_reference()), (EXAMPLES_PAGE, examples_index())):
        page.write_text(text, encoding="utf-8")
        print(f"wrote {page}")


if __name__ == "__main__":
    main()

"""The JSON Schemas of the instance and catalog files, shipped beside the models they come from.

``fabric-planner schema`` prints a file of this folder instead of building the pydantic models
(they take most of a second to build; the file is read in a millisecond). The files are the
models' own ``model_json_schema()``: ``python -m planner.schema.files`` writes them again, and
tests/schema/test_schema_files.py fails whenever one differs from what its model generates.
"""

from __future__ import annotations

import json
from importlib import resources

#: The schema files, by what they describe (``schema`` and ``schema --catalog``).
SCHEMA_FILES = {"instance": "instance.schema.json", "catalog": "catalog.schema.json"}


def shipped(kind: str) -> str:
    """The shipped schema of ``kind`` ("instance" or "catalog"), as ``schema`` prints it."""
    # Read through the top package: importing planner.schema would build the models.
    return resources.files("planner").joinpath("schema", SCHEMA_FILES[kind]).read_text("utf-8")


def generated(kind: str) -> str:
    """The schema of ``kind`` as its pydantic model generates it now (2-space JSON, no newline)."""
    from planner.schema.catalog import Catalog
    from planner.schema.instance import Instance

    model = Catalog if kind == "catalog" else Instance
    return json.dumps(model.model_json_schema(), indent=2)


def main() -> None:
    """Write every schema file again from its model."""
    folder = resources.files("planner").joinpath("schema")
    for kind, name in SCHEMA_FILES.items():
        path = folder.joinpath(name)
        with resources.as_file(path) as target:
            target.write_text(generated(kind), encoding="utf-8")
        print(f"wrote {name}")


if __name__ == "__main__":
    main()

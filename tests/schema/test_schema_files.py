"""The shipped JSON Schemas are the models' own: ``schema`` prints them without building the models."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.schema.files import SCHEMA_FILES, generated, shipped


@pytest.mark.parametrize("kind", sorted(SCHEMA_FILES))
def test_the_shipped_schema_is_what_the_model_generates(kind: str) -> None:
    """Regenerate with ``uv run python -m planner.schema.files`` when a model changes."""
    assert shipped(kind) == generated(kind)


@pytest.mark.parametrize(("args", "kind"), [([], "instance"), (["--catalog"], "catalog")])
def test_schema_prints_the_shipped_schema(args: list[str], kind: str) -> None:
    out = CliRunner().invoke(app, ["schema", *args])
    assert out.exit_code == 0
    assert json.loads(out.stdout) == json.loads(generated(kind))

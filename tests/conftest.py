"""Shared fixtures: the repository root and a helper that writes an instance file."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# The test modules and the package are compiled once and their bytecode kept (in the git-ignored
# __pycache__ folders) even where PYTHONDONTWRITEBYTECODE is set: otherwise each test worker
# compiles all of them again on every run, about 6 s of CPU a worker (half of collecting).
sys.dont_write_bytecode = False


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository root (where instances/ and planner/ live)."""
    return REPO_ROOT


@pytest.fixture
def write_instance(tmp_path: Path) -> Callable[..., Path]:
    """Write TOML text (dedented) to ``tmp_path/<name>.toml`` and return its path."""

    def write(text: str, name: str = "instance") -> Path:
        path = tmp_path / f"{name}.toml"
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write

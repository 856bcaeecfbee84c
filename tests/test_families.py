"""The family registry (issue 10): one plug-in per family name of the schema."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from planner.design_file import ROLE_PATTERN
from planner.families import FAMILIES, family_of
from planner.schema.instance import FAMILIES as SCHEMA_FAMILIES
from tests.test_layers import loaded_after_import


def test_registry_has_every_schema_family() -> None:
    assert set(FAMILIES) == set(SCHEMA_FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_family_is_registered_under_its_name(name: str) -> None:
    assert family_of(name).name == name


def test_unknown_family_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="unknown fabric family 'torus2'"):
        family_of("torus2")


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("tiers", [1, 2, 3])
def test_roles_are_distinct_names_a_design_file_accepts(name: str, tiers: int) -> None:
    roles = family_of(name).roles(tiers)
    assert roles
    assert len(set(roles)) == len(roles)
    assert "gpu" not in roles  # the endpoints' end of a link class
    assert all(re.fullmatch(ROLE_PATTERN, r) for r in roles)


def test_registry_loads_no_solver() -> None:
    assert loaded_after_import("planner.families") == []


@pytest.mark.slow
def test_schema_does_not_import_the_families() -> None:
    code = "import sys, planner.schema.instance; print('planner.families' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"

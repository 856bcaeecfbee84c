"""The family registry (issue 10): one plug-in per family name of the schema."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from planner.api import load_instance
from planner.design_file import ROLE_PATTERN
from planner.errors import InputError
from planner.families import FAMILIES, family_of
from tests.test_layers import loaded_after_import


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_an_instance_may_name_every_registered_family(name: str, tmp_path: Path) -> None:
    """The schema's family list is the registry's: it is handed in, the schema lists none."""
    path = tmp_path / "x.toml"
    path.write_text(f'name = "x"\n[cluster]\ngpus = 64\n[search]\nfamilies = ["{name}"]\n')
    assert load_instance(path).search.families == [name]


def test_a_family_the_registry_lacks_is_refused_with_the_registry_names(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n[cluster]\ngpus = 64\n[search]\nfamilies = ["torus2"]\n')
    with pytest.raises(InputError) as err:
        load_instance(path)
    message = str(err.value)
    assert "search.families.0" in message
    assert "line 5" in message
    assert all(repr(name) in message for name in FAMILIES)


def test_a_change_is_checked_against_the_same_family_names(tmp_path: Path) -> None:
    path = tmp_path / "x.toml"
    path.write_text('name = "x"\n[cluster]\ngpus = 64\n')
    with pytest.raises(InputError, match="search.families.0"):
        load_instance(path).with_changes({"search.families": ["torus2"]})


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

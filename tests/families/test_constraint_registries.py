"""Every constraint registry has a binding test with a case for each of its names (Calliope style).

A registry is a module-level ``CONSTRAINTS`` dict (family name -> the function that adds or
checks the family) in a module under ``models/`` or ``planner/families/``. They are found by
reading the sources, so a new model's registry is checked here without editing this file.

A binding test is a module ``tests/**/test_*constraints_bind.py``. It declares what it covers:

    COVERS = ((<a CONSTRAINTS dict>, <its cases, keyed by family name>), ...)

and its own tests show that each case binds. This test checks the declarations: every registry
is covered by some binding test, and every name of it has a case there (cases for families built
outside the registry, such as the Clos model's budgets, are allowed).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Collection, Mapping
from functools import cache
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[2]
#: Where model modules live.
MODEL_ROOTS = ("models", "planner/families")
#: The binding tests.
BINDING_TESTS = "test_*constraints_bind.py"
#: The registries there were when this test was written: discovery must find at least these.
KNOWN = frozenset(
    {
        "models.clos_sizing.constraints",
        "models.rail_sizing",
        "models.ocs_assignment.model",
        "models.ocs_topology.model",
        "models.ocs_te.lp",
        "models.dragonfly.model",
        "models.torus_fabric",
    }
)


def module_name(path: Path) -> str:
    """The dotted name of a module of the repository."""
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def defines_registry(source: str) -> bool:
    """Whether the module assigns ``CONSTRAINTS`` at its top level (a re-export does not)."""
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign):
            targets = [node.target]
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "CONSTRAINTS" for t in targets):
            return True
    return False


@cache
def registry_modules() -> tuple[str, ...]:
    """The model modules that define a registry."""
    return tuple(
        module_name(path)
        for root in MODEL_ROOTS
        for path in sorted((REPO / root).rglob("*.py"))
        if defines_registry(path.read_text(encoding="utf-8"))
    )


@cache
def binding_modules() -> dict[str, ModuleType]:
    """Every binding test module, imported."""
    return {
        module_name(path): importlib.import_module(module_name(path))
        for path in sorted((REPO / "tests").rglob(BINDING_TESTS))
    }


def declared(modules: Mapping[str, object]) -> tuple[list[str], list[tuple[object, set[str]]]]:
    """The binding tests' declarations: (modules that declare nothing, (registry, cases) pairs)."""
    gaps: list[str] = []
    covered: list[tuple[object, set[str]]] = []
    for name, module in modules.items():
        covers = getattr(module, "COVERS", None)
        if not covers:
            gaps.append(f"{name}: declares no COVERS")
            continue
        covered.extend((registry, set(cases)) for registry, cases in covers)
    return gaps, covered


def registry_gaps(name: str, registry: object, covered: list[tuple[object, set[str]]]) -> list[str]:
    """What the binding tests leave uncovered of one registry (covered by identity: the dict)."""
    if not isinstance(registry, Mapping):
        return [f"{name}.CONSTRAINTS: not a dict of family name -> function"]
    cases = [c for r, c in covered if r is registry]
    if not cases:
        return [f"{name}.CONSTRAINTS: no binding test covers it"]
    missing = set(registry) - set().union(*cases)
    return [f"{name}.CONSTRAINTS: no case for {sorted(missing)}"] if missing else []


def coverage_gaps(registries: Mapping[str, object], modules: Mapping[str, object]) -> list[str]:
    """What the binding tests leave uncovered, in words; empty when nothing is.

    ``registries``: module name -> its ``CONSTRAINTS``; ``modules``: binding test name -> the
    module (anything with ``COVERS``).
    """
    gaps, covered = declared(modules)
    if any(not any(r is reg for reg in registries.values()) for r, _ in covered):
        gaps.append("a binding test covers a registry that no model module defines")
    for name, registry in registries.items():
        gaps.extend(registry_gaps(name, registry, covered))
    return gaps


def all_registries() -> dict[str, object]:
    return {m: importlib.import_module(m).CONSTRAINTS for m in registry_modules()}


def test_discovery_finds_every_known_registry() -> None:
    assert set(registry_modules()) >= KNOWN, sorted(KNOWN - set(registry_modules()))


def test_every_binding_test_is_found() -> None:
    assert len(binding_modules()) >= 5, sorted(binding_modules())


@pytest.mark.parametrize("module", registry_modules())
def test_the_registry_has_a_case_for_every_name(module: str) -> None:
    registry = importlib.import_module(module).CONSTRAINTS
    assert registry, f"{module}.CONSTRAINTS is empty"
    _, covered = declared(binding_modules())
    assert registry_gaps(module, registry, covered) == []


def test_every_binding_test_declares_a_registry_it_covers() -> None:
    assert coverage_gaps(all_registries(), binding_modules()) == []


# ---- the check itself, on planted registries -----------------------------------------------------
def fake_family() -> None:
    """A family of no model."""


FAKE: dict[str, object] = {"fake.one": fake_family, "fake.two": fake_family}


def covering(registry: object, cases: Collection[str]) -> SimpleNamespace:
    return SimpleNamespace(COVERS=((registry, dict.fromkeys(cases)),))


def test_a_name_without_a_case_is_reported() -> None:
    gaps = coverage_gaps({"fake": FAKE}, {"fake_bind": covering(FAKE, ["fake.one"])})
    assert gaps == ["fake.CONSTRAINTS: no case for ['fake.two']"]


def test_a_registry_without_a_binding_test_is_reported() -> None:
    other: dict[str, object] = {"other.one": fake_family}
    gaps = coverage_gaps(
        {"fake": FAKE, "other": other}, {"fake_bind": covering(FAKE, ["fake.one", "fake.two"])}
    )
    assert gaps == ["other.CONSTRAINTS: no binding test covers it"]


def test_an_equal_copy_does_not_cover_a_registry() -> None:
    gaps = coverage_gaps({"fake": FAKE}, {"fake_bind": covering(dict(FAKE), FAKE)})
    assert gaps == [
        "a binding test covers a registry that no model module defines",
        "fake.CONSTRAINTS: no binding test covers it",
    ]


def test_a_binding_test_without_covers_is_reported() -> None:
    gaps = coverage_gaps({"fake": FAKE}, {"fake_bind": SimpleNamespace()})
    assert gaps == ["fake_bind: declares no COVERS", "fake.CONSTRAINTS: no binding test covers it"]


def test_a_registry_that_is_not_a_dict_is_reported() -> None:
    families = (fake_family,)
    gaps = coverage_gaps({"fake": families}, {"fake_bind": covering(families, [])})
    assert gaps == ["fake.CONSTRAINTS: not a dict of family name -> function"]


@pytest.mark.parametrize(
    ("source", "defines"),
    [
        ("CONSTRAINTS = {}", True),
        ("CONSTRAINTS: dict[str, int] = {}", True),
        ("from models.x import CONSTRAINTS", False),
        ("def f():\n    CONSTRAINTS = {}", False),
        ("OTHER = CONSTRAINTS = {}", True),
    ],
)
def test_a_registry_is_found_by_its_assignment(source: str, defines: bool) -> None:
    assert defines_registry(source) is defines

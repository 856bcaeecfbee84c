"""Two contracts that keep a family in one place (issue 34), checked statically.

* **No family's geometry in the simulator.** ``planner/sim/`` builds no family's plane, routes
  by no family's rule and bounds no family's structure: no name it defines or uses (function,
  class, variable, argument, attribute, imported name, short string constant) carries a family's
  name or a word of its geometry (``FAMILY_WORDS``). A family hands the simulator a plane that
  carries its own routing strategy and bound (``Fabric.strategy``, ``Fabric.bound``).
* **No registration by import.** A registry is an explicit table (``FAMILIES``, a model's
  ``CONSTRAINTS``): no module fills another module's registry as a side effect of being
  imported. At module level, a call or a decorator whose callee is a name taken from another
  module and reads ``register...``, or an item assignment or ``update``/``setdefault`` on a
  name imported from another module, is refused. A module filling its own table with its own
  decorator (``planner.sim.traffic_kinds.register_traffic``) is explicit and allowed.

Each contract has a planted case that must fail it, so neither can pass by reading nothing.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Words of a family's name or geometry that no name under ``planner/sim/`` may contain.
FAMILY_WORDS = (
    "clos",
    "torus",
    "dragonfly",
    "rail_only",
    "rail_optimized",
    "ocs",
    "wcmp",
    "ugal",
    "valiant",
    "dimension_order",
)
#: Whole-word matches only at the word's edges (``tocsr`` and ``isclose`` are not ``ocs``/``clos``).
FAMILY_PATTERN = re.compile(
    r"(?:^|_)(?:" + "|".join(FAMILY_WORDS) + r")(?:$|_|\d)", flags=re.IGNORECASE
)
#: A string constant this short and without spaces is a name (a key, a kind); prose is not.
MAX_NAME_CONSTANT = 40


def _names(node: ast.AST) -> list[str]:
    """The names a node defines or uses (docstrings and prose strings excluded)."""
    match node:
        case ast.FunctionDef() | ast.ClassDef() | ast.AsyncFunctionDef():
            return [node.name]
        case ast.Name():
            return [node.id]
        case ast.Attribute():
            return [node.attr]
        case ast.arg():
            return [node.arg]
        case ast.alias():
            return [node.name, *(node.name.split("."))]
        case ast.keyword() if node.arg:
            return [node.arg]
        case ast.ImportFrom() if node.module:
            return node.module.split(".")
        case ast.Constant() if isinstance(node.value, str):
            text = node.value
            return [text] if len(text) <= MAX_NAME_CONSTANT and " " not in text else []
    return []


def family_names_in(folder: Path) -> list[str]:
    """``file line: name`` of every name under ``folder`` that carries a family's word."""
    out = []
    for path in sorted(folder.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            for name in _names(node):
                if FAMILY_PATTERN.search(name):
                    line = getattr(node, "lineno", "?")
                    out.append(f"{path.relative_to(folder.parent)} line {line}: {name}")
    return out


def test_the_simulator_names_no_family() -> None:
    assert family_names_in(ROOT / "planner" / "sim") == []


@pytest.mark.parametrize(
    "planted",
    [
        "def torus_fabric(dims):\n    return dims\n",
        "from planner.families.clos.fabric import clos_fabric as build\n",
        "def plane(fabric):\n    return fabric.rail_only\n",
        "STRATEGY = 'dragonfly_valiant'\n",
        "def route(strategy='dimension_order'):\n    return strategy\n",
        "def bound(wcmp2):\n    return wcmp2\n",
    ],
)
def test_the_geometry_contract_catches_a_planted_family(planted: str, tmp_path: Path) -> None:
    sim = tmp_path / "sim"
    sim.mkdir()
    (sim / "fine.py").write_text(
        '"""Prose may say torus, Clos or dragonfly."""\n\nfrom scipy.sparse import csr_matrix\n\n'
        "def tocsr(m):\n    return csr_matrix(m).tocsr(), isclose\n"
    )
    assert family_names_in(sim) == []
    (sim / "planted.py").write_text(planted)
    assert family_names_in(sim) != []


# ---- no registration by import -------------------------------------------------------------
MUTATORS = ("update", "setdefault")


def _imported(tree: ast.Module) -> set[str]:
    """Names a module binds by importing them from another module."""
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            out |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.Import):
            out |= {(a.asname or a.name).split(".")[0] for a in node.names}
    return out


def _root_name(node: ast.AST) -> str | None:
    """``x`` of ``x``, ``x.y``, ``x[k]``, ``x(...)``: the name an expression starts from."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else None


def _callee(node: ast.AST) -> str:
    """The last name of a call's or decorator's callee: ``register`` of ``reg.register(...)``."""
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def registrations_by_import(
    root: Path, packages: tuple[str, ...] = ("planner", "models")
) -> list[str]:
    """Module-level statements that fill another module's registry when the module is imported."""
    out = []
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            imported = _imported(tree)
            where = path.relative_to(root)
            for node in tree.body:
                decorators = (
                    node.decorator_list
                    if isinstance(node, ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef)
                    else []
                )
                for d in decorators:
                    if "register" in _callee(d).lower() and _root_name(d) in imported:
                        out.append(f"{where} line {d.lineno}: @{ast.unparse(d)}")
                if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
                    call = node.value
                    name = _callee(call)
                    if _root_name(call) in imported and (
                        "register" in name.lower() or name in MUTATORS
                    ):
                        out.append(f"{where} line {node.lineno}: {ast.unparse(node)[:80]}")
                if isinstance(node, ast.Assign | ast.AugAssign):
                    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                    for t in targets:
                        if isinstance(t, ast.Subscript) and _root_name(t) in imported:
                            out.append(f"{where} line {node.lineno}: {ast.unparse(node)[:80]}")
    return out


def test_no_module_registers_anything_by_being_imported() -> None:
    assert registrations_by_import(ROOT) == []


@pytest.mark.parametrize(
    "planted",
    [
        "from tiny.registry import register_strategy\n\n@register_strategy('x')\ndef x():\n    pass\n",
        "from tiny import registry\n\n@registry.register('x')\nclass X:\n    pass\n",
        "from tiny.registry import TABLE\n\nTABLE['x'] = 1\n",
        "from tiny.registry import TABLE\n\nTABLE.update(x=1)\n",
        "from tiny.registry import register\n\nregister('x', 1)\n",
    ],
)
def test_the_registration_contract_catches_a_planted_registration(
    planted: str, tmp_path: Path
) -> None:
    package = tmp_path / "tiny"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "registry.py").write_text(
        "TABLE = {}\n\ndef register(name, value=None):\n    TABLE[name] = value\n"
        "    return lambda f: f\n\n@register\ndef own():\n    pass\n"
    )
    assert registrations_by_import(tmp_path, ("tiny",)) == []
    (package / "plugin.py").write_text(planted)
    assert registrations_by_import(tmp_path, ("tiny",)) != []

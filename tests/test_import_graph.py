"""The layers, checked statically on the whole import graph (issue 23: a house without circles).

Every import of every module of ``planner`` and ``models`` counts:

* those inside functions: an import deferred to call time is still a dependency, and hiding one
  in a function does not break a circle;
* those under ``if TYPE_CHECKING:``: they never run, but a type a module names is part of what
  its code means, so a type-only import is a dependency like any other (a lower layer names a
  higher layer's type only through a protocol defined low);
* those naming the module by a string: ``importlib.import_module("a.b")``, ``import_module``,
  ``__import__``, with a string constant, or with an entry of a module-level table of string
  constants (``import_module(PARTS[part])`` imports every module ``PARTS`` names). A module
  chosen by any other data is an import the graph cannot see: it fails the contract, naming the
  file and the line, unless it is one of the few ``DATA_NAMED`` exceptions, each with its reason.

The contracts:

* no circle: the graph has no strongly connected component of two modules or more;
* the family registry (``planner.families`` and everything in it) is imported only from above
  it: the API, the studies and the CLI; below, a family is handed in;
* every import runs down the layers of ``LAYERS``, or is one of the few ``UPWARD`` exceptions,
  each with its reason;
* no module is imported by a name the graph cannot read (``imports_named_by_data``).
"""

from __future__ import annotations

import ast
import shutil
from collections.abc import Callable
from pathlib import Path

import networkx as nx
import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("planner", "models")

#: The layers, lowest first: a module may import its own layer's and lower layers' modules.
#: A module belongs to the first layer with a prefix that names it (a prefix is a module or a
#: package, matched on whole dotted names).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "base",
        (
            "models.status",
            "planner.defaults",
            "planner.errors",
            "planner.deadline",
            "planner.quiet",
            "planner.interrupt",
            "planner.output",
            "planner.units",
            "planner.extras",
        ),
    ),
    ("schema", ("planner.schema", "planner.loading", "planner.layout")),
    ("models", ("models",)),
    (
        "design",
        (
            "planner.design",
            "planner.design_links",
            "planner.wiring",
            "planner.violation",
            "planner.family_roles",
            "planner.validation",
            "planner.design_file",
            "planner.workload",
            "planner.reliability",
        ),
    ),
    (
        "topology",
        ("planner.sizing", "planner.optics"),
    ),
    ("sim", ("planner.sim",)),
    (
        "analysis",
        (
            "planner.alternatives",
            "planner.bandwidth_loop",
            "planner.idle_pricing",
            "planner.checks",
        ),
    ),
    ("families", ("planner.families",)),
    (
        "report",
        (
            "planner.catalog_tables",
            "planner.report",
        ),
    ),
    (
        "api",
        (
            "planner.solver_parts",
            "planner.planning",
            "planner.comparisons",
            "planner.life",
            "planner.mix",
            "planner.api",
        ),
    ),
    ("study", ("planner.study",)),
    ("cli", ("planner.cli", "planner.__main__", "planner.examples", "planner")),
)

#: Imports that run up the layers, each with its reason: (importer, imported) -> why.
UPWARD: dict[tuple[str, str], str] = {}

#: The family registry, and what may import it: itself and the layers above it.
REGISTRY = "planner.families"
REGISTRY_ABOVE = (
    "planner.families",
    "planner.solver_parts",
    "planner.planning",
    "planner.comparisons",
    "planner.life",
    "planner.mix",
    "planner.api",
    "planner.study",
    "planner.cli",
)
#: The package's own ``__init__`` (it imports nothing of the registry; listed as the top).
REGISTRY_TOP = ("planner",)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """Index in ``LAYERS`` of the module's layer (the most specific prefix wins)."""
    best = max(
        (
            (len(prefix), i)
            for i, (_, prefixes) in enumerate(LAYERS)
            for prefix in prefixes
            if _within(module, prefix)
        ),
        default=None,
    )
    if best is None:
        raise AssertionError(f"{module} is in no layer: add it to LAYERS")
    return best[1]


def _modules(root: Path, packages: tuple[str, ...] = PACKAGES) -> dict[str, Path]:
    out = {}
    for package in packages:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _imported_names(node: ast.AST, package: str) -> list[str]:
    """Dotted names an import statement may load (``from a import b``: ``a``, then ``a.b``)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = package.split(".")[: len(package.split(".")) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        return [base, *(f"{base}.{alias.name}" for alias in node.names)]
    return []


#: The calls that import the module their first argument names (``importlib.import_module``,
#: ``import_module``, ``__import__``).
IMPORT_CALLS = ("import_module", "__import__")


def _import_call_argument(node: ast.AST) -> ast.expr | None:
    """The name argument of a call importing a module by name, None for any other node."""
    if not isinstance(node, ast.Call):
        return None
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    if called not in IMPORT_CALLS:
        return None
    if node.args:
        return node.args[0]
    return next((k.value for k in node.keywords if k.arg == "name"), None)


def _constant_tables(tree: ast.Module) -> dict[str, list[str]]:
    """Module-level names bound to a literal of string constants: a dict's values, a tuple's items.

    A module chosen from such a table (``importlib.import_module(PARTS[part])``) is one of its
    strings: each counts as imported.
    """
    out = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
            target, value = stmt.targets[0], stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            target, value = stmt.target, stmt.value
        else:
            continue
        items = value.values if isinstance(value, ast.Dict) else getattr(value, "elts", None)
        if isinstance(target, ast.Name) and items is not None:
            strings = [i.value for i in items if isinstance(i, ast.Constant)]
            if strings and len(strings) == len(items) and all(isinstance(s, str) for s in strings):
                out[target.id] = strings
    return out


def _named_by_string(argument: ast.expr, tables: dict[str, list[str]]) -> list[str] | None:
    """The modules an import call's name argument may name; None when data chooses it."""
    if isinstance(argument, ast.Constant) and isinstance(argument.value, str):
        return [argument.value]
    if isinstance(argument, ast.Subscript) and isinstance(argument.value, ast.Name):
        return tables.get(argument.value.id)
    return None


#: Imports of a module named by data the graph cannot read, each with its reason:
#: (importer, the name argument as written) -> why it never names a module of the packages.
DATA_NAMED: dict[tuple[str, str], str] = {
    ("planner.extras", "module"): (
        "require_extra imports an optional third-party extra: its name must be a key of EXTRAS "
        "(dask, pandas, pyarrow), looked up before the import"
    ),
}


def _imports(tree: ast.Module, package: str) -> list[tuple[list[str], int, bool]]:
    """Every import of a module's tree, as (dotted names it may load, line, ``from`` import).

    Statements (at the top, in a function, under ``if TYPE_CHECKING:``) and calls naming the
    module by a string constant or by an entry of a module-level table of them.
    """
    tables = _constant_tables(tree)
    out = []
    for node in ast.walk(tree):
        argument = _import_call_argument(node)
        if argument is not None:
            out.append((_named_by_string(argument, tables) or [], node.lineno, False))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names = _imported_names(node, package)
            out.append((names, node.lineno, isinstance(node, ast.ImportFrom)))
    return out


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _package_of(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> nx.DiGraph:
    """Module -> module it imports (at import time, in a function, or for typing), with the line."""
    modules = _modules(root, packages)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for names, line, from_import in _imports(tree, _package_of(module, path)):
            if from_import:
                # ``from a import b``: the submodule a.b when it is one, else the module a.
                names = [n for n in names[1:] if n in modules] or names[:1]
            for name in names:
                target = resolve(name)
                if target is None or target == module:
                    continue
                # Importing a.b.c runs a/__init__ and a/b/__init__ first.
                for parent in _parents(target):
                    if parent in modules and not _within(module, parent):
                        graph.add_edge(module, parent, line=line)
                graph.add_edge(module, target, line=line)
    return graph


def imports_named_by_data(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[str]:
    """Calls importing a module whose name data chooses, not one of the ``DATA_NAMED`` exceptions.

    The graph cannot see what such a call loads: name the module with a string constant, or
    choose it from a module-level table of them.
    """
    out = []
    for module, path in _modules(root, packages).items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        tables = _constant_tables(tree)
        for node in ast.walk(tree):
            argument = _import_call_argument(node)
            if argument is None or _named_by_string(argument, tables) is not None:
                continue
            if (module, ast.unparse(argument)) not in DATA_NAMED:
                out.append(f"{path.relative_to(root)} line {node.lineno}: {ast.unparse(node)}")
    return out


def _where(graph: nx.DiGraph, a: str, b: str) -> str:
    return f"{a} -> {b} (line {graph.edges[a, b]['line']})"


def circles(graph: nx.DiGraph) -> list[str]:
    """Every circle of imports, as the imports that make it."""
    return [
        f"{len(c)} modules: " + "; ".join(_where(graph, a, b) for a, b in graph.subgraph(c).edges)
        for c in nx.strongly_connected_components(graph)
        if len(c) > 1
    ]


def registry_imports_from_below(graph: nx.DiGraph) -> list[str]:
    """Imports of the family registry from a module below it."""
    return [
        _where(graph, a, b)
        for a, b in graph.edges
        if _within(b, REGISTRY)
        and a not in REGISTRY_TOP
        and not any(_within(a, above) for above in REGISTRY_ABOVE)
    ]


def upward_imports(graph: nx.DiGraph) -> list[str]:
    """Imports that run up the layers and are not one of the ``UPWARD`` exceptions."""
    return [
        f"{_where(graph, a, b)}: {LAYERS[layer_of(a)][0]} imports {LAYERS[layer_of(b)][0]}"
        for a, b in graph.edges
        if layer_of(b) > layer_of(a) and (a, b) not in UPWARD
    ]


#: Most lines a module of the packages may have: past it, split the module by what it does.
MAX_MODULE_LINES = 800


def long_modules(root: Path = ROOT, packages: tuple[str, ...] = (*PACKAGES, "tests")) -> list[str]:
    """Modules of the packages (the tests too: they are code) longer than ``MAX_MODULE_LINES``."""
    out = []
    for module, path in _modules(root, packages).items():
        lines = len(path.read_text(encoding="utf-8").splitlines())
        if lines > MAX_MODULE_LINES:
            out.append(f"{module}: {lines} lines > {MAX_MODULE_LINES}")
    return out


@pytest.fixture(scope="module")
def graph() -> nx.DiGraph:
    """The import graph of this checkout."""
    return import_graph()


def test_every_module_is_in_a_layer(graph: nx.DiGraph) -> None:
    for module in graph:
        layer_of(module)


def test_the_import_graph_has_no_circle(graph: nx.DiGraph) -> None:
    assert circles(graph) == []


def test_only_the_layers_above_the_families_import_the_registry(graph: nx.DiGraph) -> None:
    assert registry_imports_from_below(graph) == []


def test_every_import_runs_down_the_layers(graph: nx.DiGraph) -> None:
    assert upward_imports(graph) == []


def test_no_module_is_too_long() -> None:
    assert long_modules() == []


@pytest.mark.parametrize("folder", ["planner/sim", "models", "tests/families"])
@pytest.mark.parametrize(
    ("lines", "caught"), [(MAX_MODULE_LINES, False), (MAX_MODULE_LINES + 1, True)]
)
def test_the_length_contract_catches_a_long_module(
    folder: str, lines: int, caught: bool, tmp_path: Path
) -> None:
    """A tree with one module of 800 lines passes; of 801, fails (code or tests)."""
    intruder = tmp_path / folder / "intruder.py"
    intruder.parent.mkdir(parents=True)
    intruder.write_text("x = 1\n" * lines)
    assert any("intruder" in line for line in long_modules(tmp_path)) == caught


def test_every_upward_exception_is_still_needed(graph: nx.DiGraph) -> None:
    assert [pair for pair in UPWARD if not graph.has_edge(*pair)] == []


@pytest.mark.parametrize(
    ("source", "check"),
    [
        ("from planner.families import family_of\n", registry_imports_from_below),
        ("def f():\n    from planner.families import FAMILIES\n", registry_imports_from_below),
        ("def f():\n    import planner.api\n", upward_imports),
        ("from planner.sim.simulate import simulate\n", circles),
    ],
    ids=["registry-at-import", "registry-in-a-function", "upward-in-a-function", "circle"],
)
@pytest.mark.slow
def test_the_contracts_catch_a_module_that_breaks_them(
    source: str, check: Callable[[nx.DiGraph], list[str]], tmp_path: Path
) -> None:
    """A copy of the tree whose simulator gains one module breaking a contract fails it."""
    for package in PACKAGES:
        shutil.copytree(ROOT / package, tmp_path / package)
    assert not any("intruder" in line for line in check(import_graph(tmp_path)))
    intruder = tmp_path / "planner" / "sim" / "intruder.py"
    intruder.write_text(source)
    if check is circles:  # the simulator's driver loads the intruder back: a circle
        driver = tmp_path / "planner" / "sim" / "simulate.py"
        driver.write_text(
            driver.read_text() + "\n\ndef _g() -> None:\n    import planner.sim.intruder\n"
        )
    assert any("intruder" in line for line in check(import_graph(tmp_path)))


def test_no_module_is_imported_by_a_name_the_graph_cannot_read() -> None:
    assert imports_named_by_data() == []


def test_every_data_named_exception_is_still_needed() -> None:
    found = {
        (module, ast.unparse(argument))
        for module, path in _modules(ROOT).items()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (argument := _import_call_argument(node)) is not None
    }
    assert [key for key in DATA_NAMED if key not in found] == []


def _tiny_package(root: Path, a: str, b: str) -> None:
    """A package ``tiny`` of two modules, ``tiny.a`` and ``tiny.b``, with these sources."""
    package = root / "tiny"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text(a)
    (package / "b.py").write_text(b)


#: How ``tiny.b`` imports ``tiny.a`` back, by every means the graph counts.
IMPORTS_BACK = {
    "statement": "from tiny.a import A\n",
    "for-typing-only": (
        "from typing import TYPE_CHECKING\n\nif TYPE_CHECKING:\n    from tiny.a import A\n"
    ),
    "in-a-function": "def f():\n    import tiny.a\n",
    "import_module": "import importlib\n\n\ndef f():\n    importlib.import_module('tiny.a')\n",
    "from-importlib": "from importlib import import_module\n\nA = import_module('tiny.a')\n",
    "__import__": "def f():\n    __import__('tiny.a')\n",
    "from-a-table": (
        "import importlib\n\nPARTS = {'a': 'tiny.a'}\n\n\n"
        "def f(part):\n    importlib.import_module(PARTS[part])\n"
    ),
}


@pytest.mark.parametrize("back", list(IMPORTS_BACK), ids=str)
def test_the_circle_contract_catches_an_import_back_by_any_means(back: str, tmp_path: Path) -> None:
    """``tiny.a`` imports ``tiny.b``, which imports it back: a circle, however it is written."""
    _tiny_package(tmp_path, "from tiny.b import B\n\nA = 1\n", IMPORTS_BACK[back] + "B = 1\n")
    found = circles(import_graph(tmp_path, ("tiny",)))
    assert [("tiny.a -> tiny.b" in c, "tiny.b -> tiny.a" in c) for c in found] == [(True, True)]


def test_the_circle_contract_passes_a_package_without_an_import_back(tmp_path: Path) -> None:
    """The same package, ``tiny.b`` importing nothing back: no circle."""
    _tiny_package(tmp_path, "from tiny.b import B\n\nA = 1\n", "B = 1\n")
    assert circles(import_graph(tmp_path, ("tiny",))) == []


@pytest.mark.parametrize(
    ("call", "caught"),
    [
        ("importlib.import_module('tiny.a')", False),
        ("importlib.import_module(PARTS[name])", False),
        ("importlib.import_module(name)", True),
        ("importlib.import_module(f'tiny.{name}')", True),
        ("importlib.import_module(OTHER[name])", True),
        ("__import__(name)", True),
    ],
    ids=["constant", "from-a-table", "parameter", "f-string", "not-a-table", "__import__"],
)
def test_the_contracts_catch_a_module_named_by_data(
    call: str, caught: bool, tmp_path: Path
) -> None:
    """A module chosen by data fails, named by file and line; one named by strings passes."""
    source = (
        "import importlib\n\nPARTS = {'a': 'tiny.a'}\n\n\n"
        f"def f(name, OTHER):\n    return {call}\n"
    )
    _tiny_package(tmp_path, "A = 1\n", source)
    expected = [f"{Path('tiny', 'b.py')} line 7: {call}"] if caught else []
    assert imports_named_by_data(tmp_path, ("tiny",)) == expected


# ---- no module outside the families asks which family it holds --------------------------------
def _family_names() -> set[str]:
    from planner.families import FAMILIES

    return set(FAMILIES) | {f.wiring_kind for f in FAMILIES.values()}


def _strings(node: ast.AST) -> list[str]:
    """String constants of an operand, inside a tuple, list or set literal too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return [s for e in node.elts for s in _strings(e)]
    return []


def _names_family(node: ast.AST) -> bool:
    """An operand that is a design's or a structure's family: ``x.family``."""
    return isinstance(node, ast.Attribute) and node.attr == "family"


def family_comparisons(root: Path = ROOT) -> list[str]:
    """Comparisons (==, !=, in, match) of a family name outside ``planner/families/``.

    A family name or a wiring kind as a string constant among the operands, or a design's
    ``.family`` compared with anything: the question only a family may answer about itself.
    """
    names = _family_names()
    out = []
    for module, path in _modules(root).items():
        if _within(module, REGISTRY):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            operands: list[ast.AST] = []
            if isinstance(node, ast.Compare):
                operands = [node.left, *node.comparators]
            elif isinstance(node, ast.match_case) and isinstance(node.pattern, ast.MatchValue):
                operands = [node.pattern.value]
            strings = {s for o in operands for s in _strings(o)}
            if strings & names or (
                isinstance(node, ast.Compare) and any(map(_names_family, operands))
            ):
                out.append(
                    f"{module} line {node.lineno if hasattr(node, 'lineno') else '?'}: {ast.unparse(node)[:80]}"
                )
    return out


def test_no_module_outside_the_families_compares_a_family_name() -> None:
    assert family_comparisons() == []

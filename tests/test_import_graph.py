"""The layers, checked statically on the whole import graph (issue 23: a house without circles).

Every import of every module of ``planner`` and ``models`` counts, those inside functions
included: an import deferred to call time is still a dependency, and hiding one in a function
does not break a circle. Imports under ``if TYPE_CHECKING:`` do not count: they never run, and
they are how a lower layer names a type of a higher one (``planner.family_roles`` names the
``Design`` and the ``Fabric`` its protocols take).

The contracts:

* no circle: the graph has no strongly connected component of two modules or more;
* the family registry (``planner.families`` and everything in it) is imported only from above
  it: the API, the studies and the CLI; below, a family is handed in;
* every import runs down the layers of ``LAYERS``, or is one of the few ``UPWARD`` exceptions,
  each with its reason.
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
        ),
    ),
    ("schema", ("planner.schema", "planner.loading", "planner.layout")),
    ("models", ("models",)),
    (
        "design",
        (
            "planner.design",
            "planner.wiring",
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
            "planner.report_text",
            "planner.report_tables",
            "planner.catalog_tables",
            "planner.report_markdown",
            "planner.report",
            "planner.report_html",
            "planner.pictures",
        ),
    ),
    (
        "api",
        (
            "planner.solver_parts",
            "planner.plan_result",
            "planner.planning",
            "planner.comparisons",
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


def _modules(root: Path) -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            out[".".join(parts)] = path
    return out


def _type_checking_only(tree: ast.AST) -> set[int]:
    """Ids of the nodes under ``if TYPE_CHECKING:`` (never run)."""
    skip: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for stmt in node.body:
                skip.update(id(n) for n in ast.walk(stmt))
    return skip


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


def _parents(module: str) -> list[str]:
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def import_graph(root: Path = ROOT) -> nx.DiGraph:
    """Module -> module it imports (at import time or in a function), with the line."""
    modules = _modules(root)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = nx.DiGraph()
    for module, path in modules.items():
        graph.add_node(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        skip = _type_checking_only(tree)
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if id(node) in skip:
                continue
            names = _imported_names(node, package)
            if isinstance(node, ast.ImportFrom):
                # ``from a import b``: the submodule a.b when it is one, else the module a.
                names = [n for n in names[1:] if n in modules] or names[:1]
            for name in names:
                target = resolve(name)
                if target is None or target == module:
                    continue
                # Importing a.b.c runs a/__init__ and a/b/__init__ first.
                for parent in _parents(target):
                    if parent in modules and not _within(module, parent):
                        graph.add_edge(module, parent, line=node.lineno)
                graph.add_edge(module, target, line=node.lineno)
    return graph


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


def long_modules(root: Path = ROOT) -> list[str]:
    """Modules of the packages longer than ``MAX_MODULE_LINES``."""
    out = []
    for module, path in _modules(root).items():
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


@pytest.mark.parametrize(
    ("lines", "caught"), [(MAX_MODULE_LINES, False), (MAX_MODULE_LINES + 1, True)]
)
def test_the_length_contract_catches_a_long_module(
    lines: int, caught: bool, tmp_path: Path
) -> None:
    """A tree whose simulator holds one module of 800 lines passes; of 801, fails."""
    intruder = tmp_path / "planner" / "sim" / "intruder.py"
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

"""Tori of cubes on arrays: circuits, links, checks and diameters equal the graph-walking forms.

The references below are the forms these functions had before they ran on arrays (a million
chips took minutes and gigabytes that way): per-(g, d, p) circuits, ``chip_graph`` walked chip by
chip, breadth-first search over ``torus_neighbours``. Broken slices (twists the OCS cannot make,
repeated cubes) must be worded the same, in the same order.
"""

from __future__ import annotations

from collections import Counter

import networkx as nx
import pytest

from models import torus_ocs as to
from models.torus_ocs import Circuit, Coord, Slice, Twist, compose_slice, tpu_twists
from planner.families.ocs_torus.family import _eccentricity

SHAPES: list[tuple[int, tuple[int, int, int]]] = [
    (1, (1, 1, 1)),
    (1, (1, 2, 3)),
    (2, (2, 2, 4)),
    (2, (4, 2, 2)),
    (4, (4, 4, 4)),
    (4, (4, 4, 8)),
    (4, (4, 8, 8)),
    (4, (8, 4, 12)),
    (4, (12, 4, 4)),
]
BAD_TWISTS = [
    (Twist("x", "z", 2),),
    (Twist("y", "x", 1),),
    (Twist("z", "y", 4),),
    (Twist("x", "z", 4), Twist("y", "z", 4)),
]


def reference_circuits(sl: Slice) -> frozenset[Circuit]:
    return frozenset(
        Circuit((to.DIMS[d], p), (cube_id, "+"), (sl.placement[to.grid_successor(sl, d, g)], "-"))
        for g, cube_id in sl.placement.items()
        for d in range(3)
        for p in range(sl.cube * sl.cube)
    )


def reference_check(sl: Slice) -> list[str]:
    """``check_torus`` on the chip graph, chip by chip."""
    c = sl.cube
    grid = {
        (x, y, z) for x in range(sl.grid[0]) for y in range(sl.grid[1]) for z in range(sl.grid[2])
    }
    issues: list[str] = []
    if set(sl.placement) != grid:
        issues.append(f"placement does not cover the {sl.grid} cube grid exactly")
    if len(sl.cubes) != len(sl.placement):
        issues.append("a cube stands at two grid positions")
    if issues:
        return issues
    issues.extend(to.check_circuits(reference_circuits(sl), c))
    position = {k: g for g, k in sl.placement.items()}

    def coord(chip: tuple[int, int, int, int]) -> Coord:
        g = position[chip[0]]
        return (c * g[0] + chip[1], c * g[1] + chip[2], c * g[2] + chip[3])

    graph = to.chip_graph(sl)
    for chip in graph.nodes:
        v = coord(chip)
        links = Counter({coord(w): len(keys) for w, keys in graph[chip].items()})
        if chip in graph[chip]:
            links[v] *= 2
        if links.total() != to.TORUS_DEGREE:
            issues.append(f"chip {chip} at {v} has {links.total()} links, not {to.TORUS_DEGREE}")
        expected = Counter(to.torus_neighbours(v, sl.shape_chips, sl.twists))
        if links != expected:
            issues.append(
                f"chip {chip} at {v}: links to {sorted(links.elements())}, "
                f"torus has {sorted(expected.elements())}"
            )
    return issues


def reference_diameter(shape: Coord, twists: tuple[Twist, ...]) -> int:
    if not twists:
        return sum(n // 2 for n in shape)
    seen, frontier, depth = {(0, 0, 0)}, [(0, 0, 0)], 0
    while True:
        nxt = []
        for v in frontier:
            for w in to.torus_neighbours(v, shape, twists):
                if w not in seen:
                    seen.add(w)
                    nxt.append(w)
        if not nxt:
            return depth
        frontier, depth = nxt, depth + 1


def slices() -> list[Slice]:
    out = []
    for cube, shape in SHAPES:
        sl = compose_slice(shape, list(range(50)), cube)
        out.append(sl)
        out.append(to.replace_cube(sl, 0, 99))
        if to.twistable(shape):
            out.append(compose_slice(shape, list(range(50)), cube, twist=tpu_twists(shape)))
    return out


def broken() -> list[Slice]:
    sl = compose_slice((4, 4, 8), [0, 1])
    wide = compose_slice((8, 4, 12), list(range(6)))
    return [
        *(
            Slice(s.shape_chips, s.cube, s.placement, twists=t)
            for s in (sl, wide)
            for t in BAD_TWISTS
        ),
        Slice((4, 4, 8), 4, {(0, 0, 0): 0}),
        Slice((4, 4, 8), 4, {(0, 0, 0): 0, (0, 0, 1): 0}),
        Slice((4, 4, 8), 4, {(0, 0, 0): 0, (0, 0, 2): 1}),
    ]


def label(sl: Slice) -> str:
    twist = ",".join(f"{t.wrapped}{t.shifted}{t.shift_chips}" for t in sl.twists)
    return f"{sl.cube}:{'x'.join(map(str, sl.shape_chips))}:{twist}:{len(sl.placement)}"


@pytest.mark.parametrize("sl", slices() + broken()[:-3], ids=label)
def test_circuit_rows_are_the_circuits_in_order(sl: Slice) -> None:
    rows = to.circuit_rows(sl)
    expected = reference_circuits(sl)
    assert to.slice_circuits(sl) == expected
    assert to.circuits_of_rows(rows) == expected
    assert [tuple(r) for r in rows.tolist()] == [
        (to.DIMS.index(c.device[0]), c.device[1], c.plus[0], c.minus[0]) for c in sorted(expected)
    ]


@pytest.mark.parametrize("sl", slices(), ids=label)
def test_chip_links_are_the_chip_graphs_edges(sl: Slice) -> None:
    a, b = to.chip_links(sl)
    where = to.chip_coords(sl)
    ours = Counter(
        frozenset({tuple(where[u].tolist()), tuple(where[w].tolist())})
        for u, w in zip(a, b, strict=True)
    )
    position = {k: g for g, k in sl.placement.items()}
    c = sl.cube

    def coord(chip: tuple[int, int, int, int]) -> tuple[int, ...]:
        g = position[chip[0]]
        return (c * g[0] + chip[1], c * g[1] + chip[2], c * g[2] + chip[3])

    graph = to.chip_graph(sl)
    theirs = Counter(frozenset({coord(u), coord(w)}) for u, w in graph.edges())
    assert ours == theirs


@pytest.mark.parametrize("sl", slices() + broken(), ids=label)
def test_check_torus_says_what_the_chip_graph_says(sl: Slice) -> None:
    assert to.check_torus(sl) == reference_check(sl)


@pytest.mark.parametrize(
    ("shape", "twists"),
    [
        ((4, 4, 8), tpu_twists((4, 4, 8))),
        ((8, 16, 16), tpu_twists((8, 16, 16))),
        ((12, 12, 24), tpu_twists((12, 12, 24))),
        ((8, 8, 16), (Twist("x", "z", 4),)),
        ((8, 8, 16), (Twist("x", "z", 4), Twist("y", "z", 8))),
        ((16, 32, 32), (Twist("z", "x", 2),)),
        ((6, 10, 4), ()),
    ],
    ids=str,
)
def test_the_diameter_on_arrays_is_the_breadth_first_search(
    shape: Coord, twists: tuple[Twist, ...]
) -> None:
    assert to.torus_diameter(shape, twists) == reference_diameter(shape, twists)


@pytest.mark.parametrize("sl", slices(), ids=label)
def test_the_validators_eccentricity_is_networkx_on_the_chip_graph(sl: Slice) -> None:
    graph = nx.Graph(to.chip_graph(sl))
    first = next(iter(graph.nodes))
    assert _eccentricity(sl) == max(nx.single_source_shortest_path_length(graph, first).values())

"""Tori of cubes joined by OCS: slices are exact tori, repairs are local, spares match closed forms."""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Sequence
from fractions import Fraction

import networkx as nx
import pytest

from models.status import Status
from models.torus_ocs import (
    DIMS,
    TORUS_DEGREE,
    Circuit,
    Slice,
    Twist,
    check_circuits,
    check_torus,
    chip_graph,
    circuit_diff,
    composable_probability,
    compose_slice,
    ocs_devices,
    ocs_ports_needed,
    pod_size,
    replace_cube,
    slice_circuits,
    spares_needed,
    tpu_twists,
)

#: Cube edge, in chips, of every test unless it says otherwise (TPU v4).
C = 4
#: Relative tolerance on probabilities computed in floating point.
PROB_REL_TOL = 1e-9

Coord = tuple[int, int, int]

SHAPES = [
    (4, 4, 4),
    (4, 4, 8),
    (4, 8, 8),
    (8, 8, 8),
    (8, 8, 16),
    (8, 4, 12),
    (16, 16, 16),
]
TWISTED = [(4, 4, 8), (4, 8, 8), (8, 16, 16)]


def global_coord(sl: Slice, chip: tuple[int, int, int, int]) -> Coord:
    """Chip (cube, local x, y, z) -> its coordinate in the slice, from the placement alone."""
    gx, gy, gz = next(g for g, k in sl.placement.items() if k == chip[0])
    return (C * gx + chip[1], C * gy + chip[2], C * gz + chip[3])


def global_graph(sl: Slice) -> nx.Graph:
    """The chip graph relabelled by global coordinates (a simple graph)."""
    g = chip_graph(sl)
    return nx.Graph(nx.relabel_nodes(g, {chip: global_coord(sl, chip) for chip in g.nodes}))


def twisted_torus(shape: Coord, twists: dict[tuple[int, int], int]) -> nx.Graph:
    """The twisted torus written out directly: twists[(a, b)] shifts the a wrap-around along b."""
    g = nx.Graph()
    for v in itertools.product(*(range(n) for n in shape)):
        for a in range(3):
            w = list(v)
            w[a] += 1
            if w[a] == shape[a]:
                w[a] = 0
                for (wrapped, b), t in twists.items():
                    if wrapped == a:
                        w[b] = (w[b] + t) % shape[b]
            g.add_edge(v, tuple(w))
    return g


def touching(circuits: frozenset[Circuit], cube: int) -> frozenset[Circuit]:
    return frozenset(c for c in circuits if cube in (c.plus[0], c.minus[0]))


def spares(cubes: int, availability: float, target: float) -> int:
    s = spares_needed(cubes, availability, target)
    assert s is not None
    return s


def exact_probability(n: int, s: int, availability: Fraction) -> Fraction:
    """P(at most s of n + s cubes fail), summed exactly."""
    q = 1 - availability
    return sum(
        (math.comb(n + s, k) * q**k * availability ** (n + s - k) for k in range(s + 1)),
        Fraction(0),
    )


# --- slices are tori --------------------------------------------------------------------------


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_slice_passes_torus_check(shape: Coord) -> None:
    sl = compose_slice(shape, range(100))
    assert check_torus(sl) == []


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_slice_equals_networkx_torus(shape: Coord) -> None:
    sl = compose_slice(shape, range(100))
    multi = chip_graph(sl)
    g = global_graph(sl)
    x, y, z = shape
    expected = nx.grid_graph(dim=[z, y, x], periodic=True)  # nodes (x, y, z)
    assert multi.number_of_edges() == g.number_of_edges()  # no parallel links for sides >= 3
    assert set(g.nodes) == set(expected.nodes)
    assert {frozenset(e) for e in g.edges} == {frozenset(e) for e in expected.edges}
    assert set(dict(multi.degree).values()) == {TORUS_DEGREE}


@pytest.mark.parametrize("shape", [(4, 4, 4), (4, 4, 8)], ids=str)
def test_slice_is_isomorphic_to_torus(shape: Coord) -> None:
    x, y, z = shape
    g = nx.Graph(chip_graph(compose_slice(shape, range(10))))
    assert nx.is_isomorphic(g, nx.grid_graph(dim=[z, y, x], periodic=True))


@pytest.mark.parametrize("shape", TWISTED, ids=str)
def test_twisted_slice_equals_written_out_twisted_torus(shape: Coord) -> None:
    sl = compose_slice(shape, range(100), twist=tpu_twists(shape))
    k = min(shape)
    twists = {(a, b): k for a, b in itertools.permutations(range(3), 2) if shape[a] == k < shape[b]}
    assert check_torus(sl) == []
    assert {frozenset(e) for e in global_graph(sl).edges} == {
        frozenset(e) for e in twisted_torus(shape, twists).edges
    }


@pytest.mark.parametrize(
    ("shape", "expected"),
    [
        ((4, 4, 8), (Twist("x", "z", 4), Twist("y", "z", 4))),
        ((8, 4, 8), (Twist("y", "x", 4), Twist("y", "z", 4))),
        ((4, 8, 8), (Twist("x", "y", 4), Twist("x", "z", 4))),
    ],
    ids=str,
)
def test_tpu_twists(shape: Coord, expected: tuple[Twist, ...]) -> None:
    assert tpu_twists(shape) == expected


@pytest.mark.parametrize("shape", [(4, 4, 8), (4, 8, 8)], ids=str)
def test_twist_shortens_paths(shape: Coord) -> None:
    plain = nx.Graph(chip_graph(compose_slice(shape, range(10))))
    twisted = nx.Graph(chip_graph(compose_slice(shape, range(10), twist=tpu_twists(shape))))
    assert nx.diameter(twisted) < nx.diameter(plain)
    assert nx.average_shortest_path_length(twisted) < nx.average_shortest_path_length(plain)


@pytest.mark.parametrize(
    ("shape", "cube", "twist"),
    [
        ((2, 2, 2), 2, None),
        ((2, 2, 4), 2, None),
        ((1, 1, 1), 1, None),
        ((2, 1, 3), 1, Twist("x", "z", 1)),
    ],
    ids=str,
)
def test_degenerate_rings_keep_six_links(shape: Coord, cube: int, twist: Twist | None) -> None:
    """Sides of 1 and 2 chips give self-loops and parallel links; each chip still has six."""
    sl = compose_slice(shape, range(10), cube=cube, twist=twist)
    assert check_torus(sl) == []


@pytest.mark.parametrize("shape", SHAPES[:5], ids=str)
def test_circuits_join_equal_positions_of_opposite_faces(shape: Coord) -> None:
    sl = compose_slice(shape, range(100))
    ocs_links = [e for e in chip_graph(sl).edges(data=True) if e[2]["kind"] == "ocs"]
    faces: Counter[tuple[int, int, bool, bool]] = Counter()
    for a, b, data in ocs_links:
        d = DIMS.index(data["dim"])
        _, p = data["device"]
        (plus, minus) = (a, b) if a[1 + d] == C - 1 and b[1 + d] == 0 else (b, a)
        others = [e for e in range(3) if e != d]
        faces[
            (
                plus[1 + d],
                minus[1 + d],
                divmod(p, C) == tuple(plus[1 + e] for e in others),
                divmod(p, C) == tuple(minus[1 + e] for e in others),
            )
        ] += 1
    assert faces == {(C - 1, 0, True, True): len(slice_circuits(sl))}
    assert {(c.plus[1], c.minus[1]) for c in slice_circuits(sl)} == {("+", "-")}


@pytest.mark.parametrize("shape", SHAPES[:5], ids=str)
def test_slice_uses_every_port_of_its_cubes_once(shape: Coord) -> None:
    sl = compose_slice(shape, range(100))
    circuits = slice_circuits(sl)
    ports = Counter((c.device, port) for c in circuits for port in (c.plus, c.minus))
    assert set(ports.values()) == {1}
    assert len(ports) == len(ocs_devices(C)) * ocs_ports_needed(len(sl.cubes))


# --- a pod of disjoint slices -----------------------------------------------------------------


def test_disjoint_slices_share_no_ocs_port() -> None:
    failed = {3, 17, 40}
    healthy = [k for k in range(64) if k not in failed]
    shapes: list[tuple[Coord, bool]] = [
        ((8, 8, 16), False),
        ((8, 8, 8), False),
        ((4, 8, 8), True),
        ((4, 4, 8), True),
        ((4, 4, 4), False),
        ((8, 8, 12), False),
    ]
    slices = []
    for shape, twisted in shapes:
        sl = compose_slice(shape, healthy, twist=tpu_twists(shape) if twisted else None)
        healthy = [k for k in healthy if k not in sl.cubes]
        slices.append(sl)
    circuits = frozenset().union(*(slice_circuits(sl) for sl in slices))
    ports = Counter((c.device, port) for c in circuits for port in (c.plus, c.minus))
    per_device = Counter(device for device, _ in ports)
    assert sum(len(sl.cubes) for sl in slices) == 16 + 8 + 4 + 2 + 1 + 12
    assert not failed & set().union(*(sl.cubes for sl in slices))
    assert max(ports.values()) == 1
    assert check_circuits(circuits, C) == []
    assert max(per_device.values()) <= ocs_ports_needed(64)
    assert [check_torus(sl) for sl in slices] == [[]] * len(slices)


def test_overlapping_slices_are_caught() -> None:
    a = compose_slice((4, 4, 8), [0, 1])
    b = compose_slice((4, 4, 8), [1, 2])
    issues = check_circuits(slice_circuits(a) | slice_circuits(b), C)
    # Along x and y cube 1 wraps onto itself in both slices (the same circuits); along z its
    # + and - ports on each of the c^2 z-OCS carry one circuit per slice.
    assert len(issues) == 2 * C**2
    assert all("(1, '+')" in i or "(1, '-')" in i for i in issues)


# --- the validator catches broken slices ------------------------------------------------------


def test_check_torus_catches_a_twist_the_ocs_cannot_make() -> None:
    sl = compose_slice((4, 4, 8), [0, 1])
    bad = Slice(sl.shape_chips, C, sl.placement, twists=(Twist("x", "z", 2),))
    assert check_torus(bad) != []


@pytest.mark.parametrize(
    "placement",
    [{(0, 0, 0): 0}, {(0, 0, 0): 0, (0, 0, 1): 0}, {(0, 0, 0): 0, (0, 0, 2): 1}],
    ids=["missing", "repeated", "off-grid"],
)
def test_check_torus_catches_a_bad_placement(placement: dict[Coord, int]) -> None:
    assert check_torus(Slice((4, 4, 8), C, placement)) != []


# --- repairs ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "twisted", "failed", "changed"),
    [
        ((4, 4, 4), False, 0, 48),
        ((4, 4, 8), False, 1, 64),
        ((4, 4, 8), True, 0, 96),
        ((8, 8, 8), False, 5, 96),
        ((8, 8, 16), False, 15, 96),
        ((4, 8, 8), True, 2, 96),
    ],
    ids=str,
)
def test_replacing_a_cube_changes_only_its_circuits(
    shape: Coord, twisted: bool, failed: int, changed: int
) -> None:
    """A cube has 6 c^2 = 96 ports; a circuit from a cube to itself uses two of them."""
    spare = 99
    old = compose_slice(shape, range(20), twist=tpu_twists(shape) if twisted else None)
    new = replace_cube(old, failed, spare)
    old_circuits, new_circuits = slice_circuits(old), slice_circuits(new)
    removed, added = circuit_diff(old_circuits, new_circuits)
    assert removed == touching(old_circuits, failed)
    assert added == touching(new_circuits, spare)
    assert old_circuits - removed == new_circuits - added
    assert len(removed) == len(added) == changed
    assert check_torus(new) == []
    assert {g for g, k in new.placement.items() if k != old.placement[g]} == {
        g for g, k in old.placement.items() if k == failed
    }


# --- devices and ports ------------------------------------------------------------------------


@pytest.mark.parametrize("cube", [1, 2, 4, 8])
def test_ocs_devices(cube: int) -> None:
    devices = ocs_devices(cube)
    assert len(devices) == len(set(devices)) == 3 * cube**2
    assert Counter(d for d, _ in devices) == {d: cube**2 for d in DIMS}


def test_tpu_v4_pod_fits_136_port_ocs() -> None:
    sizing = pod_size([(16, 16, 16)], availability=1.0, target=0.999)
    assert ocs_ports_needed(64) == 128
    assert sizing.status is Status.OPTIMAL
    assert (sizing.ocs_devices, sizing.ocs_ports_used, sizing.spares) == (48, 128, 0)
    assert (sizing.cubes, sizing.chips) == (64, 4096)


def test_tpu_v4_pod_with_spares() -> None:
    """64 cubes at 99.9 %: one spare gives 0.998 (see the closed-form cases below)."""
    sizing = pod_size([(16, 16, 8), (8, 16, 16)], availability=0.999, target=0.99)
    assert sizing.status is Status.OPTIMAL
    assert (sizing.slice_cubes, sizing.spares, sizing.ocs_ports_used) == (64, 1, 130)
    assert sizing.probability == pytest.approx(
        float(exact_probability(64, 1, Fraction(999, 1000))), rel=PROB_REL_TOL
    )


def test_pod_too_big_for_the_ocs_is_infeasible() -> None:
    sizing = pod_size([(16, 16, 16), (16, 16, 8)], availability=1.0, target=0.9)
    assert sizing.status is Status.INFEASIBLE
    assert sizing.ocs_ports_used == 192
    assert "192 ports" in sizing.reason


def test_pod_beyond_the_spare_bound_is_infeasible() -> None:
    sizing = pod_size([(8, 8, 8)], availability=0.5, target=0.999, max_spares=4)
    assert sizing.status is Status.INFEASIBLE
    assert sizing.spares is None


# --- spares -----------------------------------------------------------------------------------


def test_spares_by_hand() -> None:
    """8 cubes at 99 %, target 99.9 %: 9 cubes give 0.9966, 10 give 0.99989."""
    a, q = 0.99, 0.01
    nine = a**9 + 9 * q * a**8
    ten = a**10 + 10 * q * a**9 + 45 * q**2 * a**8
    assert nine < 0.999 <= ten
    assert spares_needed(8, 0.99, 0.999) == 2


@pytest.mark.parametrize(
    ("cubes", "availability", "target", "expected"),
    [
        (8, Fraction(99, 100), Fraction(999, 1000), 2),
        (64, Fraction(999, 1000), Fraction(99, 100), 1),
        (64, Fraction(99, 100), Fraction(9999, 10000), 5),
        (4, Fraction(95, 100), Fraction(99, 100), 2),
        (16, Fraction(98, 100), Fraction(999, 1000), 3),
        (1, Fraction(1, 2), Fraction(9, 10), 3),
        (10, Fraction(1), Fraction(999, 1000), 0),
        (10, Fraction(1, 2), Fraction(0), 0),
        (1, Fraction(1, 2), Fraction(1, 2), 0),  # met exactly: binary fractions
        (2, Fraction(1, 2), Fraction(1, 4), 0),
    ],
    ids=str,
)
def test_spares_match_exact_binomial_sum(
    cubes: int, availability: Fraction, target: Fraction, expected: int
) -> None:
    s = spares(cubes, float(availability), float(target))
    assert s == expected
    assert exact_probability(cubes, s, availability) >= target
    assert s == 0 or exact_probability(cubes, s - 1, availability) < target
    assert composable_probability(cubes, s, float(availability)) == pytest.approx(
        float(exact_probability(cubes, s, availability)), rel=PROB_REL_TOL
    )


TARGETS = [0.5, 0.9, 0.99, 0.999, 0.9999, 0.99999]
AVAILABILITIES = [0.9, 0.95, 0.99, 0.995, 0.999, 1.0]


@pytest.mark.parametrize(("low", "high"), list(itertools.pairwise(TARGETS)), ids=str)
@pytest.mark.parametrize("cubes", [1, 8, 64])
def test_spares_rise_with_target(cubes: int, low: float, high: float) -> None:
    assert spares(cubes, 0.99, low) <= spares(cubes, 0.99, high)


@pytest.mark.parametrize(("low", "high"), list(itertools.pairwise(AVAILABILITIES)), ids=str)
@pytest.mark.parametrize("cubes", [1, 8, 64])
def test_spares_fall_with_availability(cubes: int, low: float, high: float) -> None:
    assert spares(cubes, low, 0.999) >= spares(cubes, high, 0.999)


@pytest.mark.parametrize(("low", "high"), list(itertools.pairwise([1, 2, 8, 16, 64, 256])), ids=str)
def test_spares_rise_with_cubes(low: int, high: int) -> None:
    assert spares(low, 0.99, 0.999) <= spares(high, 0.99, 0.999)


def test_spares_beyond_the_bound_are_none() -> None:
    assert spares_needed(64, 0.5, 0.999, max_spares=10) is None


# --- errors -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("shape", "healthy", "twist", "match"),
    [
        ((4, 4, 6), range(10), None, "positive multiple of 4"),
        ((4, 0, 4), range(10), None, "positive multiple of 4"),
        ((4, 4), range(10), None, "three sides"),
        ((8, 8, 8), range(7), None, "needs 8 cubes of 4x4x4, only 7 healthy"),
        ((4, 4, 4), [1, 1], None, "distinct"),
        ((4, 4, 8), range(2), Twist("x", "z", 2), "not a multiple of the cube"),
        ((4, 4, 8), range(2), Twist("z", "z", 4), "along another"),
        ((4, 4, 8), range(2), [Twist("x", "z", 4), Twist("x", "z", 8)], "at most one twist"),
    ],
    ids=str,
)
def test_compose_rejects(
    shape: tuple[int, ...],
    healthy: Sequence[int],
    twist: Twist | list[Twist] | None,
    match: str,
) -> None:
    with pytest.raises(ValueError, match=match):
        compose_slice(shape, healthy, twist=twist)


@pytest.mark.parametrize(
    ("failed", "spare", "match"), [(5, 9, "not in the slice"), (0, 1, "already")]
)
def test_replace_rejects(failed: int, spare: int, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        replace_cube(compose_slice((4, 4, 8), [0, 1]), failed, spare)


@pytest.mark.parametrize(
    ("availability", "target", "match"),
    [(0.0, 0.9, "availability"), (1.1, 0.9, "availability"), (0.9, 1.0, "target")],
)
def test_spares_reject(availability: float, target: float, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        spares_needed(8, availability, target)


def test_tpu_twists_reject_other_shapes() -> None:
    with pytest.raises(ValueError, match="k x k x 2k"):
        tpu_twists((4, 8, 12))

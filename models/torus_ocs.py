r"""Tori of cubes joined by optical circuit switches (TPU-v4 style): slices, circuits, spares.

Cubes. A cube is ``c x c x c`` chips wired as a 3-D mesh; chip ``l = (l_x, l_y, l_z)``,
``0 <= l_d < c``, has a mesh link to ``l + e_d`` whenever ``l_d + 1 < c``. Every chip on a face
has one optical link out of that face: the ``+d`` face holds the chips with ``l_d = c - 1``, the
``-d`` face those with ``l_d = 0``. On a face of dimension ``d`` with other dimensions ``a < b``,
the chip's *face position* is ``p = l_a c + l_b``, ``0 <= p < c^2``.

Optical circuit switches. There is one OCS per ``(d, p)``, ``d`` in {x, y, z}, ``p < c^2``:
``3 c^2`` devices. OCS ``(d, p)`` has, for every cube ``k`` of the pod, one port ``(k, +)`` for
the link leaving ``k``'s ``+d`` face at position ``p`` and one port ``(k, -)`` for its ``-d`` face:
``2 K`` ports per device for ``K`` cubes (64 cubes of 4^3: 48 devices of 128 ports; TPU v4 uses
136-port OCS). A circuit joins one ``+`` port to one ``-`` port of the same device, so it always
joins face position ``p`` to face position ``p``; each port carries at most one circuit.

Slices. A slice of ``(X, Y, Z)`` chips, each a multiple of ``c``, uses ``n_x n_y n_z`` cubes,
``n_d = L_d / c`` (``L = (X, Y, Z)``), placed on a cube grid: ``placement[g]`` is the cube at grid
position ``g``. Chip ``l`` of the cube at ``g`` has global coordinate ``v = c g + l``. The slice is
the torus on ``v``: along every ``d``, ``v`` links to ``v + e_d`` and ``v - e_d`` (mod ``L_d``).
Mesh links inside the cubes give the links that stay in a cube; the circuits give the rest:

    for all d, g, p:  OCS (d, p) joins (placement[g], +) to (placement[s_d(g)], -)

with the grid successor ``s_d(g) = g + e_d`` when ``g_d + 1 < n_d`` and otherwise the wrap-around
``s_d(g)_d = 0`` (a single cube along ``d`` wraps onto itself). Any healthy cube can stand at any
grid position, since every OCS reaches every cube, so slices are composed first-fit with no
optimisation.

Twists. ``Twist(wrapped=a, shifted=b, shift_chips=t)``, ``a != b``, ``t`` a multiple of ``c``,
moves where the wrap-around links of dimension ``a`` land: chip ``v`` with ``v_a = L_a - 1``
links in ``+a`` to ``w`` with ``w_a = 0``, ``w_b = (v_b + t) mod L_b`` and every other coordinate
unchanged; links that do not wrap are unchanged. Several twists may act (on different ``(a, b)``
pairs; shifts add up). In the cube grid this is ``s_a(g)_b = (g_b + t / c) mod n_b`` for a
wrapping ``g``; face positions do not change, which is why ``t`` must be a multiple of ``c``
(a circuit can only join position ``p`` to position ``p``). ``tpu_twists`` gives the twisted tori of
TPU v4 (Camara et al.'s twisted 3-D tori): for ``k x k x 2k`` the wrap-around links of both
``k``-long dimensions shift by ``k`` along the ``2k``-long one; for ``k x 2k x 2k`` those of the
``k``-long dimension shift by ``k`` along both ``2k``-long ones.

Spares. Cubes are healthy independently with probability ``a``. A set of slices needing ``n``
cubes in all can be composed at once from ``n + s`` cubes with probability

    P(n, s) = P[Binomial(n + s, a) >= n] = P[Binomial(n + s, 1 - a) <= s]

(spares are pooled: any healthy cube can replace any failed one). ``spares_needed`` is the least
``s`` with ``P(n, s) >= target``; ``P`` rises with ``s`` and ``a`` and falls with ``n``, so the
answer rises with ``target`` and ``n`` and falls with ``a``. A pod of ``n + s`` cubes fits OCS of
``R`` ports when ``2 (n + s) <= R``.
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

import networkx as nx
import numpy as np
import numpy.typing as npt
from scipy.stats import binom

from models.status import Status

Dim = Literal["x", "y", "z"]
Sign = Literal["+", "-"]
Coord = tuple[int, int, int]
Device = tuple[Dim, int]
"""An OCS: the dimension of the faces it joins and the face position ``p`` of its ports."""
Port = tuple[int, Sign]
"""A port of an OCS: the cube and the face (``+`` or ``-``) it comes from."""
Chip = tuple[int, int, int, int]
"""A chip: its cube and its local coordinates ``(cube, l_x, l_y, l_z)``."""

#: The three dimensions, in coordinate order.
DIMS: tuple[Dim, Dim, Dim] = ("x", "y", "z")
#: Chips per cube edge in TPU v4 (4 x 4 x 4 = 64 chips per cube).
TPU_CUBE = 4
#: Ports per OCS in TPU v4 (Palomar).
TPU_OCS_PORTS = 136
#: Links per chip in a 3-D torus: one each way along each dimension.
TORUS_DEGREE = 6
#: Default bound on the spare cubes ``spares_needed`` searches.
DEFAULT_MAX_SPARES = 4096


class Circuit(NamedTuple):
    """One OCS circuit: ``device`` joins ``plus`` (a ``+`` port) to ``minus`` (a ``-`` port)."""

    device: Device
    plus: Port
    minus: Port


@dataclass(frozen=True)
class Twist:
    """The wrap-around links of ``wrapped`` land shifted by ``shift_chips`` along ``shifted``."""

    wrapped: Dim
    shifted: Dim
    shift_chips: int


@dataclass(frozen=True)
class Slice:
    """A torus of ``shape_chips`` built from cubes of ``cube`` chips per edge."""

    shape_chips: Coord
    cube: int
    placement: Mapping[Coord, int]
    """Cube-grid position -> cube id; the keys are exactly the grid positions."""
    twists: tuple[Twist, ...] = ()

    @property
    def grid(self) -> Coord:
        """Cubes along each dimension, ``n_d = L_d / c``."""
        x, y, z = (length // self.cube for length in self.shape_chips)
        return (x, y, z)

    @property
    def cubes(self) -> frozenset[int]:
        """The cubes the slice uses."""
        return frozenset(self.placement.values())


@dataclass(frozen=True)
class TorusSizing:
    """A pod sized for a set of slices: cubes, spares and OCS ports."""

    status: Status
    """OPTIMAL: the fewest spares meeting the target, and the pod fits the OCS; else INFEASIBLE."""
    cube: int
    slice_cubes: int
    """Cubes the slices use together."""
    spares: int | None
    """Fewest spare cubes meeting the target; None if more than the search bound."""
    probability: float | None
    """Probability that all slices can be composed at once with these spares."""
    ocs_devices: int
    ocs_ports_used: int | None
    """Ports used on every OCS: two per cube, spares included."""
    ocs_ports: int
    reason: str = ""
    """Why the sizing is infeasible; empty when it is not."""

    @property
    def cubes(self) -> int | None:
        """Cubes in the pod, spares included."""
        return None if self.spares is None else self.slice_cubes + self.spares

    @property
    def chips(self) -> int | None:
        """Chips in the pod, spares included."""
        return None if self.cubes is None else self.cubes * self.cube**3


# --- devices and face positions ---------------------------------------------------------------


def other_dims(d: int) -> tuple[int, int]:
    """The two dimensions other than ``d``, in increasing order."""
    a, b = (e for e in range(3) if e != d)
    return a, b


def face_position(d: int, local: Coord, cube: int) -> int:
    """The position ``p = l_a c + l_b`` of a chip on a face of dimension ``d``."""
    a, b = other_dims(d)
    return local[a] * cube + local[b]


def face_chip(d: int, p: int, sign: Sign, cube: int) -> Coord:
    """The local coordinates of the chip at face position ``p`` of the ``sign`` face along ``d``."""
    a, b = other_dims(d)
    local = [0, 0, 0]
    local[d] = cube - 1 if sign == "+" else 0
    local[a], local[b] = divmod(p, cube)
    return (local[0], local[1], local[2])


def ocs_devices(cube: int) -> list[Device]:
    """Every OCS of a pod: one per dimension and face position, ``3 c^2`` in all."""
    _check_cube(cube)
    return [(d, p) for d in DIMS for p in range(cube * cube)]


def ocs_ports_needed(cubes: int) -> int:
    """Ports each OCS needs for a pod of ``cubes`` cubes: a ``+`` and a ``-`` port per cube."""
    if cubes < 0:
        raise ValueError(f"a pod has a non-negative number of cubes, got {cubes}")
    return 2 * cubes


# --- slices -----------------------------------------------------------------------------------


def slice_cubes(shape_chips: Sequence[int], cube: int = TPU_CUBE) -> int:
    """Cubes a slice of ``shape_chips`` uses; ValueError unless every side is a multiple of ``c``."""
    _check_cube(cube)
    if len(shape_chips) != 3:
        raise ValueError(f"a slice shape has three sides, got {tuple(shape_chips)}")
    if any(length <= 0 or length % cube for length in shape_chips):
        raise ValueError(
            f"slice shape {tuple(shape_chips)} is not made of {cube}x{cube}x{cube} cubes: "
            f"every side must be a positive multiple of {cube}"
        )
    return int(np.prod([length // cube for length in shape_chips]))


def twistable(shape_chips: Sequence[int]) -> bool:
    """Whether ``tpu_twists`` has a twist for this shape: ``k x k x 2k`` or ``k x 2k x 2k``."""
    lengths = sorted(set(shape_chips))
    return len(shape_chips) == 3 and len(lengths) == 2 and lengths[1] == 2 * lengths[0]


def tpu_twists(shape_chips: Sequence[int]) -> tuple[Twist, ...]:
    """The twists of the TPU v4 twisted torus of a ``k x k x 2k`` or ``k x 2k x 2k`` shape.

    The wrap-around links of every ``k``-long dimension shift by ``k`` along every ``2k``-long
    one. ValueError for any other shape.
    """
    if not twistable(shape_chips):
        raise ValueError(
            f"a twisted torus needs a k x k x 2k or k x 2k x 2k shape, got {tuple(shape_chips)}"
        )
    k = min(shape_chips)
    return tuple(
        Twist(wrapped=DIMS[a], shifted=DIMS[b], shift_chips=k)
        for a, b in itertools.permutations(range(3), 2)
        if shape_chips[a] == k and shape_chips[b] == 2 * k
    )


def compose_slice(
    shape_chips: Sequence[int],
    healthy_cubes: Sequence[int],
    cube: int = TPU_CUBE,
    twist: Twist | Sequence[Twist] | None = None,
) -> Slice:
    """A slice of ``shape_chips`` on the first healthy cubes, in grid order (``z`` fastest).

    ValueError if a side is not a multiple of ``cube``, the healthy cubes repeat, there are too few
    of them, or a twist is malformed.
    """
    needed = slice_cubes(shape_chips, cube)
    if len(set(healthy_cubes)) != len(healthy_cubes):
        raise ValueError("healthy cubes must be distinct")
    if len(healthy_cubes) < needed:
        raise ValueError(
            f"slice {tuple(shape_chips)} needs {needed} cubes of {cube}x{cube}x{cube}, "
            f"only {len(healthy_cubes)} healthy"
        )
    shape: Coord = (shape_chips[0], shape_chips[1], shape_chips[2])
    twists = (twist,) if isinstance(twist, Twist) else tuple(twist or ())
    _check_twists(twists, cube)
    grid = [(x, y, z) for x, y, z in itertools.product(*(range(n // cube) for n in shape))]
    placement = dict(zip(grid, healthy_cubes, strict=False))
    return Slice(shape_chips=shape, cube=cube, placement=placement, twists=twists)


def grid_successor(sl: Slice, d: int, g: Coord) -> Coord:
    """The grid position whose ``-d`` face the ``+d`` face of the cube at ``g`` joins."""
    n = sl.grid
    nxt = list(g)
    if g[d] + 1 < n[d]:
        nxt[d] += 1
        return (nxt[0], nxt[1], nxt[2])
    nxt[d] = 0
    for t in sl.twists:
        if DIMS.index(t.wrapped) == d:
            b = DIMS.index(t.shifted)
            nxt[b] = (nxt[b] + t.shift_chips // sl.cube) % n[b]
    return (nxt[0], nxt[1], nxt[2])


def circuit_rows(sl: Slice) -> npt.NDArray[np.int64]:
    """The slice's circuits as rows (dimension index, face position, + cube, - cube), sorted.

    The same circuits as ``slice_circuits`` (one per ``(d, p, g)``: ``+d`` of the cube at ``g``
    to ``-d`` of the cube at ``s_d(g)``), in its sorted order, built on arrays: a million-chip
    slice has 196,608 of them. Rows repeated by a placement holding a cube twice appear once.
    """
    positions = np.array(list(sl.placement), dtype=np.int64).reshape(-1, 3)
    cubes = np.array(list(sl.placement.values()), dtype=np.int64)
    faces = sl.cube * sl.cube
    parts = []
    for d in range(3):
        after = grid_successors(sl, d, positions)
        minus = np.array([sl.placement[(a, b, c)] for a, b, c in after.tolist()], dtype=np.int64)
        rows = np.empty((len(cubes), faces, 4), dtype=np.int64)
        rows[:, :, 0] = d
        rows[:, :, 1] = np.arange(faces)[None, :]
        rows[:, :, 2] = cubes[:, None]
        rows[:, :, 3] = minus[:, None]
        parts.append(rows.reshape(-1, 4))
    out = np.concatenate(parts) if parts else np.zeros((0, 4), dtype=np.int64)
    return np.unique(out, axis=0) if len(out) else out


def grid_successors(sl: Slice, d: int, positions: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """``grid_successor`` of many grid positions (rows) at once along ``d``."""
    n = sl.grid
    nxt = positions.copy()
    wrap = nxt[:, d] + 1 >= n[d]
    nxt[~wrap, d] += 1
    nxt[wrap, d] = 0
    for t in sl.twists:
        if DIMS.index(t.wrapped) == d:
            b = DIMS.index(t.shifted)
            nxt[wrap, b] = (nxt[wrap, b] + t.shift_chips // sl.cube) % n[b]
    return nxt


def circuits_of_rows(rows: npt.NDArray[np.int64]) -> frozenset[Circuit]:
    """The circuits of ``circuit_rows``' rows."""
    return frozenset(
        Circuit((DIMS[d], p), (plus, "+"), (minus, "-")) for d, p, plus, minus in rows.tolist()
    )


def slice_circuits(sl: Slice) -> frozenset[Circuit]:
    """The circuits closing the slice's torus: per ``(d, p, g)``, ``+d`` of ``g`` to ``-d`` of ``s_d(g)``."""
    return circuits_of_rows(circuit_rows(sl))


def chip_graph(sl: Slice) -> nx.MultiGraph:
    """Chips ``(cube, l_x, l_y, l_z)`` linked by the cubes' meshes and by the slice's circuits.

    Edges carry ``dim`` (``"x"``, ``"y"``, ``"z"``) and ``kind`` (``"mesh"`` or ``"ocs"``, then
    also ``device``). Parallel links stay parallel (a 2-chip ring has two).
    """
    c = sl.cube
    g = nx.MultiGraph()
    for cube_id in sl.placement.values():
        for local in itertools.product(range(c), repeat=3):
            g.add_node((cube_id, *local))
            for d in range(3):
                if local[d] + 1 < c:
                    nxt = list(local)
                    nxt[d] += 1
                    g.add_edge((cube_id, *local), (cube_id, *nxt), dim=DIMS[d], kind="mesh")
    for circuit in slice_circuits(sl):
        dim, p = circuit.device
        d = DIMS.index(dim)
        a = (circuit.plus[0], *face_chip(d, p, "+", c))
        b = (circuit.minus[0], *face_chip(d, p, "-", c))
        g.add_edge(a, b, dim=dim, kind="ocs", device=circuit.device)
    return g


def replace_cube(sl: Slice, failed: int, spare: int) -> Slice:
    """The slice with ``spare`` standing where ``failed`` stood; everything else unchanged."""
    if failed not in sl.cubes:
        raise ValueError(f"cube {failed} is not in the slice")
    if spare in sl.cubes:
        raise ValueError(f"spare cube {spare} is already in the slice")
    placement = {g: spare if k == failed else k for g, k in sl.placement.items()}
    return replace(sl, placement=placement)


def circuit_diff(
    old: frozenset[Circuit], new: frozenset[Circuit]
) -> tuple[frozenset[Circuit], frozenset[Circuit]]:
    """The circuits to tear down and to set up to go from ``old`` to ``new``: (removed, added)."""
    return old - new, new - old


# --- independent checks -----------------------------------------------------------------------


def torus_neighbours(v: Coord, shape_chips: Coord, twists: Sequence[Twist] = ()) -> list[Coord]:
    """The ``+d`` and ``-d`` neighbours of ``v``, per dimension, in the (twisted) torus."""
    out: list[Coord] = []
    for d in range(3):
        for step in (1, -1):
            w = list(v)
            w[d] += step
            if not 0 <= w[d] < shape_chips[d]:
                w[d] %= shape_chips[d]
                for t in twists:
                    if DIMS.index(t.wrapped) == d:
                        b = DIMS.index(t.shifted)
                        w[b] = (w[b] + step * t.shift_chips) % shape_chips[b]
            out.append((w[0], w[1], w[2]))
    return out


def check_circuits(circuits: frozenset[Circuit], cube: int) -> list[str]:
    """Issues with a set of circuits: a bad device, a port of the wrong face, a port used twice."""
    issues: list[str] = []
    valid = set(ocs_devices(cube))
    for c in sorted(circuits):
        if c.device not in valid:
            issues.append(f"{c}: no OCS {c.device} for {cube}x{cube}x{cube} cubes")
        if c.plus[1] != "+" or c.minus[1] != "-":
            issues.append(f"{c}: a circuit joins a + port to a - port")
    used = Counter((c.device, port) for c in circuits for port in (c.plus, c.minus))
    issues.extend(
        f"OCS {device} port {port} carries {n} circuits"
        for (device, port), n in sorted(used.items())
        if n > 1
    )
    return issues


def check_torus(sl: Slice, rows: npt.NDArray[np.int64] | None = None) -> list[str]:
    """Issues found by rebuilding the slice's chip graph and comparing it with the torus.

    Independent of how circuits are chosen: every chip is mapped to ``v = c g + l`` and its
    links (with multiplicity) must be exactly ``torus_neighbours(v)``; so each chip has six links,
    two per dimension, wrap-around included. Empty when the slice is correct. ``rows``: the
    slice's ``circuit_rows`` when already built (they are built here otherwise).

    The comparison runs on arrays (``chip_links``, ``expected_links``: a million chips in about
    two seconds); the chips whose links differ are then worded one by one, as ``chip_graph`` sees
    them.
    """
    issues: list[str] = []
    c = sl.cube
    grid = set(itertools.product(*(range(n) for n in sl.grid)))
    if set(sl.placement) != grid:
        issues.append(f"placement does not cover the {sl.grid} cube grid exactly")
    if len(sl.cubes) != len(sl.placement):
        issues.append("a cube stands at two grid positions")
    if issues:
        return issues
    rows = circuit_rows(sl) if rows is None else rows
    issues.extend(_circuit_issues(rows, c))
    chips = len(sl.placement) * c**3
    if chips != int(np.prod(sl.shape_chips)):
        issues.append(f"{chips} chips, expected {np.prod(sl.shape_chips)}")
    where = chip_coords(sl)
    a, b = chip_links(sl, rows)
    linear = _linear(where, sl.shape_chips)
    size = int(np.prod(sl.shape_chips))
    actual = linear[np.concatenate([a, b])] * size + linear[np.concatenate([b, a])]
    expected = expected_links(where, sl.shape_chips, sl.twists)
    if np.array_equal(np.sort(actual), np.sort(expected)):
        return issues
    return issues + _chip_issues(sl, where, a, b, actual, expected)


def chip_coords(sl: Slice) -> npt.NDArray[np.int64]:
    """Global coordinates ``v = c g + l`` of every chip, in ``chip_graph``'s node order.

    Chip ``t`` is local chip ``t mod c^3`` (``l_z`` fastest) of the cube at the
    ``t div c^3``-th grid position of the placement.
    """
    c = sl.cube
    positions = np.array(list(sl.placement), dtype=np.int64).reshape(-1, 3)
    local = np.array(list(itertools.product(range(c), repeat=3)), dtype=np.int64)
    return (c * positions[:, None, :] + local[None, :, :]).reshape(-1, 3)


def chip_links(
    sl: Slice, rows: npt.NDArray[np.int64] | None = None
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Every link of ``chip_graph`` as two arrays of chip indices (``chip_coords``' order).

    Mesh links inside each cube, then one link per circuit (from ``rows``, the slice's
    ``circuit_rows``), between the chips at its face position on the two faces.
    """
    c = sl.cube
    per_cube = c**3
    local = np.array(list(itertools.product(range(c), repeat=3)), dtype=np.int64)
    stride = (c * c, c, 1)
    starts = np.arange(len(sl.placement), dtype=np.int64)[:, None] * per_cube
    ends_a, ends_b = [], []
    for d in range(3):
        inner = np.flatnonzero(local[:, d] + 1 < c)
        ends_a.append((starts + inner[None, :]).ravel())
        ends_b.append((starts + inner[None, :] + stride[d]).ravel())
    rows = circuit_rows(sl) if rows is None else rows
    position = {k: i for i, k in enumerate(sl.placement.values())}
    if len(rows):
        plus = np.array([position[k] for k in rows[:, 2].tolist()], dtype=np.int64)
        minus = np.array([position[k] for k in rows[:, 3].tolist()], dtype=np.int64)
        dims = rows[:, 0]
        first, second = np.divmod(rows[:, 1], c)  # local coordinates along the other two dims
        lp = np.zeros((len(rows), 3), dtype=np.int64)
        lm = np.zeros((len(rows), 3), dtype=np.int64)
        for dim in range(3):
            a_dim, b_dim = other_dims(dim)
            on = dims == dim
            lp[on, dim], lm[on, dim] = c - 1, 0
            lp[on, a_dim], lm[on, a_dim] = first[on], first[on]
            lp[on, b_dim], lm[on, b_dim] = second[on], second[on]
        ends_a.append(plus * per_cube + lp @ np.array(stride))
        ends_b.append(minus * per_cube + lm @ np.array(stride))
    return np.concatenate(ends_a), np.concatenate(ends_b)


def expected_links(
    where: npt.NDArray[np.int64], shape_chips: Coord, twists: Sequence[Twist] = ()
) -> npt.NDArray[np.int64]:
    """Codes (``_coord_codes``) of every chip's six ``torus_neighbours``, on arrays."""
    src, dst = [], []
    for d in range(3):
        for step in (1, -1):
            src.append(where)
            dst.append(_stepped(where, d, step, shape_chips, twists))
    return _coord_codes(np.concatenate(src), np.concatenate(dst), shape_chips)


def _stepped(
    where: npt.NDArray[np.int64],
    d: int,
    step: int,
    shape_chips: Coord,
    twists: Sequence[Twist],
) -> npt.NDArray[np.int64]:
    """The chips one ``step`` (+1 or -1) along dimension ``d`` from ``where``, wrapping (twisted)."""
    w = where.copy()
    w[:, d] += step
    wrap = (w[:, d] < 0) | (w[:, d] >= shape_chips[d])
    w[:, d] %= shape_chips[d]
    for t in twists:
        if DIMS.index(t.wrapped) == d:
            b = DIMS.index(t.shifted)
            w[wrap, b] = (w[wrap, b] + step * t.shift_chips) % shape_chips[b]
    return w


def _linear(v: npt.NDArray[np.int64], shape_chips: Coord) -> npt.NDArray[np.int64]:
    return (v[:, 0] * shape_chips[1] + v[:, 1]) * shape_chips[2] + v[:, 2]


def _coord_codes(
    src: npt.NDArray[np.int64], dst: npt.NDArray[np.int64], shape_chips: Coord
) -> npt.NDArray[np.int64]:
    """One integer per directed link between two coordinates: equal exactly when both ends are.

    ``linear(src) x N + linear(dst)``, N the chips of the slice's shape.
    """
    n = int(np.prod(shape_chips))
    return _linear(src, shape_chips) * n + _linear(dst, shape_chips)


def _node_rank(cube: int) -> list[int]:
    """Rank of each local chip (``l_z`` fastest) among a cube's nodes in ``chip_graph``'s order.

    ``chip_graph`` adds a cube's chips in ``itertools.product`` order, each followed by the
    neighbours its mesh links reach first: that is the order its nodes, and the issues of
    ``check_torus``, come in.
    """
    rank: dict[tuple[int, ...], int] = {}
    for local in itertools.product(range(cube), repeat=3):
        ahead: list[tuple[int, ...]] = [local]
        for d in range(3):
            if local[d] + 1 < cube:
                nxt = list(local)
                nxt[d] += 1
                ahead.append((nxt[0], nxt[1], nxt[2]))
        for node in ahead:
            rank.setdefault(node, len(rank))
    return [rank[(x, y, z)] for x, y, z in itertools.product(range(cube), repeat=3)]


def _circuit_issues(rows: npt.NDArray[np.int64], cube: int) -> list[str]:
    """``check_circuits`` of the rows' circuits, decided on arrays and worded only when needed."""
    faces = cube * cube
    valid = (rows[:, 0] >= 0) & (rows[:, 0] < 3) & (rows[:, 1] >= 0) & (rows[:, 1] < faces)
    plus = np.unique(rows[:, [0, 1, 2]], axis=0)
    minus = np.unique(rows[:, [0, 1, 3]], axis=0)
    if valid.all() and len(plus) == len(rows) and len(minus) == len(rows):
        return []
    return check_circuits(circuits_of_rows(rows), cube)


def _chip_issues(
    sl: Slice,
    where: npt.NDArray[np.int64],
    a: npt.NDArray[np.int64],
    b: npt.NDArray[np.int64],
    actual: npt.NDArray[np.int64],
    expected: npt.NDArray[np.int64],
) -> list[str]:
    """The words for every chip whose links differ from the torus's, in ``chip_graph``'s order."""
    c = sl.cube
    n = int(np.prod(sl.shape_chips))
    codes, counts = np.unique(actual, return_counts=True)
    want, want_counts = np.unique(expected, return_counts=True)
    both = np.union1d(codes, want)
    have = np.zeros(len(both), dtype=np.int64)
    need = np.zeros(len(both), dtype=np.int64)
    have[np.searchsorted(both, codes)] = counts
    need[np.searchsorted(both, want)] = want_counts
    wrong = set((both[have != need] // n).tolist())
    rank = _node_rank(c)
    chips = sorted(
        (t for t, v in enumerate(_linear(where, sl.shape_chips).tolist()) if v in wrong),
        key=lambda t: (t // c**3, rank[t % c**3]),
    )
    cubes = list(sl.placement.values())
    ends = np.concatenate([a, b])
    other = np.concatenate([b, a])
    order = np.argsort(ends, kind="stable")
    ends, other = ends[order], other[order]
    issues = []
    for t in chips:
        lo, hi = np.searchsorted(ends, t), np.searchsorted(ends, t, side="right")
        lx, rest = divmod(t % c**3, c * c)
        chip = (cubes[t // c**3], lx, *divmod(rest, c))
        v = tuple(where[t].tolist())
        links = Counter(tuple(where[w].tolist()) for w in other[lo:hi].tolist())
        if links.total() != TORUS_DEGREE:
            issues.append(f"chip {chip} at {v} has {links.total()} links, not {TORUS_DEGREE}")
        expected_here = Counter(torus_neighbours(v, sl.shape_chips, sl.twists))
        if links != expected_here:
            issues.append(
                f"chip {chip} at {v}: links to {sorted(links.elements())}, "
                f"torus has {sorted(expected_here.elements())}"
            )
    return issues


# --- spares and pod sizing --------------------------------------------------------------------


def composable_probability(cubes_in_slice: int, spares: int, availability: float) -> float:
    """``P[Binomial(n + s, 1 - a) <= s]``: at least ``n`` of ``n + s`` cubes are healthy."""
    return float(binom.cdf(spares, cubes_in_slice + spares, 1.0 - availability))


def spares_needed(
    cubes_in_slice: int,
    availability: float,
    target: float,
    max_spares: int = DEFAULT_MAX_SPARES,
) -> int | None:
    """The fewest spares ``s <= max_spares`` with ``P(n, s) >= target``; None if there are none.

    ``n = cubes_in_slice`` cubes are needed at once, each healthy with probability
    ``availability``. The test is done on the failure tail, ``P[Binomial(n + s, 1 - a) > s] <=
    1 - target``, which stays accurate when both sides are tiny.
    """
    if cubes_in_slice < 0 or max_spares < 0:
        raise ValueError("cubes and the spare bound must be non-negative")
    if not 0.0 < availability <= 1.0:
        raise ValueError(f"availability must be in (0, 1], got {availability}")
    if not 0.0 <= target < 1.0:
        raise ValueError(f"target must be in [0, 1), got {target}")
    s = np.arange(max_spares + 1)
    fail = binom.sf(s, cubes_in_slice + s, 1.0 - availability)
    ok = np.flatnonzero(fail <= 1.0 - target)
    return int(ok[0]) if ok.size else None


def pod_size(
    slices: Sequence[Sequence[int]],
    availability: float,
    target: float,
    cube: int = TPU_CUBE,
    ocs_ports: int = TPU_OCS_PORTS,
    max_spares: int = DEFAULT_MAX_SPARES,
) -> TorusSizing:
    """Cubes, pooled spares and OCS for a pod that must run ``slices`` at once.

    ``target`` is the probability that all slices can be composed at the same time. INFEASIBLE
    (no exception) when the spares exceed ``max_spares`` or ``2 (n + s) > ocs_ports``.
    """
    n = sum(slice_cubes(shape, cube) for shape in slices)
    spares = spares_needed(n, availability, target, max_spares)
    devices = len(ocs_devices(cube))
    if spares is None:
        return TorusSizing(
            status=Status.INFEASIBLE,
            cube=cube,
            slice_cubes=n,
            spares=None,
            probability=None,
            ocs_devices=devices,
            ocs_ports_used=None,
            ocs_ports=ocs_ports,
            reason=f"{n} cubes need more than {max_spares} spares to reach {target}",
        )
    used = ocs_ports_needed(n + spares)
    fits = used <= ocs_ports
    return TorusSizing(
        status=Status.OPTIMAL if fits else Status.INFEASIBLE,
        cube=cube,
        slice_cubes=n,
        spares=spares,
        probability=composable_probability(n, spares, availability),
        ocs_devices=devices,
        ocs_ports_used=used,
        ocs_ports=ocs_ports,
        reason=""
        if fits
        else (
            f"{n} + {spares} spare cubes need {used} ports per OCS, "
            f"more than the {ocs_ports} available"
        ),
    )


# --- helpers ----------------------------------------------------------------------------------


def _check_cube(cube: int) -> None:
    if cube < 1:
        raise ValueError(f"a cube has at least one chip per edge, got {cube}")


def _check_twists(twists: Sequence[Twist], cube: int) -> None:
    pairs = [(t.wrapped, t.shifted) for t in twists]
    if len(set(pairs)) != len(pairs):
        raise ValueError("at most one twist per (wrapped, shifted) pair of dimensions")
    for t in twists:
        if t.wrapped not in DIMS or t.shifted not in DIMS or t.wrapped == t.shifted:
            raise ValueError(f"{t}: a twist shifts one dimension's wrap-around along another")
        if t.shift_chips % cube:
            raise ValueError(
                f"{t}: shift of {t.shift_chips} chips is not a multiple of the cube ({cube}); "
                "an OCS joins only equal face positions"
            )


# --- path figures -----------------------------------------------------------------------------


def torus_diameter(shape_chips: Coord, twists: Sequence[Twist] = ()) -> int:
    """Links on the longest shortest path between two chips of a (twisted) torus.

    A plain torus: ``sum_d floor(L_d / 2)``. A twisted torus is still vertex-transitive (the
    shift is a translation), so the eccentricity of chip 0, found by breadth-first search over
    ``torus_neighbours``, is its diameter. The search runs on arrays, one frontier at a time,
    and is kept per shape and twists (``_twisted_diameter``): a design's path figures ask again.
    """
    if not twists:
        return sum(n // 2 for n in shape_chips)
    return _twisted_diameter((shape_chips[0], shape_chips[1], shape_chips[2]), tuple(twists))


@functools.lru_cache(maxsize=16)
def _twisted_diameter(shape_chips: Coord, twists: tuple[Twist, ...]) -> int:
    """``torus_diameter``'s breadth-first search from chip 0, frontier by frontier (numpy)."""
    size = int(np.prod(shape_chips))
    seen = np.zeros(size, dtype=bool)
    frontier = np.zeros((1, 3), dtype=np.int64)
    seen[0] = True
    depth = 0
    while True:
        reached = []
        for d in range(3):
            for step in (1, -1):
                reached.append(_stepped(frontier, d, step, shape_chips, twists))
        candidates = np.concatenate(reached)
        linear = np.unique(_linear(candidates, shape_chips))
        new = linear[~seen[linear]]
        if not new.size:
            return depth
        seen[new] = True
        z = new % shape_chips[2]
        y = (new // shape_chips[2]) % shape_chips[1]
        x = new // (shape_chips[1] * shape_chips[2])
        frontier = np.stack([x, y, z], axis=1)
        depth += 1

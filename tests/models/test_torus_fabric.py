"""models/torus_fabric: closed forms against graphs built by networkx, the sizing against brute force."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest

from models import cabling as cb
from models import torus_fabric as tf
from models.status import Status

#: Relative tolerance on objectives compared between the model and the brute force.
OBJECTIVE_RTOL = 1e-9

SMALL_DIMS = [
    (2,),
    (3,),
    (5,),
    (6,),
    (2, 2),
    (3, 3),
    (4, 4),
    (2, 4),
    (4, 3),
    (5, 2),
    (2, 2, 2),
    (3, 3, 3),
    (4, 2, 3),
    (4, 4, 2),
]


def torus_graph(dims: tuple[int, ...]) -> nx.Graph:
    """The torus as networkx builds it: a periodic grid (a ring of 2 is one edge)."""
    return nx.grid_graph(dim=list(dims), periodic=True)


@pytest.mark.parametrize("dims", SMALL_DIMS, ids=str)
@pytest.mark.parametrize("q", [1, 3])
def test_links_and_ports_match_the_graph(dims: tuple[int, ...], q: int) -> None:
    g = torus_graph(dims)
    assert g.number_of_nodes() == tf.switches(dims)
    assert tf.torus_links(dims, q) == q * g.number_of_edges()
    assert {q * deg for _, deg in g.degree()} == {tf.torus_ports(dims, q)}


@pytest.mark.parametrize("dims", SMALL_DIMS, ids=str)
def test_the_rings_are_the_graph(dims: tuple[int, ...]) -> None:
    lo, hi = tf.ring_links(dims)
    coords = tf.coordinates(dims)
    # networkx names grid nodes by coordinates, last dimension first.
    ours = {
        frozenset((tuple(coords[a][::-1].tolist()), tuple(coords[b][::-1].tolist())))
        for a, b in zip(lo, hi, strict=True)
    }
    assert len(ours) == lo.size
    theirs = {frozenset(_node(x) for x in e) for e in torus_graph(dims).edges()}
    assert ours == theirs


def _node(x: object) -> tuple[int, ...]:
    return tuple(x) if isinstance(x, tuple) else (int(x),)  # type: ignore[call-overload]


@pytest.mark.parametrize("dims", SMALL_DIMS, ids=str)
def test_diameter_is_the_longest_shortest_path(dims: tuple[int, ...]) -> None:
    g = torus_graph(dims)
    assert tf.diameter(dims) == nx.diameter(g)
    assert tf.switch_hops(dims) == nx.diameter(g) + 1


def min_bisection(g: nx.Graph) -> int:
    """Fewest edges across any cut that halves the nodes (brute force)."""
    nodes = list(g.nodes())
    first, rest = nodes[0], nodes[1:]
    half = len(nodes) // 2
    return min(nx.cut_size(g, {first, *side}) for side in itertools.combinations(rest, half - 1))


@pytest.mark.parametrize(
    "dims", [(4,), (6,), (2, 2), (4, 4), (2, 4), (4, 2), (6, 2), (2, 2, 2), (4, 2, 2)], ids=str
)
def test_bisection_is_the_minimum_balanced_cut(dims: tuple[int, ...]) -> None:
    assert tf.bisection_links(dims, 1) == min_bisection(torus_graph(dims))


@pytest.mark.parametrize(("k", "d"), [(4, 2), (6, 2), (4, 3), (8, 3)])
def test_bisection_of_a_k_ary_d_cube(k: int, d: int) -> None:
    assert tf.bisection_links((k,) * d, 1) == 2 * k ** (d - 1)
    assert tf.bisection_links((k,) * d, 3) == 3 * 2 * k ** (d - 1)


def dor_loads(
    dims: tuple[int, ...], g: int, gpus: int | None = None
) -> dict[tuple[int, int], float]:
    """Load per directed switch pair (one link), uniform all-to-all of E GPUs at rate 1.

    GPU e sits on switch e // g (E = N g unless given: the last switches part-filled). Walks
    every switch pair's DOR path, splitting a tie (k even, k / 2 apart) half each way.
    """
    n = math.prod(dims)
    e = n * g if gpus is None else gpus
    held = [min(g, max(0, e - s * g)) for s in range(n)]
    strides = [math.prod(dims[:i]) for i in range(len(dims))]
    loads: dict[tuple[int, int], float] = {}

    def walk(v: int, dim: int, dst: int, share: float) -> None:
        if dim == len(dims):
            return
        k, s = dims[dim], strides[dim]
        a, b = (v // s) % k, (dst // s) % k
        up, down = (b - a) % k, (a - b) % k
        ways = [(1, up)] if up < down else [(-1, down)] if down < up else [(1, up), (-1, down)]
        for step, length in ways:
            part = share / len(ways)
            u = v
            for _ in range(length):
                c = (u // s) % k
                w = u + (((c + step) % k) - c) * s
                key = (u, w) if k > 2 else (min(u, w), max(u, w))
                loads[key] = loads.get(key, 0.0) + part
                u = w
            walk(u, dim + 1, dst, part)

    for src in range(n):
        for dst in range(n):
            if src != dst and held[src] and held[dst]:
                walk(src, 0, dst, held[src] * held[dst] / (e - 1))
    return loads


@pytest.mark.parametrize(
    "dims", [(4,), (5,), (4, 4), (3, 4), (2, 3), (2, 2, 2), (4, 2, 3)], ids=str
)
@pytest.mark.parametrize("g", [1, 3])
def test_load_ratio_is_the_busiest_link_under_dor(dims: tuple[int, ...], g: int) -> None:
    loads = dor_loads(dims, g)
    # A ring of 2 is one link carrying both directions' traffic in each direction: halve the
    # undirected total.
    per_direction = [v / 2 if a < b and _ring2(dims, a, b) else v for (a, b), v in loads.items()]
    assert float(tf.load_ratio(dims, g, 1)) == pytest.approx(max(per_direction), rel=1e-12)
    assert float(tf.load_ratio(dims, g, 4)) == pytest.approx(max(per_direction) / 4, rel=1e-12)


def _ring2(dims: tuple[int, ...], a: int, b: int) -> bool:
    strides = [math.prod(dims[:i]) for i in range(len(dims))]
    diff = [i for i, s in enumerate(strides) if (a // s) % dims[i] != (b // s) % dims[i]]
    return dims[diff[0]] == 2


def test_throughput_is_capped_at_line_rate() -> None:
    assert tf.throughput_fraction((4, 4), 1, 8) == 1.0
    lam = tf.load_ratio((8, 8), 16, 1)
    assert tf.throughput_fraction((8, 8), 16, 1) == pytest.approx(float(1 / lam))


def test_part_filled_switches_bound_the_load_from_above() -> None:
    """With E < N g the formula with the real E is at least the walked load of any GPU layout."""
    dims, g, gpus = (4, 3), 3, 31  # 12 switches of 3, the last one holding 1 GPU
    bound = tf.load_ratio(dims, g, 1, gpus)
    assert bound > tf.load_ratio(dims, g, 1)
    walked = dor_loads(dims, g, gpus)
    per_direction = [v / 2 if _ring2(dims, a, b) else v for (a, b), v in walked.items()]
    assert float(bound) >= max(per_direction)


def test_min_parallel_links_is_the_least_that_meets_the_ratio() -> None:
    for dims, g, ratio in [
        ((4, 4), 8, Fraction(1)),
        ((6, 3), 5, Fraction(2)),
        ((3,), 2, Fraction(1, 2)),
    ]:
        q = tf.min_parallel_links(dims, g, ratio)
        assert tf.load_ratio(dims, g, q) <= ratio
        assert q == 1 or tf.load_ratio(dims, g, q - 1) > ratio


@pytest.mark.parametrize(
    ("dims", "g", "gpus", "ratio"),
    [
        ((32, 32, 16), 64, 1_048_576, Fraction(16)),  # a million GPUs, every switch full
        ((25, 21, 20), 100, 1_048_576, Fraction(7, 3)),  # the last switch part-filled
        ((2, 9), 7, 120, Fraction(1, 1000)),
        ((5,), 1, 5, Fraction(3)),  # load under the ratio: one link
        ((1, 4), 3, None, Fraction(2, 7)),  # a dimension of one switch carries nothing
    ],
)
def test_min_parallel_links_in_integers_is_the_least_q_of_the_exact_ratio(
    dims: tuple[int, ...], g: int, gpus: int | None, ratio: Fraction
) -> None:
    q = tf.min_parallel_links(dims, g, ratio, gpus)
    assert tf.load_ratio(dims, g, q, gpus) <= ratio
    assert q == 1 or tf.load_ratio(dims, g, q - 1, gpus) > ratio


def test_ordered_dims_lists_every_factorisation() -> None:
    got = sorted(tf.ordered_dims(12))
    assert got == sorted([(12,), (2, 6), (6, 2), (3, 4), (4, 3), (2, 2, 3), (2, 3, 2), (3, 2, 2)])
    assert list(tf.ordered_dims(7)) == [(7,)]


def test_folded_rings_keep_neighbours_two_positions_apart() -> None:
    for k in range(2, 12):
        c = np.arange(k)
        pos = tf.fold(c, k)
        assert sorted(pos.tolist()) == list(range(k))
        assert max(abs(int(pos[i]) - int(pos[(i + 1) % k])) for i in range(k)) <= 2


# ---- the sizing against brute force ---------------------------------------------------------------
CAGE = cb.Cage("osfp", 100)
MEDIA = (
    cb.MediumOption("copper", 50.0, 0.1, 0.0, 0, reach_m=3.0, copper=True),
    cb.MediumOption("aec", 150.0, 6.0, 0.0, 20, reach_m=7.0, copper=True),
    cb.MediumOption("optic", 400.0, 12.0, 30.0, 80, reach_m=200.0),
)
SWITCHES = (
    tf.SwitchChoice("small", 16, 5_000.0, 200.0, 400, CAGE),
    tf.SwitchChoice("large", 32, 12_000.0, 350.0, 500, CAGE),
)
FLOOR = tf.Floor(
    gpus_per_rack=8, racks_per_row=4, rack_width_m=0.6, row_pitch_m=2.4, in_rack_m=2.0, slack_m=1.0
)


def problem(gpus: int, **requirements: object) -> tf.TorusProblem:
    return tf.TorusProblem(
        gpus=gpus,
        options=(
            tf.PlaneOption(1, 400, SWITCHES, MEDIA),
            tf.PlaneOption(2, 200, SWITCHES, MEDIA),
        ),
        floor=FLOOR,
        requirements=tf.Requirements(**requirements),  # type: ignore[arg-type]
        energy_usd_per_w=4.5,
    )


def brute_force(
    p: tf.TorusProblem, leave_out: frozenset[str] = frozenset()
) -> tuple[float, tf.Candidate] | None:
    """Every plane option, switch, ordered dims of N <= E switches and q up to the radix.

    ``leave_out`` names rules not applied (``RULES``), to show each one binds.
    """
    m = tf.build(p)
    r = p.requirements
    best: tuple[float, tf.Candidate] | None = None
    for oi, o in enumerate(p.options):
        for si, s in enumerate(o.switches):
            for n in range(2, p.gpus + 1):
                g = -(-p.gpus // n)
                for dims in tf.ordered_dims(n, 3):
                    for q in range(1, s.radix + 1):
                        c = tf.Candidate(o.planes, s, dims, g, q)
                        pr = tf.price(m, oi, si, c)
                        if pr is None:
                            continue
                        broken = {
                            "fits_ports": not tf.fits_ports(c),
                            "min_parallel_links": tf.load_ratio(dims, g, q, p.gpus)
                            > r.max_load_ratio,
                            "meets_hops": not tf.meets_hops(dims, r),
                            "meets_failure": not tf.meets_failure(o.planes, r),
                            "meets_latency": not tf.meets_latency(pr.max_latency_ns, r),
                            "meets_caps": not tf.meets_caps(pr.capex_usd, pr.power_w, r),
                        }
                        if any(v for k, v in broken.items() if k not in leave_out):
                            continue
                        if best is None or pr.objective_usd < best[0]:
                            best = (pr.objective_usd, c)
    return best


CASES = {
    "plain-48": (48, {}),
    "ratio-2-60": (60, {"max_load_ratio": Fraction(2)}),
    "hops-3-40": (40, {"max_switch_hops": 3}),
    "failure-36": (
        36,
        {"min_fraction_after_failure": Fraction(1, 2), "max_load_ratio": Fraction(3)},
    ),
    "latency-64": (64, {"max_latency_ns": 2500.0, "max_load_ratio": Fraction(2)}),
    "power-cap-32": (32, {"max_power_w": 2_000.0}),
    "infeasible-hops": (64, {"max_switch_hops": 2, "max_load_ratio": Fraction(1, 4)}),
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.slow
def test_the_optimum_equals_brute_force(case: str) -> None:
    gpus, req = CASES[case]
    p = problem(gpus, **req)
    sol = tf.solve(tf.build(p))
    expected = brute_force(p)
    if expected is None:
        assert sol.status is Status.INFEASIBLE
        assert sol.priced is None
        assert sol.reason
        return
    assert sol.status is Status.OPTIMAL
    assert sol.priced is not None
    assert sol.priced.objective_usd == pytest.approx(expected[0], rel=OBJECTIVE_RTOL)
    assert sol.bound_usd == pytest.approx(expected[0], rel=OBJECTIVE_RTOL)


def test_a_hand_checked_ring() -> None:
    """Four GPUs, one switch model of 4 ports, copper only: the cheapest is a ring of 2 switches.

    N = 2 switches of g = 2 GPUs, dims (2,): one torus link pair, ports 2 + q <= 4. Load ratio
    2 * 4 * 1 / (3 * 2 * 1 * q) = 4 / (3 q): q = 2 meets 1. Cost: 2 switches + 4 GPU links + 2
    torus links; every link in one rack (in_rack 2 m, copper reaches 3 m).
    """
    sw = tf.SwitchChoice("s", 4, 1_000.0, 0.0, 100, None)
    copper = cb.MediumOption("copper", 10.0, 0.0, 0.0, 0, reach_m=3.0, copper=True)
    p = tf.TorusProblem(
        gpus=4,
        options=(tf.PlaneOption(1, 400, (sw,), (copper,)),),
        floor=FLOOR,
        requirements=tf.Requirements(),
        energy_usd_per_w=1.0,
    )
    sol = tf.solve(tf.build(p))
    assert sol.status is Status.OPTIMAL
    assert sol.priced is not None
    c = sol.priced.candidate
    assert (c.dims, c.gpus_per_switch, c.parallel_links) == ((2,), 2, 2)
    assert sol.priced.objective_usd == pytest.approx(2 * 1_000 + (4 + 2) * 2 * 10.0)


def test_loosening_the_ratio_never_costs_more() -> None:
    tight = tf.solve(tf.build(problem(48, max_load_ratio=Fraction(1))))
    loose = tf.solve(tf.build(problem(48, max_load_ratio=Fraction(4))))
    assert tight.priced is not None
    assert loose.priced is not None
    assert loose.priced.objective_usd <= tight.priced.objective_usd


def test_a_time_limit_of_zero_proves_nothing() -> None:
    sol = tf.solve(tf.build(problem(48)), time_limit_s=0.0)
    assert sol.status is Status.TIME_LIMIT
    assert sol.priced is None


def test_no_medium_that_reaches_means_no_torus() -> None:
    short = (replace(MEDIA[0], reach_m=0.5),)
    p = replace(problem(48), options=(tf.PlaneOption(1, 400, SWITCHES, short),))
    sol = tf.solve(tf.build(p))
    assert sol.status is Status.INFEASIBLE


#: The model's rules (one function each) and a case where each binds: leaving it out changes
#: the optimum (a cheaper structure that breaks it) or makes an infeasible case feasible.
RULES = {
    "fits_ports": (40, {"max_load_ratio": Fraction(1, 2)}),
    "min_parallel_links": (48, {"max_load_ratio": Fraction(1, 2)}),
    "meets_hops": (96, {"max_switch_hops": 3, "max_load_ratio": Fraction(2)}),
    "meets_failure": (48, {"min_fraction_after_failure": Fraction(1, 2)}),
    "meets_latency": (64, {"max_latency_ns": 1660.0}),
    "meets_caps": (64, {"max_power_w": 1_300.0, "max_load_ratio": Fraction(2)}),
}


def test_every_rule_has_a_binding_case() -> None:
    rules = {name for name, _ in vars(tf).items() if name.startswith(("fits_", "meets_"))}
    assert rules | {"min_parallel_links"} == set(RULES)


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.slow
def test_the_rule_binds(rule: str) -> None:
    gpus, req = RULES[rule]
    p = problem(gpus, **req)
    with_rule = brute_force(p)
    without = brute_force(p, frozenset({rule}))
    assert without is not None
    sol = tf.solve(tf.build(p))
    if with_rule is None:
        assert sol.status is Status.INFEASIBLE
        return
    assert sol.priced is not None
    assert sol.priced.objective_usd == pytest.approx(with_rule[0], rel=OBJECTIVE_RTOL)
    assert without[0] < with_rule[0] * (1 - OBJECTIVE_RTOL)

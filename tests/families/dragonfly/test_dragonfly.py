"""The dragonfly family: published arithmetic, the model against brute force, binding rules."""

from __future__ import annotations

import itertools
import math
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from models import torus_fabric as tf
from models.dragonfly import layout as ly
from models.dragonfly import model as dm
from models.dragonfly import structure as st
from models.status import Status
from planner.families.dragonfly.wiring import parse_dragonfly_wiring

#: Relative tolerance between two objectives that must agree.
OBJECTIVE_RTOL = 1e-9

#: Kim et al. (ISCA 2008): radix-64 routers in a balanced dragonfly reach "over 256K" nodes.
KIM_RADIX_64_NODES = 256 * 1024
#: HPE/Cray Slingshot: 64-port Rosetta, 16 endpoints, 31 local and 17 global ports per switch,
#: 32 switches per group, "a maximum scale of 545 groups, each with 512 endpoints"
#: (https://glennklockwood.com/garden/slingshot; De Sensi et al., "An In-Depth Analysis of the
#: Slingshot Interconnect", SC20). The same page also says 278,528 endpoints, which is 544
#: groups of 512: the 545 groups it states are the wiring rule's a h + 1 = 32 x 17 + 1.
SLINGSHOT_MAX_ENDPOINTS = 279_040


def test_balanced_radix_64_reaches_262656_endpoints() -> None:
    p, a, h = st.balanced(64)
    assert (p, a, h) == (16, 32, 16)
    assert st.ports_per_switch(p, a, 1, h) == 63 <= 64
    assert st.max_endpoints(p, a, h) == 16 * 32 * 513 == 262_656
    assert st.max_endpoints(p, a, h) > KIM_RADIX_64_NODES


def test_slingshot_maximum_is_the_17th_global_port() -> None:
    # The brief's 16 down + 31 local + 16 global uses 63 of 64 ports: 262,656 endpoints. The
    # published maximum needs the 64th port as a 17th global link: 545 groups.
    assert st.max_endpoints(16, 32, 16) == 262_656
    assert st.ports_per_switch(16, 32, 1, 17) == 64
    assert st.max_groups(32, 17) == 545
    assert st.max_endpoints(16, 32, 17) == SLINGSHOT_MAX_ENDPOINTS


@pytest.mark.parametrize(("a", "g", "m"), [(4, 5, 1), (4, 9, 1), (3, 4, 2), (2, 3, 4), (8, 3, 8)])
def test_global_ends_join_every_pair_m_times_within_h_ports(a: int, g: int, m: int) -> None:
    i, si, j, sj = st.global_ends(a, g, m)
    assert i.size == st.global_links(g, m)
    pairs = {(int(x), int(y)) for x, y in zip(i, j, strict=True)}
    assert pairs == {(x, y) for x in range(g) for y in range(x + 1, g)}
    per_switch: dict[tuple[int, int], int] = {}
    for grp, sw in itertools.chain(zip(i, si, strict=True), zip(j, sj, strict=True)):
        per_switch[int(grp), int(sw)] = per_switch.get((int(grp), int(sw)), 0) + 1
    assert max(per_switch.values()) == st.global_ports(a, g, m)
    assert g <= st.max_groups(a, st.global_ports(a, g, m))


# ---- the model ------------------------------------------------------------------------------------
def _problem(gpus: int, radix: int, **req: Any) -> dm.DragonflyProblem:
    media = (
        tf.cb.MediumOption("copper", 50.0, 0.1, 0.0, 0, 3.0, copper=True),
        tf.cb.MediumOption("optic", 400.0, 8.0, 60.0, 100, 500.0),
    )
    switches = (
        tf.SwitchChoice("small", radix, 10_000.0, 300.0, 300),
        tf.SwitchChoice("big", 2 * radix, 30_000.0, 700.0, 400),
    )
    floor = tf.Floor(16, 8, 0.6, 2.4, 2.0, 3.0, 1.1)
    return dm.DragonflyProblem(
        gpus, 1, 400, switches, media, floor, dm.Requirements(**req), energy_usd_per_w=5.0
    )


def _brute_force(pr: dm.DragonflyProblem) -> float:
    """Every (switch, p, a, g) up to the port limits priced: the least objective."""
    model = dm.build(pr)
    best = math.inf
    for si, s in enumerate(pr.switches):
        for p in range(1, s.radix + 1):
            for a in range(2, s.radix - p + 2):
                g0 = max(2, st.groups_needed(pr.gpus, p, a))
                for g in range(g0, g0 + 6):
                    c = dm.candidate_of(pr, s, p, a, g)
                    priced = None if c is None else dm.price(model, si, c)
                    if priced is None or not dm.meets_latency(
                        priced.max_latency_ns, pr.requirements
                    ):
                        continue
                    if dm.meets_caps(priced.capex_usd, priced.power_w, pr.requirements):
                        best = min(best, priced.objective_usd)
    return best


@pytest.mark.slow
@pytest.mark.parametrize(("gpus", "radix"), [(40, 12), (96, 16), (150, 12)])
def test_the_model_finds_the_brute_force_optimum(gpus: int, radix: int) -> None:
    pr = _problem(gpus, radix)
    sol = dm.solve(dm.build(pr))
    assert sol.status is Status.OPTIMAL
    assert sol.priced is not None
    assert sol.priced.objective_usd == pytest.approx(_brute_force(pr), rel=OBJECTIVE_RTOL)
    assert sol.bound_usd == pytest.approx(sol.priced.objective_usd, rel=OBJECTIVE_RTOL)


def _solved(pr: dm.DragonflyProblem) -> dm.Candidate:
    sol = dm.solve(dm.build(pr))
    assert sol.priced is not None
    return sol.priced.candidate


def test_radix_binds() -> None:
    c = _solved(_problem(96, 16))
    assert st.ports_per_switch(c.p, c.a, c.q, c.h) <= c.switch.radix
    small = _problem(96, 16)
    only_small = replace(small, switches=small.switches[:1])
    d = _solved(only_small)
    assert st.ports_per_switch(d.p, d.a, d.q, d.h) <= 16
    tiny = replace(small, switches=(tf.SwitchChoice("tiny", 3, 1.0, 1.0, 1),))
    assert dm.solve(dm.build(tiny)).status is Status.INFEASIBLE


def test_endpoints_bind() -> None:
    for gpus in (40, 41, 97):
        c = _solved(_problem(gpus, 12))
        assert c.a * c.p * c.g >= gpus


def test_ratio_binds_global_links() -> None:
    loose = _solved(_problem(96, 16, max_ratio=4.0))
    tight = _solved(_problem(96, 16, max_ratio=0.5))
    for c, limit in ((loose, 4.0), (tight, 0.5)):
        assert st.global_ratio(c.p, c.a, c.m, 96) <= limit * (1 + 1e-9)
        assert st.local_ratio(c.p, c.a, c.g, c.q, c.m, 96) <= limit * (1 + 1e-9)
    looser = dm.solve(dm.build(_problem(96, 16, max_ratio=4.0))).priced
    tighter = dm.solve(dm.build(_problem(96, 16, max_ratio=0.5))).priced
    assert looser is not None
    assert tighter is not None
    assert looser.objective_usd < tighter.objective_usd


def test_max_groups_and_global_ports_bind() -> None:
    c = _solved(_problem(150, 12))
    assert c.m >= 1
    assert c.g <= st.max_groups(c.a, c.h)
    assert dm.within_max_groups(replace(c, g=st.max_groups(c.a, c.h) + 1, m=0)) is False


def test_hops_bind() -> None:
    assert dm.solve(dm.build(_problem(96, 16, max_switch_hops=1))).status is Status.INFEASIBLE
    c = _solved(_problem(96, 16, max_switch_hops=3))
    assert st.switch_hops(c.a, c.g, c.m) <= 3


@pytest.mark.slow
def test_latency_and_caps_bind() -> None:
    free = dm.solve(dm.build(_problem(96, 16))).priced
    assert free is not None
    assert (
        dm.solve(dm.build(_problem(96, 16, max_latency_ns=free.max_latency_ns / 4))).status
        is Status.INFEASIBLE
    )
    assert (
        dm.solve(dm.build(_problem(96, 16, max_capex_usd=free.capex_usd / 2))).status
        is Status.INFEASIBLE
    )


@pytest.mark.parametrize(("p", "a", "g"), [(2, 4, 5), (4, 8, 9), (3, 6, 40), (8, 4, 30)])
def test_the_longest_global_link_bound_is_below_the_laid_out_one(p: int, a: int, g: int) -> None:
    floor = _problem(96, 16).floor
    longest = ly.lengths(floor, p, a, g, 1, a * p * g).global_m.max()
    assert ly.min_longest_global_m(floor, p, a, g) <= longest


def test_reach_binds() -> None:
    """Rows 2.4 m apart and 6 groups of one rack a row: the first and last are 5 rows apart."""
    pr = _problem(96, 16)
    far = replace(pr, floor=replace(pr.floor, racks_per_row=1))
    assert dm.solve(dm.build(far)).priced is not None  # the 500 m optic reaches
    short = replace(far, media=far.media[:1])  # copper alone, 3 m: no global link reaches
    sol = dm.solve(dm.build(short))
    assert sol.status is Status.INFEASIBLE
    assert "no medium reaches across the floor" in sol.reason
    assert _brute_force(short) == math.inf


def test_failure_binds() -> None:
    pr = _problem(96, 16, min_fraction_after_failure=0.5)
    assert dm.solve(dm.build(pr)).status is Status.INFEASIBLE
    assert dm.solve(dm.build(replace(pr, planes=2))).priced is not None


@pytest.mark.parametrize(
    "params",
    [
        {"gpus_per_switch": 1},
        {
            "gpus_per_switch": 2,
            "switches_per_group": 1,
            "groups": 2,
            "global_links_per_pair": 1,
            "local_links_per_pair": 1,
        },
        {
            "gpus_per_switch": 2,
            "switches_per_group": 2,
            "groups": 2,
            "global_links_per_pair": 0,
            "local_links_per_pair": 1,
        },
        {
            "gpus_per_switch": 2,
            "switches_per_group": 2,
            "groups": 2,
            "global_links_per_pair": 1,
            "local_links_per_pair": 1,
            "x": 1,
        },
    ],
)
def test_the_wiring_parser_refuses_bad_parameters(params: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="dragonfly wiring"):
        parse_dragonfly_wiring(params)


# ---- balanced and Slingshot shapes, planned and simulated (issue 33) --------------------------------
#: A balanced dragonfly carries the group shift at about half of line rate (Kim et al.): its global
#: bandwidth is its injection bandwidth, and the shift needs twice that.
BALANCED_SHIFT = 0.5
#: ... and a random permutation, which UGAL spreads over one and two global links.
BALANCED_PERMUTATION = 0.5


def _balanced_problem(groups: int) -> dm.DragonflyProblem:
    """Radix-16 switches pinned to p = 4, a = 8, h = 4 (a = 2 p = 2 h), UGAL-G, ratio 2."""
    pr = _problem(32 * groups, 16, max_ratio=2.0, routing=st.UGAL_G)
    pins = dm.Pins(gpus_per_switch=4, switches=8 * groups, switch_ports=11, local_links_per_pair=1)
    return replace(pr, switches=pr.switches[:1], pins=pins)


def _simulated(c: dm.Candidate, gpus: int, src: np.ndarray, dst: np.ndarray) -> float:
    from planner.families.dragonfly.routing import routed_plane
    from planner.families.dragonfly.wiring import DragonflyWiring
    from planner.sim.routing import Routing, route

    w = DragonflyWiring(c.p, c.a, c.g, c.m, c.q, st.UGAL_G, st.BLOCKS)
    plane = routed_plane(w, gpus, 400.0).adapted(src, dst, np.ones(src.size))
    routes = route(plane, src, dst, Routing.SPRAY)
    assert routes.connected.all()
    return float(min(1.0, 1.0 / routes.load(np.ones(src.size)).max()))


def test_a_pinned_balanced_dragonfly_is_planned_and_carries_the_shift_at_half_rate() -> None:
    sol = dm.solve(dm.build(_balanced_problem(9)))
    assert sol.priced is not None
    c = sol.priced.candidate
    assert (c.p, c.a, c.h, c.q) == (4, 8, 4, 1)
    assert c.a == 2 * c.p == 2 * c.h
    gpus = 32 * 9
    src = np.arange(gpus)
    assert _simulated(c, gpus, src, (src + 32) % gpus) >= BALANCED_SHIFT
    perm = np.random.default_rng(1).permutation(gpus)
    keep = perm != src
    assert _simulated(c, gpus, src[keep], perm[keep]) >= BALANCED_PERMUTATION


def test_larger_balanced_dragonflies_need_more_than_ratio_2_on_their_local_links() -> None:
    """17 groups: two links per pair, lambda_L = (n + 2 p (h + k)) / (g m q) = 72 / 34 > 2."""
    sol = dm.solve(dm.build(_balanced_problem(17)))
    assert sol.status is Status.INFEASIBLE
    assert st.local_load_ratio(4, 8, 17, 1, 2, 32 * 17, st.UGAL_G) == pytest.approx(72 / 34)


@pytest.mark.slow
def test_the_slingshot_example_is_planned_in_its_published_shape_and_meets_its_verify() -> None:
    from planner.api import load_instance, plan

    result = plan(load_instance("instances/dragonfly-slingshot.toml"), alternatives=False)
    assert result.design is not None
    w = result.design.wiring
    shape = (w.gpus_per_switch, w.switches_per_group, w.groups, w.local_links_per_pair)  # type: ignore[attr-defined]
    assert shape == (16, 32, 16, 1)
    h = w.global_ports  # type: ignore[attr-defined]
    assert (h, st.ports_per_switch(16, 32, 1, h)) == (16, 63)
    assert w.routing == st.UGAL_G  # type: ignore[attr-defined]
    assert result.sim is not None
    assert result.sim.verdict == "meets"

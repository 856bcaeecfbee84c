"""Spraying loads factored by tier equal the sum of the per-pair routes (issue 11).

``planner.sim.spray_loads.link_loads`` sums a sprayed phase's climbs and descents tier by tier;
``route(...).load`` builds every flow's fractions. On every fabric of the routing tests, healthy
and failed, with random flows and weights, the two give the same load on every link (or the
factored form declines, and then says so by returning None).
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from planner.sim.routing import Routing, route
from planner.sim.spray_loads import link_loads, path_max
from planner.sim.streamed import path_max as streamed_path_max
from tests.sim.test_routing import ANY, HEALTHY, planned, random_flows

#: Loads are the same sums in another order.
LOAD_RTOL = 1e-9


def _check(fabric, src, dst, seed: int) -> bool:
    rng = np.random.default_rng(seed)
    gbit = rng.uniform(0.5, 2.0, src.size)
    got = link_loads(fabric, src, dst, [gbit, np.ones(src.size)])
    if got is None:
        return False
    connected, (load, count) = got
    routes = route(fabric, src, dst, Routing.SPRAY)
    assert connected.tolist() == routes.connected.tolist()
    want = routes.load(np.where(routes.connected, gbit, 0.0))
    assert np.allclose(load, want, rtol=LOAD_RTOL, atol=LOAD_RTOL * want.max())
    want_count = routes.weight(routes.connected)
    assert np.allclose(count, want_count, rtol=LOAD_RTOL, atol=LOAD_RTOL)
    return True


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(ANY))
def test_factored_loads_equal_routed_loads(
    name: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 700, seed)
    factored = _check(fabric, src, dst, seed)
    if name in HEALTHY:
        assert factored, "a healthy Clos always factors"


@pytest.mark.parametrize("shape", [(512, 3, 1.0), (256, 2, (2.0, 1.0)), (1024, 3, 1.0)], ids=str)
def test_a_permutation_on_a_planned_clos_factors(shape) -> None:
    fabric = planned(*shape)[0]
    rng = np.random.default_rng(3)
    src = np.arange(fabric.gpus)
    dst = rng.permutation(fabric.gpus)
    assert _check(fabric, src, dst, 3)


def test_a_flow_between_gpus_of_one_leaf_loads_only_its_nic_links() -> None:
    fabric = planned(256, 2)[0]
    src, dst = np.array([0]), np.array([1])
    assert fabric.leaf_of(src)[0] == fabric.leaf_of(dst)[0]
    connected, (load,) = link_loads(fabric, src, dst, [np.array([3.0])])
    assert connected.tolist() == [True]
    assert np.flatnonzero(load).tolist() == [0, 3]
    assert load.sum() == pytest.approx(6.0)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", sorted(ANY))
def test_factored_path_max_equals_routed_path_max(
    name: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The largest value over each flow's sprayed links, factored and from the routes."""
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 500, seed)
    value = np.random.default_rng(seed).uniform(0.0, 1.0, fabric.links)
    got = path_max(fabric, src, dst, value)
    if got is None:
        assert name not in HEALTHY
        return
    connected, largest = got
    routes = route(fabric, src, dst, Routing.SPRAY)
    assert connected.tolist() == routes.connected.tolist()
    want = np.where(routes.connected, streamed_path_max(routes, value), 0.0)
    assert largest.tolist() == want.tolist()

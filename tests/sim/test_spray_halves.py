"""Spraying patterns held in halves (issue 11) equal the per-pair walk, on every test fabric.

The halves share a climb among source leaves with the same parents and a descent among
destinations reached with the same turning masses; brute force here is the per-pair walk
(``spray_patterns``), forced by switching the halves off.
"""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim import routing, spray_patterns
from planner.sim.flow import EVENT_RTOL, completion_times
from planner.sim.routing import Routing, route
from tests.sim.test_routing import ANY, HEALTHY, dense, random_flows

#: Fractions of the two representations agree to float summation order.
FRAC_TOL = 1e-12
#: Completion times agree to the accuracy of the re-sharing loop: completions within EVENT_RTOL
#: of an event finish with it, so last-bit differences in loads can move a time by that much.
TIME_RTOL = EVENT_RTOL


def both(monkeypatch: pytest.MonkeyPatch, name: str, flows: int, seed: int):  # type: ignore[no-untyped-def]
    fabric = ANY[name]()
    src, dst = random_flows(fabric, flows, seed)
    monkeypatch.setattr(spray_patterns, "HALVES_MIN_PAIRS", 0)
    halves = route(fabric, src, dst, Routing.SPRAY)
    monkeypatch.setattr(routing, "spray_halves", lambda *a: None)
    per_pair = route(fabric, src, dst, Routing.SPRAY)
    return fabric, src, dst, halves, per_pair


@pytest.mark.parametrize("name", sorted(ANY))
def test_halves_equal_the_per_pair_walk(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    _, _, _, halves, per_pair = both(monkeypatch, name, 600, 3)
    assert per_pair.flow_pattern_down is None
    np.testing.assert_allclose(dense(halves), dense(per_pair), rtol=0, atol=FRAC_TOL)
    assert np.array_equal(halves.connected, per_pair.connected)


@pytest.mark.parametrize("name", sorted(HEALTHY))
def test_halves_are_used_and_smaller_on_healthy_clos(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    fabric, _, _, halves, per_pair = both(monkeypatch, name, 600, 5)
    if fabric.tiers < 2 or per_pair.patterns is None:
        pytest.skip("no cross-leaf pattern")
    assert halves.flow_pattern_down is not None
    assert halves.patterns is not None
    assert halves.patterns.nnz <= per_pair.patterns.nnz


@pytest.mark.parametrize("name", ["planned-256-3t", "planned-256-3t-failed", "3t-failed-mixed"])
@pytest.mark.slow
def test_completion_times_equal(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    fabric, _, _, halves, per_pair = both(monkeypatch, name, 800, 7)
    size = np.random.default_rng(1).uniform(1e6, 4e6, halves.flows)
    a = completion_times(halves, fabric.capacity_gbps, size)
    b = completion_times(per_pair, fabric.capacity_gbps, size)
    assert a.exact
    assert b.exact
    np.testing.assert_allclose(a.time_s, b.time_s, rtol=TIME_RTOL)
    np.testing.assert_allclose(a.initial_rate_gbps, b.initial_rate_gbps, rtol=TIME_RTOL)

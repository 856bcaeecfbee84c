"""The streamed phase: exact time from link loads, chunked routing, per-flow upper bounds."""

from __future__ import annotations

import math
from dataclasses import replace
from functools import cache

import numpy as np
import pytest

from planner.sim import collectives, traffic_patterns
from planner.sim.flow import Completion, completion_times
from planner.sim.phase_runs import run_phase
from planner.sim.routing import Routing, route
from planner.sim.streamed import gbit_of, streamed_phase, streamed_plane
from tests.sim.test_routing import planned

#: Relative agreement of the closed form with re-sharing: re-sharing merges completions within
#: ``EVENT_RTOL`` (1e-4) of each other, so its times are that accurate.
CLOSED_FORM_RTOL = 2e-4

TRAFFICS = {
    "permutation": lambda g: traffic_patterns.random_permutation(g, 2**24, 3),
    "all_to_all": lambda g: collectives.all_to_all(np.arange(g).reshape(-1, 64), 2**22),
    "ring": lambda g: collectives.ring_all_reduce([np.arange(g)], 2**26),
}
FABRICS = {"512x3": (512, 3), "1024x2": (1024, 2)}


@cache
def re_shared(fabric_name: str, traffic: str, routing: Routing) -> Completion:
    """The reference: every flow re-shared at every completion (seed 5)."""
    fabric = planned(*FABRICS[fabric_name])[0]
    phase = TRAFFICS[traffic](fabric.gpus).phases[0]
    routes = route(fabric, phase.src, phase.dst, routing, seed=5)
    return completion_times(routes, fabric.capacity_gbps, phase.size_bytes)


#: (routing, how a streamed phase gets its loads): spraying is factored by tier on a Clos
#: (``planner.sim.spray_loads``) unless that is turned off, when it is routed in chunks too.
MODES = [(Routing.ECMP, "routed"), (Routing.SPRAY, "routed"), (Routing.SPRAY, "factored")]


@pytest.mark.parametrize(("routing", "mode"), MODES, ids=lambda x: str(x))
@pytest.mark.parametrize("traffic", sorted(TRAFFICS))
@pytest.mark.parametrize("fabric_name", sorted(FABRICS))
@pytest.mark.parametrize(("chunk", "leaf_block"), [(97, 0), (10**9, 0), (500, 3)])
def test_streamed_time_equals_re_sharing(
    fabric_name: str,
    traffic: str,
    routing: Routing,
    mode: str,
    chunk: int,
    leaf_block: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if mode == "routed":
        monkeypatch.setattr("planner.sim.spray_loads.link_loads", lambda *a, **k: None)
    fabric = planned(*FABRICS[fabric_name])[0]
    phase = TRAFFICS[traffic](fabric.gpus).phases[0]
    gbit = gbit_of(phase.size_bytes) * np.ones(phase.flows)
    ids = np.arange(phase.flows)
    full = re_shared(fabric_name, traffic, routing)
    run = streamed_plane(
        fabric,
        phase.src,
        phase.dst,
        gbit,
        routing,
        5,
        chunk_flows=chunk,
        sample=ids,
        leaf_block=leaf_block,
    )
    assert run.exact
    if mode == "factored":
        assert run.chunks == 0
    elif leaf_block == 0:
        assert run.chunks == -(-phase.flows // min(chunk, phase.flows))
    else:  # one chunk or more per tile of leaves that has flows
        assert run.chunks >= -(-phase.flows // chunk)
    assert run.time_s == pytest.approx(full.phase_time_s, rel=CLOSED_FORM_RTOL)
    # Every flow's bound is an upper bound on its re-shared time, and the largest is attained.
    assert np.all(run.sample_times_s >= full.time_s * (1 - CLOSED_FORM_RTOL))
    assert run.sample_times_s.max() == pytest.approx(run.time_s, rel=1e-9)


@pytest.mark.parametrize("routing", list(Routing))
def test_unequal_shares_are_bracketed(routing: Routing) -> None:
    fabric = planned(512, 3)[0]
    phase = TRAFFICS["all_to_all"](fabric.gpus).phases[0]
    rng = np.random.default_rng(0)
    gbit = gbit_of(phase.size_bytes) * rng.choice([1.0, 2.0], size=phase.flows)
    full = completion_times(
        route(fabric, phase.src, phase.dst, routing, seed=1), fabric.capacity_gbps, gbit * 1e9 / 8
    )
    sample = np.arange(0, phase.flows, 7)
    run = streamed_plane(
        fabric, phase.src, phase.dst, gbit, routing, 1, chunk_flows=5_000, sample=sample
    )
    assert not run.exact
    assert run.time_s >= full.phase_time_s * (1 - CLOSED_FORM_RTOL)
    assert np.all(run.sample_times_s >= full.time_s[sample] * (1 - CLOSED_FORM_RTOL))


def _phase_cases() -> list[tuple[int, int, str]]:
    """(planes, planes lost, failure): healthy, links down, a leaf cut off, a plane lost."""
    return [(1, 0, "none"), (1, 0, "spine_links"), (2, 0, "leaf"), (1, 0, "leaf"), (3, 1, "none")]


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize(("planes", "lost", "failure"), _phase_cases())
def test_streamed_phase_matches_run_phase(
    routing: Routing, planes: int, lost: int, failure: str
) -> None:
    fabric = replace(planned(512, 3)[0], planes=planes)
    phase = traffic_patterns.random_permutation(fabric.gpus, 2**24, 4).phases[0]
    first_leaf = fabric.tier_offsets[1]
    if failure == "spine_links":  # every other uplink of the first eight leaves
        ups = np.flatnonzero(np.isin(fabric.lower, np.arange(first_leaf, first_leaf + 8)))
        failed = fabric.with_failed_links(np.unique(ups // 2)[::2])
    elif failure == "leaf":
        failed = fabric.with_failed_switches([first_leaf])
    else:
        failed = None
    ref = run_phase(fabric, phase, routing, 2, failed=failed, planes_lost=lost)
    run = streamed_phase(
        fabric,
        phase.src,
        phase.dst,
        phase.size_bytes,
        routing,
        2,
        chunk_flows=61,
        sample=np.arange(phase.flows),
        failed=failed,
        planes_lost=lost,
    )
    assert run.disconnected == ref.disconnected
    if math.isinf(ref.time_s):
        assert math.isinf(run.time_s)
    else:
        assert run.time_s >= ref.time_s * (1 - CLOSED_FORM_RTOL)
        if run.exact:
            assert run.time_s == pytest.approx(ref.time_s, rel=CLOSED_FORM_RTOL)
    finite = np.isfinite(ref.flow_times_s)
    assert np.all(run.sample_times_s[finite] >= ref.flow_times_s[finite] * (1 - CLOSED_FORM_RTOL))
    assert np.all(np.isinf(run.sample_times_s[~finite]))

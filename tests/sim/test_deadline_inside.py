"""The time limit stops a step while it runs, not only between steps (issue 11).

Inside a step, loops check a ``Watch`` that reads the deadline's clock at most every
``POLL_S`` of real time; here ``POLL_S`` is 0, so every check reads it, and a clock that turns
past the deadline after a given number of readings makes the cut point exact.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from planner.deadline import Deadline, DeadlineExpired
from planner.families import fabric_of
from planner.sim.flow import completion_times, max_min_rates
from planner.sim.routing import Routing, route
from planner.sim.simulate import simulate
from planner.sim.verdict import INCOMPLETE
from tests.sim.test_deadline import VERIFY, design

#: A clock reading far past any deadline of these tests.
LATE_S = 1e9


def turning(readings: int) -> Callable[[], float]:
    """A clock at 0 for its first ``readings`` readings, then at ``LATE_S``."""
    count = iter(range(10**9))
    return lambda: 0.0 if next(count) < readings else LATE_S


@pytest.fixture(autouse=True)
def read_every_check(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("planner.deadline.POLL_S", 0.0)


def expired() -> Deadline:
    return Deadline(at_s=1.0, clock=turning(0))


@pytest.mark.parametrize("routing", list(Routing))
def test_route_stops_when_the_time_is_up(routing: Routing) -> None:
    fabric = fabric_of(design())
    src = np.arange(fabric.gpus)
    dst = (src + 17) % fabric.gpus
    with pytest.raises(DeadlineExpired):
        route(fabric, src, dst, routing, deadline=expired())


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("solver", ["rates", "completion"])
def test_sharing_stops_when_the_time_is_up(routing: Routing, solver: str) -> None:
    fabric = fabric_of(design())
    src = np.arange(fabric.gpus)
    routes = route(fabric, src, (src + 17) % fabric.gpus, routing)
    size = np.full(src.size, 1e7)
    run: Callable[[], object] = (
        (lambda: max_min_rates(routes, fabric.capacity_gbps, deadline=expired()))
        if solver == "rates"
        else (lambda: completion_times(routes, fabric.capacity_gbps, size, deadline=expired()))
    )
    with pytest.raises(DeadlineExpired):
        run()


def test_without_a_limit_the_watch_never_stops_a_step() -> None:
    fabric = fabric_of(design())
    src = np.arange(fabric.gpus)
    routes = route(fabric, src, (src + 17) % fabric.gpus, Routing.SPRAY, deadline=Deadline())
    rate = max_min_rates(routes, fabric.capacity_gbps, deadline=Deadline())
    assert (rate > 0).all()


@pytest.mark.parametrize("readings", [2, 3, 6])
def test_a_step_cut_while_running_is_named_and_the_verdict_is_incomplete(readings: int) -> None:
    """The first readings are the steps' own (bound, then the ECMP run); the next one is inside."""
    sim = simulate(
        design(),
        VERIFY,
        fabric=fabric_of(design()),
        deadline=Deadline(at_s=1.0, clock=turning(readings)),
    )
    assert sim.verdict == INCOMPLETE
    assert "the time limit passed" in sim.reasons[0]
    running = [s for s in sim.cut if s.endswith("(stopped while running)")]
    assert running == ["random_permutation, ecmp (stopped while running)"]
    assert sim.collectives.height == 0  # the cut step reports no row

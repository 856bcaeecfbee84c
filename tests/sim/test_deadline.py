"""The time limit covers the whole command: simulation steps start only while time is left (issue 11).

A clock that advances one second per reading makes the cut points exact: the simulation reads
it once before each step, so a deadline of k seconds lets exactly the first steps run.
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable
from functools import cache

import pytest

from planner.api import plan
from planner.deadline import MIN_STEP_S, NO_DEADLINE, Deadline
from planner.design import Design
from planner.families import fabric_of
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.sim.phase_runs import run_traffic
from planner.sim.routing import Routing
from planner.sim.scale_up import scale_up_of
from planner.sim.simulate import simulate
from planner.sim.traffic_kinds import build_traffic
from planner.sim.verdict import INCOMPLETE

#: Two traffics under two routings, one named failure and three Monte Carlo trials: 2 bounds,
#: 4 healthy runs, 2 failure runs, 3 trials.
VERIFY = Verify.model_validate(
    {
        "traffic": [
            {"kind": "random_permutation", "size_bytes": 1e7},
            {"kind": "uniform_all_to_all", "size_bytes": 1e7},
        ],
        "routing": ["ecmp", "spray"],
        "failures": [{"switches": ["spine0"]}],
        "single_switch_failures": False,
        "monte_carlo_trials": 3,
        "bound_max_variables": 1_000_000,
    }
)
STEPS = 2 + 4 + 2 + 3


def ticking(start: float = 0.0) -> Callable[[], float]:
    """A clock that moves one second each time it is read."""
    counter = itertools.count(start)
    return lambda: float(next(counter))


def stopped() -> float:
    """A pace that never moves: no step reads the clock from inside, however long it runs."""
    return 0.0


@cache
def design() -> Design:
    inst = Instance.model_validate(
        {
            "name": "deadline",
            "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"pin": {"tiers": 2}},
        }
    )
    result = plan(inst, verify=False)
    assert result.design is not None
    return result.design


def test_a_deadline_counts_down_on_its_clock() -> None:
    d = Deadline.after(3.0, ticking())  # created at 0: ends at 3
    assert d.remaining_s() == 2.0  # read at 1
    assert not d.expired  # read at 2
    assert d.expired  # read at 3
    assert d.step_s() == MIN_STEP_S  # nothing left: a step that must run gets the floor
    assert NO_DEADLINE.remaining_s() == math.inf
    assert not NO_DEADLINE.expired


@pytest.mark.slow
def test_without_a_deadline_nothing_is_cut() -> None:
    sim = simulate(design(), VERIFY, fabric=fabric_of(design()))
    assert sim.cut == ()
    assert sim.verdict in ("meets", "fails")
    assert sim.collectives.height == 4 + 2
    assert sim.failures.height == 2 + 3


def test_a_passed_deadline_runs_no_step_and_says_so() -> None:
    sim = simulate(design(), VERIFY, fabric=fabric_of(design()), deadline=Deadline(at_s=-1.0))
    assert len(sim.cut) == 2 + 4 + 2 + 1  # Monte Carlo is one step left out as a whole
    assert sim.collectives.height == 0
    assert sim.failures.height == 0
    assert sim.verdict == INCOMPLETE
    assert "9 simulation steps" in sim.reasons[0]


@pytest.mark.parametrize("seconds", [1, 2, 3, 5, 7, 9, 10])
@pytest.mark.parametrize("loaded", [False, True], ids=["idle", "loaded"])
def test_each_step_starts_only_while_time_is_left(
    seconds: int, loaded: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Steps run in order (bound, ecmp, spray, failure; per traffic; then the trials).

    ``loaded``: real time races (a second each reading), as on a machine so busy that every
    check inside a step comes due; the cut points are the same.
    """
    if loaded:
        monkeypatch.setattr(time, "perf_counter", ticking(time.perf_counter()))
    order = [
        "bound",
        "random_permutation, ecmp",
        "random_permutation, spray",
        "failure",
        "bound",
        "uniform_all_to_all, ecmp",
        "uniform_all_to_all, spray",
        "failure",
        "trial",
        "trial",
        "trial",
    ]
    clock = ticking()
    # Read once: the next reading is 1. Only the steps' own readings move the clock: a step
    # that runs long on a loaded machine does not read it from inside (its pace stands still).
    deadline = Deadline.after(float(seconds), clock, pace=stopped)
    sim = simulate(design(), VERIFY, fabric=fabric_of(design()), deadline=deadline)
    ran = order[: seconds - 1]
    healthy = sim.collectives.filter(sim.collectives["scenario"] == "healthy")
    assert healthy.height == sum(1 for s in ran if "," in s)
    assert sim.failures.filter(sim.failures["trial"] == -1).height == ran.count("failure")
    assert sim.failures.filter(sim.failures["trial"] >= 0).height == ran.count("trial")
    assert sim.verdict in (INCOMPLETE, "fails")
    assert sim.cut  # something was left out, and it is listed
    if sim.verdict == INCOMPLETE:
        assert "the time limit passed" in sim.reasons[0]


def test_plan_shares_one_deadline_with_its_verification() -> None:
    """A deadline already passed: the search still gets its floor, the simulation nothing."""
    inst = Instance.model_validate(
        {
            "name": "deadline-plan",
            "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"pin": {"tiers": 2}},
        }
    )
    result = plan(inst, verify=True, deadline=Deadline(at_s=-1.0))
    assert result.design is not None
    assert result.sim is not None
    assert result.sim.verdict == INCOMPLETE
    assert result.summary["verdict"][0] == INCOMPLETE


@pytest.mark.parametrize("seeds", [1, 2, 5])
def test_ecmp_runs_under_every_seed_and_reports_the_median(seeds: int) -> None:
    """The row is one of the runs (the median seed's), between the least and the greatest."""
    verify = Verify.model_validate(
        {
            "traffic": [{"kind": "random_permutation", "size_bytes": 1e7}],
            "routing": ["ecmp", "spray"],
            "single_switch_failures": False,
            "ecmp_seeds": seeds,
            "seed": 7,
            # The fluid model, so the row compares with run_traffic's fluid runs.
            "fidelity": "fluid",
        }
    )
    sim = simulate(design(), verify, fabric=fabric_of(design()))
    ecmp = sim.collectives.filter(sim.collectives["routing"] == "ecmp").row(0, named=True)
    spray = sim.collectives.filter(sim.collectives["routing"] == "spray").row(0, named=True)
    assert ecmp["seeds"] == seeds
    assert spray["seeds"] == 1
    assert spray["min_time_s"] == spray["max_time_s"] == spray["time_s"]
    # The traffic is drawn once (seed 7); only the hash seed moves.
    # simulate() runs the design's scale-up domain beside the fabric: the same here.
    fabric = fabric_of(design())
    domain = scale_up_of(design(), fabric, verify.pxn)
    traffic = build_traffic(verify.traffic[0], fabric.gpus, design().gpus_per_node, 7)
    singles = [
        run_traffic(fabric, traffic, Routing.ECMP, 7 + k, scale_up=domain)[0] for k in range(seeds)
    ]
    assert ecmp["min_time_s"] == min(singles)
    assert ecmp["max_time_s"] == max(singles)
    assert ecmp["time_s"] == sorted(singles)[(seeds - 1) // 2]

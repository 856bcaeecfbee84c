"""Idle GPU time in the objective (issue 13): the ladder walk, its bound, and the shipped example."""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from typer.testing import CliRunner

from planner import api
from planner.bandwidth_loop import Planned, grid_ratio
from planner.cli import app
from planner.design import Design
from planner.idle_pricing import LADDER_STEPS, ladder, priced_table, run_priced
from planner.schema.instance import HOURS_PER_YEAR
from planner.sim.sim_tables import SimResult
from planner.workload.step import StepTime
from tests.conftest import REPO_ROOT

INSTANCES = REPO_ROOT / "instances"
PRICED = INSTANCES / "oversubscribed-4k-priced.toml"
#: Leaf radix of the stand-in model: a leaf splits its 64 ports into d down and 64 - d up.
RADIX = 64


def _base(caps: list[float], weight: float = 1.0) -> api.Instance:
    inst = api.load_instance(PRICED)
    return inst.with_changes(
        {"constraints.max_oversubscription": caps, "objective.idle_gpu_weight": weight}
    )


# --- the ladder -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("caps", "expected"),
    [
        ([2.0, 1.0], [(1.0, 1.0), (1.25, 1.0), (1.5, 1.0), (1.75, 1.0), (2.0, 1.0)]),
        ([3.0, 2.0], [(1.0, 1.0), (1.5, 1.25), (2.0, 1.5), (2.5, 1.75), (3.0, 2.0)]),
        ([1.0, 1.0], [(1.0, 1.0)] * 5),
        ([0.5, 1.0], [(0.5, 1.0)] * 5),  # a tier already under 1 keeps its cap
    ],
)
def test_ladder_runs_from_the_instance_caps_to_non_blocking(
    caps: list[float], expected: list[tuple[float, float]]
) -> None:
    # c_t(j) = 1 + (c_t - 1) j / J, index j, J = 4
    assert ladder(_base(caps)) == expected


@pytest.mark.parametrize("cap", [1.3, 2.7, 4.9, 7.0])
def test_ladder_rungs_sit_on_the_model_grid_and_never_loosen(cap: float) -> None:
    rungs = ladder(_base([cap, 1.0]))
    leaf = [r[0] for r in rungs]
    assert all(grid_ratio(x) == x for x in leaf)
    assert leaf == sorted(leaf)
    assert leaf[0] == 1.0
    assert leaf[-1] <= cap


# --- the walk, on a stand-in model ----------------------------------------------------------


class World:
    """A stand-in planner: network cost and idle fraction as functions of the leaf's down-ports.

    ``plan`` picks the cheapest leaf split d:(64 - d) within the cap (more down-ports are cheaper,
    as in the real model); ``idle`` falls as the ratio falls (the walk's bound assumes it).
    """

    def __init__(
        self, cost: Callable[[float], float], idle: Callable[[float], float], radix: int = RADIX
    ) -> None:
        self.cost, self.idle, self.radix = cost, idle, radix
        self.plans = 0

    def design(self, down: int) -> Design:
        ratio = down / (self.radix - down)
        tiers = (
            SimpleNamespace(role="leaf", downlinks=down, uplinks=self.radix - down),
            SimpleNamespace(role="spine", downlinks=self.radix, uplinks=0),
        )
        cost = self.cost(ratio)
        return cast(Design, SimpleNamespace(tiers=tiers, objective_usd=cost, capex_usd=cost))

    def plan(self, inst: api.Instance) -> Planned[None]:
        self.plans += 1
        cap = inst.constraints.oversubscription(1)
        r = self.radix
        down = max(d for d in range(1, r) if d / (r - d) <= cap * (1 + 1e-9))
        return Planned(None, self.design(down), ())

    def simulate(self, inst: api.Instance, design: Design) -> SimResult:
        return cast(SimResult, SimpleNamespace(verdict="meets"))

    def step(self, inst: api.Instance, design: Design, sim: SimResult) -> StepTime:
        t = design.tiers[0]
        idle = self.idle(t.downlinks / t.uplinks)
        return cast(StepTime, SimpleNamespace(idle_fraction=idle, step_s=1.0 / (1.0 - idle)))


def _value(inst: api.Instance, idle_fraction: float) -> float:
    w = inst.workload
    assert w is not None
    return (
        inst.cluster.gpus * w.gpu.price_usd_per_hour * inst.objective.lifetime_hours * idle_fraction
    )


def _brute_force(inst: api.Instance, world: World) -> float:
    """The least total over every rung, each planned, no bound."""
    totals = []
    for caps in ladder(inst):
        d = world.plan(inst.with_changes({"constraints.max_oversubscription": list(caps)})).design
        assert d is not None
        t = d.tiers[0]
        idle = world.idle(t.downlinks / t.uplinks)
        totals.append(d.objective_usd + inst.objective.idle_gpu_weight * _value(inst, idle))
    return min(totals)


def _random_world(rng: random.Random) -> World:
    slope = rng.uniform(1e5, 5e6)
    curve = rng.uniform(0.5, 2.0)
    base_idle = rng.uniform(0.0, 0.3)
    gain = rng.uniform(0.0, 0.4)
    return World(
        cost=lambda r: 1e7 + slope / r**curve,
        idle=lambda r: min(0.99, base_idle + gain * (r - 1.0) / r),
    )


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("weight", [0.001, 0.01, 0.1, 1.0])
def test_walk_with_its_bound_finds_the_brute_force_optimum(seed: int, weight: float) -> None:
    rng = random.Random(seed)
    inst = _base([rng.choice([1.5, 2.0, 3.0, 4.0]), 1.0], weight)
    world = _random_world(rng)
    search = run_priced(inst, world.plan, world.simulate, world.step)
    assert world.plans <= LADDER_STEPS + 1
    assert search.chosen is not None
    assert search.chosen.total_usd is not None
    assert search.chosen.total_usd == pytest.approx(_brute_force(inst, world), rel=1e-12)


def test_the_bound_stops_the_walk_when_the_floor_already_decides() -> None:
    # GPU time is cheap: rung 3's network (about $12.29M) plus the non-blocking rung's idle value
    # (w V0, a few dollars) already exceeds rung 4's total (about $12.0M + w V4), so no rung
    # below 3 can win: the walk plans rungs 0, 4 and 3 and stops.
    world = World(cost=lambda r: 1e7 + 4e6 / r, idle=lambda r: 0.1 + 0.4 * (r - 1.0) / r)
    inst = _base([2.0, 1.0], 1e-6)
    search = run_priced(inst, world.plan, world.simulate, world.step)
    assert world.plans == 3
    assert "stopped after rung 3" in search.message
    assert search.chosen is not None
    assert search.chosen.rung == 4


def test_a_rung_the_previous_design_already_meets_is_not_planned_again() -> None:
    # Leaves of 10 ports split 6:4 (1.5:1) under the 2:1 cap of rung 4, which also meets rung 3's
    # 1.75:1 and rung 2's 1.5:1: neither is planned again. Rung 1 (1.25:1) takes 5:5.
    world = World(cost=lambda r: 1e7 / r, idle=lambda r: 0.5 * (r - 1.0) / r, radix=10)
    inst = _base([2.0, 1.0], 1.0)  # idle GPUs dear: the bound never stops the walk
    search = run_priced(inst, world.plan, world.simulate, world.step)
    reused = [r for r in search.rungs if "already meets" in r.note]
    assert sorted(r.rung for r in reused) == [2, 3]
    assert world.plans == len(search.rungs) - len(reused) == 3
    top = next(r for r in search.rungs if r.rung == 4)
    assert all(r.planned is top.planned and r.total_usd == top.total_usd for r in reused)


def test_a_rung_that_fails_verify_is_not_chosen_while_one_meets() -> None:
    world = World(cost=lambda r: 1e7 / r, idle=lambda r: 0.0)

    def simulate(inst: api.Instance, design: Design) -> SimResult:
        t = design.tiers[0]
        return cast(SimResult, SimpleNamespace(verdict="fails" if t.downlinks > 32 else "meets"))

    search = run_priced(_base([2.0, 1.0], 1.0), world.plan, simulate, world.step)
    assert search.chosen is not None
    assert search.chosen.rung == 0
    assert [r.rung for r in search.rungs if r.eligible] == [0]


def test_table_has_one_row_per_rung_and_marks_the_choice() -> None:
    world = World(cost=lambda r: 1e7 + 1e6 / r, idle=lambda r: 0.2 * (r - 1.0) / r)
    inst = _base([2.0, 1.0], 0.001)
    search = run_priced(inst, world.plan, world.simulate, world.step)
    table = priced_table(search)
    assert table.height == len(search.rungs)
    assert table["rung"].to_list() == sorted(table["rung"].to_list(), reverse=True)
    assert table["chosen"].sum() >= 1
    chosen = table.filter(table["chosen"])
    assert chosen["total_usd"][0] == pytest.approx(
        min(x for x in table["total_usd"] if x is not None)
    )


# --- bad input ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"search.until_verified": True}, "choose one"),
        ({"workload": None}, "add one"),
    ],
)
def test_pricing_needs_a_workload_and_excludes_the_bandwidth_loop(
    changes: dict[str, Any], expected: str
) -> None:
    inst = api.load_instance(PRICED).with_changes(changes)
    with pytest.raises(api.InputError, match=expected):
        api.plan(inst)


def test_pricing_without_the_simulation_is_refused_with_exit_2(tmp_path: Path) -> None:
    out = CliRunner().invoke(app, ["solve", str(PRICED), "--no-verify", "-o", str(tmp_path / "o")])
    assert out.exit_code == 2
    assert "objective.idle_gpu_weight" in out.output
    assert not (tmp_path / "o" / "report.md").exists()


# --- the shipped example (acceptance) -------------------------------------------------------


@pytest.fixture(scope="module")
def priced_plans() -> dict[float, api.PlanResult]:
    inst = api.load_instance(PRICED)
    return {
        w: api.plan(inst.with_changes({"objective.idle_gpu_weight": w})) for w in (0.0, 0.1, 1.0)
    }


def _leaf_ratio(result: api.PlanResult) -> float:
    d = result.design
    assert d is not None
    return d.tiers[0].downlinks / d.tiers[0].uplinks


@pytest.mark.slow
def test_network_cost_alone_takes_the_oversubscribed_leaves(
    priced_plans: dict[float, api.PlanResult],
) -> None:
    result = priced_plans[0.0]
    assert result.idle_pricing is None
    assert _leaf_ratio(result) == pytest.approx(2.0)
    s = result.summary.row(0, named=True)
    # V = N p H i, with N = 4,096 GPUs, p = $2.00 an hour, H = 5 years of 8,766 hours
    value = 4096 * 2.0 * 5 * HOURS_PER_YEAR * s["idle_fraction"]
    assert s["idle_gpu_value_usd"] == pytest.approx(value)
    assert s["tco_plus_idle_gpus_usd"] == pytest.approx(s["tco_usd"] + value)


@pytest.mark.slow
@pytest.mark.parametrize("weight", [0.1, 1.0])
def test_priced_gpu_time_chooses_less_oversubscription_and_a_lower_total(
    priced_plans: dict[float, api.PlanResult], weight: float
) -> None:
    unpriced, priced = priced_plans[0.0], priced_plans[weight]
    assert priced.idle_pricing is not None
    assert _leaf_ratio(priced) < _leaf_ratio(unpriced)
    u, p = unpriced.summary.row(0, named=True), priced.summary.row(0, named=True)
    assert p["capex_usd"] > u["capex_usd"]  # the network costs more ...
    assert p["idle_fraction"] < u["idle_fraction"]  # ... and the GPUs wait less
    total_u = u["objective_usd"] + weight * u["idle_gpu_value_usd"]
    total_p = p["objective_usd"] + weight * p["idle_gpu_value_usd"]
    assert total_p < total_u
    # Every rung's total recomputed from its own columns; the choice is their least.
    table = priced_plans[weight].idle_pricing
    assert table is not None
    df = priced_table(table)
    for row in df.iter_rows(named=True):
        value = 4096 * 2.0 * 5 * HOURS_PER_YEAR * row["idle_fraction"]
        assert row["idle_gpu_value_usd"] == pytest.approx(value)
        assert row["total_usd"] == pytest.approx(row["network_objective_usd"] + weight * value)
    best = min(df["total_usd"])
    assert df.filter(df["chosen"])["total_usd"][0] == pytest.approx(best)
    assert p["objective_usd"] + weight * p["idle_gpu_value_usd"] == pytest.approx(best)


@pytest.mark.slow
def test_a_small_price_stops_between_the_extremes(
    priced_plans: dict[float, api.PlanResult],
) -> None:
    """At a tenth of the GPU price the last up-links no longer pay for themselves."""
    assert 1.0 < _leaf_ratio(priced_plans[0.1]) < 2.0
    assert _leaf_ratio(priced_plans[1.0]) == pytest.approx(1.0)
    assert math.isclose(_leaf_ratio(priced_plans[0.0]), 2.0)

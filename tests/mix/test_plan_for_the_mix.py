"""Planning for a job mix: the price of lost GPUs binds the choice of family.

On the constructed case (``tests.mix.cases``), rail-only is the cheaper network and what one job
would get; the mix's 12-GPU jobs each hold two whole scale-up domains on it, so it loses GPUs a
Clos does not. Below the GPU-hour price at which the totals cross, the mix keeps rail-only;
above it, the mix takes the Clos.
"""

from __future__ import annotations

from functools import cache

import polars as pl
import pytest

from planner.mix.plan import (
    DESIGNS_SCHEMA,
    JOBS_SCHEMA,
    MixPlan,
    design_rows,
    gpu_value_usd,
    plan_mix,
)
from planner.schema.instance import Instance
from tests.mix.cases import cluster, instance

REL = 1e-9


@cache
def planned(price: float = 2.0) -> MixPlan:
    return plan_mix(instance(gpu_usd_per_hour=price))


def _best(plan: MixPlan, family: str) -> dict[str, float]:
    rows = plan.designs.filter((pl.col("family") == family) & pl.col("best_policy"))
    assert rows.height == 1
    return rows.row(0, named=True)


def test_one_job_takes_rail_only_and_the_mix_the_clos() -> None:
    plan = planned()
    assert plan.chosen_for_one_job == "rail_only"
    assert plan.chosen_for_mix == "clos"
    rail, clos = _best(plan, "rail_only"), _best(plan, "clos")
    assert rail["network_usd"] < clos["network_usd"]
    assert rail["fragmentation_gpus"] > 0
    assert clos["fragmentation_gpus"] == 0


@pytest.mark.slow
@pytest.mark.parametrize(("factor", "chosen"), [(0.9, "rail_only"), (1.1, "clos")])
def test_the_price_of_a_lost_gpu_binds_the_choice(factor: float, chosen: str) -> None:
    """p* = (network_clos - network_rail) / ((lost_rail - lost_clos) H): the mix keeps
    rail-only just below it and takes the Clos just above it."""
    plan = planned()
    rail, clos = _best(plan, "rail_only"), _best(plan, "clos")
    hours = plan.instance.objective.lifetime_hours
    crossing = (clos["network_usd"] - rail["network_usd"]) / (
        (rail["lost_gpus"] - clos["lost_gpus"]) * hours
    )
    assert 0 < crossing < 2.0
    again = planned(round(crossing * factor, 6))
    assert again.chosen_for_mix == chosen
    assert again.chosen_for_one_job == "rail_only"


def test_totals_are_network_plus_the_lost_gpus_value() -> None:
    plan = planned()
    value = gpu_value_usd(plan.instance)
    assert value == pytest.approx(2.0 * 5 * 8766, rel=REL)  # 365.25-day years
    d = plan.designs
    assert d.columns == list(DESIGNS_SCHEMA)
    for r in d.iter_rows(named=True):
        assert r["lost_gpus"] == pytest.approx(r["fragmentation_gpus"] + r["slowed_gpus"], rel=REL)
        assert r["fragmentation_gpus"] == pytest.approx(
            r["internal_gpus"] + r["stranded_gpus"], rel=REL
        )
        assert r["total_usd"] == pytest.approx(r["network_usd"] + r["lost_gpus"] * value, rel=REL)
        assert r["used_gpus"] + r["fragmentation_gpus"] + r["waiting_gpus"] <= 512 + 1e-9
    chosen = d.filter("chosen_for_mix")
    assert chosen.height == 1
    assert chosen["total_usd"][0] == pytest.approx(d.filter("best_policy")["total_usd"].min())


def test_the_jobs_table_lists_every_running_job_once_per_policy() -> None:
    plan = planned()
    jobs = plan.jobs
    assert jobs.columns == list(JOBS_SCHEMA)
    for c in plan.candidates:
        for policy, o in c.outcomes.items():
            rows = jobs.filter((pl.col("candidate") == c.name) & (pl.col("policy") == policy))
            assert sorted(rows["job"].to_list()) == sorted(o.running_jobs.tolist())
            assert (rows["allocated_gpus"] >= rows["gpus"]).all()


@cache
def ratios() -> MixPlan:
    """A Clos planned non-blocking and 2:1 for jobs of 8 to 128 GPUs that span leaves."""
    data = cluster(
        512,
        queue=[16, 32, 64, 16, 8, 32, 16, 64, 128, 16] * 30,
        routings=["spray"],
        oversubscription=[1.0, 2.0],
    )
    data["search"]["families"] = ["clos"]
    return plan_mix(Instance.model_validate(data))


@pytest.mark.parametrize(("price", "chosen"), [(0.0, "clos 2:1"), (2.0, "clos 1:1")])
def test_the_mix_chooses_the_oversubscription(price: float, chosen: str) -> None:
    """Sprayed, jobs across leaves slow one another only where the leaves' uplinks are 2:1;
    priced, the slowdown outweighs what the cheaper 2:1 network saves (the same candidates
    priced again, ``design_rows``, as ``plan_mix`` prices them)."""
    plan = ratios()
    table = design_rows(
        plan.instance.with_changes({"jobs.gpu_usd_per_hour": price}), plan.candidates
    )
    assert table.filter("chosen_for_one_job")["candidate"][0] == "clos 2:1"
    assert table.filter("chosen_for_mix")["candidate"][0] == chosen
    caps = {r["candidate"]: r for r in table.filter("best_policy").iter_rows(named=True)}
    assert caps["clos 1:1"]["mean_slowdown_spray"] == pytest.approx(1.0, rel=2e-4)
    assert caps["clos 2:1"]["mean_slowdown_spray"] > 1.05
    assert caps["clos 2:1"]["network_usd"] < caps["clos 1:1"]["network_usd"]


@pytest.mark.slow
def test_planes_are_candidates_too() -> None:
    data = cluster(256, planes=[1, 2, 4], routings=["spray"])
    data["search"]["families"] = ["clos"]
    data["cluster"]["nic_ports"] = [1, 2]
    plan = plan_mix(Instance.model_validate(data))
    by = {c.name: c.design.planes for c in plan.candidates}
    assert by == {"clos 1 plane": 1, "clos 2 planes": 2}
    assert set(plan.designs["planes"].to_list()) == {1, 2}
    # Four planes need four NIC ports: that candidate is skipped, with why.
    assert len(plan.skipped) == 1
    assert plan.skipped[0].startswith("clos 4 planes: search.pin.planes: 4")

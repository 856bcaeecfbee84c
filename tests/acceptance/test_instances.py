"""Every shipped instance loads, the feasible ones solve to a valid optimum, the rest say why."""

from __future__ import annotations

from pathlib import Path

import pytest

from models.status import Status
from planner import api
from planner.api import validate
from planner.checks import check_instance
from tests.conftest import REPO_ROOT

INSTANCE_DIR = REPO_ROOT / "instances"
INSTANCES = sorted(INSTANCE_DIR.glob("*.toml"))
INFEASIBLE = {"infeasible-200k-3hops"}
#: Instances that price a pinned design (``evaluate``) rather than search for one.
PINNED = {"superpod-ref-1k"}
FEASIBLE = [p for p in INSTANCES if p.stem not in INFEASIBLE]


def _id(path: Path) -> str:
    return path.stem


def test_instances_are_shipped() -> None:
    assert len(INSTANCES) >= 8
    assert INFEASIBLE | PINNED <= {p.stem for p in INSTANCES}


@pytest.mark.parametrize("path", INSTANCES, ids=_id)
def test_instance_loads(path: Path) -> None:
    inst = api.load_instance(path)
    assert inst.name == path.stem
    assert inst.description.strip()
    check_instance(inst, api.catalog_for(inst))  # every named component exists


@pytest.mark.parametrize("path", FEASIBLE, ids=_id)
@pytest.mark.slow
def test_feasible_instance_solves_to_a_valid_optimum(path: Path) -> None:
    # Idle GPU time is priced from a simulation: unverified, the network's own cost is planned.
    inst = api.load_instance(path).with_changes({"objective.idle_gpu_weight": 0.0})
    catalog = api.catalog_for(inst)
    result = api.plan(inst, catalog=catalog, verify=False)
    assert result.status is Status.OPTIMAL, result.explanation
    design = result.design
    assert design is not None
    assert design.gpus == inst.cluster.gpus
    assert design.planes in inst.cluster.nic_ports
    assert design.tco_usd > 0
    assert validate(design, catalog) == []


@pytest.mark.parametrize(
    ("name", "hops", "gpus"),
    [("h100-1k", 5, 1016), ("h100-32k", 5, 32768), ("b200-8k", 5, 8192)],
)
@pytest.mark.slow
def test_constraints_of_the_headline_instances_hold(
    repo_root: Path, name: str, hops: int, gpus: int
) -> None:
    inst = api.load_instance(repo_root / "instances" / f"{name}.toml")
    assert inst.cluster.gpus == gpus
    assert inst.constraints.max_switch_hops == hops
    design = api.plan(inst, verify=False).design
    assert design is not None
    assert design.max_switch_hops <= hops
    if inst.constraints.max_power_kw is not None:
        assert design.power_w <= inst.constraints.max_power_kw * 1000
    if inst.constraints.max_latency_ns is not None:
        assert design.max_latency_ns <= inst.constraints.max_latency_ns


@pytest.mark.slow
def test_readme_example_solves_and_is_verified(repo_root: Path) -> None:
    result = api.plan(api.load_instance(repo_root / "instances" / "h100-1k.toml"))
    assert result.status is Status.OPTIMAL
    assert result.sim is not None
    assert result.summary["verdict"][0] in ("meets", "fails")
    assert result.sim_collectives.height >= 2


@pytest.mark.slow
def test_infeasible_instance_names_the_radix_it_needs(repo_root: Path) -> None:
    inst = api.load_instance(repo_root / "instances" / "infeasible-200k-3hops.toml")
    result = api.plan(inst, verify=False)
    assert result.status is Status.INFEASIBLE
    assert result.design is None
    text = " ".join(result.explanation)
    assert "radix" in text
    assert "200,000" in text


def test_superpod_reference_is_priced_exactly_as_pinned(repo_root: Path) -> None:
    inst = api.load_instance(repo_root / "instances" / "superpod-ref-1k.toml")
    catalog = api.catalog_for(inst)
    result = api.evaluate(inst, catalog=catalog)
    assert result.status.has_solution
    design = result.design
    assert design is not None
    assert design.planes == 1
    assert design.num_tiers == 2
    assert [t.switch_model for t in design.tiers] == ["qm9700", "qm9700"]
    assert [t.switches for t in design.tiers] == [32, 16]
    assert design.tiers[0].downlinks == 32
    assert design.tiers[0].uplinks == 32
    assert design.tiers[0].parallel_links == 2
    assert design.capex_usd > 0
    assert design.tco_usd > design.capex_usd
    assert validate(design, catalog) == []

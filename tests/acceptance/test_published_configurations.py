"""Every published configuration the example instances and the docs cite still plans.

A catalog or model change once made the DGX B300 Ethernet design (a ConnectX-8 split into two
400G planes on Spectrum-4 switches) unbuildable at every size (issue 26): each configuration a
vendor publishes, or an instance cites, is planned here with its expected structure (planes,
tiers, switch model, and the leaf and spine counts per scalable unit where they are published),
so such a change fails a test instead of passing silently.

Sources of the counts:

* DGX SuperPOD B300, Spectrum-4 Ethernet (NVIDIA reference architecture, "Network Fabrics" and
  "Larger DGX SuperPOD component counts"): a scalable unit (SU) is 64 nodes (512 GPUs) over two
  400GbE planes; 16 leaves and 8 spines per SU over both planes (1, 2, 4 SUs: 16/8, 32/16, 64/32).
* DGX SuperPOD B300, Quantum-X800 XDR (NVIDIA reference architecture): an SU is 72 nodes (576
  GPUs) on one plane; 1, 2, 4, 8 SUs take 8/4, 16/8, 32/18, 64/36 leaves and spines, and one
  node-leaf and one leaf-spine cable per GPU.
* DGX SuperPOD H100 (NVIDIA reference architecture): 4 SUs of 32 nodes take 32 leaves and 16
  spines of QM9700.
* One 800GbE plane of 64-port SN5600 (HGX B300 enterprise reference architecture: a single plane
  is supported, its counts are not published): the two-tier fat tree's closed form, GPUs / 32
  leaves and GPUs / 64 spines.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from models.status import Status
from planner import api
from planner.api import PlanResult, validate
from tests.conftest import REPO_ROOT

#: GPUs of one scalable unit of the DGX SuperPOD B300: 64 nodes (Ethernet), 72 nodes (XDR).
ETHERNET_SU_GPUS = 64 * 8
XDR_SU_GPUS = 72 * 8

#: The issue's instance, as typed there (the NIC left to the catalog: ConnectX-8 at 800G).
ISSUE_INSTANCE = """
name = "b300-issue"
[cluster]
gpus = {gpus}
gpus_per_node = 8
nic_gbps = 800
nic_ports = [2]
[constraints]
max_oversubscription = 1.0
[search]
switch_models = ["sn5600"]
"""


@dataclass(frozen=True)
class Published:
    """A published configuration: an instance (and changes to it) and the structure expected."""

    instance: str
    planes: int
    tiers: int
    switch_model: str
    leaves: int
    """Leaves over all planes."""
    spines: int
    """Spines over all planes."""
    changes: dict[str, Any] = field(default_factory=dict)
    links_per_gpu: int | None = None
    """GPU-leaf and leaf-spine links per GPU, where the cable counts are published."""


CASES = {
    "b300-eth-4su": Published("b300-eth-2planes", 2, 2, "sn5600", 64, 32),
    "b300-xdr-1su": Published(
        "b300-xdr", 1, 2, "q3400", 8, 4, {"cluster.gpus": XDR_SU_GPUS}, links_per_gpu=1
    ),
    "b300-xdr-2su": Published(
        "b300-xdr", 1, 2, "q3400", 16, 8, {"cluster.gpus": 2 * XDR_SU_GPUS}, links_per_gpu=1
    ),
    "b300-xdr-4su": Published("b300-xdr", 1, 2, "q3400", 32, 18, links_per_gpu=1),
    "b300-eth-800g": Published("b300-eth-800g", 1, 2, "sn5600", 512 // 32, 512 // 64),
    "superpod-h100-4su": Published("superpod-h100-4su", 1, 2, "qm9700", 32, 16),
    "b300-xdr-8su": Published(
        "b300-xdr", 1, 2, "q3400", 64, 36, {"cluster.gpus": 8 * XDR_SU_GPUS}, links_per_gpu=1
    ),
    "superpod-ref-1k": Published("superpod-ref-1k", 1, 2, "qm9700", 32, 16),
}


def _load(name: str, changes: dict[str, Any]) -> api.Instance:
    inst = api.load_instance(REPO_ROOT / "instances" / f"{name}.toml")
    return inst.with_changes(changes) if changes else inst


@cache
def _planned(case: str) -> tuple[PlanResult, api.Instance]:
    c = CASES[case]
    inst = _load(c.instance, c.changes)
    pinned = inst.search.pin.switches is not None
    result = api.evaluate(inst) if pinned else api.plan(inst, verify=False)
    return result, inst


@pytest.mark.parametrize("case", list(CASES))
def test_a_published_configuration_plans_with_its_structure(case: str) -> None:
    result, inst = _planned(case)
    c = CASES[case]
    assert result.status in (Status.OPTIMAL, Status.FEASIBLE), result.explanation
    d = result.design
    assert d is not None
    assert (d.planes, d.num_tiers) == (c.planes, c.tiers)
    assert {t.switch_model for t in d.tiers} == {c.switch_model}
    assert [d.planes * t.switches for t in d.tiers] == [c.leaves, c.spines]
    assert d.oversubscription() == (1.0,)
    assert validate(d, api.catalog_for(inst)) == []


@pytest.mark.parametrize("case", [c for c, p in CASES.items() if p.links_per_gpu])
def test_the_published_cable_counts_are_one_per_gpu_and_class(case: str) -> None:
    result, inst = _planned(case)
    d = result.design
    assert d is not None
    per_gpu = CASES[case].links_per_gpu
    assert [d.planes * c.links for c in d.link_classes] == [per_gpu * inst.cluster.gpus] * 2


def _issue_design(tmp: Path, units: int) -> PlanResult:
    path = tmp / f"issue-{units}.toml"
    path.write_text(ISSUE_INSTANCE.format(gpus=units * ETHERNET_SU_GPUS), encoding="utf-8")
    return api.plan(api.load_instance(path), verify=False)


@pytest.mark.parametrize(
    ("units", "leaves", "spines"),
    [(1, 16, 8), (2, 32, 16), (4, 64, 32)],
)
def test_the_issue_instance_plans_two_planes_of_sn5600_with_the_published_counts(
    tmp_path: Path, units: int, leaves: int, spines: int
) -> None:
    """Before per-end modules: 'no allowed medium at 400G ... fits both ends' at every size."""
    result = _issue_design(tmp_path, units)
    assert result.status is Status.OPTIMAL, result.explanation
    d = result.design
    assert d is not None
    assert (d.planes, d.num_tiers, d.link_speed_gbps) == (2, 2, 400)
    assert [t.switch_model for t in d.tiers] == ["sn5600", "sn5600"]
    assert [d.planes * t.switches for t in d.tiers] == [leaves, spines]
    assert d.oversubscription() == (1.0,)
    assert d.nic == "connectx-8"


@pytest.mark.parametrize("planes", [1, 2, 4])
@pytest.mark.slow
def test_every_split_of_the_b200_connectx8_plans_in_two_tiers(planes: int) -> None:
    """b200-8k lets its 800G ConnectX-8 run as 1, 2 or 4 planes: each split has a design.

    8,192 GPUs per plane fit two tiers of 128-port switches at every split (128 x 64 = 8,192).
    """
    inst = _load("b200-8k", {"search.pin.planes": planes})
    result = api.plan(inst, verify=False)
    assert result.status is Status.OPTIMAL, result.explanation
    d = result.design
    assert d is not None
    assert (d.planes, d.num_tiers, d.gpus) == (planes, 2, 8192)
    assert validate(d, api.catalog_for(inst)) == []


@pytest.mark.slow
def test_the_32k_b200_cluster_plans_three_tiers_at_800g() -> None:
    """32,768 GPUs at 800G: beyond two tiers of any 144-port switch (144 x 72 = 10,368)."""
    inst = _load("b200-32k-800g", {})
    result = api.plan(inst, verify=False)
    assert result.status is Status.OPTIMAL, result.explanation
    d = result.design
    assert d is not None
    assert (d.planes, d.num_tiers, d.link_speed_gbps) == (1, 3, 800)
    assert validate(d, api.catalog_for(inst)) == []


@cache
def _verified(gpus: int) -> PlanResult:
    """The reference's fabric verified in the fluid model: its promises are of bandwidth."""
    changes = {"cluster.gpus": gpus, "verify.fidelity": "fluid"}
    return api.plan(_load("b300-eth-2planes", changes), verify=True)


@pytest.mark.parametrize(
    "gpus",
    [ETHERNET_SU_GPUS, 4 * ETHERNET_SU_GPUS],
)
def test_losing_a_plane_halves_the_bandwidth_and_cuts_no_flow(gpus: int) -> None:
    """The reference's promise: with one plane down the job runs on at half its bandwidth."""
    result = _verified(gpus)
    failures = result.sim_failures.filter(planes_lost=1)
    assert failures.height >= 1
    assert failures["fraction_of_healthy"].to_list() == pytest.approx([0.5] * failures.height)
    assert failures["disconnected_flows"].to_list() == [0] * failures.height


@pytest.mark.parametrize(
    "gpus",
    [ETHERNET_SU_GPUS, 4 * ETHERNET_SU_GPUS],
)
def test_the_healthy_two_plane_fabric_runs_at_line_rate(gpus: int) -> None:
    result = _verified(gpus)
    assert result.summary["verdict"][0] == "meets"
    assert result.summary["sim_fraction_spray"][0] == pytest.approx(1.0)

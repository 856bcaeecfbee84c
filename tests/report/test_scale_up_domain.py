"""The scale-up domain as a part of the computer: its switches priced into the whole interconnect.

Closed forms: domains = ceil(gpus / domain); switches = domains x switches per domain (the
catalog product's count scaled to the domain, ceil(domain x count / product domain), unless the
instance gives it); capex and power = switches x the catalog's unit figures. The scale-out
objective never includes them (the domain is given, not chosen).
"""

from __future__ import annotations

import math

import pytest

from planner.api import plan
from planner.design import ScaleUpDomain
from planner.loading import load_catalog
from planner.schema.instance import Instance

#: Relative tolerance on money and power sums.
RTOL = 1e-9


def _instance(gpus: int, per_node: int, scale_up: dict[str, object]) -> Instance:
    return Instance.model_validate(
        {
            "name": "scale-up",
            "cluster": {
                "gpus": gpus,
                "gpus_per_node": per_node,
                "nic_gbps": 400,
                "scale_up": scale_up,
            },
            "search": {"pin": {"tiers": 2}, "switch_models": ["sn5600"]},
        }
    )


@pytest.mark.parametrize(
    ("model", "domain", "expected"),
    [
        ("nvswitch-gen3", 8, 4),  # the HGX H100 baseboard itself
        ("nvswitch-gen3", 16, 8),  # ceil(16 * 4 / 8)
        ("nvlink5-switch-tray", 72, 9),  # the NVL72 rack itself
        ("nvlink5-switch-tray", 36, 5),  # ceil(36 * 9 / 72) = ceil(4.5)
    ],
)
def test_switches_per_domain_scale_with_the_domain(model: str, domain: int, expected: int) -> None:
    assert load_catalog().scale_up_switch_named(model).switches_for(domain) == expected


@pytest.mark.parametrize(
    ("gpus", "per_node", "scale_up", "switches"),
    [
        # 1,024 GPUs in 128 HGX nodes: 128 x 4 = 512 NVSwitch chips.
        (1024, 8, {"gpus": 8, "switch": "nvswitch-gen3"}, 512),
        # 1,152 GPUs in 16 NVL72 racks: 16 x 9 = 144 switch trays.
        (1152, 4, {"gpus": 72, "gbps_per_gpu": 7200, "switch": "nvlink5-switch-tray"}, 144),
        # 1,024 GPUs in NVL72 racks: ceil(1024 / 72) = 15 racks, the last one partial: 135 trays.
        (1024, 4, {"gpus": 72, "gbps_per_gpu": 7200, "switch": "nvlink5-switch-tray"}, 135),
        # The instance's own count wins: 128 domains x 6.
        (1024, 8, {"gpus": 8, "switch": "nvswitch-gen3", "switches": 6}, 768),
    ],
)
def test_the_whole_interconnect_adds_the_scale_up_switches(
    gpus: int, per_node: int, scale_up: dict[str, object], switches: int
) -> None:
    inst = _instance(gpus, per_node, scale_up)
    catalog = load_catalog()
    result = plan(inst, catalog=catalog, time_limit_s=30, verify=False)
    d = result.design
    assert d is not None
    sw = catalog.scale_up_switch_named(str(scale_up["switch"]))
    assert d.scale_up.switches(d.gpus) == switches
    assert math.isclose(
        d.interconnect_capex_usd, d.capex_usd + switches * sw.cost_usd, rel_tol=RTOL
    )
    assert math.isclose(d.interconnect_power_w, d.power_w + switches * sw.power_w, rel_tol=RTOL)
    row = result.summary.row(0, named=True)
    assert row["scale_up_switches"] == switches
    assert math.isclose(row["interconnect_capex_usd"], d.interconnect_capex_usd, rel_tol=RTOL)
    assert math.isclose(row["scale_up_power_kw"], switches * sw.power_w / 1000, rel_tol=RTOL)
    # Given, not chosen: the scale-out objective is the one of the same cluster unpriced.
    bare = plan(
        _instance(gpus, per_node, {"gpus": scale_up["gpus"]}),
        catalog=catalog,
        time_limit_s=30,
        verify=False,
    )
    assert bare.design is not None
    assert math.isclose(bare.design.objective_usd, d.objective_usd, rel_tol=RTOL)
    assert bare.design.interconnect_capex_usd == bare.design.capex_usd


def test_a_domain_without_a_switch_model_is_not_priced() -> None:
    domain = ScaleUpDomain.of(_instance(64, 8, {"gpus": 8}).cluster.scale_up, load_catalog())
    assert (domain.switches(64), domain.capex_usd(64), domain.power_w(64)) == (0, 0.0, 0.0)

"""Physical ports: a medium only where both ends take it, one protocol per plane, modules counted.

1. Rules against brute force: on a catalog whose switches have cages of two lane rates and two
   protocols, and whose media are made for some host lanes and form factors only, the CP-SAT
   optimum equals an enumeration that applies the rules itself (``tests.models.brute_force``).
2. The rules bind: left out, the model mixes protocols or plugs modules into cages that cannot
   take them, and it is cheaper for it; kept, the validator finds neither.
3. The default catalog: a single-cage 400G NIC split four ways runs 100G-lane links, so 25G-lane
   SR4 modules are refused, with the lanes named in the reason.
4. A DGX SuperPOD-style four-SU fabric counts twin-port modules and fibres as the reference
   architecture's parts list does.
5. Latency counts propagation over the floor plan's lengths, in the model and in the validator.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from models import clos_sizing as cs
from models.status import Status
from planner.api import evaluate, plan, validate
from planner.design import Design
from planner.families import search_families
from planner.loading import load_catalog, load_instance
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sizing import structures_of
from tests.conftest import REPO_ROOT
from tests.models.brute_force import brute_force
from tests.models.catalogs import MEDIUM_SOURCE, switch
from tests.optics.test_media import WIDE_HALL, media_at

ROOT = REPO_ROOT
SPEED_GBPS = 400
OBJECTIVE_RTOL = 1e-6
OSFP_100G = {"form_factor": "osfp", "lanes": 8, "lane_gbps": 100}
QSFPDD_50G = {"form_factor": "qsfp-dd", "lanes": 8, "lane_gbps": 50}


def _switch(
    name: str,
    radix: int,
    cost_usd: float,
    protocol: str,
    cage: dict[str, Any],
    latency_ns: int = 300,
) -> Any:
    per_cage = cage["lanes"] * cage["lane_gbps"] // SPEED_GBPS
    return switch(
        name,
        radix,
        cost_usd=cost_usd,
        power_w=150.0 + 10 * radix,
        latency_ns=latency_ns,
        protocol=protocol,
        cage=cage,
        cages=radix // per_cage,
    )


def _medium(
    name: str,
    kind: str,
    reach_m: float,
    end_cost_usd: float,
    host_lanes: list[int],
    form_factors: list[str],
    cable_usd: float = 0.0,
) -> dict[str, Any]:
    return {
        "name": name,
        "kind": kind,
        "speed_gbps": SPEED_GBPS,
        "reach_m": reach_m,
        "cost_usd_per_end": end_cost_usd,
        "power_w_per_end": 0.1 if kind == "dac" else 8.0,
        "cable_cost_usd": cable_usd,
        "latency_ns": 0 if kind == "dac" else 80,
        "afr": 0.001,
        "lane_gbps": 100,
        "host_lane_gbps": host_lanes,
        "form_factors": form_factors,
        "connector": "osfp" if kind == "dac" else "mpo-12",
        "source": MEDIUM_SOURCE,
    }


def _nic(protocols: list[str]) -> dict[str, Any]:
    return {
        "name": "nic400",
        "speed_gbps": SPEED_GBPS,
        "port_splits": [1],
        "cost_usd": 1000.0,
        "power_w": 20.0,
        "cage": {"form_factor": "osfp", "lanes": 4, "lane_gbps": 100},
        "protocols": protocols,
        "source": {"cost_usd": "t", "power_w": "t", "ports": "t", "cage": "t", "protocols": "t"},
    }


#: Cheap InfiniBand leaves on 50G-lane QSFP-DD cages, dearer Ethernet ones on 100G-lane OSFP, and
#: spines of both; the DAC is made for 100G lanes in OSFP only, the DR for OSFP only (100G host
#: lanes), the SR with a gearbox for both lane rates and both form factors but dear.
PORTS = Catalog.model_validate(
    {
        "switch": [
            _switch("ib8", 8, 3_000.0, "infiniband", QSFPDD_50G),
            _switch("eth8", 8, 4_500.0, "ethernet", OSFP_100G),
            _switch("ib16", 16, 6_000.0, "infiniband", QSFPDD_50G),
            _switch("eth16", 16, 5_000.0, "ethernet", OSFP_100G),
        ],
        "medium": [
            _medium("dac-400g", "dac", 3.0, 60.0, [100], ["osfp"]),
            _medium("sr-400g", "sr", 50.0, 900.0, [100, 50], ["osfp", "qsfp-dd"], 60.0),
            _medium("dr-400g", "dr", 500.0, 400.0, [100], ["osfp"], 80.0),
        ],
        "nic": [_nic(["infiniband", "ethernet"])],
    }
)


def _instance(gpus: int, tiers: int, **constraints: Any) -> Instance:
    return Instance.model_validate(
        {
            "name": "ports",
            "cluster": {"gpus": gpus, "nic_gbps": SPEED_GBPS, "nic_ports": [1], "nic": "nic400"},
            "layout": WIDE_HALL,
            "constraints": constraints,
            "search": {"pin": {"tiers": tiers}},
        }
    )


CASES = {
    "2tier-64": _instance(64, 2),
    "2tier-128": _instance(128, 2),
    "3tier-64": _instance(64, 3),
    # Propagation over the hall's 8-35 m leaf-spine links decides which designs meet the cap.
    "latency-cap-128": _instance(128, 2, max_latency_ns=1_400),
}


def _problems(inst: Instance, catalog: Catalog) -> list[cs.SizingProblem]:
    problems = [
        st.problem
        for st in structures_of(inst, catalog, search_families(inst))
        if st.problem is not None
    ]
    assert problems, "the instance builds no structure"
    return problems


@pytest.mark.parametrize("name", list(CASES))
@pytest.mark.slow
def test_port_and_protocol_rules_equal_brute_force(name: str) -> None:
    for problem in _problems(CASES[name], PORTS):
        expected = brute_force(problem, media_at(PORTS, SPEED_GBPS))
        sol = cs.solve(cs.build(problem), cs.SolveOptions(time_limit_s=60))
        if expected is None:
            assert sol.status is Status.INFEASIBLE
        else:
            assert sol.status is Status.OPTIMAL, f"brute force finds {expected:,.2f} USD"
            assert sol.objective_usd == pytest.approx(expected, rel=OBJECTIVE_RTOL)


def _planned(inst: Instance, catalog: Catalog) -> Design:
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.status is Status.OPTIMAL, result.explanation
    assert result.design is not None
    return result.design


@pytest.mark.parametrize("name", list(CASES))
def test_planned_designs_speak_one_protocol_and_plug_in(name: str) -> None:
    d = _planned(CASES[name], PORTS)
    assert len({t.protocol for t in d.tiers}) == 1
    assert d.protocol == d.tiers[0].protocol
    assert validate(d, PORTS) == []
    for c in d.link_classes:
        for g in c.groups:
            for t in d.tiers[max(c.index - 1, 0) : c.index + 1]:
                assert t.cage_form_factor in g.form_factors
                assert t.cage_lane_gbps in g.host_lane_gbps


#: Cheap, slow Ethernet and dear, fast InfiniBand: under a latency cap that three Ethernet hops
#: miss, Ethernet leaves under InfiniBand spines would be cheapest, but a plane speaks one protocol.
PROTOCOLS = PORTS.model_copy(
    update={
        "switch": [
            Catalog.model_validate(
                {"switch": [sw], "medium": [PORTS.medium[0].model_dump()]}
            ).switch[0]
            for sw in (
                _switch("eth16", 16, 3_000.0, "ethernet", OSFP_100G, latency_ns=800),
                _switch("ib16", 16, 9_000.0, "infiniband", OSFP_100G, latency_ns=100),
            )
        ]
    }
)


def test_protocol_rule_binds() -> None:
    """Without the rule, Ethernet leaves under InfiniBand spines win; with it, a dearer design."""
    (problem,) = _problems(_instance(128, 2, max_latency_ns=2_400), PROTOCOLS)
    mixed = cs.solve(cs.build(problem, frozenset({"plane.protocol"})))
    kept = cs.solve(cs.build(problem))
    protocols = {m.name: m.protocol for opts in problem.switch_options for m in opts}
    assert len({protocols[t.switch_model] for t in mixed.tier_solutions}) == 2
    assert len({protocols[t.switch_model] for t in kept.tier_solutions}) == 1
    assert kept.objective_usd is not None
    assert mixed.objective_usd is not None
    assert kept.objective_usd > mixed.objective_usd


def test_a_nic_that_speaks_one_protocol_keeps_the_other_out() -> None:
    only_eth = PORTS.model_copy(
        update={"nic": [PORTS.nic[0].model_copy(update={"protocols": ["ethernet"]})]}
    )
    d = _planned(CASES["2tier-128"], only_eth)
    assert {t.protocol for t in d.tiers} == {"ethernet"}


def test_no_medium_that_plugs_in_is_named_as_such() -> None:
    """Only 50G-lane switches and only a DAC made for 100G lanes: the reason names the lanes."""
    catalog = PORTS.model_copy(update={"medium": [m for m in PORTS.medium if m.name == "dac-400g"]})
    inst = _instance(64, 2).with_changes({"search.switch_models": ["ib8", "ib16"]})
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.status is Status.INFEASIBLE
    text = " ".join(result.explanation)
    assert "plugs into" in text
    assert "50G lanes" in text
    assert "100G lanes" in text


# --- 3. The default catalog: lanes decide which media a split NIC takes ------------------------


def test_a_split_nic_refuses_modules_of_other_lanes() -> None:
    """ConnectX-7 split in four runs 100G ports on single 100G lanes: no SR4 module (25G lanes)."""
    default = load_catalog("default")
    inst = Instance.model_validate(
        {
            "name": "split",
            "cluster": {"gpus": 512, "nic_gbps": 400, "nic_ports": [4], "nic": "connectx-7"},
            "search": {"media_kinds": ["sr"]},
        }
    )
    result = plan(inst, catalog=default, verify=False, alternatives=False)
    assert result.status is Status.INFEASIBLE
    text = " ".join(result.explanation)
    assert "100G lanes" in text
    assert "25G" in text


@pytest.mark.parametrize("nic_ports", [[1], [2], [4], [1, 2, 4]])
def test_default_catalog_designs_plug_in(nic_ports: list[int]) -> None:
    default = load_catalog("default")
    inst = Instance.model_validate(
        {
            "name": "split",
            "cluster": {"gpus": 2048, "nic_gbps": 400, "nic_ports": nic_ports, "nic": "connectx-7"},
            "constraints": {"max_latency_ns": 1000},
        }
    )
    result = plan(inst, catalog=default, verify=False, alternatives=False)
    if result.design is None:
        assert result.status is Status.INFEASIBLE
        return
    d = result.design
    assert validate(d, default) == []
    assert len({t.protocol for t in d.tiers}) == 1
    for c in d.link_classes:
        for g in c.groups:
            medium = default.medium_named(g.medium)
            assert d.nic_lane_gbps is not None
            if c.index == 0:
                assert d.nic_lane_gbps in medium.host_lanes


# --- 4. A SuperPOD-style BOM, module by module --------------------------------------------------


def test_superpod_four_su_bom_counts_twin_port_modules_and_fibres() -> None:
    """128 DGX nodes, 32 leaves and 16 spines of QM9700, 2xSR4 twin-port optics everywhere.

    Hand count (one twin-port module serves two 400G ports of an OSFP cage):
    node side: 128 nodes x 4 cages = 512 modules for 1,024 NIC ports;
    leaf side: 32 leaves x (16 GPU cages + 16 uplink cages) = 1,024 modules;
    spine side: 16 spines x 32 cages = 512 modules; 2,048 modules in all, for 4,096 ports;
    fibres: 1,024 node-leaf + 1,024 leaf-spine, one MPO-12 per 400G link.
    """
    inst = load_instance(ROOT / "instances" / "superpod-h100-4su.toml")
    result = evaluate(inst, verify=False)
    d = result.design
    assert d is not None
    bom = d.bom()
    rows = {
        r["tier"]: r for r in bom.filter(bom["component"] == "transceiver").iter_rows(named=True)
    }
    assert rows["gpu-leaf at gpu"]["count"] == 512
    assert rows["gpu-leaf at leaf"]["count"] == 512
    assert rows["leaf-spine at leaf"]["count"] == 512
    assert rows["leaf-spine at spine"]["count"] == 512
    assert all(r["ports_per_unit"] == 2 for r in rows.values())
    fibres = bom.filter(bom["component"] == "fibre")["count"].sum()
    assert fibres == 2048 == d.fibres
    assert d.transceivers == 2048
    assert d.transceiver_ports == 4096
    assert [t.switches for t in d.tiers] == [32, 16]
    assert validate(d, load_catalog("default")) == []


# --- 5. Propagation ------------------------------------------------------------------------------


def test_latency_counts_propagation_and_a_cap_between_binds() -> None:
    """A cap between the design's latency without and with propagation forces another design."""
    inst = _instance(128, 2)
    free = _planned(inst, PORTS)
    assert free.propagation_ns > 0
    cap = free.max_latency_ns - free.propagation_ns / 2
    capped = plan(
        inst.with_changes({"constraints.max_latency_ns": cap}),
        catalog=PORTS,
        verify=False,
        alternatives=False,
    )
    if capped.design is not None:
        assert capped.design.max_latency_ns <= cap
        assert validate(capped.design, PORTS) == []
    else:
        assert capped.status is Status.INFEASIBLE


def test_validator_recomputes_propagation() -> None:
    d = _planned(_instance(128, 2), PORTS)
    longest = max(g.max_length_m for g in d.link_classes[1].groups)
    assert longest > 5.0
    assert d.propagation_ns == pytest.approx(
        sum(
            2 * max(g.max_length_m * (4.5 if g.copper else 4.9) for g in c.groups)
            for c in d.link_classes
        )
    )
    tight = replace(d, requirements=replace(d.requirements, max_latency_ns=d.max_latency_ns - 1))
    assert any(v.check == "latency" for v in validate(tight))


# --- Validator rules ------------------------------------------------------------------------------


def _tampered_tier(d: Design, **changes: Any) -> Design:
    tiers = (replace(d.tiers[0], **changes), *d.tiers[1:])
    return replace(d, tiers=tiers)


@pytest.mark.parametrize(
    ("changes", "check"),
    [
        ({"cage_lane_gbps": 25}, "ports"),
        ({"cage_form_factor": "qsfp28"}, "ports"),
        ({"ports_per_cage": 4}, "ports"),
        ({"protocol": "infiniband"}, "protocol"),
    ],
)
def test_validator_rejects_ports_that_cannot_take_their_media(
    changes: dict[str, Any], check: str
) -> None:
    d = _planned(_instance(128, 2), PORTS)
    if changes.get("protocol") == d.tiers[0].protocol:
        changes = {"protocol": "ethernet"}
    bad = _tampered_tier(d, **changes)
    assert check in {v.check for v in validate(bad)}

"""Conformance: every family the planner can size passes the same checks (DESIGN.md, issue 10).

For a small instance of each family: the design round-trips through JSON, the independent validator
finds no violation, report totals equal the objective's terms, simulated throughput never exceeds
the optimal-routing bound, a failure scenario runs, and the design's hops follow the one formula.
Every constraint rule of the sizing model binding is tested in tests/models/test_constraints_bind.py.
"""

from __future__ import annotations

import math
from typing import Any

import networkx as nx
import pytest

from planner.api import PlanResult, plan, simulate, validate
from planner.design import Design

# The parameter source: every family in the registry (its keys are the family names).
from planner.families import FAMILIES, read_design
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.schema.verify import Verify
from planner.sim.sim_tables import SimResult

#: Relative tolerance between report totals and the objective's terms (cent/milliwatt rounding).
TOTALS_RTOL = 1e-6
#: Slack on simulated / bound throughput (the bound is an LP optimum, the simulation a fluid model).
BOUND_RTOL = 1e-6
#: Slack on a fraction of the healthy throughput at its ends [0, 1].
FRACTION_TOL = 1e-9

#: A small instance of each family, and the switch (or OCS device) its failure scenario takes down.
CASES: dict[str, tuple[dict[str, Any], str]] = {
    "clos": (
        {
            "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"pin": {"tiers": 2}},
        },
        "spine0",
    ),
    "ocs_direct": (
        {
            # 512 GPUs (4 blocks) rather than 2,048: the bound LP of a permutation at 2,048 GPUs
            # alone takes over two minutes on two cores; at 512 it takes under a second.
            "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        },
        "ocs0",
    ),
    "ocs_torus": (
        {
            # 2 x 2 x 2 cubes: the simulated slice is a 4 x 4 x 4 torus of 64 chips.
            "cluster": {"gpus": 64, "gpus_per_node": 4},
            "search": {"families": ["ocs_torus"]},
            "torus": {"cube": 2, "slices": [[4, 4, 4]], "cube_availability": 0.99},
        },
        "router0",
    ),
    "torus": (
        {
            "cluster": {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "constraints": {"max_oversubscription": 2.0},
            "search": {"families": ["torus"]},
        },
        "switch0",
    ),
    "rail_optimized": (
        {
            "cluster": {"gpus": 256, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["rail_optimized"], "pin": {"tiers": 2}},
        },
        "spine0",
    ),
    "rail_only": (
        {
            # Two tiers per rail so the failure scenario has a spine to take down, and 128 nodes
            # so a rail needs several leaves (a leaf of 64 ports serves 32 nodes non-blocking).
            "cluster": {"gpus": 1024, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["rail_only"], "pin": {"tiers": 2}},
        },
        "rail_spine0",
    ),
    "dragonfly": (
        {
            # 64-port switches, so 512 GPUs need several groups (global links to route over).
            "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["dragonfly"], "switch_models": ["tomahawk4-25t"]},
        },
        "switch0",
    ),
}

#: Small traffic whose optimal-routing bound LP is built, and the failure of one switch.
TRAFFIC = [{"kind": "random_permutation", "size_bytes": 1e8}]
#: Families whose scale-out fabric joins only some GPU pairs get traffic it carries on its own:
#: a rail-only fabric joins same-rail GPUs only (cross-rail traffic crosses the scale-up domain,
#: which the simulator forces separately), so every GPU sends to the GPU one node ahead.
TRAFFIC_OF: dict[str, list[dict[str, Any]]] = {
    "rail_only": [{"kind": "shift", "size_bytes": 1e8, "group_size": 8}],
}
BOUND_MAX_VARIABLES = 2_000_000


def test_every_family_has_a_case() -> None:
    assert set(CASES) == set(FAMILIES)


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


@pytest.fixture(scope="module", params=list(FAMILIES))
def family(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture(scope="module")
def planned(family: str, catalog: Catalog) -> PlanResult:
    data, _ = CASES[family]
    inst = Instance.model_validate({"name": f"conformance-{family}", **data})
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is not None, f"{family}: no design ({result.status})"
    assert result.design.family == family
    return result


@pytest.fixture(scope="module")
def design(planned: PlanResult) -> Design:
    assert planned.design is not None
    return planned.design


@pytest.fixture(scope="module")
def simulated(family: str, design: Design) -> SimResult:
    _, failed = CASES[family]
    verify = Verify.model_validate(
        {
            "routing": ["spray"],
            "traffic": TRAFFIC_OF.get(family, TRAFFIC),
            "single_switch_failures": False,
            "bound_max_variables": BOUND_MAX_VARIABLES,
            "failures": [{"switches": [failed]}],
        }
    )
    return simulate(design, verify)


def test_json_round_trip(design: Design) -> None:
    assert read_design(design.to_json()) == design


def test_the_validator_finds_no_violation(design: Design, catalog: Catalog) -> None:
    assert validate(design, catalog) == []


def test_report_totals_equal_the_objective_terms(planned: PlanResult, design: Design) -> None:
    terms = design.objective_terms()
    bom = planned.bom
    assert bom["total_cost_usd"].sum() == pytest.approx(design.capex_usd, rel=TOTALS_RTOL)
    assert bom["total_power_w"].sum() == pytest.approx(design.power_w, rel=TOTALS_RTOL)
    assert terms["capex_usd"] == pytest.approx(design.capex_usd, rel=TOTALS_RTOL)
    assert terms["power_w"] == pytest.approx(design.power_w, rel=TOTALS_RTOL)
    row = planned.summary.row(0, named=True)
    assert row["capex_usd"] == pytest.approx(terms["capex_usd"], rel=TOTALS_RTOL)
    assert row["power_kw"] * 1000 == pytest.approx(terms["power_w"], rel=TOTALS_RTOL)
    assert row["objective_usd"] == pytest.approx(terms["objective_usd"], rel=TOTALS_RTOL)


@pytest.mark.slow
def test_simulated_throughput_never_exceeds_the_bound(simulated: SimResult) -> None:
    bounded = simulated.collectives.filter(simulated.collectives["fraction_of_bound"].is_not_null())
    assert bounded.height >= 1, "no row has an optimal-routing bound: the check would be vacuous"
    assert (bounded["fraction_of_bound"] <= 1 + BOUND_RTOL).all(), bounded


def test_a_failure_scenario_runs(family: str, simulated: SimResult) -> None:
    _, failed = CASES[family]
    failures = simulated.failures
    assert failures.height >= 1
    for f in failures["fraction_of_healthy"].to_list():
        assert f is not None
        assert math.isfinite(f)
        assert -FRACTION_TOL <= f <= 1 + FRACTION_TOL
    assert any(failed in str(s) for s in failures["scenario"].to_list()), failures


def longest_path_in_switches(design: Design) -> int:
    """Switches on the longest shortest path between two switches of the group GPUs attach to.

    Every switch of that group counts, whether or not GPUs fill it (a torus's last switches may
    stand empty; the design's figure then bounds its GPU paths). Read off the family's fabric graph: an OCS circuit's pseudo-node is mirrors, not a switch, so
    each circuit becomes a direct edge between its two spines before the breadth-first search.
    """
    from planner.families import fabric_of

    fabric = fabric_of(design)
    first = fabric.tier_offsets[1]
    circuits = fabric.tier_offsets[-2] if fabric.circuit_device is not None else fabric.nodes
    g = nx.Graph()
    ends: dict[int, list[int]] = {}
    for a, b in zip(fabric.lower.tolist(), fabric.upper.tolist(), strict=True):
        if a < first or b < first:
            continue  # a GPU's NIC link
        if b >= circuits:
            ends.setdefault(b, []).append(a)
        else:
            g.add_edge(a, b)
    for spines in ends.values():
        g.add_edge(*spines)
    edge = set(range(first, fabric.tier_offsets[2]))  # the group GPUs attach to
    longest = 0
    for s in edge:
        dist = nx.single_source_shortest_path_length(g, s)
        # A rail-only fabric joins the leaves of one rail only (leaf su * n + r is rail r's).
        rails = design.gpus_per_node if fabric.forced_pxn else 1
        mine = {t for t in edge if (t - first) % rails == (s - first) % rails}
        assert mine <= set(dist), "a switch of the group is cut off"
        longest = max(longest, max(dist[t] for t in mine))
    return longest + 1


def test_hops_follow_the_fabric_graph(design: Design) -> None:
    """The longest shortest path; blocks routed through a transit block (WCMP over an OCS layer)
    may also send a share over a third block's spine, one switch more than the shortest path."""
    assert design.max_switch_hops == longest_path_in_switches(design) + design.transit_blocks

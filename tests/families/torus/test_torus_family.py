"""The torus family end to end: plan, validate, JSON, hostile wiring, alternatives, simulation."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import networkx as nx
import pytest

from models import torus_fabric as tf
from planner.api import PlanResult, load_design, plan, simulate, validate
from planner.design import Design, ScaleUpDomain
from planner.errors import InputError
from planner.families import read_design
from planner.families.torus import TorusWiring
from planner.loading import load_catalog, load_instance
from planner.report import plan_tables
from planner.schema.catalog import Catalog
from planner.schema.verify import Verify

INSTANCE = "instances/torus-768.toml"
#: Slack on simulated / bound throughput and on fractions at their ends.
BOUND_RTOL = 1e-6
FRACTION_TOL = 1e-9


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


@pytest.fixture(scope="module")
def planned(repo_root: Path, catalog: Catalog) -> PlanResult:
    inst = load_instance(repo_root / INSTANCE)
    return plan(inst, catalog=catalog, verify=False, time_limit_s=60)


@pytest.fixture(scope="module")
def design(planned: PlanResult) -> Design:
    assert planned.design is not None
    return planned.design


def test_the_example_chooses_a_torus(design: Design) -> None:
    assert design.family == "torus"
    assert design.status.value == "optimal"
    assert isinstance(design.wiring, TorusWiring)
    assert [t.role for t in design.tiers] == ["switch"]
    assert [(c.lower_role, c.upper_role) for c in design.link_classes] == [
        ("gpu", "switch"),
        ("switch", "switch"),
    ]


def test_the_validator_finds_no_violation(design: Design, catalog: Catalog) -> None:
    assert validate(design, catalog) == []


def test_figures_follow_the_closed_forms(design: Design) -> None:
    w = design.wiring
    assert isinstance(w, TorusWiring)
    t = design.tiers[0]
    assert t.switches == math.prod(w.dims)
    assert t.downlinks + t.uplinks <= t.radix
    assert design.link_classes[1].links == tf.torus_links(w.dims, w.parallel_links)
    assert design.max_switch_hops == tf.diameter(w.dims) + 1
    assert design.max_switch_hops <= 7
    assert design.bisection_gbps == design.link_speed_gbps * min(
        tf.bisection_links(w.dims, w.parallel_links), design.gpus / 2
    )
    assert tf.load_ratio(w.dims, w.gpus_per_switch, w.parallel_links, design.gpus) <= 4


def test_json_round_trip_keeps_the_wiring(design: Design) -> None:
    back = read_design(design.to_json())
    assert back == design
    assert back.wiring == design.wiring
    assert json.loads(design.to_json())["wiring"]["kind"] == "torus"


@pytest.mark.parametrize(
    ("wiring", "words"),
    [
        ({"kind": "torus", "dims": [0, 4], "gpus_per_switch": 8, "parallel_links": 1}, "dims"),
        ({"kind": "torus", "dims": [4, True], "gpus_per_switch": 8, "parallel_links": 1}, "dims"),
        (
            {"kind": "torus", "dims": [4, 4, 4, 4], "gpus_per_switch": 8, "parallel_links": 1},
            "dims",
        ),
        ({"kind": "torus", "dims": "4x4", "gpus_per_switch": 8, "parallel_links": 1}, "dims"),
        (
            {"kind": "torus", "dims": [10**6, 10**6], "gpus_per_switch": 8, "parallel_links": 1},
            "more than",
        ),
        (
            {"kind": "torus", "dims": [4, 4], "gpus_per_switch": -1, "parallel_links": 1},
            "gpus_per_switch",
        ),
        (
            {"kind": "torus", "dims": [4, 4], "gpus_per_switch": 8, "parallel_links": 1.5},
            "parallel_links",
        ),
        ({"kind": "torus", "dims": [4, 4], "gpus_per_switch": 8}, "missing parallel_links"),
        (
            {"kind": "torus", "dims": [4], "gpus_per_switch": 8, "parallel_links": 1, "twist": 1},
            "unknown parameters twist",
        ),
    ],
)
def test_a_hostile_wiring_is_refused_with_its_reason(
    design: Design, tmp_path: Path, wiring: dict[str, Any], words: str
) -> None:
    data = json.loads(design.to_json())
    data["wiring"] = wiring
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="torus wiring") as info:
        load_design(path)
    assert words in str(info.value)


def test_a_wiring_that_does_not_match_the_switches_is_refused(
    design: Design, tmp_path: Path
) -> None:
    data = json.loads(design.to_json())
    w = data["wiring"]
    w["dims"] = [w["dims"][0] + 1, *w["dims"][1:]]
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="not a buildable fabric"):
        load_design(path)


def test_the_validator_sees_a_torus_short_of_links(design: Design) -> None:
    c = design.link_classes[1]
    g = c.groups[0]
    fewer = replace(c, links=c.links - 1, groups=(replace(g, links=g.links - 1), *c.groups[1:]))
    broken = replace(design, link_classes=(design.link_classes[0], fewer))
    assert any("the rings give" in str(v) for v in validate(broken))


def test_the_validator_sees_a_hop_limit_broken(design: Design) -> None:
    tight = replace(
        design,
        requirements=replace(design.requirements, max_switch_hops=design.max_switch_hops - 1),
    )
    assert [v.check for v in validate(tight)] == ["hops"]


def test_alternatives_list_the_torus_and_the_clos(planned: PlanResult) -> None:
    alt = planned.alternatives
    families = set(alt["family"].to_list())
    assert {"torus", "clos"} <= families
    torus = alt.filter((alt["family"] == "torus") & (alt["status"] == "optimal"))
    assert torus.height >= 1
    assert torus["tco_usd"].min() == pytest.approx(planned.design.tco_usd)  # type: ignore[union-attr]
    assert alt.filter(alt["winner"])["family"].to_list() == ["torus"]


def test_the_report_has_the_torus_table(planned: PlanResult, design: Design) -> None:
    table = plan_tables(planned)["torus"]
    w = design.wiring
    assert isinstance(w, TorusWiring)
    assert table["ring_switches"].to_list() == list(w.dims)
    assert table["links_per_plane"].sum() == design.link_classes[1].links


def test_pins_choose_the_switch_and_the_family(repo_root: Path, catalog: Catalog) -> None:
    inst = load_instance(repo_root / INSTANCE).with_changes(
        {"search.pin.family": "torus", "search.pin.switch_models": "qm9700"}
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is not None
    assert result.design.family == "torus"
    assert result.design.tiers[0].switch_model == "qm9700"
    assert validate(result.design, catalog) == []


def test_an_impossible_torus_says_why(repo_root: Path, catalog: Catalog) -> None:
    inst = load_instance(repo_root / INSTANCE).with_changes(
        {"search.families": ["torus"], "constraints.max_switch_hops": 1}
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is None
    assert result.status.value == "infeasible"
    assert any("torus" in line for line in result.explanation)


# ---- simulation (planner.sim.fabric.torus_fabric, dimension-order routing) -------------------------
#: Small tori of one switch model: 384 GPUs at ratio 8 fill a 2 x 2 x 2 torus of 48 GPUs per
#: switch exactly; at ratio 4 they take a 3 x 3 torus of 43 (its last switch part-filled).
SMALL: dict[str, tuple[int, float, tuple[int, ...]]] = {
    "cube-2x2x2": (384, 8.0, (2, 2, 2)),
    "torus-3x3": (384, 4.0, (3, 3)),
}
#: Slack between the simulated uniform all-to-all fraction and the closed form.
CLOSED_FORM_RTOL = 1e-6


@pytest.fixture(scope="module", params=list(SMALL))
def small(request: pytest.FixtureRequest, catalog: Catalog) -> Design:
    from planner.schema.instance import Instance

    gpus, ratio, dims = SMALL[request.param]
    inst = Instance.model_validate(
        {
            "name": "torus-small",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "constraints": {"max_oversubscription": ratio},
            "search": {"families": ["torus"], "switch_models": ["tomahawk4-25t"]},
        }
    )
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is not None
    w = result.design.wiring
    assert isinstance(w, TorusWiring)
    assert w.dims == dims
    return result.design


def test_the_fabric_graph_is_the_torus(small: Design) -> None:
    from planner.families import fabric_of

    fabric = fabric_of(small)
    w = small.wiring
    assert isinstance(w, TorusWiring)
    assert fabric.strategy.name == "dimension_order"
    g = nx.Graph()
    first = fabric.tier_offsets[1]
    for a, b in zip(fabric.lower.tolist(), fabric.upper.tolist(), strict=True):
        if a >= first and b >= first:
            g.add_edge(a, b)
    assert g.number_of_nodes() == math.prod(w.dims)
    assert nx.diameter(g) + 1 == small.max_switch_hops
    assert fabric.physical_links == small.gpus + small.link_classes[1].links


@pytest.mark.slow
def test_simulated_throughput_never_exceeds_the_bound(small: Design) -> None:
    verify = Verify.model_validate(
        {
            "routing": ["spray", "ecmp"],
            "traffic": [
                {"kind": "uniform_all_to_all", "size_bytes": 1e8},
                {"kind": "random_permutation", "size_bytes": 1e8},
            ],
            "single_switch_failures": False,
            "failures": [{"switches": ["switch0"]}],
            # The fluid model: the closed form is of max-min shares, without packet latency.
            "fidelity": "fluid",
        }
    )
    # The closed form is of the fabric alone, every flow through the NICs: no scale-up domain
    # (with one, the flows inside a node leave the ideal and the fraction drops by (G-8)/(G-1)).
    sim = simulate(replace(small, scale_up=ScaleUpDomain(gpus=1)), verify)
    bounded = sim.collectives.filter(sim.collectives["fraction_of_bound"].is_not_null())
    assert bounded.height >= 1
    assert (bounded["fraction_of_bound"] <= 1 + BOUND_RTOL).all(), bounded
    healthy = sim.collectives.filter(
        (sim.collectives["scenario"] == "healthy")
        & (sim.collectives["pattern"] == "uniform_all_to_all")
        & (sim.collectives["routing"] == "spray")
    )
    w = small.wiring
    assert isinstance(w, TorusWiring)
    # Spraying over DOR's next hops (ties split) is the closed form's routing: equal when every
    # switch is full; with part-filled switches the closed form is a floor.
    theta = tf.throughput_fraction(w.dims, w.gpus_per_switch, w.parallel_links, small.gpus)
    simulated = float(healthy["fraction_of_ideal"].max())  # type: ignore[arg-type]
    assert simulated >= theta * (1 - CLOSED_FORM_RTOL)
    if math.prod(w.dims) * w.gpus_per_switch == small.gpus:
        assert simulated == pytest.approx(theta, rel=CLOSED_FORM_RTOL)
    failures = sim.failures
    assert any("switch0" in str(s) for s in failures["scenario"].to_list())
    for f in failures["fraction_of_healthy"].to_list():
        assert f is not None
        assert -FRACTION_TOL <= f <= 1 + FRACTION_TOL

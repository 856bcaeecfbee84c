"""The OCS torus family: a TPU-style pod that ``solve`` picks, validates and lists (issue 10).

The design must price exactly what ``fabric-planner torus`` prices for the same pod; its path
figures must agree with breadth-first search and cut counts on the slices' chip graphs; the
validator must catch a miscounted pod; design.json must refuse a hostile wiring.
"""

from __future__ import annotations

import json
import math
from dataclasses import replace
from functools import cache
from typing import Any

import networkx as nx
import pytest

from models import torus_ocs as to
from models.status import Status
from planner.api import plan, plan_torus, validate
from planner.design import Design
from planner.design_file import DesignFileError
from planner.errors import InputError
from planner.families import read_design
from planner.families.ocs_torus.family import OCS_TORUS, OcsTorusWiring
from planner.families.ocs_torus.pod import compose_slices
from planner.loading import load_catalog, load_instance
from planner.schema.instance import Instance

#: Relative tolerance on money and power (the two paths add the same terms in another order).
TOTALS_RTOL = 1e-9

SMALL_TORUS: dict[str, Any] = {
    "cube": 2,
    "slices": [[4, 4, 4], [2, 2, 4]],
    "cube_availability": 0.99,
    "target_availability": 0.999,
}


def small(**torus: Any) -> Instance:
    """A pod of 2 x 2 x 2 cubes: a 4 x 4 x 4 slice and a twisted 2 x 2 x 4 one."""
    return Instance.model_validate(
        {
            "name": "ocs-torus-small",
            "cluster": {"gpus": 64, "gpus_per_node": 4},
            "search": {"families": [OCS_TORUS]},
            "torus": SMALL_TORUS | torus,
        }
    )


@cache
def pod_4k() -> tuple[Instance, Design]:
    inst = load_instance("instances/tpu-pod-4k.toml").with_changes({"search.families": [OCS_TORUS]})
    result = plan(inst, verify=False)
    assert result.design is not None
    return inst, result.design


@pytest.mark.slow
def test_the_design_prices_what_the_torus_command_prices() -> None:
    inst, d = pod_4k()
    pod = plan_torus(inst).pod.row(0, named=True)
    assert d.family == OCS_TORUS
    assert d.status is Status.OPTIMAL
    assert d.gpus == pod["chips"]
    assert d.ocs_devices == pod["ocs_devices"]
    assert d.transceivers == pod["face_links"]
    assert d.capex_usd == pytest.approx(pod["capex_usd"], rel=TOTALS_RTOL)
    assert d.power_w / 1000 == pytest.approx(pod["power_kw"], rel=TOTALS_RTOL)
    assert validate(d, load_catalog()) == []
    assert read_design(d.to_json()) == d


def test_solve_lists_the_pod_among_the_alternatives() -> None:
    inst = load_instance("instances/tpu-pod-4k.toml").with_changes({"search.families": [OCS_TORUS]})
    result = plan(inst, verify=False)
    d = result.design
    assert d is not None
    rows = result.alternatives.filter(result.alternatives["family"] == OCS_TORUS)
    assert rows.height == 1
    row = rows.row(0, named=True)
    assert row["winner"]
    assert row["capex_usd"] == pytest.approx(d.capex_usd)
    assert row["max_switch_hops"] == d.max_switch_hops


@pytest.mark.parametrize(
    ("shape", "twisted"),
    [((4, 4, 4), False), ((4, 4, 8), False), ((4, 4, 8), True), ((4, 8, 8), True)],
)
def test_the_diameter_is_the_chip_graphs(shape: tuple[int, int, int], twisted: bool) -> None:
    """Routers on the longest path = eccentricity of a chip (BFS) on the composed slice + 1."""
    w = OcsTorusWiring(4, (shape,), twisted)
    (sl,), _ = compose_slices(4, [list(shape)], twisted)
    assert bool(sl.twists) == twisted
    g = nx.Graph(to.chip_graph(sl))
    eccentricity = nx.eccentricity(g)
    assert len(set(eccentricity.values())) == 1  # vertex-transitive: every chip alike
    assert w.diameters() == [max(eccentricity.values())]
    if not twisted:
        assert w.diameters() == [sum(n // 2 for n in shape)]


@pytest.mark.parametrize("shape", [(4, 4, 8), (8, 4, 4), (4, 8, 4)])
def test_the_bisection_counts_the_links_across_the_halving_cut(
    shape: tuple[int, int, int],
) -> None:
    """Links of the chip graph crossing the two planes that halve the longest dimension."""
    _, d = pod_4k()
    (sl,), _ = compose_slices(4, [list(shape)], False)
    position = {k: g for g, k in sl.placement.items()}
    longest = shape.index(max(shape))

    def side(chip: tuple[int, int, int, int]) -> bool:
        v = 4 * position[chip[0]][longest] + chip[1 + longest]
        return v < shape[longest] // 2

    crossing = sum(1 for a, b in to.chip_graph(sl).edges() if side(a) != side(b))
    w = OcsTorusWiring(4, (shape,), False)
    assert w.bisection_gbps(d) == crossing * d.link_speed_gbps
    assert crossing == 2 * math.prod(shape) // max(shape)


def test_a_small_pod_is_sound() -> None:
    result = plan(small(), verify=False)
    d = result.design
    assert d is not None
    assert validate(d, load_catalog()) == []
    w = d.wiring
    assert isinstance(w, OcsTorusWiring)
    assert d.max_switch_hops == 6 + 1  # the 4 x 4 x 4 slice: 2 + 2 + 2 links
    assert d.blast_radius_gpus == 64


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda d: replace(d, tiers=(replace(d.tiers[0], switches=11),)), "OCS devices"),
        (lambda d: replace(d, tiers=(replace(d.tiers[0], downlinks=2),)), "ports used"),
        (
            lambda d: replace(d, wiring=replace(d.wiring, slices=(*d.wiring.slices, (8, 8, 8)))),
            "the slices need",
        ),
        (lambda d: replace(d, gpus=d.gpus + 1), "cubes"),
    ],
)
def test_the_validator_recounts_the_pod(edit: Any, words: str) -> None:
    result = plan(small(), verify=False)
    assert result.design is not None
    broken = edit(result.design)
    assert any(words in str(v) for v in validate(broken)), validate(broken)


@pytest.mark.parametrize(
    ("wiring", "words"),
    [
        ({"kind": "ocs_torus", "cube": "2", "slices": [[4, 4, 4]], "twisted": True}, "cube"),
        ({"kind": "ocs_torus", "cube": 2, "slices": [[4, 4, 5]], "twisted": True}, "slices.0"),
        ({"kind": "ocs_torus", "cube": 2, "slices": [], "twisted": True}, "slices"),
        ({"kind": "ocs_torus", "cube": 2, "slices": [[4, 4, 4]], "twisted": 1}, "twisted"),
        ({"kind": "ocs_torus", "cube": 2, "slices": [[4, 4, 4]]}, "exactly"),
        ({"kind": "moebius"}, "unknown wiring kind"),
        ({"kind": "up_down", "dims": [4]}, "no parameters"),
    ],
)
def test_design_json_refuses_a_hostile_wiring(wiring: dict[str, Any], words: str) -> None:
    result = plan(small(), verify=False)
    assert result.design is not None
    data = json.loads(result.design.to_json())
    data["wiring"] = wiring
    with pytest.raises(DesignFileError) as info:
        read_design(data)
    assert "wiring" in str(info.value)
    assert words in str(info.value)


def test_the_family_needs_a_torus_section() -> None:
    inst = Instance.model_validate(
        {"name": "no-torus", "cluster": {"gpus": 64}, "search": {"families": [OCS_TORUS]}}
    )
    with pytest.raises(InputError, match=r"\[torus\] section"):
        plan(inst, verify=False)


def test_an_unbuildable_pod_says_why() -> None:
    """Eighty cubes do not fit OCS devices of 136 ports (two per cube): infeasible, with the reason."""
    result = plan(small(cube=4, slices=[[16, 16, 20]]), verify=False)
    assert result.design is None
    assert result.status is Status.INFEASIBLE
    assert any("port" in line for line in result.explanation), result.explanation

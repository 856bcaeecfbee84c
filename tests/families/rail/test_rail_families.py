"""The rail families: sizing, the brute-force optimum, the rail-only rule, wiring and round trip.

``rail_optimized`` (rail leaves per scalable unit under a Clos) and ``rail_only`` (one Clos per
rail) are sized by ``models.rail_sizing`` through ``planner.families.rail.sizing``; these tests check the
model against an enumeration written apart from it (``tests.models.rail_brute_force``), the
fabric's GPU-to-leaf rule, the zero spine load of same-rail rings, and design.json.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from models import clos_sizing as cs
from models import rail_sizing as rs
from models.status import Status
from planner.api import plan, validate
from planner.design import Design
from planner.families import family_of, read_design
from planner.families.rail.sizing import rail_only_refusal, rail_problems, size_rail
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance
from planner.sim.fabric import Fabric
from planner.sizing.problems import allowed_media, medium_option
from tests.models.rail_brute_force import rail_brute_force

#: Relative tolerance between the model's and the enumeration's objective (cent rounding).
OBJECTIVE_RTOL = 1e-6
RAIL_FAMILIES = ("rail_optimized", "rail_only")


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


def instance(family: str, **over: Any) -> Instance:
    data: dict[str, Any] = {
        "name": f"rail-{family}",
        "cluster": {"gpus": 256, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
        "search": {"families": [family]},
    }
    for key, value in over.items():
        data[key] = {**data.get(key, {}), **value}
    return Instance.model_validate(data)


@pytest.fixture(scope="module", params=RAIL_FAMILIES)
def planned(request: pytest.FixtureRequest, catalog: Catalog) -> Design:
    inst = instance(str(request.param))
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is not None
    return result.design


@pytest.mark.slow
def test_a_256_gpu_instance_sizes_under_each_family(planned: Design, catalog: Catalog) -> None:
    assert planned.status is Status.OPTIMAL
    assert planned.family in RAIL_FAMILIES
    assert validate(planned, catalog) == []
    u, n = planned.wiring.params()["su_nodes"], planned.wiring.params()["rails"]
    assert n == 8
    assert planned.tiers[0].switches == n * -(-32 // u)


def test_the_fabric_puts_gpu_g_on_its_rail_leaf(planned: Design) -> None:
    from planner.families import fabric_of

    fab = fabric_of(planned)
    u, n = planned.wiring.params()["su_nodes"], planned.wiring.params()["rails"]
    g = np.arange(planned.gpus)
    assert np.array_equal(
        fab.upper[: planned.gpus], fab.tier_offsets[1] + (g // n // u) * n + g % n
    )
    assert fab.forced_pxn == (planned.family == "rail_only")


def test_design_json_round_trips(planned: Design) -> None:
    again = read_design(planned.to_json())
    assert again == planned
    assert again.wiring.params() == planned.wiring.params()


# ---- the model against brute force ---------------------------------------------------------
#: Small instances: (family, cluster, constraints, search pins and switch models, layout).
BRUTE: dict[str, tuple[str, dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]] = {
    "opt-64-one-switch": (
        "rail_optimized",
        {"gpus": 64},
        {},
        {"switch_models": ["qm9700"], "pin": {"tiers": 2}},
        {},
    ),
    "opt-64-two-switches-2to1": (
        "rail_optimized",
        {"gpus": 64},
        {"max_oversubscription": 2.0},
        {"switch_models": ["qm9700", "tomahawk4-25t"], "pin": {"tiers": 2}},
        {},
    ),
    "opt-96-racks-of-8": (
        "rail_optimized",
        {"gpus": 96},
        {},
        {"switch_models": ["tomahawk4-25t"], "pin": {"tiers": 2}},
        {"nodes_per_rack": 8, "racks_per_row": 2},
    ),
    "only-128-one-tier": (
        "rail_only",
        {"gpus": 128},
        {},
        {"switch_models": ["qm9700"], "pin": {"tiers": 1}},
        {},
    ),
    "only-512-two-tiers": (
        "rail_only",
        {"gpus": 512},
        {},
        {"switch_models": ["qm9700", "tomahawk4-25t"], "pin": {"tiers": 2}},
        {"nodes_per_rack": 2},
    ),
}


def brute_instance(name: str) -> Instance:
    family, cluster, constraints, search, layout = BRUTE[name]
    return Instance.model_validate(
        {
            "name": name,
            "cluster": {"gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1], **cluster},
            "constraints": constraints,
            "search": {"families": [family], **search},
            "layout": layout,
        }
    )


@pytest.mark.parametrize("name", sorted(BRUTE))
def test_the_model_optimum_equals_brute_force(name: str, catalog: Catalog) -> None:
    inst = brute_instance(name)
    family = BRUTE[name][0]
    pairs = rail_problems(inst, catalog, family_of(family), rail_only=family == "rail_only")
    assert len(pairs) == 1
    _, rp = pairs[0]
    assert rp is not None
    media = [medium_option(m) for m in allowed_media(inst, catalog) if m.speed_gbps == 400]
    expected = rail_brute_force(rp, media)
    got = rs.solve(rp, cs.SolveOptions(time_limit_s=60.0), canonical_s=0)
    assert expected is not None
    assert got.status is Status.OPTIMAL
    assert got.total(got.solution.objective_usd) == pytest.approx(expected, rel=OBJECTIVE_RTOL)


@pytest.mark.slow
def test_top_of_rack_needs_a_rack_holding_the_unit(catalog: Catalog) -> None:
    """Racks of 2 nodes: a rail leaf stands in the rack only with SUs of at most 2 nodes."""
    inst = brute_instance("only-512-two-tiers")
    _, rp = rail_problems(inst, catalog, family_of("rail_only"), rail_only=True)[0]
    assert rp is not None
    pinned = replace(rp, clos=replace(rp.clos, pins=cs.Pins(leaf_placement="top_of_rack")))
    sol = rs.solve(pinned, cs.SolveOptions(time_limit_s=30.0), canonical_s=0).solution
    assert sol.status is Status.OPTIMAL
    assert sol.tier_solutions[0].downlinks <= 2
    free = rs.solve(
        replace(pinned, clos=replace(pinned.clos, pins=cs.Pins())),
        cs.SolveOptions(time_limit_s=30.0),
        canonical_s=0,
    ).solution
    cut = rs.build(pinned, frozenset({"rail.leaf_placement"}))
    relaxed = cs.solve(cut, cs.SolveOptions(time_limit_s=30.0))
    assert free.objective_usd is not None
    assert sol.objective_usd is not None
    assert relaxed.objective_usd is not None
    assert free.objective_usd <= sol.objective_usd + 1e-6  # pinning a placement never helps
    # the rule binds: without it the rack placement takes the larger, cheaper units
    assert relaxed.objective_usd < sol.objective_usd - 1.0
    assert relaxed.tier_solutions[0].downlinks > 2


# ---- the rail-only rule ----------------------------------------------------------------------
@pytest.mark.parametrize(
    ("scale_up", "words"),
    [
        ({"gpus": 4}, "scale-up domain"),
        ({"gbps_per_gpu": 200.0}, "below the NIC"),
    ],
    ids=["domain-smaller-than-a-node", "domain-slower-than-the-nic"],
)
def test_rail_only_refuses_a_scale_up_domain_that_cannot_carry_pxn(
    scale_up: dict[str, Any], words: str, catalog: Catalog
) -> None:
    inst = instance("rail_only", cluster={"scale_up": scale_up})
    assert words in rail_only_refusal(inst)
    sized = size_rail(inst, catalog, family_of("rail_only"), None, 10.0, rail_only=True)
    assert [s.status for s in sized] == [Status.INFEASIBLE]
    assert words in sized[0].reason
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.design is None
    assert any(words in line for line in result.explanation)


def test_rail_only_accepts_the_default_scale_up_domain() -> None:
    assert rail_only_refusal(instance("rail_only")) == ""


# ---- search ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_the_search_weighs_the_rail_families_against_the_clos(catalog: Catalog) -> None:
    families = ["clos", "rail_optimized", "rail_only"]
    both = plan(instance("clos", search={"families": families}), catalog=catalog, verify=False)
    assert both.design is not None
    each = {
        f: plan(instance(f), catalog=catalog, verify=False, alternatives=False).design
        for f in families
    }
    best = min((d.objective_usd, f) for f, d in each.items() if d is not None)
    assert both.design.family == best[1]
    assert both.design.objective_usd == pytest.approx(best[0], rel=OBJECTIVE_RTOL)


# ---- same-rail traffic stays under the leaves --------------------------------------------------
@pytest.mark.parametrize("routing", ["spray", "ecmp"])
def test_a_same_rail_ring_puts_no_bytes_on_the_spines(routing: str, catalog: Catalog) -> None:
    """Data-parallel ring all-reduce (same local index on every node), U = nodes: one SU.

    The simulator's own traffic (``build_traffic``) routed phase by phase: every byte turns at
    the rail leaves, none reaches the spine tier.
    """
    from planner.families import fabric_of
    from planner.schema.verify import TrafficSpec
    from planner.sim.routing import Routing, route
    from planner.sim.traffic_kinds import build_traffic

    inst = instance("rail_optimized", search={"pin": {"tiers": 2, "downlinks": [32]}})
    design = plan(inst, catalog=catalog, verify=False, alternatives=False).design
    assert design is not None
    assert design.wiring.params()["su_nodes"] == 32  # U = nodes: one SU
    fabric = fabric_of(design)
    traffic = build_traffic(TrafficSpec(kind="all_reduce_ring"), design.gpus, 8, seed=0)
    assert traffic.phases
    for phase in traffic.phases:
        assert np.array_equal(phase.src % 8, phase.dst % 8)  # the rings stay on their rail
        routes = route(fabric, phase.src, phase.dst, Routing(routing))
        load = routes.load(phase.size_bytes)
        assert routes.connected.all()
        assert load[fabric.directed_class >= 1].sum() == 0.0
        assert load[fabric.directed_class == 0].sum() > 0.0


def test_the_wiring_figures(planned: Design) -> None:
    """Hops of a (rail) Clos, bisection over all rails, one leaf's GPUs as the blast radius."""
    u = planned.wiring.params()["su_nodes"]
    assert planned.max_switch_hops == 2 * planned.num_tiers - 1
    assert planned.blast_radius_gpus == u
    s = planned.link_speed_gbps
    per_rail = [planned.gpus // 8 * s] + [c.links // 8 * s for c in planned.link_classes[1:]]
    if planned.family == "rail_only":
        assert planned.bisection_gbps == 8 * min(per_rail) / 2
    else:
        whole = [planned.gpus * s] + [c.links * s for c in planned.link_classes[1:]]
        assert planned.bisection_gbps == min(whole) / 2


# ---- routing on rail fabrics -------------------------------------------------------------------
#: Small rail fabrics: (family, GPUs, tiers, SU size pinned through the leaf downlinks).
FABRICS: dict[str, tuple[str, int, int, int]] = {
    "optimized-2t": ("rail_optimized", 128, 2, 4),
    "optimized-3t": ("rail_optimized", 256, 3, 4),
    "only-2t": ("rail_only", 256, 2, 4),
    "only-3t": ("rail_only", 512, 3, 2),
}


@functools.cache
def rail_fabric(name: str) -> Fabric:
    from planner.families import fabric_of

    family, gpus, tiers, su = FABRICS[name]
    inst = instance(
        family,
        cluster={"gpus": gpus},
        search={"pin": {"tiers": tiers, "downlinks": [su]}},
    )
    design = plan(inst, verify=False, alternatives=False).design
    assert design is not None
    assert validate(design) == []
    return fabric_of(design)


def scenario(name: str, failed: str) -> Fabric:
    fabric = rail_fabric(name)
    if failed == "healthy":
        return fabric
    return fabric.with_failed_switches([fabric.tier_offsets[2]])  # spine 0


def permutation(fabric: Fabric, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """A random permutation of the GPUs; on a rail-only fabric, within each rail."""
    rng = np.random.default_rng(seed)
    if not fabric.forced_pxn:
        src = np.arange(fabric.gpus)
        return src, rng.permutation(fabric.gpus)
    n = 8
    nodes = fabric.gpus // n
    src = np.arange(fabric.gpus)
    dst = np.empty_like(src)
    for r in range(n):
        dst[np.arange(nodes) * n + r] = rng.permutation(nodes) * n + r
    return src, dst


ROUTING_CASES = [(f, s) for f in sorted(FABRICS) for s in ("healthy", "spine0-failed")]


@pytest.mark.parametrize(("name", "failed"), ROUTING_CASES)
def test_ecmp_paths_are_shortest_valley_free(name: str, failed: str) -> None:
    from planner.sim.routing import Routing, route
    from tests.sim.test_routing import follow, valley_free_lengths

    fabric = scenario(name, failed)
    src, dst = permutation(fabric, 3)
    routes = route(fabric, src, dst, Routing.ECMP, seed=3)
    expected = valley_free_lengths(fabric, src, dst)
    by_flow = routes.explicit.tocsc()
    lengths = []
    for f in range(src.size):
        col = by_flow[:, f]
        links = col.indices[col.data > 0]
        lengths.append(follow(fabric, links, int(src[f]), int(dst[f])) if links.size else -1)
    assert (expected > 0).any()
    assert np.array_equal(routes.connected, expected > 0)
    assert lengths == expected.tolist()


@pytest.mark.parametrize(("name", "failed"), ROUTING_CASES)
def test_spray_uses_shortest_valley_free_paths(name: str, failed: str) -> None:
    from planner.sim.routing import Routing, route
    from tests.sim.test_routing import dense, hop_class_sums, valley_free_lengths

    fabric = scenario(name, failed)
    src, dst = permutation(fabric, 5)
    routes = route(fabric, src, dst, Routing.SPRAY)
    frac = dense(routes)
    sums = hop_class_sums(fabric, frac)
    used = sums > 1e-12
    expected = valley_free_lengths(fabric, src, dst)
    assert np.array_equal(routes.connected, expected > 0)
    np.testing.assert_allclose(sums[used], 1.0, rtol=0, atol=1e-12)
    assert np.array_equal(used.sum(axis=0), np.where(expected > 0, expected, 0))
    assert not (frac[~fabric.alive] > 0).any()


@pytest.mark.parametrize(("name", "failed"), ROUTING_CASES)
def test_spray_loads_equal_the_routed_loads(name: str, failed: str) -> None:
    from planner.sim.routing import Routing, route
    from planner.sim.spray_loads import link_loads

    fabric = scenario(name, failed)
    src, dst = permutation(fabric, 7)
    gbit = np.random.default_rng(7).uniform(0.5, 2.0, src.size)
    routes = route(fabric, src, dst, Routing.SPRAY)
    want = routes.load(np.where(routes.connected, gbit, 0.0))
    got = link_loads(fabric, src, dst, [gbit])
    if failed == "healthy":
        assert got is not None  # a healthy rail fabric factors like a Clos
    if got is not None:
        connected, (load,) = got
        assert connected.tolist() == routes.connected.tolist()
        np.testing.assert_allclose(load, want, rtol=1e-9, atol=1e-9 * want.max())


# ---- reports -----------------------------------------------------------------------------------
def test_the_report_names_the_rails(planned: Design) -> None:
    from planner.families import family_of
    from planner.report.markdown import _wiring_lines

    tables = family_of(planned.family).extra_tables(planned)
    lines = _wiring_lines(tables)
    u, n = planned.wiring.params()["su_nodes"], planned.wiring.params()["rails"]
    units = -(-(planned.gpus // n) // u)
    assert lines[0] == "## Wiring"
    assert f"{units} scalable unit" in lines[2]
    assert f"of {u} node" in lines[2]
    assert "NIC r of every node in a unit goes to rail leaf r of that unit" in lines[2]
    assert planned.bom()["tier"].str.contains("rail_leaf").any()
    assert planned.links_table()["upper_role"].to_list()[0] == "rail_leaf"


def test_the_superpod_reference_is_four_units_of_32_nodes(catalog: Catalog) -> None:
    """The DGX SuperPOD reference (instances/superpod-h100-4su.toml) pinned as rail-optimized."""
    from planner.loading import load_instance

    inst = load_instance("instances/superpod-h100-4su.toml")
    pin = inst.search.pin.model_copy(update={"family": "rail_optimized"})
    inst = inst.model_copy(update={"search": inst.search.model_copy(update={"pin": pin})})
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    d = result.design
    assert d is not None
    assert d.family == "rail_optimized"
    assert d.wiring.params() == {"su_nodes": 32, "rails": 8}
    assert [t.switches for t in d.tiers] == [32, 16]
    assert d.tiers[0].parallel_links == 2
    assert validate(d, catalog) == []
    sentence = family_of_rails(d)
    assert sentence.startswith("rail-optimized: 4 scalable units of 32 nodes (128 nodes)")
    assert sentence.endswith("every leaf reaches every spine over 2 links each")


def family_of_rails(d: Design) -> str:
    from planner.families.rail.optimized import rail_sentence

    return rail_sentence(d)


# ---- the validator and design.json refuse broken rail designs ------------------------------------
def _wrong_su(d: Design) -> Design:
    w = d.wiring
    return replace(d, wiring=type(w)(su_nodes=w.params()["su_nodes"] + 1, rails=8))  # type: ignore[call-arg]


def _one_leaf_less(d: Design) -> Design:
    leaf = d.tiers[0]
    return replace(d, tiers=(replace(leaf, switches=leaf.switches - 1), *d.tiers[1:]))


def _four_rails(d: Design) -> Design:
    w = d.wiring
    return replace(d, wiring=type(w)(su_nodes=w.params()["su_nodes"], rails=4))  # type: ignore[call-arg]


BREAKS = {"wrong-su-size": _wrong_su, "one-leaf-less": _one_leaf_less, "four-rails": _four_rails}


@pytest.mark.parametrize("how", sorted(BREAKS))
def test_the_validator_refuses_a_broken_rail_design(planned: Design, how: str) -> None:
    from planner.families import family_of
    from planner.validation import structure_violations

    broken = BREAKS[how](planned)
    found = structure_violations(broken, family_of(broken.family))
    assert any(v.check == "wiring" for v in found), found
    with pytest.raises(ValueError, match="wiring"):
        read_design(broken.to_json())


@pytest.mark.parametrize(
    "params",
    [{"su_nodes": 0, "rails": 8}, {"su_nodes": 4}, {"su_nodes": 4, "rails": 8, "pods": 2}],
    ids=["zero-su", "no-rails", "extra-field"],
)
@pytest.mark.parametrize("kind", RAIL_FAMILIES)
def test_a_rail_wiring_with_bad_parameters_is_refused(kind: str, params: dict[str, Any]) -> None:
    from planner.families import family_of

    with pytest.raises(ValueError, match=kind):
        family_of(kind).read_wiring(params)


def test_an_infeasible_rail_structure_names_the_constraint_to_relax(catalog: Catalog) -> None:
    """Two tiers cannot stay within one switch hop: the reason names max_switch_hops."""
    inst = instance(
        "rail_optimized", constraints={"max_switch_hops": 1}, search={"pin": {"tiers": 2}}
    )
    sized = size_rail(inst, catalog, family_of("rail_optimized"), None, 10.0, rail_only=False)
    assert [s.status for s in sized] == [Status.INFEASIBLE]
    assert "relaxing max_switch_hops alone would allow one" in sized[0].reason


#: Three tiers need small switches to be enumerated: radix 8 and 12 at 400G, two GPUs a node.
SMALL_BRUTE: dict[str, tuple[str, int, int, dict[str, Any]]] = {
    "opt-3t-32gpus": ("rail_optimized", 32, 3, {}),
    "opt-3t-48gpus-2to1": ("rail_optimized", 48, 3, {"max_oversubscription": [2.0, 1.0]}),
    "only-3t-64gpus": ("rail_only", 64, 3, {}),
    "opt-2t-48gpus-racks-of-2": ("rail_optimized", 48, 2, {}),
}


@pytest.mark.parametrize("name", sorted(SMALL_BRUTE))
def test_the_model_optimum_equals_brute_force_on_small_switches(name: str) -> None:
    from tests.models.catalogs import catalog as small_catalog
    from tests.models.catalogs import switch

    family, gpus, tiers, constraints = SMALL_BRUTE[name]
    cat = small_catalog([switch("s8", 8, cost_usd=4_000.0), switch("s12", 12, cost_usd=7_000.0)])
    inst = Instance.model_validate(
        {
            "name": name,
            # A domain of one node keeps rail-only at R = n rails (tests/families/rail/test_rail_count.py checks
            # larger rail counts against the enumeration).
            "cluster": {
                "gpus": gpus,
                "gpus_per_node": 2,
                "nic_gbps": 400,
                "nic_ports": [1],
                "scale_up": {"gpus": 2},
            },
            "constraints": constraints,
            "search": {"families": [family], "pin": {"tiers": tiers}},
            "layout": {"nodes_per_rack": 2, "racks_per_row": 4},
        }
    )
    pairs = rail_problems(inst, cat, family_of(family), rail_only=family == "rail_only")
    assert len(pairs) == 1
    _, rp = pairs[0]
    assert rp is not None
    media = [medium_option(m) for m in allowed_media(inst, cat) if m.speed_gbps == 400]
    expected = rail_brute_force(rp, media)
    got = rs.solve(rp, cs.SolveOptions(time_limit_s=60.0), canonical_s=0)
    assert expected is not None
    assert got.status is Status.OPTIMAL
    assert got.total(got.solution.objective_usd) == pytest.approx(expected, rel=OBJECTIVE_RTOL)

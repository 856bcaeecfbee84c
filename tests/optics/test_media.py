"""Media chosen per link from the floor plan, jointly with the switches and the leaf placement.

Four properties of the issue's acceptance:

1. On small layouts the joint optimum equals brute force over placement x medium x switch: every
   structure the planner builds from an instance (``planner.sizing.structures_of``) is solved by
   CP-SAT and enumerated by ``tests.models.brute_force``, which reads the length tails the floor
   plan gives but not the cabling plans.
2. Moving racks farther apart never makes the design cheaper (metamorphic).
3. Per-link media follow the lengths: every group of links of a planned design is reached by its
   medium, groups run shortest first, and each uses the cheapest medium for its lengths.
4. Leaf placement is a real decision: the optimum changes with the floor plan, and pinning the
   other placement never pays.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest

from models import cabling as cb
from models import clos_sizing as cs
from models.status import Status
from planner.api import plan, validate
from planner.design import Design, LinkClass, LinkGroup, TierDesign
from planner.families import search_families
from planner.layout import hall_of
from planner.loading import load_catalog
from planner.schema.catalog import Catalog, Medium
from planner.schema.instance import Instance
from planner.sizing import structures_of
from tests.models.brute_force import brute_force
from tests.models.catalogs import medium, switch

#: Relative tolerance between two optima (CP-SAT prices in cents and milliwatts).
OBJECTIVE_RTOL = 1e-6
#: Relative slack of the metamorphic comparisons (an optimum may tie its base exactly).
METAMORPHIC_RTOL = 1e-9
SPEED_GBPS = 400


def _medium(
    name: str,
    kind: str,
    reach_m: float,
    end_cost_usd: float,
    end_power_w: float,
    cable_usd: float = 0.0,
    *,
    connector: str | None = None,
    latency_ns: int | None = None,
) -> dict[str, Any]:
    """A 400G catalog medium; ``connector`` and ``latency_ns`` override the helper's defaults."""
    entry = medium(name, kind, SPEED_GBPS, reach_m, end_cost_usd, end_power_w, cable_usd)
    if connector is not None:
        entry["connector"] = connector
    if latency_ns is not None:
        entry["latency_ns"] = latency_ns
    return entry


#: Five 400G media that compete: copper up to 7 m, SR up to 50 m, DR and low-power LPO to 500 m.
#: LPO costs more than DR in the objective but draws less than half its power (a power cap picks
#: it), and its MPO-16 connector does not plug into the CPO engines (MPO-12, like SR and DR).
SMALL_MEDIA = [
    _medium("dac-400g", "dac", 3.0, 60.0, 0.1),
    _medium("aec-400g", "aec", 7.0, 150.0, 3.0),
    _medium("sr-400g", "sr", 50.0, 350.0, 8.0, 60.0),
    _medium("dr-400g", "dr", 500.0, 500.0, 9.0, 80.0),
    _medium("lpo-400g", "lpo", 500.0, 530.0, 4.0, 80.0, connector="mpo-16"),
]
#: Small radices keep the enumeration fast; c8 and c16 have co-packaged optics (100G lanes,
#: MPO-12, 500 m) that save a module on every optical link they end.
SMALL_SWITCHES = [
    switch("s8", 8, cost_usd=4_000.0, power_w=150.0, latency_ns=300),
    switch("s16", 16, cost_usd=9_000.0, power_w=250.0, latency_ns=400),
    switch("s32", 32, cost_usd=20_000.0, power_w=400.0, latency_ns=500),
    switch("c8", 8, cost_usd=6_000.0, power_w=180.0, latency_ns=300, cpo=True),
    switch("c16", 16, cost_usd=14_000.0, power_w=300.0, latency_ns=400, cpo=True),
]
SMALL = Catalog.model_validate({"switch": SMALL_SWITCHES, "medium": SMALL_MEDIA})


def _cpo_switch(name: str, reach_m: float) -> dict[str, Any]:
    """A 16-port CPO switch whose engine drives ``reach_m`` of fibre (a reach threshold)."""
    optics = {"lane_gbps": SPEED_GBPS // 4, "connector": "mpo-12", "reach_m": reach_m}
    return switch(
        name, 16, cost_usd=14_000.0, power_w=300.0, latency_ns=400, cpo=True, cpo_optics=optics
    )


#: Three optical media that trade price for power on every band beyond 50 m (DR cheapest, LPO
#: least power, FR in between), and two CPO engines whose reaches (100 m, 200 m) cut the 50-500 m
#: range into three bands: 3 x 3 x 3 x 3 = 81 cabling plans are Pareto-optimal per context once
#: power is capped.
RICH = Catalog.model_validate(
    {
        "switch": [
            switch("s16", 16, cost_usd=9_000.0, power_w=250.0, latency_ns=400),
            switch("s32", 32, cost_usd=20_000.0, power_w=400.0, latency_ns=500),
            _cpo_switch("c16a", 100.0),
            _cpo_switch("c16b", 200.0),
        ],
        "medium": [
            _medium("dac-400g", "dac", 3.0, 60.0, 0.1),
            _medium("aec-400g", "aec", 7.0, 150.0, 3.0, latency_ns=100),
            _medium("sr-400g", "sr", 50.0, 350.0, 8.0, 60.0),
            _medium("dr-400g", "dr", 500.0, 500.0, 9.0, 80.0),
            _medium("lpo-400g", "lpo", 500.0, 560.0, 4.0, 80.0, connector="mpo-16", latency_ns=20),
            _medium("fr-400g", "fr", 500.0, 530.0, 6.5, 80.0, connector="lc-duplex", latency_ns=60),
        ],
    }
)
#: A hall whose leaf-spine links run 36-202 m (8 m racks, 30 m rows, network row in front).
RICH_LAYOUT = {
    "nodes_per_rack": 1,
    "racks_per_row": 4,
    "rack_width_m": 8.0,
    "row_pitch_m": 30.0,
    "network_row": "front",
}

DEFAULT = load_catalog("default")
CATALOGS = {"small": SMALL, "rich": RICH, "default": DEFAULT}


def instance(
    gpus: int,
    *,
    layout: dict[str, Any] | None = None,
    constraints: dict[str, Any] | None = None,
    tiers: int | None = None,
    switches: tuple[str, ...] | None = None,
) -> Instance:
    """One plane of 400G NIC ports (eight GPUs a node), optionally pinned to ``tiers`` tiers."""
    search: dict[str, Any] = {}
    if tiers is not None:
        search["pin"] = {"tiers": tiers}
    if switches is not None:
        search["switch_models"] = list(switches)
    return Instance.model_validate(
        {
            "name": "media",
            "cluster": {"gpus": gpus, "nic_gbps": SPEED_GBPS, "nic_ports": [1]},
            "layout": layout or {},
            "constraints": constraints or {},
            "search": search,
        }
    )


def media_at(catalog: Catalog, speed_gbps: int) -> list[cb.MediumOption]:
    """The catalog's media at one speed as model options, converted here (not by the planner)."""
    return [_option(m) for m in catalog.medium if m.speed_gbps == speed_gbps]


def _option(m: Medium) -> cb.MediumOption:
    return cb.MediumOption(
        name=m.name,
        end_cost_usd=m.cost_usd_per_end,
        end_power_w=m.power_w_per_end,
        cable_cost_usd=m.cable_cost_usd,
        latency_ns=m.latency_ns,
        reach_m=m.reach_m,
        copper=m.kind in ("dac", "aec"),
        lane_gbps=m.lane_gbps,
        connector=m.connector,
        channel_loss_db=m.channel_loss_db,
        host_lane_gbps=tuple(m.host_lane_gbps) or ((m.lane_gbps,) if m.lane_gbps else ()),
        form_factors=tuple(m.form_factors),
    )


def planned(inst: Instance, catalog: Catalog) -> Design:
    """The proven optimum of an instance (verification and the alternatives table off)."""
    result = plan(inst, catalog=catalog, verify=False, alternatives=False)
    assert result.status is Status.OPTIMAL, result.explanation
    assert result.design is not None
    return result.design


# --- 1. Joint optimum equals brute force -----------------------------------------------------


@dataclass(frozen=True)
class JointCase:
    """A small instance; ``shows`` names what its optimum must exercise (checked separately)."""

    gpus: int
    tiers: int
    layout: dict[str, Any]
    constraints: dict[str, Any] = field(default_factory=dict)
    switches: tuple[str, ...] | None = None
    catalog: str = "small"
    shows: frozenset[str] = frozenset()
    """'cpo': a tier uses a CPO switch; 'mix': a class mixes media; 'binding': the constraints
    make it dearer; 'infeasible': no design meets them (and one does without them)."""

    def instance(self, *, capped: bool = True) -> Instance:
        return instance(
            self.gpus,
            layout=self.layout,
            constraints=self.constraints if capped else None,
            tiers=self.tiers,
            switches=self.switches,
        )


#: 8 m racks in 4-rack rows 8 m apart: leaf-spine links 7.5-35 m (ToR), so optics or CPO.
WIDE_HALL = {"nodes_per_rack": 2, "racks_per_row": 4, "rack_width_m": 3.0, "row_pitch_m": 8.0}
#: Rows 12 m apart with the network row in front: leaf-spine links 16-68 m, across SR's 50 m.
DEEP_HALL = {"nodes_per_rack": 1, "racks_per_row": 5, "row_pitch_m": 12.0, "network_row": "front"}

JOINT_CASES: dict[str, JointCase] = {
    # Row placements with GPU links of 1.2-5.1 m (0.5 m slack): DAC and AEC share class 0.
    "mor-copper-128": JointCase(
        128,
        2,
        {"nodes_per_rack": 1, "racks_per_row": 8, "rack_width_m": 1.2, "cable_slack_m": 0.5},
        shows=frozenset({"mix"}),
    ),
    "tor-cpo-spine-256": JointCase(256, 2, WIDE_HALL, shows=frozenset({"cpo"})),
    "front-row-sr-dr-400": JointCase(400, 2, DEEP_HALL, shows=frozenset({"mix"})),
    # End of row only, 2 m racks: GPU links 5.2-16 m straddle the AEC and SR reaches.
    "eor-only-192": JointCase(
        192,
        2,
        {
            "nodes_per_rack": 1,
            "racks_per_row": 6,
            "rack_width_m": 2.0,
            "leaf_placement": ["end_of_row"],
        },
        shows=frozenset({"mix"}),
    ),
    # 24 GPUs a rack and a partial last rack; leaves in the row only.
    "mor-eor-partial-rack-200": JointCase(
        200,
        2,
        {
            "nodes_per_rack": 3,
            "racks_per_row": 3,
            "rack_width_m": 1.5,
            "cable_slack_m": 1.0,
            "leaf_placement": ["middle_of_row", "end_of_row"],
        },
    ),
    # 24 GPUs a rack: a top-of-rack leaf may only take a divisor of 24 GPUs.
    "tor-24-per-rack-120": JointCase(120, 2, {"nodes_per_rack": 3, "racks_per_row": 5}),
    # 6 m of slack: no GPU link is short enough for a DAC.
    "long-slack-160": JointCase(
        160,
        2,
        {
            "nodes_per_rack": 1,
            "racks_per_row": 10,
            "cable_slack_m": 6.0,
            "leaf_placement": ["middle_of_row", "end_of_row"],
        },
        shows=frozenset({"mix"}),
    ),
    # The uncapped optimum (s32 leaves, CPO spines) crosses 1,900 ns once propagation over the
    # hall's 10-60 m links is counted; 1,900 ns needs s16 leaves, and 1,800 ns has no design.
    "latency-cap-256": JointCase(
        256,
        2,
        WIDE_HALL,
        constraints={"max_latency_ns": 1900},
        shows=frozenset({"binding"}),
    ),
    "latency-too-low-256": JointCase(
        256,
        2,
        WIDE_HALL,
        constraints={"max_latency_ns": 1800},
        shows=frozenset({"infeasible"}),
    ),
    # The uncapped optimum draws 24.9 kW with DR; 23 kW needs LPO on some leaf-spine bands.
    "power-cap-lpo-400": JointCase(
        400,
        2,
        DEEP_HALL,
        constraints={"max_power_kw": 23.0},
        shows=frozenset({"binding"}),
    ),
    "3tier-64": JointCase(64, 3, {"nodes_per_rack": 1, "racks_per_row": 4}, switches=("s8", "c8")),
    "3tier-cpo-96": JointCase(
        96,
        3,
        {"nodes_per_rack": 1, "racks_per_row": 4, "row_pitch_m": 6.0},
        switches=("s8", "c8"),
        shows=frozenset({"cpo"}),
    ),
    # 81 Pareto-optimal leaf-spine plans per context, of which models.cabling keeps 64.
    "many-plans-power-cap-256": JointCase(
        256,
        2,
        RICH_LAYOUT,
        constraints={"max_power_kw": 13.3},
        catalog="rich",
        shows=frozenset({"binding"}),
    ),
}


def _problems(inst: Instance, catalog: Catalog) -> list[cs.SizingProblem]:
    problems = [
        st.problem
        for st in structures_of(inst, catalog, search_families(inst))
        if st.problem is not None
    ]
    assert problems, "the instance builds no structure"
    return problems


@pytest.mark.parametrize("name", list(JOINT_CASES))
def test_joint_optimum_equals_brute_force(name: str) -> None:
    case = JOINT_CASES[name]
    catalog = CATALOGS[case.catalog]
    for problem in _problems(case.instance(), catalog):
        speed = SPEED_GBPS // problem.planes
        expected = brute_force(problem, media_at(catalog, speed))
        sol = cs.solve(cs.build(problem), cs.SolveOptions(time_limit_s=60))
        if expected is None:
            assert sol.status is Status.INFEASIBLE
            assert sol.objective_usd is None
        else:
            assert sol.status is Status.OPTIMAL, f"brute force finds {expected:,.2f} USD"
            assert sol.objective_usd == pytest.approx(expected, rel=OBJECTIVE_RTOL)


def _solve_case(case: JointCase, *, capped: bool) -> cs.SizingSolution:
    (problem,) = _problems(case.instance(capped=capped), CATALOGS[case.catalog])
    return cs.solve(cs.build(problem))


@pytest.mark.parametrize("name", [n for n, c in JOINT_CASES.items() if c.shows])
def test_joint_case_exercises_what_it_claims(name: str) -> None:
    """The cases are not trivial: CPO, mixed media and binding caps really occur."""
    case = JOINT_CASES[name]
    sol = _solve_case(case, capped=True)
    free = _solve_case(case, capped=False)
    assert free.status is Status.OPTIMAL
    assert free.objective_usd is not None
    if "infeasible" in case.shows:
        assert sol.status is Status.INFEASIBLE
        return
    if "binding" in case.shows:
        # Against brute force: the capped solve itself is what test_joint_optimum checks.
        capped = brute_force(
            _problems(case.instance(), CATALOGS[case.catalog])[0],
            media_at(CATALOGS[case.catalog], SPEED_GBPS),
        )
        assert capped is not None
        assert capped > free.objective_usd * (1 + OBJECTIVE_RTOL)
        return
    assert sol.status is Status.OPTIMAL
    if "cpo" in case.shows:
        catalog = CATALOGS[case.catalog]
        assert any(catalog.switch_named(t.switch_model).cpo for t in sol.tier_solutions)
    if "mix" in case.shows:
        assert any(len({u.medium.name for u in p.bands if u}) >= 2 for p in sol.plans)


# --- 2. Moving racks farther apart never makes the design cheaper ----------------------------


def farther_apart(inst: Instance) -> dict[str, dict[str, Any]]:
    """Changes that lengthen every cable or leave it as it is, by name."""
    lay = inst.layout
    wider = {
        "layout.rack_width_m": lay.rack_width_m * 1.5,
        "layout.cross_aisle_m": lay.cross_aisle_m * 1.5,
    }
    deeper = {"layout.row_pitch_m": lay.row_pitch_m * 1.5}
    slack = {"layout.cable_slack_m": lay.cable_slack_m + 2.0}
    overhead = {"layout.routing_overhead": lay.routing_overhead + 0.2}
    return {
        "wider": wider,
        "deeper": deeper,
        "slack": slack,
        "overhead": overhead,
        "all": wider | deeper | slack | overhead,
    }


METAMORPHIC: dict[str, tuple[str, int, dict[str, Any]]] = {
    "default-256": ("default", 256, {}),
    "default-1024": ("default", 1024, {}),
    "default-4096": ("default", 4096, {}),
    "default-1024-two-columns": ("default", 1024, {"row_columns": 2, "racks_per_row": 8}),
    "small-256": ("small", 256, {}),
    "small-1024": ("small", 1024, {}),
    "small-4096-front": ("small", 4096, {"network_row": "front"}),
}


@pytest.mark.parametrize("name", list(METAMORPHIC))
@pytest.mark.slow
def test_moving_racks_apart_never_makes_the_design_cheaper(name: str) -> None:
    catalog_name, gpus, layout = METAMORPHIC[name]
    catalog = CATALOGS[catalog_name]
    base_inst = instance(gpus, layout=layout)
    base = planned(base_inst, catalog).objective_usd
    farther = {
        label: planned(base_inst.with_changes(changes), catalog).objective_usd
        for label, changes in farther_apart(base_inst).items()
    }
    cheaper = {k: v for k, v in farther.items() if v < base * (1 - METAMORPHIC_RTOL)}
    assert not cheaper, f"base {base:,.2f} USD; cheaper when farther apart: {cheaper}"
    # Longer cables must cost something somewhere, or this test could never fail.
    assert max(farther.values()) > base * (1 + OBJECTIVE_RTOL)


#: Two columns of rows; widening the cross aisle between them moves one column away.
TWO_COLUMNS = {"row_columns": 2, "racks_per_row": 4, "cross_aisle_m": 0.8}


@pytest.mark.slow
def test_widening_the_cross_aisle_never_makes_the_design_cheaper() -> None:
    """Only the aisle between the columns grows (0.8 m to the default 1.2 m).

    Spine positions are spread over the whole hall width (``planner.layout``), so a wider aisle
    moves the second column's racks by the full widening but the spine positions near them by a
    fraction of it: some leaf-spine runs get shorter, and the share above the 7 m AEC reach falls.
    """
    base_inst = instance(1024, layout=TWO_COLUMNS)
    base = planned(base_inst, DEFAULT).objective_usd
    wider = planned(base_inst.with_changes({"layout.cross_aisle_m": 1.2}), DEFAULT).objective_usd
    assert wider >= base * (1 - METAMORPHIC_RTOL)


# --- 3. Per-link media follow the lengths ----------------------------------------------------

#: (catalog, instance) of planned designs whose link groups are checked.
DESIGNS: dict[str, tuple[str, Instance]] = {
    "default-1024": ("default", instance(1024)),
    "default-4096-front": (
        "default",
        instance(4096, layout={"network_row": "front", "row_pitch_m": 3.0}),
    ),
    "default-2048-mor": (
        "default",
        instance(2048, layout={"nodes_per_rack": 3, "cable_slack_m": 1.0}),
    ),
    "small-cpo-256": ("small", instance(256, layout=WIDE_HALL, tiers=2)),
    "small-power-cap-400": (
        "small",
        instance(400, layout=DEEP_HALL, tiers=2, constraints={"max_power_kw": 23.0}),
    ),
    # Under the cap the leaf-spine plan is SR, FR, LPO, FR by band: the two FR bands must not
    # be reported as one group spanning the LPO one.
    "rich-power-cap-256": (
        "rich",
        instance(256, layout=RICH_LAYOUT, tiers=2, constraints={"max_power_kw": 14.0}),
    ),
}


def _cpo_ends(design: Design, link_class: LinkClass) -> list[TierDesign]:
    ends = [design.tiers[link_class.index]]
    if link_class.index > 0:
        ends.append(design.tiers[link_class.index - 1])
    return [t for t in ends if t.cpo]


def _serves(m: Medium, length_m: float, cpo: list[TierDesign]) -> bool:
    """Whether a medium can cable a link of this length between these ends."""
    if m.reach_m < length_m:
        return False
    for t in cpo:
        assert t.cpo_reach_m is not None
        fits = m.kind not in ("dac", "aec") and (m.lane_gbps, m.connector) == (
            t.cpo_lane_gbps,
            t.cpo_connector,
        )
        if not fits or t.cpo_reach_m < length_m:
            return False
    return True


def _value_per_link(design: Design, m: Medium, ends: int) -> float:
    capex = ends * m.cost_usd_per_end + m.cable_cost_usd
    energy = design.energy_usd_per_w * ends * m.power_w_per_end
    return design.capex_weight * capex + design.energy_weight * energy


def _group_value(design: Design, g: LinkGroup) -> float:
    capex = g.pluggable_ends * g.end_cost_usd + g.cable_cost_usd
    energy = design.energy_usd_per_w * g.pluggable_ends * g.end_power_w
    return design.capex_weight * capex + design.energy_weight * energy


@pytest.mark.parametrize("name", list(DESIGNS))
def test_per_link_media_follow_the_lengths(name: str) -> None:
    catalog_name, inst = DESIGNS[name]
    catalog = CATALOGS[catalog_name]
    design = planned(inst, catalog)
    hall = hall_of(inst.layout, inst.cluster.gpus, inst.cluster.gpus_per_node)
    r = design.requirements
    uncapped = r.max_power_w is None and r.max_capex_usd is None and r.max_latency_ns is None
    media = [m for m in catalog.medium if m.speed_gbps == design.link_speed_gbps]
    assert validate(design, catalog) == []
    for c in design.link_classes:
        dist = hall.class_lengths(c.index, c.placement or None)
        cpo = _cpo_ends(design, c)
        assert c.groups
        assert sum(g.links for g in c.groups) == c.links
        for prev, g in zip(c.groups, c.groups[1:], strict=False):
            assert g.min_length_m >= prev.max_length_m, (
                f"class {c.index}: {g.medium} ({g.min_length_m}-{g.max_length_m} m) overlaps "
                f"{prev.medium} ({prev.min_length_m}-{prev.max_length_m} m)"
            )
        # The longest band always holds a link: the class reaches the hall's longest run.
        assert c.groups[-1].max_length_m == dist.max_m
        for g in c.groups:
            assert g.links > 0
            assert g.pluggable_ends == 2 - len(cpo)
            assert g.min_length_m in dist.length_m
            assert g.max_length_m in dist.length_m
            assert g.max_length_m <= g.reach_m
            assert all(g.max_length_m <= (t.cpo_reach_m or 0.0) for t in cpo)
            if uncapped:
                # Without caps every band takes the medium of least objective that serves it.
                for length in (g.min_length_m, g.max_length_m):
                    best = min(
                        _value_per_link(design, m, g.pluggable_ends)
                        for m in media
                        if _serves(m, length, cpo)
                    )
                    assert _group_value(design, g) <= best * (1 + 1e-12)


# --- 4. Leaf placement is a real decision ----------------------------------------------------

#: Pairs of floor plans for the same cluster whose optima stand the leaves differently: four
#: nodes (32 GPUs) a rack fill a 64-port leaf's 32 down ports from one rack, so the leaf stands
#: in the rack on 2 m DACs; three or six nodes (24 or 48 GPUs) would leave a top-of-rack leaf's
#: ports idle, so the leaves move into the row. With 0.5 m of slack a GPU's run to the middle of
#: its row (1.2-5.1 m) stays on copper, and the row leaf wins on the small catalog too.
PLACEMENT_PAIRS: dict[str, tuple[str, int, dict[str, Any], dict[str, Any]]] = {
    "default-1024-32-vs-24-per-rack": (
        "default",
        1024,
        {"nodes_per_rack": 4},
        {"nodes_per_rack": 3},
    ),
    "default-960-32-vs-48-per-rack": ("default", 960, {"nodes_per_rack": 4}, {"nodes_per_rack": 6}),
    "small-128-in-rack-vs-long-rows": (
        "small",
        128,
        {"nodes_per_rack": 1, "racks_per_row": 8},
        {"nodes_per_rack": 1, "racks_per_row": 8, "rack_width_m": 1.2, "cable_slack_m": 0.5},
    ),
}


@pytest.mark.parametrize("name", list(PLACEMENT_PAIRS))
@pytest.mark.slow
def test_leaf_placement_is_a_real_decision(name: str) -> None:
    catalog_name, gpus, first, second = PLACEMENT_PAIRS[name]
    catalog = CATALOGS[catalog_name]
    insts = [instance(gpus, layout=first, tiers=2), instance(gpus, layout=second, tiers=2)]
    designs = [planned(i, catalog) for i in insts]
    assert designs[0].leaf_placement != designs[1].leaf_placement
    for inst, design, other in zip(insts, designs, reversed(designs), strict=True):
        pinned = planned(
            inst.with_changes({"search.pin.leaf_placement": other.leaf_placement}), catalog
        )
        assert pinned.leaf_placement == other.leaf_placement
        assert all(c.placement == other.leaf_placement for c in pinned.link_classes[:2])
        assert pinned.objective_usd >= design.objective_usd * (1 - METAMORPHIC_RTOL)

"""Sizing at scale: the rail geometry computed once, work shared, and the time limit kept.

The class 0 lengths of every SU size are read off one placement of the nodes
(``planner.families.rail.geometry``); they are checked here against the rule evaluated node by
node in plain Python, one SU size at a time (the computation they replace). The deadline tests
use a clock the test moves, never the wall clock: what a cut returns is a contract
(``TIME_LIMIT`` without a bound, a stated gap), not a timing.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest

from models import cabling as cb
from models.status import Status
from planner.api import plan
from planner.deadline import Deadline, DeadlineExpired
from planner.families import family_of, search_families
from planner.families.rail import sizing as rail
from planner.families.rail.geometry import NodeGeometry, SuLengthTable
from planner.family_roles import Sized
from planner.layout import LengthDistribution, default_row_columns
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance, Layout
from planner.sizing.search_loop import search

PLACEMENTS = ("top_of_rack", "middle_of_row", "end_of_row")
#: Reach thresholds of the default catalog's media, and a few between whole centimetres.
THRESHOLDS_M = (1.0, 2.0, 3.0, 7.0, 7.005, 12.3456, 50.0, 500.0, 2000.0)
#: Node counts and layouts that cut SUs across racks, rows and columns, with widths and pitches
#: whose sums are not exact in binary (where a centimetre could round the other way).
LAYOUTS = {
    "one-column": (37, Layout(nodes_per_rack=4, racks_per_row=3)),
    "columns": (
        61,
        Layout(
            nodes_per_rack=3,
            racks_per_row=4,
            row_columns=3,
            rack_width_m=0.55,
            row_pitch_m=2.7,
            cross_aisle_m=2.35,
            routing_overhead=0.37,
            cable_slack_m=0.3,
        ),
    ),
    "node-per-rack": (
        23,
        Layout(nodes_per_rack=1, racks_per_row=5, rack_width_m=1.1, cable_slack_m=1.5),
    ),
    "wide-racks": (
        45,
        Layout(
            nodes_per_rack=5,
            racks_per_row=2,
            row_columns=2,
            rack_width_m=0.7,
            row_pitch_m=3.0,
            cross_aisle_m=0.0,
            routing_overhead=0.0,
        ),
    ),
}


def brute_force_lengths(
    layout: Layout, nodes: int, gpus_per_node: int, su_nodes: int, placement: str
) -> LengthDistribution:
    """The rule of ``planner.families.rail.sizing`` node by node in plain Python, for one SU size."""
    lay = layout
    per_row = lay.racks_per_row
    racks = math.ceil(nodes / lay.nodes_per_rack)
    rows = math.ceil(racks / per_row)
    columns = lay.row_columns or default_row_columns(rows, per_row)
    rows_per_column = math.ceil(rows / columns)
    row_length = per_row * lay.rack_width_m
    run = 1.0 + lay.routing_overhead

    def place(node: int) -> tuple[float, float, int]:
        rack = node // lay.nodes_per_rack
        row = rack // per_row
        x0 = (row // rows_per_column) * (row_length + lay.cross_aisle_m)
        return (
            x0 + (rack % per_row + 0.5) * lay.rack_width_m,
            (row % rows_per_column) * lay.row_pitch_m,
            rack,
        )

    counts: Counter[int] = Counter()
    for node in range(nodes):
        x, y, rack = place(node)
        first = (node // su_nodes) * su_nodes
        if placement == "top_of_rack":
            sx, sy, site_rack = place(first)
            away = run * (abs(x - sx) + abs(y - sy)) + lay.cable_slack_m
            length = lay.in_rack_cable_m if rack == site_rack else away
        else:
            size = min(first + su_nodes, nodes) - first
            site = first + (size - 1) // 2
            sx, sy, site_rack = place(site)
            x0 = sx - (site_rack % per_row + 0.5) * lay.rack_width_m
            rel = (
                row_length / 2
                if placement == "middle_of_row"
                else row_length + lay.rack_width_m / 2
            )
            length = run * (abs(x - (x0 + rel)) + abs(y - sy)) + lay.cable_slack_m
        counts[math.ceil(length * 100.0 - 1e-6)] += gpus_per_node
    cm = sorted(counts)
    return LengthDistribution(tuple(c / 100.0 for c in cm), tuple(counts[c] for c in cm))


@pytest.fixture(scope="module")
def catalog() -> Catalog:
    return load_catalog("default")


# ---- the geometry: the same lengths as the rule node by node, SU size by SU size ---------------
@pytest.mark.parametrize("placement", PLACEMENTS)
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_every_su_size_has_the_lengths_of_the_rule_node_by_node(name: str, placement: str) -> None:
    nodes, layout = LAYOUTS[name]
    geometry = NodeGeometry.of(layout, nodes)
    sizes = range(1, nodes + 2)  # up to an SU larger than the hall
    got = {s: geometry.distribution(s, placement, 4) for s in sizes}
    assert got == {s: brute_force_lengths(layout, nodes, 4, s, placement) for s in sizes}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_the_table_s_tails_are_the_rule_s_tails(name: str) -> None:
    nodes, layout = LAYOUTS[name]
    geometry = NodeGeometry.of(layout, nodes)
    sizes = range(1, nodes + 1)
    table = SuLengthTable.measure(geometry, sizes, PLACEMENTS, THRESHOLDS_M, 2)

    def tails(dist: LengthDistribution) -> cb.LengthTails:
        longer = tuple(dist.longer_than(t) for t in THRESHOLDS_M)
        return cb.LengthTails(dist.total, THRESHOLDS_M, longer, max_length_m=dist.max_m)

    keys = [(s, p) for s in sizes for p in PLACEMENTS]
    got = {k: table.tails(*k, THRESHOLDS_M) for k in keys}
    assert got == {k: tails(brute_force_lengths(layout, nodes, 2, *k)) for k in keys}


@pytest.mark.parametrize("group_nodes", [1, 3])
def test_rail_gpu_leaf_lengths_counts_su_sizes_in_rail_groups(group_nodes: int) -> None:
    nodes, layout = LAYOUTS["columns"]
    dist = rail.rail_gpu_leaf_lengths(layout, nodes * 8, 8, 2, "middle_of_row", group_nodes)
    assert dist == brute_force_lengths(layout, nodes, 8, 2 * group_nodes, "middle_of_row")


# ---- one preparation per search ------------------------------------------------------------------
def rail_instance(family: str, gpus: int = 256, **over: Any) -> Instance:
    data: dict[str, Any] = {
        "name": f"scale-{family}",
        "cluster": {
            "gpus": gpus,
            "gpus_per_node": 8,
            "nic_gbps": 400,
            "nic_ports": [1],
            "scale_up": {"gpus": 8, "gbps_per_gpu": 3600},
        },
        "search": {"families": [family], "switch_models": ["qm9700", "sn5600"]},
    }
    for key, value in over.items():
        data[key] = {**data.get(key, {}), **value}
    return Instance.model_validate(data)


@pytest.mark.parametrize("family", ["rail_optimized", "rail_only"])
def test_a_search_prepares_the_rail_data_once_for_every_switch_option(
    family: str, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[str] = []
    prepare = rail.rail_problems

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[2])
        return prepare(*args, **kwargs)

    monkeypatch.setattr(rail, "rail_problems", counted)
    inst = rail_instance(family)
    result = search(inst, catalog, search_families(inst), time_limit_s=60.0)
    options = {o.switch_model for o in result.outcomes}
    assert options == {None, "qm9700", "sn5600"}  # any switch, and each model alone
    assert calls == [family_of(family)]


# ---- the deadline: cut work is reported, never silently dropped ---------------------------------
class Clock:
    """A clock the test moves: it reads ``now``, which the test sets."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_sizing_after_the_deadline_cuts_every_structure_without_a_bound(
    catalog: Catalog,
) -> None:
    inst = rail_instance("rail_only")
    sized = rail.size_rails(
        inst, catalog, family_of("rail_only"), (None, "qm9700"), Deadline(-1.0), rail_only=True
    )
    assert [(s.switch_model, s.planes, s.tiers) for s in sized] == [
        (o, 1, t) for o in (None, "qm9700") for t in (1, 2, 3)
    ]
    assert {(s.status, s.bound_usd, s.design) for s in sized} == {(Status.TIME_LIMIT, None, None)}


def test_rail_problems_stop_at_the_deadline(catalog: Catalog) -> None:
    with pytest.raises(DeadlineExpired):
        rail.rail_problems(
            rail_instance("rail_optimized"),
            catalog,
            family_of("rail_optimized"),
            False,
            deadline=Deadline(-1.0),
        )


@pytest.mark.slow
def test_a_structure_with_rail_counts_cut_keeps_its_design_without_a_proof(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """NVL72-like domains: six rail counts; the time runs out after the first is solved."""
    inst = Instance.model_validate(
        {
            "name": "scale-nvl",
            "cluster": {
                "gpus": 1152,
                "gpus_per_node": 4,
                "nic_gbps": 400,
                "nic_ports": [1],
                "scale_up": {"gpus": 72},
            },
            "search": {"families": ["rail_only"], "pin": {"tiers": 2}},
        }
    )
    clock = Clock()
    solve = rail._solve_rail

    def solve_then_run_out(*args: Any) -> Sized:
        out = solve(*args)
        clock.now = 100.0
        return out

    monkeypatch.setattr(rail, "_solve_rail", solve_then_run_out)
    (sized,) = rail.size_rails(
        inst, catalog, family_of("rail_only"), (None,), Deadline(50.0, clock), rail_only=True
    )
    assert sized.design is not None
    assert sized.design.wiring.params()["rails"] == 4  # the one rail count solved
    assert (sized.status, sized.bound_usd) == (Status.FEASIBLE, None)


def test_a_diagnosis_cut_by_the_deadline_names_what_it_did_not_try(catalog: Catalog) -> None:
    inst = rail_instance("rail_optimized", constraints={"max_power_kw": 1.0})
    st, rp = rail.rail_problems(inst, catalog, family_of("rail_optimized"), False)[0]
    assert rp is not None
    reason = rail._infeasible_reason(st, rp, Deadline(-1.0))
    assert "the time limit ran out before relaxing max_oversubscription, max_power_kw" in reason
    assert "max_switch_hops" not in reason  # no hop limit binds: nothing to relax
    assert "raise --time-limit" in reason


def test_an_unhurried_diagnosis_names_the_constraint_to_relax(catalog: Catalog) -> None:
    inst = rail_instance("rail_optimized", constraints={"max_power_kw": 1.0})
    st, rp = rail.rail_problems(inst, catalog, family_of("rail_optimized"), False)[0]
    assert rp is not None
    reason = rail._infeasible_reason(st, rp)
    assert reason.endswith("relaxing max_power_kw alone would allow one")


# ---- a million GPUs -----------------------------------------------------------------------------
def million(family: str) -> Instance:
    return Instance.model_validate(
        {
            "name": f"scale-1m-{family}",
            "cluster": {
                "gpus": 1_048_576,
                "gpus_per_node": 8,
                "nic_gbps": 800,
                "nic_ports": [1, 2, 4],
                "nic": "connectx-8",
                "scale_up": {"gpus": 8, "gbps_per_gpu": 7200},
            },
            "layout": {"nodes_per_rack": 4, "racks_per_row": 32},
            "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 5},
            "search": {"families": [family]},
        }
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ["rail_optimized", "rail_only"])
def test_a_million_gpus_with_no_time_left_end_cut_and_say_so(family: str, catalog: Catalog) -> None:
    result = plan(million(family), catalog=catalog, time_limit_s=0.0, verify=False)
    assert (result.status, result.design) == (Status.TIME_LIMIT, None)
    assert {o.solution.status for o in result.search.outcomes} == {Status.TIME_LIMIT}
    assert {o.solution.bound_usd for o in result.search.outcomes} == {None}
    assert "time limit" in " ".join(result.explanation)


@pytest.mark.slow
def test_a_million_gpus_in_a_short_limit_are_optimal_or_state_their_gap(
    catalog: Catalog,
) -> None:
    """Whatever the machine's speed: a proof, a stated gap, or no design and why."""
    result = plan(million("rail_optimized"), catalog=catalog, time_limit_s=3.0, verify=False)
    design = result.design
    if result.status is Status.OPTIMAL:
        assert design is not None
        assert design.gap == pytest.approx(0.0, abs=1e-9)
    elif result.status is Status.FEASIBLE:
        assert design is not None
        assert design.gap > 0.0
    else:
        assert (result.status, design) == (Status.TIME_LIMIT, None)
        assert "time limit" in " ".join(result.explanation)

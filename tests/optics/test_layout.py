"""Link length distributions from the floor plan: hand-computed halls, an independent loop, laws."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import pytest
from pydantic import ValidationError

from planner.layout import Hall, LengthDistribution, hall_of
from planner.schema.instance import (
    DEFAULT_RACK_WIDTH_M,
    DEFAULT_ROW_PITCH_M,
    Layout,
    default_row_columns,
    network_positions,
)

PLACEMENTS = ("top_of_rack", "middle_of_row", "end_of_row")


def _as_dict(dist: LengthDistribution) -> dict[float, int]:
    return dict(zip(dist.length_m, dist.weight, strict=True))


def _samples(hall: Hall, layout: Layout) -> int:
    """Spine positions: one in line with every rack slot of every column."""
    return hall.columns * layout.racks_per_row


# --- Hand-computed halls ----------------------------------------------------------------------

#: 64 GPUs, 8 per node, 2 nodes per rack: 4 racks of 16 GPUs in 2 rows of 2, one column.
#: Racks at x = 0.3, 0.9 (row 0 at y = 0, row 1 at y = 2.4); a = 1.1, slack 3; hall 1.2 m wide,
#: so S = 2 spine positions at x = 0.3, 0.9.
SMALL = {"nodes_per_rack": 2, "racks_per_row": 2, "row_columns": 1}

#: (network row, link class, placement) -> {length: weight}, worked out by hand.
SMALL_EXPECTED: dict[tuple[str, int, str | None], dict[float, int]] = {
    # Class 0. In the rack: 2 m for all 64 GPUs.
    ("centre", 0, "top_of_rack"): {2.0: 64},
    # Middle of row, site x = 0.6: both slots 0.3 away -> 1.1 * 0.3 + 3 = 3.33.
    ("centre", 0, "middle_of_row"): {3.33: 64},
    # End of row, site x = 1.5: slot 0 is 1.2 away (1.1 * 1.2 + 3 = 4.32), slot 1 0.6 (3.66);
    # 16 GPUs per rack, two rows.
    ("centre", 0, "end_of_row"): {3.66: 32, 4.32: 32},
    # Class 1, centre network row at y = 1.2: every site is 1.2 away in y.
    # Top of rack: each rack is 0 from one position (1.1 * 1.2 + 3 = 4.32) and 0.6 from the
    # other (1.1 * 1.8 + 3 = 4.98); 4 racks x 16 GPUs each.
    ("centre", 1, "top_of_rack"): {4.32: 64, 4.98: 64},
    # Middle of row: x = 0.6 is 0.3 from both positions -> 1.1 * 1.5 + 3 = 4.65; 2 rows x 2 x 32.
    ("centre", 1, "middle_of_row"): {4.65: 128},
    # End of row: x = 1.5 is 1.2 and 0.6 away -> 1.1 * 2.4 + 3 = 5.64 and 1.1 * 1.8 + 3 = 4.98.
    ("centre", 1, "end_of_row"): {4.98: 64, 5.64: 64},
    # Front network row at y = -2.4: row 0 is 2.4 away, row 1 4.8.
    # Top of rack: 1.1 * (0 | 0.6 + 2.4 | 4.8) + 3 = 5.64, 6.3, 8.28, 8.94; 2 racks x 16 each.
    ("front", 1, "top_of_rack"): {5.64: 32, 6.3: 32, 8.28: 32, 8.94: 32},
    # Middle of row: 1.1 * (0.3 + 2.4) + 3 = 5.97 and 1.1 * (0.3 + 4.8) + 3 = 8.61; 2 x 32 each.
    ("front", 1, "middle_of_row"): {5.97: 64, 8.61: 64},
    # Class 2: two positions on two rows 2.4 apart: 0 apart twice (1.1 * 2.4 + 3 = 5.64),
    # 0.6 apart twice (1.1 * 3.0 + 3 = 6.3).
    ("centre", 2, None): {5.64: 2, 6.3: 2},
    ("front", 2, None): {5.64: 2, 6.3: 2},
}


@pytest.mark.parametrize(
    ("network_row", "link_class", "placement"),
    list(SMALL_EXPECTED),
    ids=[f"{r}-class{c}-{p}" for r, c, p in SMALL_EXPECTED],
)
def test_small_hall_by_hand(network_row: str, link_class: int, placement: str | None) -> None:
    hall = hall_of(Layout(**SMALL, network_row=network_row), 64, 8)
    dist = hall.class_lengths(link_class, placement)
    assert _as_dict(dist) == SMALL_EXPECTED[(network_row, link_class, placement)]


def test_small_hall_counts() -> None:
    hall = hall_of(Layout(**SMALL), 64, 8)
    assert (hall.racks, hall.rows, hall.columns, hall.rows_per_column) == (4, 2, 1, 2)
    assert hall.width_m == pytest.approx(1.2)
    assert hall.depth_m == pytest.approx(4.8)
    assert list(hall.gpu_leaf) == list(PLACEMENTS)
    assert hall.spine_core.total == 4


#: 72 GPUs in racks of 16 and rows of 2 racks: 5 racks (the last holds 8 GPUs), 3 rows (the last
#: holds one rack), one column, so y_net = 2.4 (the middle row). 68 GPUs: the last rack holds 4
#: (and its last node is partial).
PARTIAL_EXPECTED: dict[tuple[int, int, str], dict[float, int]] = {
    # End of row: slot 0 holds racks 0, 2, 4 (16 + 16 + 8), slot 1 racks 1, 3.
    (72, 0, "end_of_row"): {3.66: 32, 4.32: 40},
    (68, 0, "end_of_row"): {3.66: 32, 4.32: 36},
    (72, 0, "top_of_rack"): {2.0: 72},
    (68, 0, "top_of_rack"): {2.0: 68},
    # Middle of row: rows 0 and 2 are 2.4 from the network row (1.1 * 2.7 + 3 = 5.97), row 1 on
    # it (1.1 * 0.3 + 3 = 3.33); rows hold 32, 32 and 8 GPUs, two positions each.
    (72, 1, "middle_of_row"): {3.33: 64, 5.97: 80},
    # Top of rack: per rack one position 0 away and one 0.6 away; rows 0 and 2 are 2.4 away
    # (5.64, 6.3), row 1 on the network row (3.0, 3.66). Rack weights 16, 16 | 16, 16 | 8.
    (72, 1, "top_of_rack"): {3.0: 32, 3.66: 32, 5.64: 40, 6.3: 40},
    (68, 1, "top_of_rack"): {3.0: 32, 3.66: 32, 5.64: 36, 6.3: 36},
}


@pytest.mark.parametrize(
    ("gpus", "link_class", "placement"),
    list(PARTIAL_EXPECTED),
    ids=[f"{g}gpus-class{c}-{p}" for g, c, p in PARTIAL_EXPECTED],
)
def test_partial_rack_and_row(gpus: int, link_class: int, placement: str) -> None:
    hall = hall_of(Layout(**SMALL), gpus, 8)
    assert (hall.racks, hall.rows, hall.rows_per_column) == (5, 3, 3)
    dist = hall.class_lengths(link_class, placement)
    assert _as_dict(dist) == PARTIAL_EXPECTED[(gpus, link_class, placement)]


# --- Columns ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rows", "racks_per_row", "columns"),
    [
        (1, 16, 1),  # sqrt(0.25) rounds to 0: at least one column
        (2, 1, 2),  # sqrt(8) = 2.8 rounds to 3: at most one column per row
        (3, 1, 3),  # sqrt(12) = 3.5 -> 3
        (10, 2, 4),  # sqrt(20) = 4.5 -> 4
        (64, 16, 4),  # sqrt(16) = 4
        (100, 16, 5),  # sqrt(25) = 5
        (2048, 16, 23),  # sqrt(512) = 22.6 -> 23
    ],
)
def test_default_columns(rows: int, racks_per_row: int, columns: int) -> None:
    assert default_row_columns(rows, racks_per_row) == columns
    # One GPU per rack: rows full rows of racks.
    base = {"nodes_per_rack": 1, "racks_per_row": racks_per_row}
    hall = hall_of(Layout(**base), rows * racks_per_row, 1)
    assert (hall.rows, hall.columns) == (rows, columns)
    assert hall.rows_per_column == math.ceil(rows / columns)
    # Counts alone decide the arrangement: a hall of wider racks and rows keeps it.
    wide = Layout(**base, rack_width_m=1.5, row_pitch_m=4.0, cross_aisle_m=3.0)
    assert hall_of(wide, rows * racks_per_row, 1).columns == columns


def test_default_columns_use_the_standard_rack() -> None:
    assert (DEFAULT_ROW_PITCH_M, DEFAULT_RACK_WIDTH_M) == (2.4, 0.6)


@pytest.mark.parametrize("row_columns", [1, 2, 3, 7, 11, 20])
def test_explicit_columns(row_columns: int) -> None:
    # 11 rows of 4 racks, 0.7 m racks, 1.3 m cross aisles.
    layout = Layout(
        nodes_per_rack=1,
        racks_per_row=4,
        rack_width_m=0.7,
        cross_aisle_m=1.3,
        row_columns=row_columns,
    )
    hall = hall_of(layout, 44, 1)
    assert hall.rows == 11
    assert hall.columns == row_columns
    assert hall.rows_per_column == math.ceil(11 / row_columns)
    assert hall.width_m == pytest.approx(row_columns * 2.8 + (row_columns - 1) * 1.3)
    assert hall.depth_m == pytest.approx(hall.rows_per_column * layout.row_pitch_m)


# --- Independent cross-check ------------------------------------------------------------------


def _cm(length_m: float) -> int:
    return math.ceil(round(length_m * 100, 6))


def _reference(
    layout: Layout, gpus: int, gpus_per_node: int
) -> dict[tuple[int, str | None], Counter[int]]:
    """Every class's lengths (cm -> weight) by plain loops over racks, sites and positions."""
    lay = layout
    nodes = math.ceil(gpus / gpus_per_node)
    racks = math.ceil(nodes / lay.nodes_per_rack)
    rows = math.ceil(racks / lay.racks_per_row)
    columns = lay.row_columns or max(
        1, min(rows, round(math.sqrt(rows * 2.4 / (lay.racks_per_row * 0.6))))
    )
    per_column = math.ceil(rows / columns)
    row_length = lay.racks_per_row * lay.rack_width_m
    a = 1 + lay.routing_overhead
    slack = lay.cable_slack_m
    # Racks: (x, y, row, gpus).
    rack_list = []
    left = gpus
    for k in range(racks):
        r, j = divmod(k, lay.racks_per_row)
        x0 = (r // per_column) * (row_length + lay.cross_aisle_m)
        held = min(left, lay.nodes_per_rack * gpus_per_node)
        left -= held
        rack_list.append(
            (x0 + (j + 0.5) * lay.rack_width_m, (r % per_column) * lay.row_pitch_m, r, held)
        )
    assert left == 0
    spine_x = [
        c * (row_length + lay.cross_aisle_m) + (j + 0.5) * lay.rack_width_m
        for c in range(columns)
        for j in range(lay.racks_per_row)
    ]
    y_net = (
        (per_column - 1) * lay.row_pitch_m / 2 if lay.network_row == "centre" else -lay.row_pitch_m
    )
    out: dict[tuple[int, str | None], Counter[int]] = {}
    for placement in PLACEMENTS:
        gpu_leaf: Counter[int] = Counter()
        sites: dict[tuple[float, float], int] = {}  # (x, y) -> GPUs served
        for x, y, r, held in rack_list:
            if placement == "top_of_rack":
                gpu_leaf[_cm(lay.in_rack_cable_m)] += held
                sites[(x, y)] = held
                continue
            x0 = (r // per_column) * (row_length + lay.cross_aisle_m)
            site_x = x0 + (
                row_length / 2
                if placement == "middle_of_row"
                else row_length + lay.rack_width_m / 2
            )
            gpu_leaf[_cm(a * abs(x - site_x) + slack)] += held
            sites[(site_x, y)] = sites.get((site_x, y), 0) + held
        leaf_spine: Counter[int] = Counter()
        for (site_x, site_y), served in sites.items():
            for xs in spine_x:
                leaf_spine[_cm(a * (abs(site_x - xs) + abs(site_y - y_net)) + slack)] += served
        out[(0, placement)] = gpu_leaf
        out[(1, placement)] = leaf_spine
    spine_core: Counter[int] = Counter()
    for xs in spine_x:
        for xc in spine_x:
            spine_core[_cm(a * (abs(xs - xc) + lay.row_pitch_m) + slack)] += 1
    out[(2, None)] = spine_core
    return out


#: (layout fields, gpus, gpus per node) checked against the plain loops.
CROSS_CHECK: dict[str, tuple[dict[str, Any], int, int]] = {
    "default-2048": ({}, 2048, 8),
    "default-2048-front": ({"network_row": "front"}, 2048, 8),
    # 64 racks (the last holds 24 GPUs) in 11 rows of 6 (the last holds 4), 3 columns of 4 rows
    # (the last column holds 3), odd sizes so no length falls on a shared grid.
    "ragged": (
        {
            "racks_per_row": 6,
            "row_columns": 3,
            "rack_width_m": 0.7,
            "row_pitch_m": 2.53,
            "cross_aisle_m": 1.3,
            "routing_overhead": 0.15,
            "cable_slack_m": 2.5,
        },
        2040,
        8,
    ),
    "ragged-front": (
        {
            "racks_per_row": 6,
            "row_columns": 3,
            "rack_width_m": 0.7,
            "row_pitch_m": 2.53,
            "cross_aisle_m": 1.3,
            "routing_overhead": 0.15,
            "cable_slack_m": 2.5,
            "network_row": "front",
        },
        2040,
        8,
    ),
    # A partial last node; default columns (rows = 16 -> 3 columns of 6, the last holds 4).
    "partial-node": ({"racks_per_row": 8, "cable_slack_m": 0.0, "routing_overhead": 0.0}, 4092, 8),
    # More columns than rows need: an empty column widens the hall.
    "empty-column": ({"racks_per_row": 4, "row_columns": 5, "cross_aisle_m": 0.9}, 352, 8),
}


@pytest.mark.parametrize("case", list(CROSS_CHECK))
def test_matches_plain_loops(case: str) -> None:
    fields, gpus, per_node = CROSS_CHECK[case]
    layout = Layout(**fields)
    hall = hall_of(layout, gpus, per_node)
    reference = _reference(layout, gpus, per_node)
    for (link_class, placement), expected in reference.items():
        dist = hall.class_lengths(link_class, placement)
        got = {round(n * 100): w for n, w in zip(dist.length_m, dist.weight, strict=True)}
        assert got == dict(expected), (link_class, placement)
        assert all(isinstance(w, int) for w in dist.weight)


@pytest.mark.parametrize("case", list(CROSS_CHECK))
def test_totals(case: str) -> None:
    fields, gpus, per_node = CROSS_CHECK[case]
    layout = Layout(**fields)
    hall = hall_of(layout, gpus, per_node)
    samples = _samples(hall, layout)
    for placement in PLACEMENTS:
        assert hall.gpu_leaf[placement].total == gpus
        assert hall.leaf_spine[placement].total == gpus * samples
    assert hall.spine_core.total == samples * samples


def test_million_gpus() -> None:
    layout = Layout()
    hall = hall_of(layout, 1_048_576, 8)
    assert (hall.racks, hall.rows, hall.columns, hall.rows_per_column) == (32_768, 2048, 23, 90)
    samples = _samples(hall, layout)
    assert samples == 23 * 16
    for placement in PLACEMENTS:
        assert hall.gpu_leaf[placement].total == 1_048_576
        assert hall.leaf_spine[placement].total == 1_048_576 * samples
        # No class 1 link is longer than corner to corner of the hall and the network rows.
        corner = 1.1 * (hall.width_m + hall.depth_m) + 3.0
        assert hall.leaf_spine[placement].max_m <= corner
    assert hall.spine_core.total == samples**2


# --- Laws -------------------------------------------------------------------------------------

#: Base of the monotonicity checks: 128 racks in 16 rows of 8, 3 columns of 6 rows.
MONO_BASE: dict[str, Any] = {"racks_per_row": 8, "cross_aisle_m": 1.2}

#: Fields scaled together by 1.5. Rack width and cross aisle scale together so the number of
#: spine positions S = ceil(W / rack width) stays put; alone, the rack width is scaled in a hall
#: without cross aisles, for the same reason.
MONO_CHANGES: dict[str, tuple[dict[str, Any], tuple[str, ...]]] = {
    "slack": ({}, ("cable_slack_m",)),
    "row-pitch": ({}, ("row_pitch_m",)),
    "rack-width-and-aisle": ({}, ("rack_width_m", "cross_aisle_m")),
    "rack-width-no-aisle": ({"cross_aisle_m": 0.0}, ("rack_width_m",)),
    "routing-overhead": ({}, ("routing_overhead",)),
    "all": (
        {},
        ("cable_slack_m", "row_pitch_m", "rack_width_m", "cross_aisle_m", "routing_overhead"),
    ),
}


@pytest.mark.parametrize("network_row", ["centre", "front"])
@pytest.mark.parametrize("change", list(MONO_CHANGES))
@pytest.mark.parametrize("threshold_m", [2, 3, 7, 30, 50, 100, 500])
def test_bigger_hall_never_shortens(network_row: str, change: str, threshold_m: float) -> None:
    extra, scaled = MONO_CHANGES[change]
    fields = {**MONO_BASE, **extra, "network_row": network_row}
    base = Layout(**fields)
    bigger = Layout(**fields | {name: 1.5 * getattr(base, name) for name in scaled})
    small, large = hall_of(base, 4096, 8), hall_of(bigger, 4096, 8)
    assert large.columns == small.columns
    pairs = [(small.spine_core, large.spine_core)]
    pairs += [(small.gpu_leaf[p], large.gpu_leaf[p]) for p in PLACEMENTS]
    pairs += [(small.leaf_spine[p], large.leaf_spine[p]) for p in PLACEMENTS]
    for before, after in pairs:
        assert after.total == before.total
        assert after.longer_than(threshold_m) >= before.longer_than(threshold_m)
        assert after.mean_m >= before.mean_m


# --- LengthDistribution and Hall API ----------------------------------------------------------

DIST = LengthDistribution(length_m=(1.0, 2.5, 4.0), weight=(3, 2, 5))


@pytest.mark.parametrize(
    ("threshold_m", "longer"),
    [(0.0, 10), (1.0, 7), (1.0 - 1e-7, 7), (2.49, 7), (2.5, 5), (3.99, 5), (4.0, 0), (9.0, 0)],
)
def test_longer_than(threshold_m: float, longer: int) -> None:
    assert DIST.longer_than(threshold_m) == longer


@pytest.mark.parametrize(
    ("low_m", "high_m", "expected"),
    [
        (0.0, 10.0, (1.0, 4.0)),
        (1.0, 4.0, (2.5, 4.0)),
        (0.0, 1.0, (1.0, 1.0)),
        (1.5, 2.0, None),
        (4.0, 10.0, None),
        (2.4, 2.5, (2.5, 2.5)),
    ],
)
def test_within(low_m: float, high_m: float, expected: tuple[float, float] | None) -> None:
    assert DIST.within(low_m, high_m) == expected


def test_summary() -> None:
    assert (DIST.total, DIST.min_m, DIST.max_m) == (10, 1.0, 4.0)
    assert DIST.mean_m == pytest.approx((3 * 1.0 + 2 * 2.5 + 5 * 4.0) / 10)


@pytest.mark.parametrize(
    ("lengths", "weights"),
    [((), ()), ((1.0, 2.0), (1,)), ((2.0, 1.0), (1, 1)), ((1.0, 1.0), (1, 1)), ((1.0,), (0,))],
)
def test_bad_distribution_rejected(lengths: tuple[float, ...], weights: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match="length distribution"):
        LengthDistribution(length_m=lengths, weight=weights)


def test_only_allowed_placements_are_measured() -> None:
    hall = hall_of(Layout(**SMALL, leaf_placement=["end_of_row", "top_of_rack"]), 64, 8)
    assert list(hall.gpu_leaf) == ["end_of_row", "top_of_rack"]
    assert list(hall.leaf_spine) == ["end_of_row", "top_of_rack"]
    with pytest.raises(ValueError, match="among"):
        hall.class_lengths(0, "middle_of_row")
    with pytest.raises(ValueError, match="needs a leaf placement"):
        hall.class_lengths(1, None)
    with pytest.raises(ValueError, match="expected 0, 1 or 2"):
        hall.class_lengths(3, "top_of_rack")
    assert hall.class_lengths(2, "anything") == hall.spine_core


# --- Schema -----------------------------------------------------------------------------------


def test_layout_defaults() -> None:
    layout = Layout()
    assert layout.leaf_placement == list(PLACEMENTS)
    assert (layout.row_columns, layout.cross_aisle_m, layout.routing_overhead) == (None, 1.2, 0.1)
    assert layout.network_row == "centre"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"leaf_placement": ["top_of_rack", "end_of_row", "top_of_rack"]}, "twice"),
        ({"leaf_placement": []}, "at least 1"),
        ({"leaf_placement": ["top_of_row"]}, "top_of_rack"),
        ({"network_row": "back"}, "centre"),
        ({"row_columns": 0}, "greater than or equal"),
        ({"routing_overhead": -0.1}, "greater than or equal"),
        ({"cross_aisle_m": 51}, "less than or equal"),
    ],
)
def test_bad_layout_rejected(fields: dict[str, Any], words: str) -> None:
    with pytest.raises(ValidationError, match=words):
        Layout(**fields)


@pytest.mark.parametrize(
    ("layout", "gpus", "gpus_per_node"),
    [
        (Layout(), 256, 8),
        (Layout(row_columns=7), 4096, 8),
        (Layout(racks_per_row=1, nodes_per_rack=1), 1000, 1),
        (Layout(racks_per_row=64, row_columns=64), 1_000_000, 8),
    ],
)
@pytest.mark.slow
def test_network_positions_are_the_halls(layout: Layout, gpus: int, gpus_per_node: int) -> None:
    # The schema bounds the hall by network_positions; it must count what hall_of builds.
    hall = hall_of(layout, gpus, gpus_per_node)
    assert network_positions(layout, gpus, gpus_per_node) == hall.columns * layout.racks_per_row


def test_the_schema_refuses_a_hall_the_length_model_cannot_hold() -> None:
    # row_columns = 1000 at 4,096 GPUs built 16,000 network positions and passed 8 GiB.
    from planner.schema.instance import MAX_NETWORK_POSITIONS, Instance

    base = {"name": "hall", "cluster": {"gpus": 4096}}
    with pytest.raises(ValidationError, match="16,000 network rack positions"):
        Instance.model_validate(base | {"layout": {"row_columns": 1000}})
    fits = MAX_NETWORK_POSITIONS // 16
    Instance.model_validate(base | {"layout": {"row_columns": fits}})

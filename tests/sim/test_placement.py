"""Placement of parallel groups on a two-level machine, and the hierarchical all-reduce.

GPU g sits in scale-up domain g // domain_gpus and on rail g % gpus_per_node. Tensor-parallel
groups (domain_groups) must lie in one domain; same-rail groups (rail_groups) take one GPU at one
local index from each of several domains; the hierarchical all-reduce sends 2 (k-1)/k S per GPU
inside domains and 2 (m-1)/m S/k across them (k GPUs of a group per domain, m domains).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from pydantic import ValidationError

from planner.schema.verify import TrafficSpec
from planner.sim.collectives import hierarchical_all_reduce, ring_all_reduce
from planner.sim.gpu_groups import (
    consecutive_groups,
    data_parallel_groups,
    domain_groups,
    rail_groups,
)
from planner.sim.traffic import IntArray, Phase, Traffic
from planner.sim.traffic_kinds import build_traffic

GIB = 2.0**30
REL = 1e-12
#: NVLink 4 (900 GB/s per GPU) and a 400 Gb/s NIC, in bytes per second.
SCALE_UP_BYTES_PER_S = 900e9
NIC_BYTES_PER_S = 50e9


def _covers_each_gpu_once(groups: IntArray, gpus: int) -> bool:
    return bool(np.array_equal(np.sort(groups.ravel()), np.arange(gpus)))


# --------------------------------------------------------------------------------------------------
# domain_groups: tensor parallel inside one scale-up domain
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "domain_gpus", "group_size"),
    [
        (64, 8, 8),  # DGX nodes, TP over the whole node
        (64, 8, 2),
        (1152, 72, 8),  # NVL72 racks (16 of them), TP-8 inside a rack
        (1152, 72, 72),  # TP over the whole rack
        (1024, 72, 8),  # 14 racks and a partial one of 16 GPUs: two whole groups there
        (16, 8, 1),
    ],
)
def test_domain_groups_lie_in_one_domain(gpus: int, domain_gpus: int, group_size: int) -> None:
    groups = domain_groups(gpus, domain_gpus, group_size)
    assert groups.shape == (gpus // group_size, group_size)
    assert _covers_each_gpu_once(groups, gpus)
    domain = groups // domain_gpus
    assert np.all(domain == domain[:, :1])
    assert np.all(np.diff(groups, axis=1) == 1)  # consecutive GPUs


@pytest.mark.parametrize(
    ("gpus", "domain_gpus", "group_size", "message"),
    [
        (64, 8, 16, r"larger than the scale-up domain \(8 GPUs\)"),
        (1152, 72, 144, r"larger than the scale-up domain \(72 GPUs\)"),
        (72, 72, 16, r"must divide the scale-up domain \(72 GPUs\)"),
        (64, 8, 3, r"must divide the scale-up domain"),
        (1020, 72, 8, r"partial scale-up domain \(12 GPUs\) would end inside a group"),
        (64, 8, 0, r"group_size must be at least 1"),
        (64, 0, 8, r"domain_gpus must be at least 1"),
    ],
)
def test_domain_groups_refuse_what_cannot_fit(
    gpus: int, domain_gpus: int, group_size: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        domain_groups(gpus, domain_gpus, group_size)


# --------------------------------------------------------------------------------------------------
# rail_groups: one local index across domains
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("gpus", "domain_gpus", "gpus_per_node", "group_size"),
    [
        (64, 8, 8, 8),  # 8 DGX nodes: data parallel over all of them
        (64, 8, 8, 2),
        (1152, 72, 4, 16),  # 16 NVL72 racks of 18 nodes of 4
        (1152, 72, 4, 4),
        (1152, 72, 4, 1),
    ],
)
def test_rail_groups_share_index_and_rail_across_distinct_domains(
    gpus: int, domain_gpus: int, gpus_per_node: int, group_size: int
) -> None:
    groups = rail_groups(gpus, domain_gpus, group_size)
    assert groups.shape == (gpus // group_size, group_size)
    assert _covers_each_gpu_once(groups, gpus)
    local = groups % domain_gpus
    rail = groups % gpus_per_node
    domain = groups // domain_gpus
    assert np.all(local == local[:, :1])
    assert np.all(rail == rail[:, :1])
    assert np.all(np.diff(domain, axis=1) == 1)  # distinct, consecutive domains in order


@pytest.mark.parametrize(("gpus", "gpus_per_node"), [(64, 8), (1024, 8), (1152, 4)])
def test_rail_groups_over_every_node_are_the_data_parallel_groups(
    gpus: int, gpus_per_node: int
) -> None:
    nodes = gpus // gpus_per_node
    assert np.array_equal(
        rail_groups(gpus, gpus_per_node, nodes), data_parallel_groups(gpus, gpus_per_node)
    )


@pytest.mark.parametrize(
    ("gpus", "domain_gpus", "group_size", "message"),
    [
        (1024, 72, 2, r"whole scale-up domains: 1024 GPUs is 14 domains of 72 and 16 GPUs over"),
        (1152, 72, 5, r"must divide the number of scale-up domains \(16 of 72 GPUs\)"),
        (64, 8, 16, r"must divide the number of scale-up domains \(8 of 8 GPUs\)"),
        (64, 8, 0, r"group_size must be at least 1"),
    ],
)
def test_rail_groups_refuse_partial_domains_and_sizes_that_do_not_divide(
    gpus: int, domain_gpus: int, group_size: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        rail_groups(gpus, domain_gpus, group_size)


# --------------------------------------------------------------------------------------------------
# hierarchical_all_reduce: the closed form per level
# --------------------------------------------------------------------------------------------------


def _crosses(phase: Phase, domain_gpus: int) -> np.ndarray:
    return np.asarray(phase.src // domain_gpus != phase.dst // domain_gpus)


def _sent_per_gpu(traffic: Traffic, gpus: int, domain_gpus: int, *, inter: bool) -> np.ndarray:
    """Bytes each GPU sends over the whole collective, across domains or inside them."""
    sent = np.zeros(gpus)
    for phase in traffic.phases:  # three phases at most
        keep = _crosses(phase, domain_gpus) == inter
        sent += phase.repeat * np.bincount(
            phase.src[keep], weights=phase.size_bytes[keep], minlength=gpus
        )
    return sent


#: (case id, groups, domain_gpus, k, m, intra bytes per GPU / S, inter bytes per GPU / S), the
#: closed form written out: intra = 2 (k-1)/k, inter = 2 (m-1)/m / k.
HIERARCHICAL = [
    # 1,024 GPUs in one group, DGX domains of 8: k = 8, m = 128.
    ("one-group-1024-dgx", consecutive_groups(1024, 1024), 8, 8, 128, 2 * 7 / 8, 2 * 127 / 128 / 8),
    # 1,152 GPUs in one group, NVL72 racks: k = 72, m = 16.
    (
        "one-group-1152-nvl72",
        consecutive_groups(1152, 1152),
        72,
        72,
        16,
        2 * 71 / 72,
        2 * 15 / 16 / 72,
    ),
    # Groups of 32 consecutive GPUs, domains of 8: k = 8, m = 4.
    ("groups-of-32-dgx", consecutive_groups(256, 32), 8, 8, 4, 2 * 7 / 8, 2 * 3 / 4 / 8),
    # Data parallel over 8 DGX nodes: one GPU per domain, k = 1, m = 8 (all across domains).
    ("data-parallel-dgx", data_parallel_groups(64, 8), 8, 1, 8, 0.0, 2 * 7 / 8 / 1),
    # Tensor parallel inside the domain: k = 8, m = 1 (nothing leaves a domain).
    ("tensor-parallel-dgx", domain_groups(64, 8, 8), 8, 8, 1, 2 * 7 / 8, 0.0),
    # Same rail across 4 NVL72 racks: k = 1, m = 4.
    ("same-rail-nvl72", rail_groups(1152, 72, 4), 72, 1, 4, 0.0, 2 * 3 / 4 / 1),
]


@pytest.mark.parametrize(
    ("groups", "domain_gpus", "k", "m", "intra_of_size", "inter_of_size"),
    [case[1:] for case in HIERARCHICAL],
    ids=[case[0] for case in HIERARCHICAL],
)
def test_hierarchical_bytes_per_gpu_per_level_match_the_closed_form(
    groups: IntArray, domain_gpus: int, k: int, m: int, intra_of_size: float, inter_of_size: float
) -> None:
    size = GIB
    gpus = groups.size
    traffic = hierarchical_all_reduce(groups, size, domain_gpus)
    intra = _sent_per_gpu(traffic, gpus, domain_gpus, inter=False)
    inter = _sent_per_gpu(traffic, gpus, domain_gpus, inter=True)
    assert intra == pytest.approx(np.full(gpus, 2 * (k - 1) / k * size), rel=REL, abs=0.0)
    assert inter == pytest.approx(np.full(gpus, 2 * (m - 1) / m * size / k), rel=REL, abs=0.0)
    # The table's fractions are the same closed form, written out by hand.
    assert intra == pytest.approx(np.full(gpus, intra_of_size * size), rel=REL, abs=0.0)
    assert inter == pytest.approx(np.full(gpus, inter_of_size * size), rel=REL, abs=0.0)


@pytest.mark.parametrize(
    ("groups", "domain_gpus", "k", "m"),
    [case[1:5] for case in HIERARCHICAL],
    ids=[case[0] for case in HIERARCHICAL],
)
def test_hierarchical_time_at_full_rates_is_the_closed_form(
    groups: IntArray, domain_gpus: int, k: int, m: int
) -> None:
    """Each phase at its level's rate, no contention: Σ repeat · (busiest GPU's bytes) / rate."""
    size = GIB
    traffic = hierarchical_all_reduce(groups, size, domain_gpus)
    time_s = sum(
        phase.repeat
        * float(np.bincount(phase.src, weights=phase.size_bytes).max())
        / (NIC_BYTES_PER_S if _crosses(phase, domain_gpus).all() else SCALE_UP_BYTES_PER_S)
        for phase in traffic.phases
    )
    expected_s = (
        2 * (k - 1) / k * size / SCALE_UP_BYTES_PER_S
        + 2 * (m - 1) / m * (size / k) / NIC_BYTES_PER_S
    )
    assert time_s == pytest.approx(expected_s, rel=REL, abs=0.0)


def test_the_1024_gpu_example_in_numbers() -> None:
    """k = 8, m = 128, S = 1 GiB: intra 1.75 GiB per GPU, inter 2 · 127/128 · 128 MiB."""
    traffic = hierarchical_all_reduce(consecutive_groups(1024, 1024), GIB, 8)
    reduce_scatter, across, all_gather = traffic.phases
    assert (reduce_scatter.repeat, across.repeat, all_gather.repeat) == (7, 254, 7)
    assert reduce_scatter.size_bytes[0] == GIB / 8  # S/k per step
    assert across.size_bytes[0] == GIB / 8 / 128  # (S/k)/m per step
    intra_bytes = 7 * GIB / 8 * 2  # 1.75 GiB
    inter_bytes = 254 * GIB / 1024  # = 2 * 127/128 * (1 GiB / 8)
    assert intra_bytes == pytest.approx(2 * 7 / 8 * GIB, rel=REL)
    assert inter_bytes == pytest.approx(2 * 127 / 128 * GIB / 8, rel=REL)
    assert traffic.total_bytes == pytest.approx(1024 * (intra_bytes + inter_bytes), rel=REL)


@pytest.mark.parametrize(
    ("groups", "domain_gpus"),
    [case[1:3] for case in HIERARCHICAL if case[3] > 1 and case[4] > 1],
    ids=[case[0] for case in HIERARCHICAL if case[3] > 1 and case[4] > 1],
)
def test_hierarchical_phases_stay_in_or_leave_the_domain(
    groups: IntArray, domain_gpus: int
) -> None:
    reduce_scatter, across, all_gather = hierarchical_all_reduce(groups, GIB, domain_gpus).phases
    assert not _crosses(reduce_scatter, domain_gpus).any()
    assert _crosses(across, domain_gpus).all()
    assert not _crosses(all_gather, domain_gpus).any()


@pytest.mark.parametrize(
    ("groups", "domain_gpus", "phases"),
    [
        (domain_groups(64, 8, 8), 8, 2),  # m = 1: no phase across domains
        (data_parallel_groups(64, 8), 8, 1),  # k = 1: no phase inside them
        (consecutive_groups(64, 1), 8, 0),  # n = 1: nothing at all
    ],
    ids=["m-1", "k-1", "n-1"],
)
def test_a_level_with_one_member_sends_nothing(
    groups: IntArray, domain_gpus: int, phases: int
) -> None:
    assert len(hierarchical_all_reduce(groups, GIB, domain_gpus).phases) == phases


@pytest.mark.parametrize(
    ("groups", "domain_gpus"),
    [(consecutive_groups(1024, 64), 8), (data_parallel_groups(1152, 4), 72)],
    ids=["groups-of-64-dgx", "data-parallel-nvl72"],
)
def test_hierarchical_reports_like_an_all_reduce(groups: IntArray, domain_gpus: int) -> None:
    n = groups.shape[1]
    traffic = hierarchical_all_reduce(groups, GIB, domain_gpus)
    flat = ring_all_reduce(groups, GIB)
    assert (traffic.name, traffic.algorithm) == ("all_reduce", "hierarchical")
    assert (traffic.group_size, traffic.groups) == (flat.group_size, flat.groups)
    assert traffic.busbw_factor == pytest.approx(2 * (n - 1) / n, rel=REL)
    assert traffic.busbw_factor == flat.busbw_factor


def test_within_one_domain_it_carries_what_a_flat_ring_carries() -> None:
    groups = domain_groups(64, 8, 8)
    assert hierarchical_all_reduce(groups, GIB, 8).total_bytes == pytest.approx(
        ring_all_reduce(groups, GIB).total_bytes, rel=REL
    )


@pytest.mark.parametrize(
    ("groups", "domain_gpus", "message"),
    [
        (consecutive_groups(24, 12), 8, r"group 0 has 8, 4 GPUs in its 2 domains"),
        (np.array([[0, 1, 2, 8]]), 8, r"group 0 has 3, 1 GPUs in its 2 domains"),
        (np.array([[0, 1, 2, 3], [8, 16, 24, 32]]), 8, r"group 0 has 4 GPUs per .* group 1 has 1"),
        (consecutive_groups(16, 8), 0, r"domain_gpus must be at least 1"),
    ],
    ids=["straddles-a-domain", "uneven-teams", "groups-split-differently", "no-domain"],
)
def test_hierarchical_refuses_uneven_teams(
    groups: IntArray, domain_gpus: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        hierarchical_all_reduce(groups, GIB, domain_gpus)


def test_hierarchical_at_scale_is_quick_and_exact() -> None:
    """131,072 GPUs, 8 groups of 16,384 on NVL72-like domains of 64: three phases, 393,216 flows."""
    traffic = hierarchical_all_reduce(consecutive_groups(131_072, 16_384), GIB, 64)
    assert [p.flows for p in traffic.phases] == [131_072] * 3
    assert [p.repeat for p in traffic.phases] == [63, 2 * 255, 63]


# --------------------------------------------------------------------------------------------------
# Schema and build_traffic
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "label"),
    [
        (
            {"kind": "all_reduce_ring", "groups": "tensor_parallel", "group_size": 8},
            "all_reduce_ring/tp-8",
        ),
        ({"kind": "all_to_all", "groups": "same_rail", "group_size": 64}, "all_to_all/rail-64"),
        ({"kind": "all_reduce_hierarchical"}, "all_reduce_hierarchical/dp"),
        (
            {"kind": "all_reduce_hierarchical", "groups": "consecutive", "group_size": 1024},
            "all_reduce_hierarchical/groups-of-1024",
        ),
        (
            {"kind": "all_to_all", "groups": "consecutive", "group_size": 64},
            "all_to_all/groups-of-64",
        ),
        ({"kind": "all_reduce_ring"}, "all_reduce_ring/dp"),
        ({"kind": "shift", "group_size": 4096}, "shift/4096"),
        ({"kind": "random_permutation", "groups": "tensor_parallel"}, "random_permutation"),
    ],
)
def test_schema_accepts_and_labels(fields: dict[str, object], label: str) -> None:
    assert TrafficSpec.model_validate(fields).label == label


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        (
            {"kind": "all_reduce_ring", "groups": "tensor_parallel"},
            "tensor_parallel groups need group_size",
        ),
        ({"kind": "all_to_all", "groups": "same_rail"}, "same_rail groups need group_size"),
        (
            {"kind": "all_reduce_hierarchical", "groups": "consecutive"},
            "consecutive groups need group_size",
        ),
        (
            {"kind": "all_reduce_ring", "groups": "tensor_parallel", "group_size": 2048},
            "larger than any scale-up domain (at most 1,024 GPUs)",
        ),
        (
            {"kind": "all_to_all", "groups": "same_rail", "group_size": 1},
            "greater than or equal to 2",
        ),
        ({"kind": "all_to_all", "groups": "pipeline", "group_size": 8}, "tensor_parallel"),
        ({"kind": "all_reduce_nvls"}, "all_reduce_hierarchical"),
    ],
)
def test_schema_refuses_with_a_clear_message(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ValidationError) as info:
        TrafficSpec.model_validate(fields)
    assert message in str(info.value)


def _spec(**fields: object) -> TrafficSpec:
    return TrafficSpec.model_validate({"size_bytes": GIB} | fields)


#: (spec fields, gpus, gpus_per_node, domain_gpus, check of the groups each flow's ends share).
BUILT: list[
    tuple[dict[str, object], int, int, int | None, Callable[[IntArray, IntArray], bool]]
] = [
    # TP-24 in NVL72 racks of nodes of 4 (six nodes a group): every flow stays in its rack.
    (
        {"kind": "all_reduce_ring", "groups": "tensor_parallel", "group_size": 24},
        1152,
        4,
        72,
        lambda src, dst: bool(np.all(src // 72 == dst // 72)),
    ),
    # Same rail across 16 racks: every flow keeps its rail and leaves its rack.
    (
        {"kind": "all_to_all", "groups": "same_rail", "group_size": 16},
        1152,
        4,
        72,
        lambda src, dst: bool(np.all(src % 4 == dst % 4) and np.all(src // 72 != dst // 72)),
    ),
    # No domain given: one node is the domain (TP-8 on DGX nodes).
    (
        {"kind": "all_gather", "groups": "tensor_parallel", "group_size": 8},
        256,
        8,
        None,
        lambda src, dst: bool(np.all(src // 8 == dst // 8)),
    ),
    # Hierarchical over same-rail groups: one GPU per rack, so every flow leaves its rack.
    (
        {"kind": "all_reduce_hierarchical", "groups": "same_rail", "group_size": 4},
        1152,
        4,
        72,
        lambda src, dst: bool(np.all(src // 72 != dst // 72)),
    ),
]


@pytest.mark.parametrize(
    ("fields", "gpus", "per_node", "domain_gpus", "check"),
    BUILT,
    ids=["tp-24-nvl72", "rail-16-nvl72", "tp-8-node", "hierarchical-rail-4"],
)
def test_build_traffic_places_groups_in_the_domain(
    fields: dict[str, object],
    gpus: int,
    per_node: int,
    domain_gpus: int | None,
    check: Callable[[IntArray, IntArray], bool],
) -> None:
    traffic = build_traffic(_spec(**fields), gpus, per_node, 1, domain_gpus=domain_gpus)
    assert traffic.phases
    assert all(check(phase.src, phase.dst) for phase in traffic.phases)


def test_build_traffic_hierarchical_uses_the_domain() -> None:
    spec = _spec(kind="all_reduce_hierarchical", groups="consecutive", group_size=144)
    traffic = build_traffic(spec, 1152, 4, 1, domain_gpus=72)
    assert traffic.algorithm == "hierarchical"
    assert [p.repeat for p in traffic.phases] == [71, 2, 71]  # k = 72, m = 2


@pytest.mark.parametrize(
    ("fields", "gpus", "per_node", "domain_gpus", "message"),
    [
        (
            {"kind": "all_reduce_ring", "groups": "tensor_parallel", "group_size": 16},
            256,
            8,
            None,
            r"larger than the scale-up domain \(8 GPUs\)",
        ),
        (
            {"kind": "all_to_all", "groups": "same_rail", "group_size": 3},
            1152,
            4,
            72,
            r"must divide the number of scale-up domains \(16 of 72 GPUs\)",
        ),
        (
            {"kind": "all_reduce_hierarchical", "groups": "consecutive", "group_size": 12},
            96,
            8,
            None,
            r"same number of GPUs in every scale-up domain",
        ),
    ],
    ids=["tp-wider-than-domain", "rail-not-dividing", "hierarchical-uneven"],
)
def test_build_traffic_refuses_what_does_not_fit_the_machine(
    fields: dict[str, object], gpus: int, per_node: int, domain_gpus: int | None, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_traffic(_spec(**fields), gpus, per_node, 1, domain_gpus=domain_gpus)

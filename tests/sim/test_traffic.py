"""Traffic builders: placements, flow structure, byte conservation, nccl-tests factors, scale."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from planner.sim.collectives import (
    all_to_all,
    ring_all_gather,
    ring_all_reduce,
    ring_reduce_scatter,
    tree_all_reduce,
    tree_parents,
)
from planner.sim.gpu_groups import consecutive_groups, data_parallel_groups, pipeline_pairs
from planner.sim.traffic import Phase, Traffic, ideal_time_s
from planner.sim.traffic_patterns import (
    incast,
    point_to_point,
    random_permutation,
    uniform_all_to_all,
)

SIZE_BYTES = 2.0**20
NIC_GBPS = 400.0
REL = 1e-12
SCALE_GPUS = 131_072

COLLECTIVES = {
    "ring_all_reduce": ring_all_reduce,
    "tree_all_reduce": tree_all_reduce,
    "ring_reduce_scatter": ring_reduce_scatter,
    "ring_all_gather": ring_all_gather,
    "all_to_all": all_to_all,
}

#: nccl-tests PERFORMANCE.md bus-bandwidth factors, per collective.
NCCL_FACTORS = {
    "ring_all_reduce": lambda n: 2 * (n - 1) / n,
    "tree_all_reduce": lambda n: 2 * (n - 1) / n,
    "ring_reduce_scatter": lambda n: (n - 1) / n,
    "ring_all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}

#: Bytes each rank sends over the whole collective, as a multiple of S.
SENT_PER_RANK = {
    "ring_all_reduce": lambda n: 2 * (n - 1) / n,
    "ring_reduce_scatter": lambda n: (n - 1) / n,
    "ring_all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
}


def _cat(traffic: Traffic, field: str) -> np.ndarray:
    return np.concatenate([getattr(p, field) for p in traffic.phases])


# --- placements -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("gpus", "per_node"), [(8, 8), (64, 8), (1024, 8), (96, 4)])
def test_data_parallel_group_shape(gpus: int, per_node: int) -> None:
    assert data_parallel_groups(gpus, per_node).shape == (per_node, gpus // per_node)


@pytest.mark.parametrize(("gpus", "per_node"), [(64, 8), (1024, 8), (96, 4)])
def test_data_parallel_group_is_one_local_index_in_node_order(gpus: int, per_node: int) -> None:
    groups = data_parallel_groups(gpus, per_node)
    locals_ = np.broadcast_to(np.arange(per_node)[:, None], groups.shape)
    nodes = np.broadcast_to(np.arange(gpus // per_node)[None, :], groups.shape)
    assert np.array_equal(groups % per_node, locals_)
    assert np.array_equal(groups // per_node, nodes)


@pytest.mark.parametrize(("gpus", "group_size"), [(512, 64), (131_072, 64), (64, 64), (16, 1)])
def test_consecutive_groups_partition_the_gpus(gpus: int, group_size: int) -> None:
    groups = consecutive_groups(gpus, group_size)
    assert groups.shape == (gpus // group_size, group_size)
    assert np.array_equal(np.sort(groups.ravel()), np.arange(gpus))


@pytest.mark.parametrize("gpus", [512, 4096])
def test_consecutive_group_of_64_is_eight_whole_nodes(gpus: int) -> None:
    nodes = consecutive_groups(gpus, 64) // 8
    first_nodes = nodes[:, ::8]
    assert np.array_equal(first_nodes, np.arange(gpus // 8).reshape(gpus // 64, 8))
    assert np.all(nodes.reshape(gpus // 64, 8, 8) == first_nodes[:, :, None])


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: consecutive_groups(100, 64), "does not divide"),
        (lambda: consecutive_groups(64, 0), "at least 1"),
        (lambda: data_parallel_groups(100, 8), "does not divide"),
        (lambda: pipeline_pairs(64, 8, 3), "does not divide"),
    ],
    ids=["consecutive", "zero-size", "data-parallel", "pipeline"],
)
def test_sizes_that_do_not_divide_are_rejected(call: Callable[[], object], match: str) -> None:
    with pytest.raises(ValueError, match=match):
        call()


@pytest.mark.parametrize(("gpus", "per_node", "stages"), [(64, 8, 4), (128, 8, 2), (64, 8, 8)])
def test_pipeline_pairs_link_gpu_j_of_consecutive_stages(
    gpus: int, per_node: int, stages: int
) -> None:
    src, dst = pipeline_pairs(gpus, per_node, stages)
    stage_gpus = gpus // stages
    assert src.size == (stages - 1) * stage_gpus
    assert np.array_equal(dst // stage_gpus, src // stage_gpus + 1)
    assert np.array_equal(dst % stage_gpus, src % stage_gpus)
    assert np.array_equal(dst % per_node, src % per_node)  # same rail


@pytest.mark.parametrize("gpus", [8, 64])
def test_single_pipeline_stage_has_no_pairs(gpus: int) -> None:
    src, dst = pipeline_pairs(gpus, 8, 1)
    assert src.size == dst.size == 0
    assert point_to_point(src, dst, SIZE_BYTES).phases == ()


# --- collectives: structure -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "build", [ring_all_reduce, ring_reduce_scatter, ring_all_gather], ids=lambda f: f.__name__
)
@pytest.mark.parametrize("n", [2, 3, 8, 64])
def test_ring_sends_to_the_next_rank(build: Callable[..., Traffic], n: int) -> None:
    groups = consecutive_groups(4 * n, n)
    traffic = build(groups, SIZE_BYTES)
    (phase,) = traffic.phases
    rank = {int(g): (i, r) for i, row in enumerate(groups) for r, g in enumerate(row)}
    pairs = {(rank[int(s)], rank[int(d)]) for s, d in zip(phase.src, phase.dst, strict=True)}
    expected = {((i, r), (i, (r + 1) % n)) for i in range(4) for r in range(n)}
    assert pairs == expected


@pytest.mark.parametrize(
    ("build", "repeat"),
    [
        (ring_all_reduce, lambda n: 2 * (n - 1)),
        (ring_reduce_scatter, lambda n: n - 1),
        (ring_all_gather, lambda n: n - 1),
    ],
    ids=["all_reduce", "reduce_scatter", "all_gather"],
)
@pytest.mark.parametrize("n", [2, 8, 64])
def test_ring_is_one_repeated_phase_of_s_over_n(
    build: Callable[..., Traffic], repeat: Callable[[int], int], n: int
) -> None:
    traffic = build(data_parallel_groups(8 * n, 8), SIZE_BYTES)
    (phase,) = traffic.phases
    assert phase.repeat == repeat(n)
    assert np.all(phase.size_bytes == SIZE_BYTES / n)


@pytest.mark.parametrize("n", [2, 8, 64])
@pytest.mark.parametrize("groups", [1, 8])
def test_ring_all_reduce_conserves_bytes(n: int, groups: int) -> None:
    traffic = ring_all_reduce(consecutive_groups(groups * n, n), SIZE_BYTES)
    expected = groups * n * 2 * (n - 1) * SIZE_BYTES / n
    assert traffic.total_bytes == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("name", sorted(SENT_PER_RANK))
@pytest.mark.parametrize("n", [2, 8, 64])
def test_every_rank_sends_and_receives_its_share(name: str, n: int) -> None:
    gpus = 4 * n
    traffic = COLLECTIVES[name](consecutive_groups(gpus, n), SIZE_BYTES)
    sent = sum(np.bincount(p.src, p.size_bytes, gpus) * p.repeat for p in traffic.phases)
    received = sum(np.bincount(p.dst, p.size_bytes, gpus) * p.repeat for p in traffic.phases)
    share = SENT_PER_RANK[name](n) * SIZE_BYTES
    assert np.allclose(sent, share, rtol=REL)
    assert np.allclose(received, share, rtol=REL)


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
@pytest.mark.parametrize("n", [2, 5, 8, 64])
def test_collective_flows_stay_inside_their_group_and_never_loop(name: str, n: int) -> None:
    groups = data_parallel_groups(8 * n, 8)
    traffic = COLLECTIVES[name](groups, SIZE_BYTES)
    src, dst = _cat(traffic, "src"), _cat(traffic, "dst")
    group_of = np.empty(groups.size, dtype=np.int64)
    group_of[groups] = np.arange(groups.shape[0])[:, None]
    assert np.all(src != dst)
    assert np.array_equal(group_of[src], group_of[dst])


@pytest.mark.parametrize("n", [2, 8, 64])
def test_all_to_all_covers_every_ordered_pair_once(n: int) -> None:
    traffic = all_to_all(consecutive_groups(3 * n, n), SIZE_BYTES)
    (phase,) = traffic.phases
    pairs = phase.src * (3 * n) + phase.dst
    assert phase.flows == 3 * n * (n - 1)
    assert np.unique(pairs).size == phase.flows
    assert np.all(phase.src // n == phase.dst // n)
    assert np.all(phase.size_bytes == SIZE_BYTES / n)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 64, 100])
def test_tree_has_two_ceil_log2_n_levels(n: int) -> None:
    traffic = tree_all_reduce(consecutive_groups(2 * n, n), SIZE_BYTES)
    assert len(traffic.phases) == 2 * math.ceil(math.log2(n))


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13, 64, 100])
def test_tree_is_binary_and_reduced_leaves_first(n: int) -> None:
    parents = tree_parents(n)
    children = np.bincount(parents[1:], minlength=n)
    low_bit = np.arange(1, n) & -np.arange(1, n)
    parent_low_bit = np.where(parents[1:] == 0, 2 * n, parents[1:] & -parents[1:])
    assert parents[0] == -1
    assert children.max() <= 2
    assert np.all(parent_low_bit > low_bit)  # a parent sends after all its children


@pytest.mark.parametrize("n", [2, 5, 8, 64])
def test_tree_broadcast_mirrors_the_reduce(n: int) -> None:
    traffic = tree_all_reduce(consecutive_groups(n, n), SIZE_BYTES)
    levels = len(traffic.phases) // 2
    reduce, broadcast = traffic.phases[:levels], traffic.phases[levels:][::-1]
    sent_to_root = {int(s) for p in reduce for s, d in zip(p.src, p.dst, strict=True) if d == 0}
    assert all(
        np.array_equal(r.src, b.dst) and np.array_equal(r.dst, b.src)
        for r, b in zip(reduce, broadcast, strict=True)
    )
    assert sum(p.flows for p in reduce) == n - 1  # every non-root rank sends once
    assert sent_to_root == {1 << (levels - 1)}
    assert all(np.all(p.size_bytes == SIZE_BYTES) for p in traffic.phases)


# --- collectives: nccl-tests factors and edge cases -----------------------------------------------


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
@pytest.mark.parametrize("n", [2, 8, 64])
def test_busbw_factor_matches_nccl_tests(name: str, n: int) -> None:
    traffic = COLLECTIVES[name](consecutive_groups(n, n), SIZE_BYTES)
    assert traffic.busbw_factor == pytest.approx(NCCL_FACTORS[name](n), rel=REL)
    assert traffic.group_size == n
    assert traffic.groups == 1


@pytest.mark.parametrize("name", sorted(COLLECTIVES))
def test_collective_of_one_rank_has_no_flows(name: str) -> None:
    traffic = COLLECTIVES[name](consecutive_groups(8, 1), SIZE_BYTES)
    assert traffic.phases == ()
    assert traffic.busbw_factor == 0.0
    assert ideal_time_s(traffic, 8, NIC_GBPS) == 0.0


@pytest.mark.parametrize(
    "groups",
    [np.arange(8), np.array([[0, 1, 1, 2]]), np.array([[0.0, 1.0]]), np.array([[-1, 2]])],
    ids=["1-D", "duplicate", "float", "negative"],
)
def test_bad_groups_are_rejected(groups: np.ndarray) -> None:
    with pytest.raises(ValueError, match="groups|GPU"):
        ring_all_reduce(groups, SIZE_BYTES)


@pytest.mark.parametrize(
    ("src", "dst", "repeat"),
    [([0, 1], [0, 2], 1), ([0, 1], [1], 1), ([0], [1], 0)],
    ids=["self-flow", "lengths", "repeat"],
)
def test_bad_phases_are_rejected(src: list[int], dst: list[int], repeat: int) -> None:
    with pytest.raises(ValueError, match="phase|itself"):
        Phase(np.array(src), np.array(dst), np.ones(len(src)), repeat)


# --- synthetic patterns ---------------------------------------------------------------------------


@pytest.mark.parametrize("gpus", [2, 3, 16, 100])
def test_uniform_all_to_all_sends_bytes_per_gpu_to_all_others(gpus: int) -> None:
    traffic = uniform_all_to_all(gpus, SIZE_BYTES)
    (phase,) = traffic.phases
    assert phase.flows == gpus * (gpus - 1)
    assert np.all(phase.src != phase.dst)
    assert np.allclose(np.bincount(phase.src, phase.size_bytes, gpus), SIZE_BYTES, rtol=REL)
    assert np.allclose(np.bincount(phase.dst, phase.size_bytes, gpus), SIZE_BYTES, rtol=REL)
    assert (traffic.algorithm, traffic.busbw_factor) == ("pattern", 1.0)


@pytest.mark.parametrize("gpus", [2, 3, 64, 131_072])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_random_permutation_is_a_derangement(gpus: int, seed: int) -> None:
    (phase,) = random_permutation(gpus, SIZE_BYTES, seed).phases
    assert np.array_equal(phase.src, np.arange(gpus))
    assert np.array_equal(np.sort(phase.dst), np.arange(gpus))
    assert np.all(phase.src != phase.dst)


@pytest.mark.parametrize("seed", [0, 7])
def test_random_permutation_is_reproducible(seed: int) -> None:
    first = random_permutation(1024, SIZE_BYTES, seed).phases[0]
    again = random_permutation(1024, SIZE_BYTES, seed).phases[0]
    other = random_permutation(1024, SIZE_BYTES, seed + 1).phases[0]
    assert np.array_equal(first.dst, again.dst)
    assert not np.array_equal(first.dst, other.dst)


@pytest.mark.parametrize(("gpus", "fan_in"), [(2, 1), (64, 8), (64, 63), (131_072, 512)])
@pytest.mark.parametrize("seed", [0, 3])
def test_incast_has_distinct_senders_to_one_receiver(gpus: int, fan_in: int, seed: int) -> None:
    traffic = incast(gpus, fan_in, SIZE_BYTES, seed)
    (phase,) = traffic.phases
    assert np.unique(phase.dst).size == 1
    assert np.unique(phase.src).size == fan_in
    assert np.all(phase.src != phase.dst)
    assert np.all((phase.src >= 0) & (phase.src < gpus))
    assert traffic.group_size == fan_in + 1


@pytest.mark.parametrize("seed", [0, 5])
def test_incast_is_reproducible(seed: int) -> None:
    first, again, other = (
        incast(4096, 16, SIZE_BYTES, s).phases[0] for s in (seed, seed, seed + 1)
    )
    assert np.array_equal(first.src, again.src)
    assert np.array_equal(first.dst, again.dst)
    assert not (np.array_equal(first.src, other.src) and np.array_equal(first.dst, other.dst))


@pytest.mark.parametrize(
    "call",
    [
        lambda: uniform_all_to_all(1, SIZE_BYTES),
        lambda: random_permutation(1, SIZE_BYTES, 0),
        lambda: incast(8, 8, SIZE_BYTES, 0),
        lambda: incast(8, 0, SIZE_BYTES, 0),
        lambda: uniform_all_to_all(131_072, SIZE_BYTES),
    ],
    ids=["uniform-1", "permutation-1", "fan-in-too-big", "fan-in-zero", "too-many-flows"],
)
def test_impossible_patterns_are_rejected(call: Callable[[], object]) -> None:
    with pytest.raises(ValueError, match="GPUs|fan_in|flows"):
        call()


# --- ideal time -----------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [2, 8, 64])
@pytest.mark.parametrize("placement", ["data_parallel", "consecutive"])
def test_ideal_time_of_ring_all_reduce_is_the_closed_form(n: int, placement: str) -> None:
    gpus = 8 * n
    groups = (
        data_parallel_groups(gpus, 8)
        if placement == "data_parallel"
        else consecutive_groups(gpus, n)
    )
    traffic = ring_all_reduce(groups, SIZE_BYTES)
    expected = 2 * (n - 1) / n * SIZE_BYTES * 8 / (NIC_GBPS * 1e9)
    assert ideal_time_s(traffic, gpus, NIC_GBPS) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("n", [2, 8, 64])
def test_ideal_time_of_tree_counts_two_children_per_parent(n: int) -> None:
    traffic = tree_all_reduce(consecutive_groups(n, n), SIZE_BYTES)
    # With n a power of two, every parent below the root receives two children; the root, one.
    busiest = [2 if level < math.log2(n) - 1 else 1 for level in range(int(math.log2(n)))]
    expected = 2 * sum(busiest) * SIZE_BYTES * 8 / (NIC_GBPS * 1e9)
    assert ideal_time_s(traffic, n, NIC_GBPS) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize("gpus", [8, 1024])
def test_ideal_time_of_incast_is_set_by_the_receiver(gpus: int) -> None:
    traffic = incast(gpus, 7, SIZE_BYTES, seed=1)
    expected = 7 * SIZE_BYTES * 8 / (NIC_GBPS * 1e9)
    assert ideal_time_s(traffic, gpus, NIC_GBPS) == pytest.approx(expected, rel=REL)


@pytest.mark.parametrize(("gpus", "nic_gbps"), [(4, NIC_GBPS), (8, 0.0)], ids=["id", "nic"])
def test_ideal_time_rejects_bad_input(gpus: int, nic_gbps: float) -> None:
    traffic = ring_all_reduce(consecutive_groups(8, 8), SIZE_BYTES)
    with pytest.raises(ValueError, match="gpus|nic_gbps"):
        ideal_time_s(traffic, gpus, nic_gbps)


# --- scale ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("group_size", [64])
def test_expert_parallel_all_to_all_at_131k_gpus(group_size: int) -> None:
    traffic = all_to_all(consecutive_groups(SCALE_GPUS, group_size), SIZE_BYTES)
    ideal = ideal_time_s(traffic, SCALE_GPUS, NIC_GBPS)
    (phase,) = traffic.phases
    assert phase.flows == SCALE_GPUS * (group_size - 1)
    assert phase.src.nbytes + phase.dst.nbytes + phase.size_bytes.nbytes < 2**30
    assert ideal == pytest.approx((group_size - 1) / group_size * SIZE_BYTES * 8 / (NIC_GBPS * 1e9))


@pytest.mark.parametrize("build", [ring_all_reduce, tree_all_reduce], ids=lambda f: f.__name__)
def test_data_parallel_all_reduce_at_131k_gpus(build: Callable[..., Traffic]) -> None:
    traffic = build(data_parallel_groups(SCALE_GPUS, 8), SIZE_BYTES)
    assert traffic.groups == 8
    assert traffic.group_size == SCALE_GPUS // 8

"""Shortcuts in building routes give exactly the routes without them (issue 11).

The sort-free helpers give what ``np.unique`` gives, stand-in destination leaves give the
same next hops as the leaves they stand in for, and ECMP picks read from the index of next hops
known from the switch alone (``planner.sim.ecmp_index``) are the picks of the listing.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np
import pytest

from planner.sim.ecmp_index import row_ids
from planner.sim.route_walk import Walk, prepare_routes, unique_pairs, walker
from planner.sim.routing import Routing, route
from planner.sim.routing_strategies import UNREACHABLE
from tests.sim.test_routing import ANY, planned, random_flows

SEEDS = list(range(10))


@pytest.mark.parametrize("seed", SEEDS)
def test_unique_pairs_match_np_unique(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    if seed % 2:  # the fallback that sorts keys
        monkeypatch.setattr("planner.sim.route_walk.DENSE_CELLS", 4)
    n, space = int(rng.integers(1, 400)), int(rng.integers(1, 900))
    major = rng.integers(0, int(rng.integers(1, 200)), n)
    minor = rng.integers(0, space, n)
    uniq, inverse = np.unique(major * space + minor, return_inverse=True)
    got_major, got_minor, got_inverse = unique_pairs(major, minor, space)
    assert got_major.tolist() == (uniq // space).tolist()
    assert got_minor.tolist() == (uniq % space).tolist()
    assert got_inverse.tolist() == inverse.ravel().tolist()


@pytest.mark.parametrize("seed", SEEDS)
def test_row_ids_match_np_unique_rows(seed: int) -> None:
    rng = np.random.default_rng(seed)
    values = np.array([0, 1, 2, 3, 255, 256, int(UNREACHABLE)], dtype=np.int16)
    block = rng.choice(values, size=(int(rng.integers(1, 80)), int(rng.integers(1, 12))))
    block[rng.random(block.shape[0]) < 0.4] = block[0]  # repeated rows
    _, inverse = np.unique(block, axis=0, return_inverse=True)
    assert row_ids(block).tolist() == inverse.ravel().tolist()


FABRICS = [(256, 3, 1.0), (512, 3, (2.0, 1.0)), (128, 2, 1.0)]


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("shape", FABRICS, ids=str)
def test_stand_in_leaves_leave_routes_unchanged(
    shape: tuple[int, int, float | tuple[float, ...]],
    seed: int,
    routing: Routing,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Next hops found for stand-in leaves are those of the leaves themselves (with failures)."""
    fabric = planned(*shape)[0]
    rng = np.random.default_rng(seed)
    inner = np.flatnonzero(fabric.link_class >= 1)
    fabric = fabric.with_failed_links(rng.choice(inner, size=inner.size // 10, replace=False))
    src = rng.integers(0, fabric.gpus, 300)
    dst = (src + rng.integers(1, fabric.gpus, src.size)) % fabric.gpus
    monkeypatch.setattr("planner.sim.route_walk.STAND_IN_COST", 0.0)  # always stand in
    fast = route(fabric, src, dst, routing, seed=seed)
    monkeypatch.setattr(Walk, "stand_ins_for", lambda self, node, dest: dest)
    plain = route(fabric, src, dst, routing, seed=seed)
    assert (fast.explicit != plain.explicit).nnz == 0
    assert fast.flow_pattern.tolist() == plain.flow_pattern.tolist()
    if plain.patterns is not None:
        assert fast.patterns is not None
        assert (fast.patterns != plain.patterns).nnz == 0


@pytest.mark.parametrize("routing", list(Routing))
def test_kept_walks_serve_only_their_own_fabric_and_leaves(
    routing: Routing, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A walk kept from an earlier route gives the same routes; another fabric gets its own."""
    fabric = planned(256, 3)[0]
    rng = np.random.default_rng(5)
    src = rng.integers(0, fabric.gpus, 200)
    dst = (src + rng.integers(1, fabric.gpus, src.size)) % fabric.gpus
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    first = route(fabric, src, dst, routing, seed=1)
    again = route(fabric, src, dst, routing, seed=1)  # from the kept walk
    assert (first.explicit != again.explicit).nnz == 0
    inner = np.flatnonzero(fabric.link_class >= 1)
    failed = fabric.with_failed_links(inner[: inner.size // 4])
    leaves = np.unique(fabric.leaf_of(dst))
    assert walker(failed, leaves).fabric is failed
    assert walker(fabric, leaves).fabric is fabric
    # A subset of the kept leaves is served by the kept walk (a superset) ...
    assert walker(fabric, leaves[:3]).col_of_leaf[leaves[3:]].min() >= 0
    # ... but a leaf outside every kept walk gets a walk of its own leaves.
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    assert walker(fabric, leaves[:3]).col_of_leaf[leaves[3:]].max() == -1


@pytest.mark.parametrize("routing", list(Routing))
@pytest.mark.parametrize("seed", [0, 1])
def test_routes_of_a_subset_are_the_same_from_a_prepared_superset(
    routing: Routing, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk routed with the walk of the whole phase's leaves (``prepare_routes``) gets the
    routes it gets with a walk of its own leaves only (failed links included)."""
    fabric = planned(512, 3)[0]
    rng = np.random.default_rng(seed)
    inner = np.flatnonzero(fabric.link_class >= 1)
    fabric = fabric.with_failed_links(rng.choice(inner, size=inner.size // 10, replace=False))
    src = rng.integers(0, fabric.gpus, 2000)
    dst = (src + rng.integers(1, fabric.gpus, src.size)) % fabric.gpus
    chunk = np.arange(0, 2000, 7)
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    own = route(fabric, src[chunk], dst[chunk], routing, seed=seed, flow_id=chunk)
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    prepare_routes(fabric, dst)
    shared = route(fabric, src[chunk], dst[chunk], routing, seed=seed, flow_id=chunk)
    assert own.connected.tolist() == shared.connected.tolist()
    assert (own.explicit != shared.explicit).nnz == 0
    assert own.flow_pattern.tolist() == shared.flow_pattern.tolist()
    if own.patterns is not None:
        assert shared.patterns is not None
        assert (own.patterns != shared.patterns).nnz == 0


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("name", sorted(ANY))
def test_ecmp_index_picks_what_listing_the_candidates_picks(
    name: str, seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every ECMP path is the same with and without the index, healthy and with failures."""
    fabric = ANY[name]()
    src, dst = random_flows(fabric, 600, seed)
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    fast = route(fabric, src, dst, Routing.ECMP, seed=seed)
    monkeypatch.setattr("planner.sim.route_walk._WALKS", OrderedDict())
    monkeypatch.setattr(Walk, "ecmp_index", lambda self: None)
    plain = route(fabric, src, dst, Routing.ECMP, seed=seed)
    assert fast.connected.tolist() == plain.connected.tolist()
    assert fast.explicit.nnz == plain.explicit.nnz
    assert (fast.explicit != plain.explicit).nnz == 0


def test_ecmp_index_answers_every_hop_of_a_healthy_clos() -> None:
    """On a healthy three-tier Clos every hop but the core's descent is read from the index."""
    fabric = planned(512, 3)[0]
    walk = walker(fabric, np.unique(fabric.leaf_of(np.arange(fabric.gpus))))
    index = walk.ecmp_index()
    assert index is not None
    off = fabric.tier_offsets
    assert index.plain_climb[off[1] : off[3]].all()  # every leaf and spine
    assert not index.plain_climb[off[3] :].any()  # cores have nowhere to climb
    assert index.down_keys.size == int(((fabric.link_class == 1) & fabric.alive[1::2]).sum())


def test_ecmp_index_refuses_a_climb_a_failure_made_uneven() -> None:
    """A spine that lost its links to a leaf no longer has its pod's other spines' distances:
    the other leaves of the pod, whose parents now differ, fall back to listing candidates (and
    the equivalence test above shows they still pick the same links)."""
    fabric = planned(512, 3)[0]
    first = int(np.flatnonzero(fabric.link_class == 1)[0])
    pair = (fabric.lower == fabric.lower[first]) & (fabric.upper == fabric.upper[first])
    failed = fabric.with_failed_links(np.flatnonzero(pair))  # every parallel link of the pair
    leaves = np.unique(failed.leaf_of(np.arange(failed.gpus)))
    healthy_index = walker(fabric, leaves).ecmp_index()
    index = walker(failed, leaves).ecmp_index()
    assert healthy_index is not None
    assert index is not None
    off = fabric.tier_offsets
    lost = index.plain_climb[off[1] : off[2]]
    assert healthy_index.plain_climb[off[1] : off[2]].all()
    assert 0 < int((~lost).sum()) < lost.size

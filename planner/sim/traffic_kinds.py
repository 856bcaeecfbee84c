"""Traffic kinds: every ``TrafficSpec.kind`` mapped to the function that builds its flows.

``build_traffic`` looks a spec's kind up in ``TRAFFIC_KINDS``; a new kind is one function
registered with ``register_traffic(kind)`` (and the name added to ``TrafficKind`` in
``planner.schema.verify``, which a test holds equal to the registry). Collectives run on groups
of GPUs placed by ``spec.groups`` (``GROUP_PLACEMENTS``, ``placed_groups``); patterns run over
the whole cluster.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from planner.schema.verify import TrafficSpec
from planner.sim.collectives import (
    all_to_all,
    hierarchical_all_reduce,
    ring_all_gather,
    ring_all_reduce,
    ring_reduce_scatter,
    tree_all_reduce,
)
from planner.sim.gpu_groups import (
    consecutive_groups,
    data_parallel_groups,
    domain_groups,
    pipeline_pairs,
    rail_groups,
)
from planner.sim.traffic import IntArray, Traffic
from planner.sim.traffic_patterns import (
    incast,
    point_to_point,
    random_permutation,
    uniform_all_to_all,
)


@dataclass(frozen=True)
class ClusterShape:
    """The GPUs a traffic is built on."""

    gpus: int
    gpus_per_node: int
    domain_gpus: int
    """GPUs per scale-up domain: tensor_parallel and same_rail groups are placed in it, and
    all_reduce_hierarchical splits its groups by it."""
    seed: int
    """Seed of the random patterns (random_permutation, incast)."""


#: Builds the flows of a spec on a cluster; ValueError when the traffic does not fit it.
TrafficBuilder = Callable[[TrafficSpec, ClusterShape], Traffic]
#: Traffic builders by kind (``TrafficSpec.kind``); add one with ``register_traffic``.
TRAFFIC_KINDS: dict[str, TrafficBuilder] = {}


def register_traffic(kind: str) -> Callable[[TrafficBuilder], TrafficBuilder]:
    """Register a builder for specs of ``kind`` (a decorator)."""

    def add(builder: TrafficBuilder) -> TrafficBuilder:
        TRAFFIC_KINDS[kind] = builder
        return builder

    return add


def build_traffic(
    spec: TrafficSpec, gpus: int, per_node: int, seed: int, *, domain_gpus: int | None = None
) -> Traffic:
    """The flows of one traffic spec on ``gpus`` GPUs, ``per_node`` to a node.

    ``domain_gpus`` is the scale-up domain (None: one node, ``per_node``): tensor_parallel and
    same_rail groups are placed in it, and all_reduce_hierarchical splits its groups by it.
    Raises ValueError when the traffic does not fit the cluster (a group size that does not
    divide it, a tensor-parallel group larger than the domain, ...) or its kind is unknown.
    """
    domain = per_node if domain_gpus is None else domain_gpus
    try:
        builder = TRAFFIC_KINDS[spec.kind]
    except KeyError:
        raise ValueError(
            f"unknown traffic kind {spec.kind!r}; known: {', '.join(sorted(TRAFFIC_KINDS))}"
        ) from None
    return builder(spec, ClusterShape(gpus, per_node, domain, seed))


# ---- group placements -----------------------------------------------------------------------
def _group_size(spec: TrafficSpec) -> int:
    assert spec.group_size is not None  # the schema asks for it with sized groups
    return spec.group_size


#: Where a collective's groups sit, by ``TrafficSpec.groups``.
GROUP_PLACEMENTS: dict[str, Callable[[TrafficSpec, ClusterShape], IntArray]] = {
    "data_parallel": lambda spec, at: data_parallel_groups(at.gpus, at.gpus_per_node),
    "tensor_parallel": lambda spec, at: domain_groups(at.gpus, at.domain_gpus, _group_size(spec)),
    "same_rail": lambda spec, at: rail_groups(at.gpus, at.domain_gpus, _group_size(spec)),
    "consecutive": lambda spec, at: consecutive_groups(at.gpus, _group_size(spec)),
}


def placed_groups(spec: TrafficSpec, at: ClusterShape) -> IntArray:
    """The groups a collective spec runs on (rows = groups, columns = ranks)."""
    return GROUP_PLACEMENTS[spec.groups](spec, at)


# ---- collectives ----------------------------------------------------------------------------
@register_traffic("all_reduce_ring")
def _all_reduce_ring(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return ring_all_reduce(placed_groups(spec, at), spec.size_bytes)


@register_traffic("all_reduce_tree")
def _all_reduce_tree(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return tree_all_reduce(placed_groups(spec, at), spec.size_bytes)


@register_traffic("all_reduce_hierarchical")
def _all_reduce_hierarchical(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return hierarchical_all_reduce(placed_groups(spec, at), spec.size_bytes, at.domain_gpus)


@register_traffic("reduce_scatter")
def _reduce_scatter(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return ring_reduce_scatter(placed_groups(spec, at), spec.size_bytes)


@register_traffic("all_gather")
def _all_gather(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return ring_all_gather(placed_groups(spec, at), spec.size_bytes)


@register_traffic("all_to_all")
def _all_to_all(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return all_to_all(placed_groups(spec, at), spec.size_bytes)


# ---- patterns over the whole cluster ------------------------------------------------------------
@register_traffic("uniform_all_to_all")
def _uniform_all_to_all(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return uniform_all_to_all(at.gpus, spec.size_bytes)


@register_traffic("random_permutation")
def _random_permutation(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return random_permutation(at.gpus, spec.size_bytes, at.seed)


@register_traffic("incast")
def _incast(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    return incast(at.gpus, min(spec.fan_in, at.gpus - 1), spec.size_bytes, at.seed)


@register_traffic("shift")
def _shift(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    """GPU g sends to g + group_size (mod gpus)."""
    distance = _group_size(spec)
    if distance % at.gpus == 0:
        raise ValueError(f"shift by {distance} sends every GPU to itself ({at.gpus} GPUs)")
    src = np.arange(at.gpus)
    return point_to_point(src, (src + distance) % at.gpus, spec.size_bytes)


@register_traffic("point_to_point")
def _point_to_point(spec: TrafficSpec, at: ClusterShape) -> Traffic:
    """Pipeline stages: every GPU of a stage sends to its peer in the next stage."""
    src, dst = pipeline_pairs(at.gpus, at.gpus_per_node, spec.pipeline_stages)
    return point_to_point(src, dst, spec.size_bytes)

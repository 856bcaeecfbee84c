"""One plane of a folded Clos as the simulator's graph.

Wiring (as the sizing model and the validator define it): GPU g sits on leaf g // d1. Two
tiers: every leaf reaches every spine with q1 parallel links. Three tiers: leaf l is in pod
l // L and reaches the pod's A spines (pod * A + j) with q1 links each; spine (pod, j) reaches the
C cores of group j (j * C + c) with q2 links each. The rail families build on it
(``planner.families.rail.fabric``).
"""

from __future__ import annotations

import numpy as np

from planner.design import Design
from planner.families.clos.bound import clos_bound
from planner.sim.fabric import Fabric, IntArray, classes_by_speed
from planner.sim.routing_strategies import UP_DOWN


def clos_fabric(design: Design) -> Fabric:
    """The fabric graph of one plane of a Clos design: tiered up-down wiring, leaf first.

    Routed up-down (valley-free), with the folded Clos's cut bound (``clos_bound``). Pods of
    several generations (``Design.block_speed_gbps``, three tiers) run their GPU, leaf and spine
    links at their own rate, and their GPUs are judged at it (``Fabric.gpu_speed_gbps``).
    """
    tiers = design.tiers
    counts = [design.gpus] + [t.switches for t in tiers]
    offsets = tuple(int(x) for x in np.concatenate([[0], np.cumsum(counts)]))
    lowers: list[IntArray] = []
    uppers: list[IntArray] = []
    classes: list[IntArray] = []

    def add(lower: IntArray, upper: IntArray, cls: int) -> None:
        lowers.append(lower.astype(np.int64))
        uppers.append(upper.astype(np.int64))
        classes.append(np.full(lower.size, cls, dtype=np.int64))

    leaf = tiers[0]
    gpu = np.arange(design.gpus)
    add(gpu, offsets[1] + gpu // leaf.downlinks, 0)
    if len(tiers) >= 2:
        n1, f1, q1 = leaf.switches, leaf.fanout, leaf.parallel_links
        leaves = np.repeat(np.arange(n1), f1 * q1)
        j = np.tile(np.repeat(np.arange(f1), q1), n1)
        if len(tiers) == 2:
            add(offsets[1] + leaves, offsets[2] + j, 1)
        else:
            pod = leaves // design.leaves_per_pod
            add(offsets[1] + leaves, offsets[2] + pod * f1 + j, 1)
            spine = tiers[1]
            n2, f2, q2 = spine.switches, spine.fanout, spine.parallel_links
            aggs = np.repeat(np.arange(n2), f2 * q2)
            group = aggs % f1
            c = np.tile(np.repeat(np.arange(f2), q2), n2)
            add(offsets[2] + aggs, offsets[3] + group * f2 + c, 2)
    lower = np.concatenate(lowers)
    upper = np.concatenate(uppers)
    design_class = np.concatenate(classes)
    link_class, class_speed, gpu_speed = design_class, None, None
    if len(set(design.block_speed_gbps)) > 1:  # pods of several generations
        pod_of = _pod_of_node(design, offsets)
        rate = np.asarray(design.block_speed_gbps, dtype=np.float64)
        # A link runs at its pod's rate: GPU, leaf and spine links (a core port takes a spine
        # link at the slower end's rate, the pod's: no pod is faster than the core).
        link_class, class_speed = classes_by_speed(design_class, rate[pod_of[lower]])
        gpu_speed = rate[pod_of[offsets[1] + gpu // leaf.downlinks]]
    return Fabric(
        gpus=design.gpus,
        planes=design.planes,
        link_speed_gbps=float(design.link_speed_gbps),
        tier_offsets=offsets,
        lower=lower,
        upper=upper,
        link_class=link_class,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=("gpu",) + tuple(t.role for t in tiers),
        strategy=UP_DOWN,
        bound=clos_bound,
        class_speed_gbps=class_speed,
        design_class=None if class_speed is None else design_class,
        gpu_speed_gbps=gpu_speed,
    )


def _pod_of_node(design: Design, offsets: tuple[int, ...]) -> IntArray:
    """The pod of every GPU, leaf and spine node (cores: -1), for a three-tier design."""
    leaf, spine = design.tiers[0], design.tiers[1]
    gpu = np.arange(design.gpus)
    leaves = np.arange(leaf.switches)
    spines = np.arange(spine.switches)
    pod = np.full(offsets[-1], -1, dtype=np.int64)
    pod[gpu] = (gpu // leaf.downlinks) // design.leaves_per_pod
    pod[offsets[1] + leaves] = leaves // design.leaves_per_pod
    pod[offsets[2] + spines] = spines // leaf.fanout
    return pod

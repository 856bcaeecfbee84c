"""One plane of a k-ary n-cube (torus) as the simulator's graph, routed by dimension order.

Used by the switch torus (``planner.families.torus``) and, with each chip its own router, by
the TPU-style pods (``planner.families.ocs_torus``).
"""

from __future__ import annotations

import math

import numpy as np

from planner.families.torus.bound import torus_bound
from planner.families.torus.routing import DIMENSION_ORDER
from planner.sim.fabric import Fabric, NodeKind, RoutingStrategy


def torus_links_per_plane(dims: tuple[int, ...], parallel_links: int) -> int:
    """Torus (switch-to-switch) physical links of one plane of ``torus_fabric``.

    links = q * sum_d  { N if k_d >= 3;  N / 2 if k_d == 2;  0 if k_d == 1 },   N = prod(dims)
    """
    n = math.prod(dims)
    return parallel_links * sum(n if k >= 3 else n // 2 if k == 2 else 0 for k in dims)


def torus_fabric(
    gpus: int,
    planes: int,
    dims: tuple[int, ...],
    gpus_per_switch: int,
    parallel_links: int,
    link_speed_gbps: float,
    host_speed_gbps: float | None = None,
    roles: tuple[str, str] = ("gpu", "switch"),
    *,
    switch_kind: NodeKind = NodeKind.SWITCH,
    strategy: RoutingStrategy = DIMENSION_ORDER,
) -> Fabric:
    """One plane of a k-ary n-cube (torus) of switches, each with its GPUs, routed by DOR.

    Nodes: GPUs ``0 .. gpus-1``, then N = prod(dims) switches; switch ``gpus + r`` has the
    mixed-radix coordinates of r, dimension 0 fastest (``Fabric.coords``).

    Links, in this order (physical link g is GPU g's NIC link):

    * class 0, one per GPU: GPU g -> switch g // gpus_per_switch, at ``host_speed_gbps``
      (default ``link_speed_gbps``). The last switches hold fewer GPUs (or none) when ``gpus``
      does not fill them.
    * class 1, torus links at ``link_speed_gbps``, dimension by dimension: along a dimension of
      size k, every ring (the switches that differ only in that coordinate) is wired
      ``r -> r + 1 mod k`` (lower = r, upper = r + 1), so

        - k >= 3: k links per ring, N links in the dimension (every switch has a + and a -
          neighbour);
        - k == 2: ONE link per ring (its two neighbours coincide), N / 2 links (lower = the
          switch with coordinate 0);
        - k == 1: none;

      each repeated ``parallel_links`` (q) times as separate physical links, so ECMP sees q next
      hops. Links per plane: q * sum_d (N if k_d >= 3, N / 2 if k_d == 2, else 0)
      (``torus_links_per_plane``); a switch's torus degree is 2 q per dimension with k >= 3 and
      q per dimension with k == 2.

    A switchless torus of chips (TPU-style) is ``gpus_per_switch = 1`` with the chip's router as
    the "switch": pass ``switch_kind=NodeKind.ROUTER`` (and e.g. ``roles=("chip", "router")``)
    and the chip's injection bandwidth as ``host_speed_gbps``; routing is the same.

    Raises
    ------
    ValueError
        Empty or non-positive sizes, or more GPUs than the switches hold.
    """
    dims = tuple(int(k) for k in dims)
    if not dims or min(dims) < 1:
        raise ValueError(f"torus dims must be one or more sizes >= 1; got {dims}")
    if gpus_per_switch < 1 or parallel_links < 1 or planes < 1 or gpus < 1:
        raise ValueError("gpus, planes, gpus_per_switch and parallel_links must be >= 1")
    n = math.prod(dims)
    if gpus > n * gpus_per_switch:
        raise ValueError(f"{gpus} GPUs do not fit on {n} switches of {gpus_per_switch} GPUs each")
    gpu = np.arange(gpus, dtype=np.int64)
    r = np.arange(n, dtype=np.int64)
    stride = 1
    lowers, uppers = [gpu], [gpus + gpu // gpus_per_switch]
    for k in dims:
        coord = (r // stride) % k
        ring = r[coord == 0] if k == 2 else r if k >= 3 else r[:0]
        nxt = ring + np.where((ring // stride) % k == k - 1, (1 - k) * stride, stride)
        lowers.append(np.repeat(gpus + ring, parallel_links))
        uppers.append(np.repeat(gpus + nxt, parallel_links))
        stride *= k
    lower = np.concatenate(lowers)
    classes = np.ones(lower.size, dtype=np.int64)
    classes[:gpus] = 0
    host = float(link_speed_gbps if host_speed_gbps is None else host_speed_gbps)
    return Fabric(
        gpus=gpus,
        planes=planes,
        link_speed_gbps=float(link_speed_gbps),
        tier_offsets=(0, gpus, gpus + n),
        lower=lower,
        upper=np.concatenate(uppers),
        link_class=classes,
        alive=np.ones(2 * lower.size, dtype=bool),
        roles=tuple(roles),
        strategy=strategy,
        dims=dims,
        bound=torus_bound,
        class_speed_gbps=(host, float(link_speed_gbps)),
        group_kinds=(NodeKind.GPU, switch_kind),
    )

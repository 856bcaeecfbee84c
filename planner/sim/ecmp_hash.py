"""Per-flow ECMP: every switch hashes a flow's 5-tuple onto one of its equal-cost next hops.

Each flow carries a 5-tuple (source GPU, destination GPU, UDP source port from its flow id,
RoCEv2 destination port 4791, protocol 17). Every switch hashes the tuple with its own salt and
the run's seed (a 64-bit finaliser, as switch ASICs do with CRC variants) and takes the next hop
at index hash mod (number of equal-cost next hops). Collisions are the point: two flows can land
on one link while another stays empty.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from planner.sim.ecmp_index import known_picks
from planner.sim.fabric import IntArray
from planner.sim.route_walk import Walk, check_next_hops

#: RoCEv2 UDP destination port, and the first ephemeral source port.
ROCE_PORT = 4791
SPORT_BASE = 49_152
SPORT_RANGE = 16_384
UDP = 17


def fmix64(x: npt.NDArray[np.uint64]) -> npt.NDArray[np.uint64]:
    """The 64-bit finaliser of MurmurHash3: a fast, well-mixing hash of unsigned integers."""
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xFF51AFD7ED558CCD)
    x = x ^ (x >> np.uint64(33))
    x = x * np.uint64(0xC4CEB9FE1A85EC53)
    return x ^ (x >> np.uint64(33))


def flow_keys(src: IntArray, dst: IntArray, flow_id: IntArray, seed: int) -> npt.NDArray[np.uint64]:
    """Hash of each flow's 5-tuple and the run's seed."""
    sport = SPORT_BASE + (flow_id % SPORT_RANGE)
    with np.errstate(over="ignore"):
        k = fmix64(
            src.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) + np.uint64(seed & 0xFFFFFFFF)
        )
        k = fmix64(k ^ (dst.astype(np.uint64) << np.uint64(20)))
        k = fmix64(k ^ (sport.astype(np.uint64) << np.uint64(16)) ^ np.uint64(ROCE_PORT << 8 | UDP))
    return k


def ecmp_paths(
    walk: Walk,
    flows: IntArray,
    cur: IntArray,
    dest: IntArray,
    keys: npt.NDArray[np.uint64],
    seed: int,
) -> tuple[IntArray, IntArray]:
    """Walk every flow hop by hop, each switch hashing the flow onto one equal-cost next hop.

    Hops whose next hops the switch alone decides (``planner.sim.ecmp_index``) are picked from
    the index; the others list their candidates. Both give the same link.
    """
    rows, cols = [], []
    cur = cur.copy()
    left = np.arange(flows.size)
    dst_of = walk.fabric.dst
    first = walk.fabric.first_switch
    index = walk.ecmp_index()
    salt_base = np.uint64((seed * 0x632BE59BD9B4E019) & 0xFFFFFFFFFFFFFFFF)
    while left.size:
        walk.check.check()
        node, dest_leaf = cur[left], dest[left]
        with np.errstate(over="ignore"):
            salt = fmix64(node.astype(np.uint64) + salt_base)
            hashes = fmix64(keys[left] ^ salt)
        link = np.empty(left.size, dtype=np.int64)
        listed = np.ones(left.size, dtype=bool)
        if index is not None:
            here = walk.dist[node - first, walk.col_of_leaf[dest_leaf]].astype(np.int64)
            known, count, picked = known_picks(index, here, node, dest_leaf, hashes)
            check_next_hops(walk, count[known], node[known], dest_leaf[known])
            link[known] = picked[known]
            listed = ~known
        if listed.any():
            inverse, ptr, links = walk.candidates(node[listed], dest_leaf[listed])
            count = ptr[inverse + 1] - ptr[inverse]
            check_next_hops(walk, count, node[listed], dest_leaf[listed])
            with np.errstate(over="ignore"):
                choice = (hashes[listed] % count.astype(np.uint64)).astype(np.int64)
            link[listed] = links[ptr[inverse] + choice]
        rows.append(link)
        cols.append(flows[left])
        cur[left] = dst_of[link]
        left = left[cur[left] != dest[left]]
    return np.concatenate(rows), np.concatenate(cols)

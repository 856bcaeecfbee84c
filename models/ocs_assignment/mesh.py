r"""OCS circuit assignment: the uniform mesh of identical blocks, placed whole (numpy, no search).

A direct-connect layer has n identical blocks with A spines each; spine g of every block is cabled
to its own D devices (g D .. g D + D - 1) with P ports per block on each, so every block has
U = A D P uplinks. The uniform mesh gives every pair of blocks floor or ceil of U / (n - 1)
circuits. Here it is built together with its placement, from a decomposition of the complete
graph K_n into *units* that use the same number w of ports at every block:

    n even: the n - 1 perfect matchings of the circle method (w = 1): vertex n - 1 fixed, the
            others on a circle of n - 1; matching k joins n - 1 to k and k - i to k + i
            (mod n - 1) for i = 1 .. n/2 - 1;
    n odd:  the (n - 1) / 2 Hamiltonian cycles of Walecki's construction (w = 2): vertex
            n - 1 = 2m fixed; cycle k runs 2m, k, k + 1, k - 1, k + 2, k - 2, ..., k + m (mod 2m),
            2m. Needs P even (a device takes whole cycles).

Every pair of blocks lies in exactly one unit. With q = floor(U / (n - 1)) and the remainder
h = U - q (n - 1), unit k is taken c_k = q + [k < h / w] times, so a pair gets q or q + 1 circuits
and a block uses q (n - 1) + w floor(h / w) of its uplinks (all of them but for n odd and h odd,
which P even rules out: U is then even, and so is h).

Placement by dealing: the copies are laid out unit by unit (the c_k copies of unit k one after
the other), and copy t goes to spine t mod A, where it is the (t div A)-th unit of that spine;
a spine's units fill its devices P / w at a time (device g D + floor((t div A) / (P / w))).

    ports   a device holds at most P / w units, each w ports per block: at most P per block;
            a spine gets ceil(T / A) <= D P / w of the T <= U / w copies, so it has devices for
            all of them.
    spread  a pair's circuits are the c_k consecutive copies of its one unit, dealt to
            consecutive spines: every pair's circuits differ by at most one between two spines
            (the even spread ``models.ocs_spread`` looks for), whatever n, A, D and P are.

So the mesh is realised exactly and evenly in O(circuits), for layers where the generic route
(spread, then the 2-factor construction per spine) is slow or finds no even spread.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

#: Columns of a placed mesh: (block a, block b, device, circuits), a < b.
Placed = npt.NDArray[np.int64]


def one_factors(n: int) -> npt.NDArray[np.int64]:
    """The n - 1 perfect matchings of K_n (n even) by the circle method: (n - 1, n / 2, 2), a < b."""
    if n < 2 or n % 2:
        raise ValueError(f"a 1-factorisation needs an even number of vertices, got {n}")
    ring = n - 1
    k = np.arange(ring)[:, None]
    i = np.arange(1, n // 2)[None, :]
    left = np.concatenate([np.full((ring, 1), ring), (k - i) % ring], axis=1)
    right = np.concatenate([k, (k + i) % ring], axis=1)
    return np.stack([np.minimum(left, right), np.maximum(left, right)], axis=2)


def hamiltonian_cycles(n: int) -> npt.NDArray[np.int64]:
    """The (n - 1) / 2 Hamiltonian cycles of K_n (n odd, n >= 3) by Walecki: (.., n, 2), a < b."""
    if n < 3 or n % 2 == 0:
        raise ValueError(f"a Hamiltonian decomposition here needs an odd n >= 3, got {n}")
    m = (n - 1) // 2
    t = np.arange(2 * m)
    step = np.where(t % 2 == 1, (t + 1) // 2, -(t // 2))
    walk = (np.arange(m)[:, None] + step[None, :]) % (2 * m)  # (m, 2m): k, k+1, k-1, ...
    hub = np.full((m, 1), 2 * m)
    tour = np.concatenate([hub, walk, hub], axis=1)  # closed: hub .. hub
    a, b = tour[:, :-1], tour[:, 1:]
    return np.stack([np.minimum(a, b), np.maximum(a, b)], axis=2)


def mesh_units(n: int) -> tuple[npt.NDArray[np.int64], int] | None:
    """The units K_n is decomposed into, (units, pairs, 2), and the ports w each uses per block."""
    if n < 2:
        return None
    if n % 2 == 0:
        return one_factors(n), 1
    return hamiltonian_cycles(n), 2


def unit_copies(n: int, uplinks: int, units: int, width: int) -> npt.NDArray[np.int64]:
    """c_k: copies of each unit, q or q + 1, for a mesh within ``uplinks`` per block."""
    q, h = divmod(uplinks, n - 1)
    return q + (np.arange(units) < h // width).astype(np.int64)


def factor_mesh(blocks: int, spines: int, devices_per_spine: int, ports: int) -> Placed | None:
    """The uniform mesh placed on the devices, every pair spread evenly over the spines.

    Rows (a, b, device, circuits) with a < b, sorted, one per (pair, device) with circuits;
    an empty array for fewer than two blocks. None when the construction does not apply: an odd
    number of blocks with an odd ``ports`` (P) per device. See the module docstring.
    """
    if blocks < 2 or spines < 1 or devices_per_spine < 1 or ports < 1:
        return np.zeros((0, 4), dtype=np.int64)
    found = mesh_units(blocks)
    assert found is not None
    edges, width = found
    if ports % width:
        return None
    per_device = ports // width
    uplinks = spines * devices_per_spine * ports
    copies = unit_copies(blocks, uplinks, len(edges), width)
    unit = np.repeat(np.arange(len(edges)), copies)  # copy t is a copy of unit[t]
    t = np.arange(len(unit))
    device = (t % spines) * devices_per_spine + (t // spines) // per_device
    a = edges[unit, :, 0].ravel()
    b = edges[unit, :, 1].ravel()
    o = np.repeat(device, edges.shape[1])
    devices = spines * devices_per_spine
    key = (a * blocks + b) * devices + o
    keys, counts = np.unique(key, return_counts=True)
    pair, o = np.divmod(keys, devices)
    a, b = np.divmod(pair, blocks)
    return np.stack([a, b, o, counts], axis=1).astype(np.int64)

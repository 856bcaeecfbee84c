r"""Where a dragonfly's switches stand, and how long its cables are (the length rule).

Groups are rows of racks: racks hold ``gpus_per_rack`` GPU positions, ``racks_per_row`` racks a
row, rows ``row_pitch_m`` apart. Group ``G`` takes whole racks from rack ``G r_g`` on,
``r_g = ceil(a p / gpus_per_rack)``, so every group starts on a rack of its own and a group of up
to ``racks_per_row`` racks sits in one row (or two when it straddles a row's end). Switch ``u``
of a group holds positions ``u p .. u p + p - 1`` of the group and stands in the rack of its
middle one; GPU ``e`` is terminal ``e mod p`` of switch ``e // p`` (switches numbered group by
group). A cable inside one rack is ``in_rack_m`` long; between racks it runs
``run_factor (|dx| + |dy|) + slack_m``, rounded up to the centimetre (``models.switch_media``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.dragonfly import structure as st
from models.switch_media import Floor, cable_length_m

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class Lengths:
    """Cable lengths of one plane, in metres: one per GPU link, local link (q = 1), global link."""

    gpu_m: FloatArray
    local_m: FloatArray
    global_m: FloatArray


def min_global_m(floor: Floor) -> float:
    """The shortest a cable between two different racks can be (before rounding up: a bound).

    The neighbouring rack in a row, or the rack across in the next row, whichever is nearer.
    """
    return floor.run_factor * min(floor.rack_width_m, floor.row_pitch_m) + floor.slack_m


def min_longest_global_m(floor: Floor, p: int, a: int, g: int) -> float:
    """A bound below the longest global link: the one joining the first group to the last.

    Group 0's racks end in row ``(r_g - 1) // R`` and group ``g - 1``'s begin in row
    ``(g - 1) r_g // R`` (``r_g`` racks a group, ``R`` racks a row); every pair of groups is
    joined, so some global link crosses at least the rows between them (before rounding up).
    """
    r_g, per_row = racks_per_group(floor, p, a), floor.racks_per_row
    rows = max(0, (g - 1) * r_g // per_row - (r_g - 1) // per_row)
    return floor.run_factor * rows * floor.row_pitch_m + floor.slack_m


def racks_per_group(floor: Floor, p: int, a: int) -> int:
    """Racks a group takes: ceil(a p / gpus_per_rack)."""
    return -(-a * p // floor.gpus_per_rack)


def switch_racks(floor: Floor, p: int, a: int, g: int) -> IntArray:
    """Rack of every switch of a plane, switch ``G a + u`` of group G."""
    r = np.arange(a * g, dtype=np.int64)
    group, u = r // a, r % a
    return group * racks_per_group(floor, p, a) + (u * p + (p - 1) // 2) // floor.gpus_per_rack


def gpu_racks(floor: Floor, p: int, a: int, gpus: int) -> IntArray:
    """Rack of every GPU: its switch's group's racks, at its terminal's position."""
    e = np.arange(gpus, dtype=np.int64)
    group, pos = e // (a * p), e % (a * p)
    return group * racks_per_group(floor, p, a) + pos // floor.gpus_per_rack


def local_pairs(a: int, g: int) -> tuple[IntArray, IntArray]:
    """Both switches (plane numbering) of every local link with q = 1, group by group."""
    u, v = np.triu_indices(a, k=1)
    base = (np.arange(g, dtype=np.int64) * a)[:, None]
    return (base + u[None, :]).ravel().astype(np.int64), (base + v[None, :]).ravel().astype(
        np.int64
    )


def global_pairs(a: int, g: int, m: int, arrangement: str = st.BLOCKS) -> tuple[IntArray, IntArray]:
    """Both switches (plane numbering) of every global link (``structure.global_ends``)."""
    i, si, j, sj = st.global_ends(a, g, m, arrangement)
    return i * a + si, j * a + sj


def lengths(
    floor: Floor, p: int, a: int, g: int, m: int, gpus: int, arrangement: str = st.BLOCKS
) -> Lengths:
    """The cable lengths of one plane (local links once each: a parallel copy is as long)."""
    racks = switch_racks(floor, p, a, g)
    gpu = cable_length_m(floor, gpu_racks(floor, p, a, gpus), racks[np.arange(gpus) // p])
    lu, lv = local_pairs(a, g)
    gu, gv = global_pairs(a, g, m, arrangement)
    return Lengths(
        gpu,
        cable_length_m(floor, racks[lu], racks[lv]),
        cable_length_m(floor, racks[gu], racks[gv]),
    )

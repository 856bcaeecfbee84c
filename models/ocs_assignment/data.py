"""OCS circuit assignment: data.

The index aliases (``Pair``, ``Key``), the problem (``AssignmentProblem``), the outcome
(``Assignment``) and the data helpers (circuit lists, churn, block degrees).

The docstrings here say "module docstring" for the package docstring of ``models.ocs_assignment``,
which holds the formulation, the constructions and the theory in full.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from models.status import Status

#: (i, j) with i < j: a pair of blocks.
Pair = tuple[int, int]
#: (i, j, o): a pair of blocks on one OCS.
Key = tuple[int, int, int]


@dataclass(frozen=True)
class AssignmentProblem:
    """One OCS assignment: cabling, target topology, current state, failures and the goal."""

    blocks: int
    devices: int
    ports: tuple[tuple[int, ...], ...]
    """ports[b][o]: ports of block b cabled to OCS o (fixed)."""
    circuits: tuple[tuple[int, int, int], ...]
    """The logical topology: (i, j, x_ij) with i < j; a pair not listed asks for no circuit."""
    current: tuple[tuple[int, int, int, int], ...] = ()
    """The assignment in service, y0: (i, j, o, y0) with i < j and y0 > 0."""
    failed_devices: frozenset[int] = frozenset()
    failed_blocks: frozenset[int] = frozenset()
    min_churn: bool = False
    """Minimise sum |y - y0| (after realising as many circuits as possible)."""
    best_effort: bool = False
    """Maximise circuits realised instead of requiring all; implied by any failure."""
    keep_surviving: bool = False
    """Never touch a current circuit on a live OCS between live blocks (y >= y0 there);
    infeasible if the target or the cabling no longer allows one of them."""

    @property
    def exact(self) -> bool:
        """Whether every requested circuit must be realised."""
        return not (self.best_effort or self.failed_devices or self.failed_blocks)

    @property
    def requested(self) -> int:
        """Circuits the topology asks for: sum_{i<j} x_ij."""
        return sum(x for _, _, x in self.circuits)

    def live_devices(self) -> tuple[int, ...]:
        """OCS that have not failed."""
        return tuple(o for o in range(self.devices) if o not in self.failed_devices)

    def live_target(self) -> dict[Pair, int]:
        """x_ij > 0 on pairs whose two blocks are live."""
        dead = self.failed_blocks
        return {(i, j): x for i, j, x in self.circuits if x > 0 and i not in dead and j not in dead}

    def is_live(self, i: int, j: int, o: int) -> bool:
        """Whether a circuit i-j through o could exist after the failures."""
        dead = self.failed_blocks
        return o not in self.failed_devices and i not in dead and j not in dead


@dataclass(frozen=True)
class Assignment:
    """Outcome of one solve; counts are circuits."""

    status: Status
    circuits: tuple[tuple[int, int, int, int], ...]
    """(i, j, o, y) with i < j and y > 0, sorted."""
    realised: int
    requested: int
    removed: int
    """sum max(0, y0 - y): current circuits taken down (those on failed devices included)."""
    added: int
    """sum max(0, y - y0): circuits set up."""
    wall_s: float


# --------------------------------------------------------------------------- data helpers


def circuits_from_matrix(x: Sequence[Sequence[int]]) -> tuple[tuple[int, int, int], ...]:
    """(i, j, x_ij) for i < j and x_ij > 0 from a symmetric matrix (its upper triangle)."""
    return tuple((i, j, x[i][j]) for i in range(len(x)) for j in range(i + 1, len(x)) if x[i][j])


def churn(
    old: Iterable[tuple[int, int, int, int]], new: Iterable[tuple[int, int, int, int]]
) -> tuple[int, int]:
    """(removed, added) = (sum max(0, y0 - y), sum max(0, y - y0)) over (i, j, o)."""
    before = np.array(list(old), dtype=np.int64).reshape(-1, 4)
    after = np.array(list(new), dtype=np.int64).reshape(-1, 4)
    rows = np.concatenate([before, after])
    if not len(rows):
        return 0, 0
    keys = key_codes(rows[:, :3])
    sign = np.concatenate([-np.ones(len(before), np.int64), np.ones(len(after), np.int64)])
    _, slot = np.unique(keys, return_inverse=True)
    delta = np.bincount(slot, weights=sign * rows[:, 3]).astype(np.int64)
    return int(-delta[delta < 0].sum()), int(delta[delta > 0].sum())


def key_codes(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """One integer per row of integer columns, equal exactly where the rows are equal."""
    low = keys.min(axis=0)
    span = keys.max(axis=0) - low + 1
    code = np.zeros(len(keys), dtype=np.int64)
    for c in range(keys.shape[1]):
        code = code * span[c] + (keys[:, c] - low[c])
    return code


def _degrees(circuits: Iterable[tuple[int, int, int]]) -> Counter[int]:
    degree: Counter[int] = Counter()
    for i, j, x in circuits:
        degree[i] += x
        degree[j] += x
    return degree

"""The sort-free helpers of spraying routes give exactly what ``np.unique`` gives (issue 11)."""

from __future__ import annotations

import numpy as np
import pytest

from planner.sim.routing import UNREACHABLE, _row_ids, _unique_pairs

SEEDS = list(range(10))


@pytest.mark.parametrize("seed", SEEDS)
def test_unique_pairs_match_np_unique(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(seed)
    if seed % 2:  # the fallback that sorts keys
        monkeypatch.setattr("planner.sim.routing.DENSE_CELLS", 4)
    n, space = int(rng.integers(1, 400)), int(rng.integers(1, 900))
    major = rng.integers(0, int(rng.integers(1, 200)), n)
    minor = rng.integers(0, space, n)
    uniq, inverse = np.unique(major * space + minor, return_inverse=True)
    got_major, got_minor, got_inverse = _unique_pairs(major, minor, space)
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
    assert _row_ids(block).tolist() == inverse.ravel().tolist()

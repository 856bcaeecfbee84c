"""Blocks installed after each phase of a life, per generation: added, and refreshed oldest first."""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner.schema.life import Life


@dataclass(frozen=True)
class Inventory:
    """Blocks installed after each phase, per generation (oldest first), and what changed."""

    by_generation: tuple[tuple[int, ...], ...]
    added: tuple[int, ...]
    refreshed: tuple[int, ...]

    def blocks(self, j: int) -> int:
        """Blocks installed after phase j."""
        return sum(self.by_generation[j])

    def newest(self, j: int) -> int:
        """Rank of the newest generation installed after phase j."""
        counts = self.by_generation[j]
        return max(g for g, n in enumerate(counts) if n > 0)


def inventory_of(life: Life, block_gpus: int, installed_blocks: int = 0) -> Inventory:
    """Whole blocks per phase: added in the phase's generation, refreshed oldest first.

    ``installed_blocks`` stand before the first phase, of the first generation.
    """
    rank = {g.name: i for i, g in enumerate(life.generations)}
    counts = [0] * len(life.generations)
    counts[0] = installed_blocks
    rows, added, refreshed = [], [], []
    for p in life.phases:
        blocks = math.ceil(p.gpus / block_gpus)
        new = blocks - sum(counts)
        renew = math.ceil(p.refresh_gpus / block_gpus)
        left = renew
        for g in range(len(counts)):
            if g == rank[p.generation] or left == 0:
                continue
            take = min(counts[g], left)
            counts[g] -= take
            left -= take
        counts[rank[p.generation]] += new + (renew - left)
        rows.append(tuple(counts))
        added.append(new)
        refreshed.append(renew - left)
    return Inventory(tuple(rows), tuple(added), tuple(refreshed))

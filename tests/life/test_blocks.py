"""Blocks per phase (``planner.life.blocks.inventory_of``): added, refreshed oldest first."""

from __future__ import annotations

import pytest

from planner.life.blocks import inventory_of
from planner.schema.life import Life


def life(phases: list[dict[str, object]]) -> Life:
    return Life.model_validate(
        {
            "horizon_years": 9,
            "gpu_hour_usd": 2.0,
            "generations": [
                {"name": "a", "nic_gbps": 200},
                {"name": "b", "nic_gbps": 400},
                {"name": "c", "nic_gbps": 800},
            ],
            "phases": phases,
        }
    )


@pytest.mark.parametrize(
    ("phases", "rows", "added", "refreshed"),
    [
        # Two blocks of a, then b adds two and replaces one a.
        (
            [
                {"at_years": 0, "gpus": 64, "generation": "a"},
                {"at_years": 1, "gpus": 128, "generation": "b", "refresh_gpus": 32},
            ],
            [(2, 0, 0), (1, 3, 0)],
            [2, 2],
            [0, 1],
        ),
        # c replaces the a first, then b: the oldest go first.
        (
            [
                {"at_years": 0, "gpus": 64, "generation": "a"},
                {"at_years": 1, "gpus": 128, "generation": "b"},
                {"at_years": 2, "gpus": 128, "generation": "c", "refresh_gpus": 96},
            ],
            [(2, 0, 0), (2, 2, 0), (0, 1, 3)],
            [2, 2, 0],
            [0, 0, 3],
        ),
        # A partial block is a whole block (GPUs arrive a block at a time).
        ([{"at_years": 0, "gpus": 40, "generation": "a"}], [(2, 0, 0)], [2], [0]),
    ],
)
def test_blocks_are_added_and_refreshed_oldest_first(
    phases: list[dict[str, object]],
    rows: list[tuple[int, ...]],
    added: list[int],
    refreshed: list[int],
) -> None:
    inv = inventory_of(life(phases), block_gpus=32)
    assert list(inv.by_generation) == rows
    assert list(inv.added) == added
    assert list(inv.refreshed) == refreshed
    assert [inv.blocks(j) for j in range(len(rows))] == [sum(r) for r in rows]


def test_standing_blocks_are_of_the_first_generation() -> None:
    inv = inventory_of(life([{"at_years": 0, "gpus": 128, "generation": "b"}]), 32, 1)
    assert inv.by_generation == ((1, 3, 0),)
    assert inv.added == (3,)

"""The instance's [life] section: a valid life loads; each broken rule names its field."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.errors import InputError
from planner.loading import load_instance

#: A 4,096-GPU cluster built in two phases of two generations.
GOOD = """\
name = "life"

[cluster]
gpus = 4096
nic_gbps = 400

[life]
horizon_years = 6
gpu_hour_usd = 2.0
generations = [{ name = "g1", nic_gbps = 200 }, { name = "g2", nic_gbps = 400 }]
phases = [
  { at_years = 0, gpus = 1024, generation = "g1" },
  { at_years = 2, gpus = 4096, generation = "g2", refresh_gpus = 512, price_factor = 0.8 },
]
"""


def load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "life.toml"
    path.write_text(text)
    return load_instance(path)


def test_a_life_loads_with_its_defaults(tmp_path: Path) -> None:
    inst = load(tmp_path, GOOD)
    life = inst.life  # type: ignore[attr-defined]
    assert [p.gpus for p in life.phases] == [1024, 4096]
    assert life.discount_rate == 0.05
    assert life.phases[1].price_factor == 0.8


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ('gpus = 4096, generation = "g2"', 'gpus = 2048, generation = "g2"', "cluster.gpus"),
        ('generation = "g2", refresh', 'generation = "g3", refresh', "not one of"),
        ("at_years = 2", "at_years = 0", "time order"),
        ("gpus = 1024", "gpus = 8192", "never shrinks"),
        ("refresh_gpus = 512", "refresh_gpus = 2048", "only 1024 GPUs of generations older"),
        ("horizon_years = 6", "horizon_years = 1", "horizon"),
        ("at_years = 0,", "at_years = 0.5,", "count from its first phase"),
        ('name = "g1", nic_gbps = 200', 'name = "g1", nic_gbps = 800', "never slower"),
        ('name = "g2"', 'name = "g1"', "names must differ"),
        ("gpu_hour_usd = 2.0", "gpu_hour_usd = -1", "gpu_hour_usd"),
    ],
)
def test_a_broken_life_names_its_fault(tmp_path: Path, old: str, new: str, expected: str) -> None:
    assert old in GOOD
    with pytest.raises(InputError, match=expected):
        load(tmp_path, GOOD.replace(old, new, 1))


def test_blocks_added_are_never_older(tmp_path: Path) -> None:
    text = GOOD.replace('generation = "g1" }', 'generation = "g2" }').replace(
        'gpus = 4096, generation = "g2"', 'gpus = 4096, generation = "g1"'
    )
    with pytest.raises(InputError, match="never older"):
        load(tmp_path, text)


def test_a_refresh_replaces_only_older_generations(tmp_path: Path) -> None:
    """Refreshing within the newest generation would replace nothing: refused."""
    text = GOOD.replace(
        '{ name = "g2", nic_gbps = 400 }',
        '{ name = "g2", nic_gbps = 400 }, { name = "g3", nic_gbps = 400 }',
    )
    text = text.replace('generation = "g1" }', 'generation = "g2" }')
    with pytest.raises(InputError, match="only 0 GPUs of generations older"):
        load(tmp_path, text)

"""A design.json too large to check is refused while it is read, before any array is built.

Issue 32: a dragonfly design.json whose wiring names a million global links per group pair
(78 million links, where its 26 switches of 64 ports hold 312) reached an array of one entry
per global link in ``validate`` and ``simulate`` (a MemoryError under 2 GiB). The wiring's
link counts are now compared with the design's in closed form first, and a design stating more
links per plane than ``MAX_LINKS_PER_PLANE`` is refused naming its link classes and the limit.
"""

from __future__ import annotations

import copy
import tracemalloc
from typing import Any

import pytest

from planner.design_file import MAX_LINKS_PER_PLANE, DesignFileError
from planner.families import read_design

#: Most bytes reading the hostile design may take at its peak (the design itself is small).
PEAK_BYTES = 64 * 2**20


@pytest.fixture(scope="module")
def dragonfly() -> dict[str, Any]:
    from tests.hostile.family_designs import plan_family_design

    return plan_family_design("dragonfly")


def _refusal(data: dict[str, Any]) -> tuple[str, int]:
    tracemalloc.start()
    try:
        with pytest.raises(DesignFileError) as err:
            read_design(data)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return str(err.value), peak


@pytest.mark.slow
@pytest.mark.parametrize(
    ("param", "value", "words"),
    [
        ("global_links_per_pair", 1_000_000, ("wiring", "global links")),
        ("local_links_per_pair", 100_000, ("wiring", "local links")),
    ],
)
def test_a_wiring_of_too_many_links_is_refused_before_building_them(
    dragonfly: dict[str, Any], param: str, value: int, words: tuple[str, ...]
) -> None:
    data = copy.deepcopy(dragonfly)
    data["wiring"][param] = value
    message, peak = _refusal(data)
    for word in words:
        assert word in message
    assert peak < PEAK_BYTES


@pytest.mark.slow
def test_a_design_of_too_many_links_is_refused_naming_the_limit(
    dragonfly: dict[str, Any],
) -> None:
    data = copy.deepcopy(dragonfly)
    data["link_classes"][2]["links"] = MAX_LINKS_PER_PLANE
    message, _ = _refusal(data)
    assert "link_classes" in message
    assert f"{MAX_LINKS_PER_PLANE:,}" in message


@pytest.mark.slow
def test_the_real_design_still_reads(dragonfly: dict[str, Any]) -> None:
    design = read_design(dragonfly)
    assert design.family == "dragonfly"

"""Hostile cases of issue 32's category: time limits that bound the whole command, and output folders with long names."""

from __future__ import annotations

from tests.hostile.generator import Case


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    return []

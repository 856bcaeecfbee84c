"""Hostile cases of issue 32's category: goodput mechanisms and reliability inputs at their edges."""

from __future__ import annotations

from tests.hostile.generator import Case


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    return []

"""Hostile cases of issue 32's category: figures that must be finite and true: overflow, non-finite results, list items, strict numbers, memory, one-block compare."""

from __future__ import annotations

from tests.hostile.generator import Case


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    return []

"""A violation: one rule a design breaks, found by the validator or a family's own checks.

Defined apart from the validator (``planner.validation``, which names it too) so that the roles a
family plays (``planner.family_roles``) can name what their checks return without importing
the validator that runs them.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Violation:
    """One broken rule: which check, and what is wrong in words."""

    check: str
    message: str

    def __str__(self) -> str:
        return f"{self.check}: {self.message}"

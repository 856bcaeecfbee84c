"""The one status vocabulary of every formulation, the API, the reports and the CLI.

Each solver adapter maps its own codes to it in one table (CP-SAT: ``models.cp_sat``).
"""

from __future__ import annotations

from enum import StrEnum


class Status(StrEnum):
    """Outcome of a solve."""

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    INFEASIBLE = "infeasible"
    TIME_LIMIT = "time_limit"
    ERROR = "error"

    @property
    def has_solution(self) -> bool:
        """Whether a design comes with this status."""
        return self in (Status.OPTIMAL, Status.FEASIBLE)

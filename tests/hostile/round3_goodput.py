"""Hostile cases of issue 32's category: goodput mechanisms and reliability inputs at their edges."""

from __future__ import annotations

from tests.hostile.generator import INSTANCES, Case

#: Exits of a run that ends with an answer: a design (meeting or failing its verification), or none.
ANSWER = frozenset({0, 1, 4})


def _sets(*items: str) -> tuple[str, ...]:
    return tuple(a for i in items for a in ("--set", i))


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    small = (INSTANCES / "small-256.toml").read_bytes()
    solve = ("solve", "instance.toml", "-o", "out", "--time-limit", "10", "-q")
    return [
        # Daly's share overflowed (e^{R/M} with R = 600,000 s and M = 86 s): internal error.
        Case(
            "solve/round3/goodput-long-restart-many-planned-stops",
            "solve",
            "reliability at its limits",
            solve
            + _sets(
                "reliability.restart_minutes=10000",
                "reliability.planned_interruptions_per_day=1000",
            ),
            {"instance.toml": small},
            exit=ANSWER,
            slow=True,  # plans and simulates small-256 for real (2 s)
        ),
        Case(
            "solve/round3/goodput-every-limit-at-once",
            "solve",
            "reliability at its limits",
            solve
            + _sets(
                "reliability.restart_minutes=10000",
                "reliability.planned_interruptions_per_day=1000",
                "reliability.checkpoint_write_s=100000",
                "reliability.checkpoint_interval_minutes=1000000",
                "reliability.monte_carlo_trials=3",
            ),
            {"instance.toml": small},
            exit=ANSWER,
            slow=True,  # plans and simulates small-256 for real (2 s)
        ),
        # A free checkpoint (δ = 0): Daly's interval is 0 and the Monte Carlo divided by τ + δ.
        Case(
            "solve/round3/goodput-free-checkpoint",
            "solve",
            "reliability at its limits",
            solve + _sets("reliability.checkpoint_write_s=0"),
            {"instance.toml": small},
            exit=ANSWER,
            slow=True,  # plans and simulates small-256 for real (2 s)
        ),
        # Ten-year months drawn 100,000 times: the Monte Carlo must stop at the time limit.
        Case(
            "solve/round3/goodput-monte-carlo-past-the-time-limit",
            "solve",
            "reliability time limit",
            ("solve", "instance.toml", "-o", "out", "--time-limit", "5", "-q")
            + _sets("reliability.monte_carlo_days=3650", "reliability.monte_carlo_trials=100000"),
            {"instance.toml": small},
            exit=ANSWER,
            slow=True,
        ),
    ]

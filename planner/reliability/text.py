"""One-line summaries of a design's failures and of the options walk, for the CLI and report.md."""

from __future__ import annotations

import math
from typing import Any

from planner.reliability import Assessment
from planner.reliability.options import OptionSearch


def failure_lines(a: Assessment) -> list[str]:
    """Interruptions a day by origin, the checkpoint interval and goodput (with its Monte Carlo)."""
    g = a.closed
    by = g.interruptions_per_day
    every = "never" if math.isinf(g.mtbi_hours) else f"one every {g.mtbi_hours:,.2f} h"
    lines = [
        f"failures: {g.network_interruptions_per_day:.3g} network interruptions a day "
        f"(+ scale-up {by['scale_up']:.3g}, outside the network {by['outside']:.3g}, planned "
        f"{by['planned']:.3g}: {g.total_interruptions_per_day:.3g} in all, {every})",
    ]
    interval = (
        "no checkpoint needed"
        if math.isinf(g.checkpoint_interval_s)
        else f"checkpoint every {g.checkpoint_interval_s / 60:,.1f} min"
    )
    mc = a.monte_carlo
    spread = "" if mc is None or not math.isfinite(mc.goodput_ci95) else f" ± {mc.goodput_ci95:.2%}"
    sampled = (
        ""
        if mc is None
        else f"; Monte Carlo {mc.goodput_fraction:.2%}{spread} over "
        f"{mc.trials:,} trial{'' if mc.trials == 1 else 's'} of {mc.days:g} days"
    )
    lines.append(
        f"goodput: {g.goodput_fraction:.2%} of GPU time trains ({interval}: "
        f"{g.checkpoint_efficiency:.2%} after restarts and checkpoints; degraded parts leave "
        f"{g.degraded_speed:.2%} of the speed){sampled}"
    )
    return lines + list(a.notes)


def options_lines(search: OptionSearch[Any]) -> list[str]:
    """The walk's outcome and one line per option."""
    lines = [search.message]
    for e in search.evaluated:
        if e.assessment is None or e.total_usd is None:
            lines.append(f"{e.option.label}: {e.note}")
            continue
        lines.append(
            f"{e.option.label}: network ${e.network_usd:,.0f} + failures "
            f"${e.failure_value_usd:,.0f} = ${e.total_usd:,.0f}; "
            f"{e.assessment.closed.network_interruptions_per_day:.3g} network interruptions a "
            f"day" + (f" ({e.note})" if e.note else "")
        )
    return lines

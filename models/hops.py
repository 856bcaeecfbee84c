"""Switch hops on the longest path: the one formula every part of the planner uses."""

from __future__ import annotations


def hops(tiers: int, ocs_tiers: int = 0) -> int:
    """Switches on the longest path of a folded Clos.

    The path goes up every tier and down again, 2T - 1 switches, less one for every layer of
    optical circuit switches (mirrors, not hops). The model, the design, the reports and the
    explanations call this; the validator keeps its own recomputation on purpose.
    """
    return 2 * tiers - 1 - ocs_tiers

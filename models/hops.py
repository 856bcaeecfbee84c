"""Switch hops on the longest path: the one formula every part of the planner uses."""

from __future__ import annotations


def hops(tiers: int, ocs_tiers: int = 0, transit_blocks: int = 0) -> int:
    """Switches on the longest path of a folded Clos.

    The path goes up every tier and down again, 2T - 1 switches, less one for every layer of
    optical circuit switches (mirrors, not hops). Between blocks joined by an OCS layer, a path
    through a transit block turns at that block's top packet tier: one more switch per transit
    block. The model, the design, the reports and the explanations call this; the validator
    keeps its own recomputation on purpose.
    """
    return 2 * tiers - 1 - ocs_tiers + transit_blocks


def tier_crossings(tiers: int, level: int, transit_blocks: int = 0) -> int:
    """Times the longest path crosses a switch of tier ``level`` (1 = leaf .. ``tiers``).

    Once at the top, twice below it; a transit block (an OCS top tier) adds one crossing of its
    top packet tier and one of the OCS layer.
    """
    base = 1 if level == tiers else 2
    return base + (transit_blocks if level >= tiers - 1 else 0)


def class_crossings(tiers: int, index: int, transit_blocks: int = 0) -> int:
    """Times the longest path crosses a link of class ``index``.

    Class 0 joins GPUs to leaves, class t tier t to t + 1. Twice, and twice more per transit
    block for the links into the top tier.
    """
    return 2 + (2 * transit_blocks if index == tiers - 1 else 0)

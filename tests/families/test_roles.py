"""Which roles each family plays (``planner.family_roles``), and no role half played.

``Family`` is what every family must say; the optional roles are taken on by defining their
methods and found with ``isinstance``. A family that defines some of a role's methods but not
all would silently lose the role (its tables would vanish from the reports, say): the second
test refuses that for every registered family.
"""

from __future__ import annotations

import pytest

from planner.families import FAMILIES
from planner.family_roles import (
    ClosModelHooks,
    ClosShapes,
    Family,
    NeedsSolvers,
    PostSolves,
    Predicts,
    SizesItself,
    Tables,
)
from planner.sim.fabric import BuildsFabric

OPTIONAL = {
    "SizesItself": SizesItself,
    "ClosModelHooks": ClosModelHooks,
    "ClosShapes": ClosShapes,
    "NeedsSolvers": NeedsSolvers,
    "PostSolves": PostSolves,
    "Predicts": Predicts,
    "Tables": Tables,
}
#: The optional roles each family that ships plays.
EXPECTED = {
    "clos": {"ClosModelHooks", "ClosShapes"},
    "ocs_direct": {
        "ClosModelHooks",
        "ClosShapes",
        "NeedsSolvers",
        "PostSolves",
        "Predicts",
        "Tables",
    },
    "ocs_torus": {"SizesItself", "NeedsSolvers", "Tables"},
    "torus": {"SizesItself", "Predicts", "Tables"},
    "rail_optimized": {"SizesItself", "ClosModelHooks", "Tables"},
    "rail_only": {"SizesItself", "ClosModelHooks", "Tables"},
    "dragonfly": {"SizesItself", "Tables"},
}


def test_every_family_that_ships_is_listed() -> None:
    assert set(EXPECTED) == set(FAMILIES)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_the_family_plays_its_roles(name: str) -> None:
    family = FAMILIES[name]
    assert isinstance(family, BuildsFabric)
    for member in ("name", "wiring_kind", "label", "roles", "read_wiring"):
        assert hasattr(family, member), member
    played = {role for role, protocol in OPTIONAL.items() if isinstance(family, protocol)}
    assert played == EXPECTED[name]


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_a_family_has_one_sizing_entry_point(name: str) -> None:
    family = FAMILIES[name]
    assert isinstance(family, SizesItself) != isinstance(family, ClosShapes)


@pytest.mark.parametrize("name", sorted(FAMILIES))
@pytest.mark.parametrize("role", ["ClosModelHooks", "PostSolves", "Predicts", "Tables"])
def test_no_role_is_half_played(name: str, role: str) -> None:
    family, protocol = FAMILIES[name], OPTIONAL[role]
    members = {n for n in vars(protocol) if not n.startswith("_")}
    defined = {n for n in members if hasattr(family, n)}
    assert defined in (set(), members), f"{name} defines {sorted(defined)} of {role}"


def test_family_is_not_every_role() -> None:
    """The core protocol asks nothing optional: a family needs none of those methods."""
    optional = set().union(
        *({n for n in vars(p) if not n.startswith("_")} for p in OPTIONAL.values())
    )
    core = {n for klass in Family.__mro__ for n in vars(klass) if not n.startswith("_")}
    assert not optional & core

"""Every constraint family of the switch-torus model binds (Calliope style).

For each family in ``models.torus_fabric.CONSTRAINTS`` a small problem where leaving the family
out (``TorusProblem.leave_out``) changes the outcome: the optimum drops, or an infeasible problem
becomes feasible; and the torus found without the family breaks the rule the family states,
checked on the design by the rules written here from the module docstring (not by the model's
functions). ``tests/models/test_torus_fabric.py`` shows the same against a brute force (slow
tier); these cases run the model itself.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import cache
from typing import Literal

import pytest

from models import torus_fabric as tf
from models.status import Status
from tests.models.test_torus_fabric import problem

#: Relative tolerance on two objectives.
OBJECTIVE_RTOL = 1e-9

Binds = Literal["optimum_drops", "becomes_feasible"]


# ---- problems: the small catalog of the brute-force tests ----------------------------------------
# ``problem(gpus, **requirements)``: one or two planes (400G or 2 x 200G), two switch models,
# copper, AEC and optics (``tests.models.test_torus_fabric``).


# ---- the rules, on a design ----------------------------------------------------------------------
def ring_degree(k: int) -> int:
    """Links a switch has along a ring of k: two neighbours, one when k = 2."""
    return 2 if k >= 3 else 1


def fits_ports(p: tf.TorusProblem, d: tf.Priced) -> bool:
    c = d.candidate
    used = c.gpus_per_switch + c.parallel_links * sum(ring_degree(k) for k in c.dims)
    return used <= c.switch.radix


def min_parallel_links(p: tf.TorusProblem, d: tf.Priced) -> bool:
    c = d.candidate
    lam = tf.load_ratio(c.dims, c.gpus_per_switch, c.parallel_links, p.gpus)
    return lam <= p.requirements.max_load_ratio


def meets_hops(p: tf.TorusProblem, d: tf.Priced) -> bool:
    cap = p.requirements.max_switch_hops
    assert cap is not None
    return sum(k // 2 for k in d.candidate.dims) + 1 <= cap


def meets_failure(p: tf.TorusProblem, d: tf.Priced) -> bool:
    phi = p.requirements.min_fraction_after_failure
    assert phi is not None
    return Fraction(d.candidate.planes - 1, d.candidate.planes) >= phi


def meets_latency(p: tf.TorusProblem, d: tf.Priced) -> bool:
    cap = p.requirements.max_latency_ns
    assert cap is not None
    return d.max_latency_ns <= cap


def meets_caps(p: tf.TorusProblem, d: tf.Priced) -> bool:
    cap = p.requirements.max_power_w
    assert cap is not None
    return d.power_w <= cap


# ---- the table -----------------------------------------------------------------------------------
@dataclass(frozen=True)
class Case:
    """How one family binds: on which problem, and what leaving it out changes."""

    problem: Callable[[], tf.TorusProblem]
    binds: Binds
    rule: Callable[[tf.TorusProblem, tf.Priced], bool]
    """The rule the family states, checked on the designs with and without it."""


CASES: dict[str, Case] = {
    # Ratio 1/2 on 40 GPUs: without it two small switches of 20 GPUs and 21 parallel links.
    "fits_ports": Case(
        lambda: problem(40, max_load_ratio=Fraction(1, 2)), "optimum_drops", fits_ports
    ),
    # Without it q = 1: a 2 x 2 torus of 12 GPUs a switch, far above the ratio.
    "min_parallel_links": Case(lambda: problem(48), "optimum_drops", min_parallel_links),
    # At most 3 switches a path: a 2 x 3 torus; without it a ring of 6 (4 switches a path).
    "meets_hops": Case(
        lambda: problem(96, max_switch_hops=3, max_load_ratio=Fraction(2)),
        "optimum_drops",
        meets_hops,
    ),
    # Half the bandwidth after a switch failure: two planes; without it one.
    "meets_failure": Case(
        lambda: problem(48, min_fraction_after_failure=Fraction(1, 2)),
        "optimum_drops",
        meets_failure,
    ),
    # 1,660 ns: a 3 x 2 torus (1,657 ns); without it a ring of 5 (1,663 ns).
    "meets_latency": Case(
        lambda: problem(64, max_latency_ns=1660.0), "optimum_drops", meets_latency
    ),
    # 1,200 W: below the free optimum's 1,205 W, and no torus draws less.
    "meets_caps": Case(lambda: problem(48, max_power_w=1_200.0), "becomes_feasible", meets_caps),
}

#: The registry these cases cover (``tests/families/test_constraint_registries.py``).
COVERS = ((tf.CONSTRAINTS, CASES),)


@cache
def solve(p: tf.TorusProblem) -> tf.TorusSolution:
    return tf.solve(tf.build(p))


def test_every_family_has_a_case() -> None:
    assert set(CASES) == set(tf.CONSTRAINTS), (
        f"no binding case: {sorted(set(tf.CONSTRAINTS) - set(CASES))}; "
        f"stale cases: {sorted(set(CASES) - set(tf.CONSTRAINTS))}"
    )


def test_every_family_is_a_function_of_the_module() -> None:
    assert all(getattr(tf, name) is fn for name, fn in tf.CONSTRAINTS.items())


def test_an_unknown_family_is_refused() -> None:
    with pytest.raises(ValueError, match="no constraint family"):
        replace(problem(48), leave_out=frozenset({"fits_radix"}))


@pytest.mark.parametrize("family", list(tf.CONSTRAINTS))
def test_the_family_binds(family: str) -> None:
    case = CASES[family]
    p = case.problem()
    kept = solve(p)
    without = solve(replace(p, leave_out=frozenset({family})))
    assert without.status is Status.OPTIMAL, "leaving a family out never makes a problem infeasible"
    assert without.priced is not None
    if case.binds == "becomes_feasible":
        assert kept.status is Status.INFEASIBLE
    else:
        assert kept.status is Status.OPTIMAL
        assert kept.priced is not None
        assert without.priced.objective_usd < kept.priced.objective_usd * (1 - OBJECTIVE_RTOL)
        assert case.rule(p, kept.priced), "the design with the family breaks its rule"
    assert not case.rule(p, without.priced), "without the family the rule still holds"

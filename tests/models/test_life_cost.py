"""The life objective (``models.life_cost``) against hand arithmetic and numerical integration."""

from __future__ import annotations

import math

import pytest
from scipy.integrate import quad

from models.life_cost import (
    HOURS_PER_YEAR,
    Phase,
    capex_factor,
    energy_factor,
    life_cost,
)

#: Agreement with hand arithmetic and with quadrature.
REL_TOL = 1e-9


def test_without_discounting_the_life_is_plain_sums() -> None:
    """Two phases, r = 0: capex adds up, energy is watts x years, disruption GPU-hours x value."""
    phases = [Phase(0.0, 1_000_000.0, 10_000.0), Phase(2.0, 500_000.0, 15_000.0, 240.0)]
    terms = life_cost(phases, 5.0, 0.0, energy_usd_per_wh=1e-4, gpu_hour_usd=2.0)
    per_watt_year = 1e-4 * HOURS_PER_YEAR
    assert terms.capex_usd == pytest.approx(1_500_000.0, rel=REL_TOL)
    assert terms.energy_usd == pytest.approx((10_000 * 2 + 15_000 * 3) * per_watt_year, rel=REL_TOL)
    assert terms.disruption_usd == pytest.approx(480.0, rel=REL_TOL)
    assert terms.total_usd == pytest.approx(
        terms.capex_usd + terms.energy_usd + terms.disruption_usd, rel=REL_TOL
    )


def test_a_discounted_life_matches_the_hand_figures() -> None:
    """r = 10 %: a phase at year 1 costs 1/1.1 of its capex; energy from 0 to 1 and 1 to 3."""
    r = 0.10
    phases = [Phase(0.0, 100.0, 1.0), Phase(1.0, 110.0, 2.0, 10.0)]
    terms = life_cost(phases, 3.0, r, energy_usd_per_wh=1.0 / HOURS_PER_YEAR, gpu_hour_usd=1.1)
    ln = math.log(1.1)
    assert terms.capex_usd == pytest.approx(100.0 + 110.0 / 1.1, rel=REL_TOL)
    a01 = (1 - 1 / 1.1) / ln
    a13 = (1 / 1.1 - 1 / 1.1**3) / ln
    assert terms.energy_usd == pytest.approx(1.0 * a01 + 2.0 * a13, rel=REL_TOL)
    assert terms.disruption_usd == pytest.approx(10.0 * 1.1 / 1.1, rel=REL_TOL)


@pytest.mark.parametrize("r", [0.0, 0.03, 0.08, 0.25])
@pytest.mark.parametrize(("a", "b"), [(0.0, 1.0), (0.5, 4.25), (3.0, 3.0), (2.0, 10.0)])
def test_the_energy_factor_is_the_discounted_integral(r: float, a: float, b: float) -> None:
    integral, _ = quad(lambda t: (1 + r) ** -t, a, b)
    assert energy_factor(a, b, r) == pytest.approx(integral, rel=REL_TOL, abs=1e-12)


@pytest.mark.parametrize("r", [0.0, 0.07])
def test_splitting_a_period_changes_nothing(r: float) -> None:
    """A phase that buys nothing and draws the same power is no phase at all."""
    one = life_cost([Phase(0.0, 10.0, 5.0)], 6.0, r, 1e-3, 1.0)
    two = life_cost([Phase(0.0, 10.0, 5.0), Phase(2.5, 0.0, 5.0)], 6.0, r, 1e-3, 1.0)
    assert two.total_usd == pytest.approx(one.total_usd, rel=REL_TOL)


def test_buying_later_costs_less_today_when_money_has_a_price() -> None:
    assert capex_factor(2.0, 0.05) < capex_factor(1.0, 0.05) < capex_factor(0.0, 0.05) == 1.0


@pytest.mark.parametrize(
    ("phases", "horizon", "r", "match"),
    [
        ([], 5.0, 0.0, "at least one phase"),
        ([Phase(1.0, 1.0, 1.0)], 5.0, 0.0, "first phase is at 0"),
        ([Phase(0.0, 1.0, 1.0), Phase(3.0, 1.0, 1.0), Phase(2.0, 1.0, 1.0)], 5.0, 0.0, "order"),
        ([Phase(0.0, 1.0, 1.0), Phase(5.0, 1.0, 1.0)], 5.0, 0.0, "before the horizon"),
        ([Phase(0.0, -1.0, 1.0)], 5.0, 0.0, "never negative"),
        ([Phase(0.0, 1.0, 1.0)], 5.0, -1.0, "discount rate"),
    ],
)
def test_a_malformed_life_is_refused(
    phases: list[Phase], horizon: float, r: float, match: str
) -> None:
    with pytest.raises(ValueError, match=match):
        life_cost(phases, horizon, r, 1e-3, 1.0)

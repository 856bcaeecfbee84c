"""Report totals equal the solver's objective terms, and the BOM adds up to them."""

from __future__ import annotations

from typing import Any

import pytest

from planner.api import PlanResult, plan
from planner.schema.instance import Instance
from planner.validation import recompute_totals

#: Relative tolerance between report figures and the solver's terms (cent/milliwatt rounding).
TOTALS_RTOL = 1e-6

CASES: dict[str, dict[str, Any]] = {
    "h100-1k": {"cluster": {"gpus": 1016, "nic_gbps": 400, "nic_ports": [1, 2]}},
    "b200-8k-800g": {"cluster": {"gpus": 8192, "nic_gbps": 800, "nic_ports": [1, 2]}},
    "cpo-only": {
        "cluster": {"gpus": 4096, "nic_gbps": 800},
        "search": {"switch_models": ["spectrum-x-photonics-102t"]},
    },
    "energy-weighted": {
        "cluster": {"gpus": 2048, "nic_gbps": 400},
        "objective": {"energy_weight": 3.0, "capex_weight": 0.5, "energy_usd_per_kwh": 0.2},
    },
    "3-tier": {
        "cluster": {"gpus": 65536, "nic_gbps": 400},
        "constraints": {"max_oversubscription": [3.0, 1.0]},
    },
}


@pytest.fixture(scope="module", params=list(CASES))
def result(request: pytest.FixtureRequest) -> PlanResult:
    return plan(
        Instance.model_validate({"name": request.param, **CASES[request.param]}), verify=False
    )


def _winner_solution(r: PlanResult) -> Any:
    d = r.design
    assert d is not None
    sols = [
        o.solution
        for o in r.search.outcomes
        if o.switch_model is None and o.solution.objective_usd is not None
    ]
    return min(sols, key=lambda s: s.objective_usd)


@pytest.mark.slow
def test_summary_equals_objective_terms(result: PlanResult) -> None:
    d = result.design
    assert d is not None
    row = result.summary.row(0, named=True)
    terms = d.objective_terms()
    assert row["capex_usd"] == pytest.approx(terms["capex_usd"], rel=TOTALS_RTOL)
    assert row["power_kw"] * 1000 == pytest.approx(terms["power_w"], rel=TOTALS_RTOL)
    assert row["energy_usd"] == pytest.approx(terms["energy_usd"], rel=TOTALS_RTOL)
    assert row["objective_usd"] == pytest.approx(terms["objective_usd"], rel=TOTALS_RTOL)


def test_summary_equals_the_solvers_figures(result: PlanResult) -> None:
    sol = _winner_solution(result)
    row = result.summary.row(0, named=True)
    assert row["capex_usd"] == pytest.approx(sol.capex_usd, rel=TOTALS_RTOL)
    assert row["power_kw"] * 1000 == pytest.approx(sol.power_w, rel=TOTALS_RTOL)
    assert row["objective_usd"] == pytest.approx(sol.objective_usd, rel=TOTALS_RTOL)


def test_bom_adds_up_to_the_summary(result: PlanResult) -> None:
    row = result.summary.row(0, named=True)
    assert result.bom["total_cost_usd"].sum() == pytest.approx(row["capex_usd"], rel=TOTALS_RTOL)
    assert result.bom["total_power_w"].sum() == pytest.approx(
        row["power_kw"] * 1000, rel=TOTALS_RTOL
    )


def test_independent_recomputation_agrees(result: PlanResult) -> None:
    d = result.design
    assert d is not None
    capex, power = recompute_totals(d)
    row = result.summary.row(0, named=True)
    assert capex == pytest.approx(row["capex_usd"], rel=TOTALS_RTOL)
    assert power == pytest.approx(row["power_kw"] * 1000, rel=TOTALS_RTOL)
    assert row["tco_usd"] == pytest.approx(capex + d.energy_usd_per_w * power, rel=TOTALS_RTOL)


def test_alternatives_name_the_winner(result: PlanResult) -> None:
    alt = result.alternatives
    winners = alt.filter(alt["winner"])
    assert winners.height >= 1
    row = result.summary.row(0, named=True)
    assert winners["tco_usd"][0] == pytest.approx(row["tco_usd"], rel=TOTALS_RTOL)
    priced = alt.filter(alt["tco_usd"].is_not_null())
    assert (priced["tco_usd"] >= row["tco_usd"] * (1 - TOTALS_RTOL)).all()

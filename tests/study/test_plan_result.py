"""PlanResult in a notebook: a short repr, an HTML table, the summary as pandas."""

from __future__ import annotations

import pytest

from planner.api import PlanResult, plan
from tests.study.conftest import tiny


@pytest.fixture(scope="module")
def result() -> PlanResult:
    return plan(tiny(), time_limit_s=30)


def test_repr_is_a_few_lines_with_the_headline(result: PlanResult) -> None:
    text = repr(result)
    assert len(text.splitlines()) <= 4
    assert len(text) < 300
    for word in ("tiny", "optimal", "64 GPUs", "clos", "capex $", "kW", "verdict: meets"):
        assert word in text


def test_repr_html_is_a_small_table(result: PlanResult) -> None:
    text = result._repr_html_()
    assert text.startswith("<table>")
    assert "<th style='text-align:left'>capex_usd</th>" in text
    assert text.count("<tr>") <= len(PlanResult.HEADLINE_COLUMNS)


def test_to_pandas_is_the_summary(result: PlanResult) -> None:
    frame = result.to_pandas()
    assert type(frame).__module__.startswith("pandas")
    assert list(frame.columns) == result.summary.columns
    assert frame["capex_usd"].iloc[0] == result.summary["capex_usd"][0]


def test_repr_without_a_design_names_the_status() -> None:
    inst = tiny().with_changes({"constraints.max_switch_hops": 1, "cluster.gpus": 4096})
    text = repr(plan(inst, time_limit_s=30, verify=False))
    assert "capex" not in text
    assert "4,096 GPUs" in text

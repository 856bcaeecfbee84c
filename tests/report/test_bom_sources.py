"""Every BOM row carries the price source of the component it prices, from the catalog.

A fibre row prices the medium's cable (``cable_cost_usd``), not its modules
(``cost_usd_per_end``): its source is the cable's. Switches and OCS devices carry their
``cost_usd`` source; transceivers and copper assemblies their medium's ``cost_usd_per_end``.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

from planner.api import PlanResult, catalog_for, load_instance, plan
from planner.schema.catalog import Catalog
from tests.conftest import REPO_ROOT

#: Instances whose designs have every kind of BOM row between them: switches, copper
#: assemblies, transceivers and fibre (h100-1k's leaf-spine links are LPO over fibre), and OCS.
INSTANCES = ("h100-1k", "small-256")


def catalog_source(catalog: Catalog, component: str, model: str) -> str:
    """The catalog's source of the figure a BOM row of ``component`` and ``model`` prices."""
    if component == "switch":
        return next(s for s in catalog.switch if s.name == model).source["cost_usd"]
    if component == "ocs":
        return next(o for o in catalog.ocs if o.name == model).source["cost_usd"]
    if component == "fibre":
        medium = model.removesuffix(" cable")
        return next(m for m in catalog.medium if m.name == medium).source["cable_cost_usd"]
    return next(m for m in catalog.medium if m.name == model).source["cost_usd_per_end"]


@cache
def _planned(name: str) -> tuple[PlanResult, Catalog]:
    inst = load_instance(REPO_ROOT / "instances" / f"{name}.toml")
    return plan(inst, verify=False), catalog_for(inst)


@pytest.fixture(params=INSTANCES)
def planned(request: pytest.FixtureRequest) -> tuple[PlanResult, Catalog]:
    return _planned(request.param)


def _rows(planned: tuple[PlanResult, Catalog]) -> list[dict[str, Any]]:
    result, _ = planned
    assert result.design is not None
    return list(result.bom.iter_rows(named=True))


@pytest.mark.slow
def test_every_bom_row_carries_its_components_source(planned: tuple[PlanResult, Catalog]) -> None:
    _, catalog = planned
    wrong = [
        (r["component"], r["model"], r["source"])
        for r in _rows(planned)
        if r["source"] != catalog_source(catalog, r["component"], r["model"])
    ]
    assert wrong == []


def test_h100_1k_has_a_fibre_row_priced_from_the_cable() -> None:
    result, catalog = _planned("h100-1k")
    fibre = result.bom.filter(component="fibre")
    assert fibre.height > 0
    medium = fibre["model"][0].removesuffix(" cable")
    entry = next(m for m in catalog.medium if m.name == medium)
    assert fibre["source"][0] == entry.source["cable_cost_usd"] != entry.source["cost_usd_per_end"]

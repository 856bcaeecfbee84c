"""A link whose two ends carry different modules of one line side (issue 26).

A medium is its line side (lanes and their rate on the fibre, connector, reach); its own module
and its other ``modules`` may sit at either end, each fitting its own cage (a gearbox module on
a ConnectX-8's 200G lanes, a plain one on a switch's 100G lanes). The cabling plans price each
end's module, the BOM lists both, failures per day count each end's AFR, design.json carries the
per-end modules with their line side, and the validator checks the fit and the line sides.
"""

from __future__ import annotations

import dataclasses
import json
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from models import cabling as cb
from models.status import Status
from planner import api
from planner.api import validate
from planner.cli import app
from planner.design import DAYS_PER_YEAR, Design, EndModule, LinkGroup
from planner.design_file import DesignFileError
from planner.families import read_design
from planner.loading import load_catalog
from planner.schema.catalog import Catalog
from planner.validation import recompute_totals
from tests.conftest import REPO_ROOT

DEFAULT = load_catalog("default")
#: A gearbox module's own AFR in the test catalog, unlike its medium's (0.006): so a count of
#: failures that used the medium's AFR at both ends would differ.
MODULE_AFR = 0.02
#: Tolerance on recomputed money, power and failure figures.
RTOL = 1e-9

# ---- the cabling plans: which modules sit at each end, and what one link costs ---------------

GEARBOX = cb.ModuleOption("dr-h200", 750.0, 8.5, (200,), ("osfp",), nic_only=True)
DR = cb.MediumOption(
    "dr", 700.0, 9.0, 80.0, 100, 500.0, False, 100, "mpo-12", 3.0, (100, 50), ("osfp",), (GEARBOX,)
)
NIC_200 = cb.Cage("osfp", 200, nic=True)
NIC_100 = cb.Cage("osfp", 100, nic=True)
SWITCH_100 = cb.Cage("osfp", 100)
SWITCH_200 = cb.Cage("osfp", 200)
CPO_100 = cb.CpoEngine(100, "mpo-12", 500.0)


@pytest.mark.parametrize(
    ("lower", "upper", "modules", "capex_usd"),
    [
        # The link: a gearbox module at the NIC, the medium's own at the switch.
        (NIC_200, SWITCH_100, [("dr-h200", "dr")], 750.0 + 700.0 + 80.0),
        (NIC_100, SWITCH_100, [("dr", "dr")], 700.0 + 700.0 + 80.0),
        # A co-packaged far end takes the fibre itself: one module, the NIC's.
        (NIC_200, CPO_100, [("dr-h200", "")], 750.0 + 80.0),
        # The gearbox module is made for NIC cages only; the own module needs 100G or 50G lanes.
        (SWITCH_200, SWITCH_100, [], 0.0),
        (NIC_200, SWITCH_200, [], 0.0),
    ],
    ids=["nic200-switch100", "nic100-switch100", "nic200-cpo", "switch200-switch100", "both200"],
)
def test_each_end_takes_the_module_that_fits_its_cage(
    lower: cb.PortKind, upper: cb.PortKind, modules: list[tuple[str, str]], capex_usd: float
) -> None:
    uses = cb.uses_of(DR, lower, upper, 100.0)
    assert [u.module_names for u in uses] == modules
    assert [u.capex_usd for u in uses] == pytest.approx([capex_usd] * len(uses))


def test_a_plan_prices_the_module_at_each_end() -> None:
    tails = cb.LengthTails(10, (500.0,), (0,), max_length_m=20.0)
    criteria = cb.Criteria(energy_usd_per_w=10.0)
    plans = cb.plans_for(tails, [DR], NIC_200, SWITCH_100, None, criteria)
    assert len(plans) == 1
    (use,) = plans[0].bands
    assert use is not None
    assert use.module_names == ("dr-h200", "dr")
    assert use.power_w == pytest.approx(8.5 + 9.0)
    assert criteria.value_usd(use) == pytest.approx(750.0 + 700.0 + 80.0 + 10.0 * (8.5 + 9.0))


# ---- the catalog: what a module of a medium may be --------------------------------------------


def _catalog_with(edit: Any) -> dict[str, Any]:
    data = DEFAULT.model_dump()
    edit({m["name"]: m for m in data["medium"]})
    return data


def _add_module(medium: str, **module: Any) -> Any:
    def edit(media: dict[str, dict[str, Any]]) -> None:
        entry = {
            "name": "extra-module",
            "host_lane_gbps": [200],
            "form_factors": ["osfp"],
            "cost_usd_per_end": 100.0,
            "power_w_per_end": 1.0,
            "source": {"host_lane_gbps": "t", "cost_usd_per_end": "t", "power_w_per_end": "t"},
        }
        entry.update(module)
        media[medium]["modules"].append(entry)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_add_module("dac-400g"), "no gearbox"),
        (_add_module("lpo-400g"), "no gearbox"),
        (_add_module("dr-400g", name="dr-800g"), "module names must be unique"),
        (_add_module("dr-400g", name="dr-400g-h200"), "repeat"),
        (_add_module("dr-400g", host_lane_gbps=[300]), "do not divide"),
        (_add_module("dr-400g", source={"host_lane_gbps": "t"}), "no source given for cost"),
        (_add_module("dr-400g", nic_only=True), "no source given for nic_only"),
    ],
    ids=["dac-gearbox", "lpo-gearbox", "name-of-a-medium", "name-twice", "lanes", "source", "nic"],
)
def test_the_catalog_refuses_a_module_that_cannot_be(edit: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Catalog.model_validate(_catalog_with(edit))


def test_a_catalog_without_modules_loads_as_before() -> None:
    """A user's catalog written before modules existed: every medium has its own module only."""

    def drop(media: dict[str, dict[str, Any]]) -> None:
        for m in media.values():
            del m["modules"]

    cat = Catalog.model_validate(_catalog_with(drop))
    assert all(m.modules == [] for m in cat.medium)
    assert [m.name for m in cat.medium] == [m.name for m in DEFAULT.medium]


# ---- a planned design: one SU of the DGX B300 on two Spectrum-4 planes ----------------------


@cache
def _catalog() -> Catalog:
    """The default catalog, the gearbox module with an AFR of its own."""

    def edit(media: dict[str, dict[str, Any]]) -> None:
        (module,) = media["dr-400g"]["modules"]
        module["afr"] = MODULE_AFR
        module["source"]["afr"] = "test: an AFR unlike the medium's"

    return Catalog.model_validate(_catalog_with(edit))


@cache
def _design() -> Design:
    inst = api.load_instance(REPO_ROOT / "instances" / "b300-eth-2planes.toml")
    result = api.plan(inst.with_changes({"cluster.gpus": 512}), catalog=_catalog(), verify=False)
    assert result.status is Status.OPTIMAL, result.explanation
    assert result.design is not None
    return result.design


def _gpu_group(d: Design) -> LinkGroup:
    (group,) = d.link_classes[0].groups
    return group


def test_the_gpu_links_carry_a_gearbox_module_at_the_nic_and_the_mediums_own_at_the_leaf() -> None:
    g = _gpu_group(_design())
    assert g.medium == "dr-400g"
    assert g.lower_module is not None
    assert (g.lower_module.name, g.upper_module) == ("dr-400g-h200", None)
    assert (g.lower_module.line_kind, g.lower_module.line_lanes) == ("dr", 4)
    assert (g.lower_module.line_lane_gbps, g.lower_module.connector) == (100, "mpo-12")


@pytest.mark.parametrize(
    ("tier", "model", "unit_cost_usd", "unit_power_w"),
    [
        # One 800G module per GPU (two 400G ports), and one twin-port module per two leaf ports.
        ("gpu-leaf at gpu", "dr-400g-h200", 2 * 750.0, 2 * 8.5),
        ("gpu-leaf at leaf", "dr-400g", 2 * 700.0, 2 * 9.0),
    ],
)
def test_the_bom_lists_each_ends_module_with_its_own_figures_and_source(
    tier: str, model: str, unit_cost_usd: float, unit_power_w: float
) -> None:
    d = _design()
    row = d.bom().filter(tier=tier).row(0, named=True)
    assert (row["component"], row["model"]) == ("transceiver", model)
    assert row["count"] == d.gpus  # 2 planes x 512 GPU links / 2 ports per module
    assert (row["unit_cost_usd"], row["unit_power_w"]) == (unit_cost_usd, unit_power_w)
    medium = _catalog().medium_named("dr-400g")
    entry = medium.module_named(model) or medium
    assert row["source"] == entry.source["cost_usd_per_end"]


def test_failures_per_day_count_each_ends_own_afr() -> None:
    d = _design()
    medium = _catalog().medium_named("dr-400g")
    expected = 0.0
    for c in d.link_classes:
        for g in c.groups:
            ends = (MODULE_AFR + medium.afr) if g is _gpu_group(d) else g.pluggable_ends * g.afr
            expected += d.planes * g.links * ends / DAYS_PER_YEAR
    assert d.expected_link_failures_per_day == pytest.approx(expected, rel=RTOL)
    # Not the medium's AFR at both ends, as before the ends could differ.
    g = _gpu_group(d)
    assert MODULE_AFR != medium.afr
    assert d.planes * g.links * 2 * medium.afr / DAYS_PER_YEAR < expected


def test_capex_and_power_add_each_ends_module() -> None:
    d = _design()
    assert recompute_totals(d) == pytest.approx((d.capex_usd, d.power_w), rel=RTOL)
    g = _gpu_group(d)
    assert g.ends_cost_usd == 750.0 + 700.0
    assert validate(d, _catalog()) == []


def test_the_design_reads_back_with_its_end_modules() -> None:
    d = _design()
    again = read_design(d.to_json())
    assert again == d
    assert _gpu_group(again).lower_module == _gpu_group(d).lower_module


# ---- the validator and design.json: the line sides must match ---------------------------------


def _with_gpu_group(d: Design, **changes: Any) -> Design:
    c0 = d.link_classes[0]
    group = dataclasses.replace(_gpu_group(d), **changes)
    return dataclasses.replace(
        d, link_classes=(dataclasses.replace(c0, groups=(group,)), *d.link_classes[1:])
    )


def _module(**changes: Any) -> EndModule:
    m = _gpu_group(_design()).lower_module
    assert m is not None
    return dataclasses.replace(m, **changes)


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"lower_module": _module(line_lane_gbps=200, line_lanes=2)}, "same line side"),
        ({"lower_module": _module(connector="lc-duplex")}, "same line side"),
        ({"upper_module": _module()}, "NIC cages only"),
        ({"lower_module": _module(name="made-up-module")}, "not one of its modules"),
        ({"lower_module": _module(cost_usd=1.0)}, "figures differ"),
    ],
    ids=["lanes", "connector", "nic-module-at-leaf", "unknown-module", "price"],
)
def test_the_validator_catches_end_modules_that_do_not_belong(
    changes: dict[str, Any], words: str
) -> None:
    broken = _with_gpu_group(_design(), **changes)
    violations = [str(v) for v in validate(broken, _catalog())]
    assert any(words in v for v in violations), violations


def _design_data() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_design().to_json())
    return data


def _set_module(side: str, **changes: Any) -> dict[str, Any]:
    data = _design_data()
    group = data["link_classes"][0]["groups"][0]
    module = dict(group["lower_module"])
    module.update(changes)
    group[f"{side}_module"] = module
    return data


def _where_no_module_sits() -> dict[str, Any]:
    """A module named at an end that carries none (as at a co-packaged port)."""
    data = _set_module("upper")
    data["link_classes"][0]["groups"][0]["upper_ports_per_module"] = 0
    return data


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_set_module("lower", line_lane_gbps=200), "same line side"),
        (_set_module("lower", line_kind="sr"), "same line side"),
        (_set_module("lower", line_lanes=2), "not the 400G of its links"),
        (_set_module("lower", name="dr-400g"), "own module"),
        (_set_module("lower", line_kind="lpo"), "no gearbox"),
        (_set_module("lower", host_lane_gbps=[]), "host_lane_gbps"),
        (_where_no_module_sits(), "at an end without modules"),
    ],
    ids=["lane-rate", "kind", "lanes", "own-name", "lpo-gearbox", "no-host-lanes", "no-module"],
)
def test_design_json_refuses_a_module_of_another_line_side(
    data: dict[str, Any], words: str
) -> None:
    with pytest.raises(DesignFileError, match=words):
        read_design(data)


def test_validate_exits_2_on_mismatched_end_modules(tmp_path: Path) -> None:
    path = tmp_path / "design.json"
    path.write_text(json.dumps(_set_module("lower", line_lane_gbps=200)), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == 2
    assert "same line side" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("catalog", "exit_code", "output"),
    [
        # Priced from the default catalog: sound.
        (DEFAULT, 0, "ok"),
        # Priced from the test catalog (the module's own AFR), checked against the default one.
        (None, 1, "module dr-400g-h200 figures differ from the catalog"),
    ],
    ids=["default", "other-catalog"],
)
def test_validate_checks_each_end_module_against_the_catalog(
    tmp_path: Path, catalog: Catalog | None, exit_code: int, output: str
) -> None:
    inst = api.load_instance(REPO_ROOT / "instances" / "b300-eth-2planes.toml")
    design = (
        _design()
        if catalog is None
        else api.plan(inst.with_changes({"cluster.gpus": 512}), verify=False).design
    )
    assert design is not None
    path = tmp_path / "design.json"
    path.write_text(design.to_json(), encoding="utf-8")
    result = CliRunner().invoke(app, ["validate", str(path)])
    assert result.exit_code == exit_code
    assert output in result.stdout


def test_without_a_module_for_each_end_the_explanation_names_what_fits_each() -> None:
    """The issue's message, 'no allowed medium ... that fits both ends', said neither which."""

    def drop(media: dict[str, dict[str, Any]]) -> None:
        for m in media.values():
            m["modules"] = []

    inst = api.load_instance(REPO_ROOT / "instances" / "b300-eth-2planes.toml")
    result = api.plan(
        inst.with_changes({"cluster.gpus": 512}),
        catalog=Catalog.model_validate(_catalog_with(drop)),
        verify=False,
    )
    assert result.status is Status.INFEASIBLE
    text = " ".join(result.explanation)
    assert "has modules for both ends of the gpu-leaf links" in text
    assert "NIC ends are osfp cages of 200G lanes (dac-400g-2l, dr-400g-2l fit them)" in text
    assert "switch ends osfp cages of 100G lanes (dac-400g, aec-400g, sr-400g" in text

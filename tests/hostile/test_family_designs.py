"""design.json of every family: modules where links end, and a wiring of the family's own kind.

An ``ocs_torus`` design with ``lower_ports_per_module = 0`` loaded and validated clean while its
bill of materials dropped every face-link module that capex kept; a rail_only design wired
``rail_optimized`` (and a clos design wired either rail kind) loaded and validated clean too.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from planner.api import validate
from planner.design_file import DesignFileError
from planner.errors import InputError
from planner.families import FAMILIES as REGISTRY
from planner.families import read_design
from planner.validation import recompute_modules, recompute_totals
from tests.hostile.family_designs import FAMILY_INSTANCES, plan_family_designs

FAMILIES = tuple(FAMILY_INSTANCES)


@pytest.fixture(scope="module")
def designs() -> dict[str, dict[str, Any]]:
    return plan_family_designs()


def _data(designs: dict[str, dict[str, Any]], family: str) -> dict[str, Any]:
    return json.loads(json.dumps(designs[family]))


@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_design_loads_and_validates(
    designs: dict[str, dict[str, Any]], family: str
) -> None:
    design = read_design(_data(designs, family))
    assert validate(design) == []
    bom = design.bom()
    transceivers, assemblies = recompute_modules(design)
    assert int(bom.filter(bom["component"] == "transceiver")["count"].sum()) == transceivers
    assert int(bom.filter(bom["component"] == "cable assembly")["count"].sum()) == assemblies
    assert float(bom["total_cost_usd"].sum()) == pytest.approx(recompute_totals(design)[0])


#: (family, link class, end) where a module (or a cable plug) sits: at the GPUs' NIC and at every
#: switch cage; not at an OCS mirror (ocs_torus's upper end, ocs_direct's top class).
MODULE_ENDS = [
    *[(family, 0, "lower") for family in FAMILIES],
    *[(family, 0, "upper") for family in FAMILIES if family != "ocs_torus"],
    ("ocs_direct", 2, "lower"),
]


@pytest.mark.parametrize(
    ("family", "index", "side"), MODULE_ENDS, ids=[f"{f}-{i}-{s}" for f, i, s in MODULE_ENDS]
)
def test_no_module_where_links_end_in_one_is_refused(
    designs: dict[str, dict[str, Any]], family: str, index: int, side: str
) -> None:
    data = _data(designs, family)
    data["link_classes"][index]["groups"][0][f"{side}_ports_per_module"] = 0
    with pytest.raises(DesignFileError) as info:
        read_design(data)
    assert isinstance(info.value, InputError)
    message = str(info.value)
    assert f"link_classes.{index}.groups.0.{side}_ports_per_module: 0" in message
    assert "expected 1 or more links per module" in message


@pytest.mark.parametrize(("family", "index"), [("ocs_torus", 0), ("ocs_direct", 2)])
def test_a_module_at_an_ocs_mirror_is_refused(
    designs: dict[str, dict[str, Any]], family: str, index: int
) -> None:
    # The BOM listed the modules, capex never priced them.
    data = _data(designs, family)
    data["link_classes"][index]["groups"][0]["upper_ports_per_module"] = 2
    with pytest.raises(DesignFileError, match="an OCS mirror with no module: expected 0") as info:
        read_design(data)
    assert f"link_classes.{index}.groups.0.upper_ports_per_module: 2" in str(info.value)


def test_the_validator_finds_a_bill_of_materials_that_drops_modules(
    designs: dict[str, dict[str, Any]],
) -> None:
    # Built in Python (design.json refuses it): the validator names both the count and the sums.
    design = read_design(_data(designs, "ocs_torus"))
    face = design.link_classes[0]
    group = replace(face.groups[0], lower_ports_per_module=0)
    broken = replace(design, link_classes=(replace(face, groups=(group,)),))
    found = [str(v) for v in validate(broken)]
    links = face.links
    assert any(
        v.startswith("modules: link_classes.0.groups.0.lower_ports_per_module") for v in found
    )
    assert f"totals: the bill of materials lists 0 transceiver units, the links need {links:,}" in (
        found
    )
    assert any(v.startswith("totals: the bill of materials costs") for v in found)


def _foreign_wirings(designs: dict[str, dict[str, Any]], family: str) -> list[dict[str, Any]]:
    """Every other family's wiring kind; a rail kind keeps this design's own SU and rails."""
    own = designs[family]["wiring"]
    out: dict[str, dict[str, Any]] = {}
    for other in FAMILIES:
        wiring = dict(designs[other]["wiring"])
        if wiring["kind"] == own["kind"] or wiring["kind"] in out:
            continue
        if "rails" in own and "rails" in wiring:
            wiring = {**own, "kind": wiring["kind"]}
        out[wiring["kind"]] = wiring
    return list(out.values())


#: Every (family, other wiring kind) pair, the kinds and each family's own from the registry.
OWN_KIND = {name: f.wiring_kind for name, f in REGISTRY.items()}
KINDS = tuple(sorted(set(OWN_KIND.values())))
MISMATCHES = [(f, k) for f in FAMILIES for k in KINDS if k != OWN_KIND[f]]


@pytest.mark.parametrize(("family", "kind"), MISMATCHES, ids=[f"{f}-{k}" for f, k in MISMATCHES])
def test_family_and_wiring_kind_must_agree(
    designs: dict[str, dict[str, Any]], family: str, kind: str
) -> None:
    data = _data(designs, family)
    (wiring,) = [w for w in _foreign_wirings(designs, family) if w["kind"] == kind]
    data["wiring"] = wiring
    with pytest.raises(DesignFileError) as info:
        read_design(data)
    own = OWN_KIND[family]
    assert f"wiring.kind: {kind!r}, but the {family} family is wired {own!r}" in str(info.value)


def test_every_mismatched_pair_is_covered() -> None:
    assert len(MISMATCHES) == len(FAMILIES) * (len(KINDS) - 1)


def test_every_registered_family_has_a_design_here() -> None:
    assert set(FAMILY_INSTANCES) == set(REGISTRY)

"""The default catalog's content, a user's own catalog file, and instance changes through the API."""

from __future__ import annotations

import tomllib
from importlib import resources
from pathlib import Path

import pytest

from planner.api import load_instance, plan, validate
from planner.errors import InputError
from planner.loading import load_catalog
from planner.schema.catalog import Catalog

DEFAULT = load_catalog()


def test_default_catalog_spans_the_switch_generations() -> None:
    capacities = sorted(s.capacity_gbps for s in DEFAULT.switch)
    assert len(DEFAULT.switch) >= 5
    assert capacities[0] <= 25_600
    assert capacities[-1] >= 102_400
    assert any(s.cpo for s in DEFAULT.switch)


@pytest.mark.parametrize("speed", [200, 400, 800])
@pytest.mark.parametrize("kind", ["dac", "aec", "sr", "dr", "fr", "lpo"])
def test_default_catalog_has_every_medium_at_the_speeds_used(kind: str, speed: int) -> None:
    assert any(m.kind == kind and m.speed_gbps == speed for m in DEFAULT.medium)


def test_every_figure_has_a_source() -> None:
    raw = tomllib.loads((resources.files("planner") / "catalog" / "default.toml").read_text())
    for entry in raw["switch"]:
        assert set(entry["source"]) >= {"ports", "cost_usd", "power_w", "latency_ns"}
    for entry in raw["medium"]:
        assert set(entry["source"]) >= {
            "reach_m",
            "cost_usd_per_end",
            "power_w_per_end",
            "latency_ns",
            "afr",
        }


def test_a_figure_without_source_is_rejected() -> None:
    data = DEFAULT.model_dump()
    data["switch"][0]["source"].pop("cost_usd")
    with pytest.raises(ValueError, match="no source given for cost_usd"):
        Catalog.model_validate(data)


INSTANCE = """
name = "own-catalog"
[cluster]
gpus = 512
nic_gbps = 400
[search]
catalog = "{catalog}"
"""


def _own_catalog(tmp_path: Path, price_factor: float) -> Path:
    data = DEFAULT.model_dump()
    for s in data["switch"]:
        s["cost_usd"] *= price_factor
    lines = []
    for kind in ("switch", "medium", "nic"):
        for entry in data[kind]:
            lines.append(f"[[{kind}]]")
            for key, value in entry.items():
                if key != "source" and value is not None:
                    lines.append(f"{key} = {_toml(value)}")
            lines.append(f"[{kind}.source]")
            lines.extend(f"{k} = {_toml(v)}" for k, v in entry["source"].items())
    path = tmp_path / "mine.toml"
    path.write_text("\n".join(lines))
    return path


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):  # a module's optional figures left out (TOML has no null)
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items() if v is not None) + "}"
    return repr(value)


@pytest.mark.slow
def test_a_users_catalog_file_sets_the_prices(tmp_path: Path) -> None:
    _own_catalog(tmp_path, price_factor=2.0)
    (tmp_path / "inst.toml").write_text(INSTANCE.format(catalog="mine.toml"))
    own = plan(load_instance(tmp_path / "inst.toml"), verify=False)
    default = plan(
        load_instance(tmp_path / "inst.toml").with_changes({"search.catalog": "default"}),
        verify=False,
    )
    assert own.design is not None
    assert default.design is not None
    switch_capex_own = own.bom.filter(own.bom["component"] == "switch")["total_cost_usd"].sum()
    assert own.design.capex_usd > default.design.capex_usd
    assert own.design.catalog.endswith("mine.toml")
    assert validate(own.design, load_catalog(own.design.catalog)) == []
    assert validate(own.design, DEFAULT) != []
    assert switch_capex_own == pytest.approx(
        2.0
        * sum(
            DEFAULT.switch_named(t.switch_model).cost_usd * t.switches * own.design.planes
            for t in own.design.tiers
        )
    )


def test_a_missing_catalog_file_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "inst.toml").write_text(INSTANCE.format(catalog="nowhere.toml"))
    with pytest.raises(InputError, match="file not found"):
        plan(load_instance(tmp_path / "inst.toml"))


@pytest.mark.parametrize(
    ("changes", "field", "value"),
    [
        ({"cluster.gpus": 65536}, ("cluster", "gpus"), 65536),
        ({"constraints.max_switch_hops": 3}, ("constraints", "max_switch_hops"), 3),
        ({"objective.pue": 1.1}, ("objective", "pue"), 1.1),
    ],
)
def test_with_changes_returns_a_new_validated_instance(
    tmp_path: Path, changes: dict[str, object], field: tuple[str, str], value: object
) -> None:
    (tmp_path / "inst.toml").write_text(INSTANCE.format(catalog="default"))
    base = load_instance(tmp_path / "inst.toml")
    changed = base.with_changes(changes)
    assert getattr(getattr(changed, field[0]), field[1]) == value
    assert base.cluster.gpus == 512


def test_with_changes_validates(tmp_path: Path) -> None:
    (tmp_path / "inst.toml").write_text(INSTANCE.format(catalog="default"))
    with pytest.raises(InputError, match="cluster.gpus"):
        load_instance(tmp_path / "inst.toml").with_changes({"cluster.gpus": -1})

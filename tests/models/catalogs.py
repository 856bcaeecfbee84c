"""Small catalogs built in code for tests (no file, no download)."""

from __future__ import annotations

from typing import Any

from planner.schema.catalog import Catalog

SOURCE = {
    "ports": "test",
    "cost_usd": "test",
    "power_w": "test",
    "latency_ns": "test",
    "protocol": "test",
}
#: Every test switch and medium uses OSFP cages of four lanes at a quarter of the port speed.
FORM_FACTORS = ["osfp"]
MEDIUM_SOURCE = {
    f: "test" for f in ("reach_m", "cost_usd_per_end", "power_w_per_end", "latency_ns", "afr")
}


def switch(
    name: str,
    radix: int,
    speed_gbps: int = 400,
    cost_usd: float = 20_000.0,
    *,
    cpo: bool = False,
    **kw: Any,
) -> dict[str, Any]:
    """A switch entry with one port configuration."""
    entry = {
        "name": name,
        "capacity_gbps": radix * speed_gbps,
        "port_configs": [{"ports": radix, "speed_gbps": speed_gbps}],
        "cost_usd": cost_usd,
        "power_w": kw.pop("power_w", 300.0 + radix * 5.0),
        "latency_ns": kw.pop("latency_ns", 400),
        "cpo": cpo,
        "protocol": kw.pop("protocol", "ethernet"),
        "source": SOURCE | {"cpo_optics": "test"} if cpo else SOURCE | {"cage": "test"},
    }
    if not cpo:
        entry["cage"] = {"form_factor": "osfp", "lanes": 4, "lane_gbps": speed_gbps // 4}
        entry["cages"] = radix
    if cpo:
        # The engine matches the catalog's DR media below: four lanes on MPO-12.
        entry["cpo_optics"] = {
            "lane_gbps": speed_gbps // 4,
            "connector": "mpo-12",
            "reach_m": 500.0,
        }
    entry.update(kw)
    return entry


def medium(
    name: str,
    kind: str,
    speed_gbps: int,
    reach_m: float,
    end_cost_usd: float,
    end_power_w: float,
    cable_usd: float = 0.0,
) -> dict[str, Any]:
    """A medium entry."""
    return {
        "name": name,
        "kind": kind,
        "speed_gbps": speed_gbps,
        "reach_m": reach_m,
        "cost_usd_per_end": end_cost_usd,
        "power_w_per_end": end_power_w,
        "cable_cost_usd": cable_usd,
        "latency_ns": 0 if kind == "dac" else 100,
        "afr": 0.001 if kind == "dac" else 0.01,
        "lane_gbps": speed_gbps // 4,
        "connector": "osfp" if kind in ("dac", "aec") else "mpo-12",
        "form_factors": FORM_FACTORS,
        "source": MEDIUM_SOURCE,
    }


def catalog(
    switches: list[dict[str, Any]],
    speeds: tuple[int, ...] = (100, 200, 400, 800),
    copper: bool = True,
) -> Catalog:
    """A catalog with the given switches and DAC and DR media at each speed."""
    media = []
    for s in speeds:
        media.append(medium(f"dr-{s}g", "dr", s, 500.0, 300.0 + s, 5.0 + s / 50, 80.0))
        if copper:
            media.append(medium(f"dac-{s}g", "dac", s, 3.0, 50.0, 0.1))
    return Catalog.model_validate({"switch": switches, "medium": media})

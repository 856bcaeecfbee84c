"""Pluggable only, LPO allowed, CPO allowed: the same instance planned three ways, side by side.

``pluggable`` allows copper and DSP pluggable optics; ``lpo`` adds linear-drive pluggables to
them; ``cpo`` adds switches with co-packaged optics to them (and not LPO, so that each of the two
rows shows one technology against the same baseline, and the two against each other). Within what
the instance itself allows (``search.media_kinds``, ``search.cpo``), each is planned as a whole:
switches, placement and media chosen together, so the table answers "what does allowing this
technology change?" rather than pricing one fixed design three ways.
"""

from __future__ import annotations

from typing import Any, get_args

import polars as pl

from planner.design import Design
from planner.schema.catalog import MediumKind
from planner.schema.instance import Instance
from planner.sizing import SizingResult

#: Scenario name and what it allows; ``lpo`` and ``cpo`` each add one technology to ``pluggable``.
SCENARIOS: dict[str, str] = {
    "pluggable": "copper and DSP pluggable optics",
    "lpo": "pluggable plus linear-drive optics (LPO)",
    "cpo": "pluggable plus switches with co-packaged optics (CPO)",
}
#: Media kinds that are linear-drive optics.
LPO_KINDS = frozenset({"lpo"})

COMPARISON_SCHEMA: dict[str, Any] = {
    "scenario": pl.Utf8,
    "allows": pl.Utf8,
    "status": pl.Utf8,
    "planes": pl.Int64,
    "tiers": pl.Int64,
    "switch_models": pl.Utf8,
    "leaf_placement": pl.Utf8,
    "media": pl.Utf8,
    "switches": pl.Int64,
    "cpo_switches": pl.Int64,
    "transceivers": pl.Int64,
    "capex_usd": pl.Float64,
    "energy_usd": pl.Float64,
    "tco_usd": pl.Float64,
    "power_kw": pl.Float64,
    "optics_power_kw": pl.Float64,
    "optics_power_share": pl.Float64,
    "expected_link_failures_per_day": pl.Float64,
    "max_latency_ns": pl.Float64,
    "delta_tco_usd": pl.Float64,
}


def scenario_instance(inst: Instance, scenario: str) -> Instance:
    """The instance restricted to what a scenario allows (never more than the instance allows)."""
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown optics scenario {scenario!r}; expected one of {list(SCENARIOS)}")
    allowed = inst.search.media_kinds or list(get_args(MediumKind))
    kinds = [k for k in allowed if scenario == "lpo" or k not in LPO_KINDS]
    return inst.with_media(kinds, cpo=inst.search.cpo and scenario == "cpo")


def _media(d: Design) -> str:
    """'sr-800g x 40,960, dr4-800g x 8,192' over all planes, most used first."""
    counts: dict[str, int] = {}
    for c in d.link_classes:
        for g in c.groups:
            counts[g.medium] = counts.get(g.medium, 0) + d.planes * g.links
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return ", ".join(f"{name} x {n:,}" for name, n in ordered)


def comparison_row(scenario: str, result: SizingResult) -> dict[str, Any]:
    """One scenario's headline figures (status only when it found no design)."""
    row: dict[str, Any] = dict.fromkeys(COMPARISON_SCHEMA)
    row.update(scenario=scenario, allows=SCENARIOS[scenario], status=result.status.value)
    d = result.design
    if d is None:
        return row
    row.update(
        planes=d.planes,
        tiers=d.num_tiers,
        switch_models=" ".join(f"{t.role}={t.switch_model}" for t in d.tiers),
        leaf_placement=d.leaf_placement,
        media=_media(d),
        switches=d.switches,
        cpo_switches=d.planes * sum(t.switches for t in d.tiers if t.cpo),
        transceivers=d.transceivers,
        capex_usd=d.capex_usd,
        energy_usd=d.energy_usd,
        tco_usd=d.tco_usd,
        power_kw=d.power_w / 1000.0,
        optics_power_kw=d.optics_power_w / 1000.0,
        optics_power_share=d.optics_power_share,
        expected_link_failures_per_day=d.expected_link_failures_per_day,
        max_latency_ns=d.max_latency_ns,
    )
    return row


def comparison_table(results: dict[str, SizingResult]) -> pl.DataFrame:
    """One row per scenario, in scenario order; ``delta_tco_usd`` against ``pluggable``."""
    rows = [comparison_row(name, results[name]) for name in SCENARIOS if name in results]
    base = next((r["tco_usd"] for r in rows if r["scenario"] == "pluggable"), None)
    for r in rows:
        if base is not None and r["tco_usd"] is not None:
            r["delta_tco_usd"] = r["tco_usd"] - base
    return pl.DataFrame(rows, schema=COMPARISON_SCHEMA)

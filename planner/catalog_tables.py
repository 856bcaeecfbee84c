"""The catalog as tables (``fabric-planner catalog``): switches, NICs, media, modules, OCS."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from planner.schema.catalog import Cage, Catalog

if TYPE_CHECKING:
    pass


def _cage_text(cage: Cage | None, count: int | None) -> str:
    """'32 x osfp (8 x 100G lanes)', or 'co-packaged' for a switch without cages."""
    if cage is None:
        return "co-packaged"
    lanes = f"{cage.form_factor} ({cage.lanes} x {cage.lane_gbps}G lanes)"
    return lanes if count is None else f"{count} x {lanes}"


def catalog_table(catalog: Catalog, kind: str) -> pl.DataFrame:
    """Tabulate one kind of component ('switch', 'medium', 'nic', 'ocs'): key figures, price source.

    ``cost_source`` is the price's source in full; ``catalog_entries`` gives every source.
    """
    if kind == "switch":
        return pl.DataFrame(
            [
                {
                    "name": s.name,
                    "ports": " ".join(f"{pc.ports}x{pc.speed_gbps}G" for pc in s.port_configs),
                    "capacity_gbps": s.capacity_gbps,
                    "cost_usd": s.cost_usd,
                    "power_w": s.power_w,
                    "latency_ns": s.latency_ns,
                    "cpo": s.cpo,
                    "protocol": s.protocol,
                    "cages": _cage_text(s.cage, s.cages),
                    "cost_source": s.source.get("cost_usd", ""),
                }
                for s in catalog.switch
            ]
        )
    if kind == "medium":
        return pl.DataFrame(
            [
                {
                    "name": m.name,
                    "kind": m.kind,
                    "speed_gbps": m.speed_gbps,
                    "reach_m": m.reach_m,
                    "cost_usd_per_end": m.cost_usd_per_end,
                    "power_w_per_end": m.power_w_per_end,
                    "cable_cost_usd": m.cable_cost_usd,
                    "latency_ns": m.latency_ns,
                    "afr": m.afr,
                    "lane_gbps": m.lane_gbps,
                    "host_lane_gbps": " ".join(str(r) for r in m.host_lanes),
                    "form_factors": " ".join(m.form_factors),
                    "connector": m.connector,
                    "cost_source": m.source.get("cost_usd_per_end", ""),
                }
                for m in catalog.medium
            ]
        )
    if kind == "nic":
        return pl.DataFrame(
            [
                {
                    "name": n.name,
                    "speed_gbps": n.speed_gbps,
                    "port_splits": " ".join(str(p) for p in n.port_splits),
                    "cage": _cage_text(n.cage, None)
                    + (f" shared by {n.nics_per_cage}" if n.nics_per_cage > 1 else ""),
                    "protocols": " ".join(n.protocols),
                    "cost_usd": n.cost_usd,
                    "power_w": n.power_w,
                    "cost_source": n.source.get("cost_usd", ""),
                }
                for n in catalog.nic
            ],
            schema={
                "name": pl.Utf8,
                "speed_gbps": pl.Int64,
                "port_splits": pl.Utf8,
                "cage": pl.Utf8,
                "protocols": pl.Utf8,
                "cost_usd": pl.Float64,
                "power_w": pl.Float64,
                "cost_source": pl.Utf8,
            },
        )
    if kind == "ocs":
        return pl.DataFrame(
            [
                {
                    "name": o.name,
                    "ports": o.ports,
                    "cost_usd": o.cost_usd,
                    "power_w": o.power_w,
                    "insertion_loss_db": o.insertion_loss_db,
                    "reconfiguration_ms": o.reconfiguration_ms,
                    "cost_source": o.source.get("cost_usd", ""),
                }
                for o in catalog.ocs
            ],
            schema={
                "name": pl.Utf8,
                "ports": pl.Int64,
                "cost_usd": pl.Float64,
                "power_w": pl.Float64,
                "insertion_loss_db": pl.Float64,
                "reconfiguration_ms": pl.Float64,
                "cost_source": pl.Utf8,
            },
        )
    raise ValueError(f"unknown component kind {kind!r}")


def catalog_entries(catalog: Catalog, kind: str) -> list[dict[str, Any]]:
    """Every entry of one kind with all its figures and the full source of each (``--json``)."""
    if kind not in ("switch", "medium", "nic", "ocs"):
        raise ValueError(f"unknown component kind {kind!r}")
    return [entry.model_dump(mode="json") for entry in getattr(catalog, kind)]


def catalog_csv(catalog: Catalog, kinds: list[str]) -> str:
    """``catalog --format csv``: one kind's table, or every kind's with a kind column."""
    tables = [catalog_table(catalog, k) for k in kinds]
    if len(kinds) == 1:
        return tables[0].write_csv()
    return pl.concat(
        [
            t.select(pl.lit(k).alias("kind_of_component"), pl.all())
            for k, t in zip(kinds, tables, strict=True)
        ],
        how="diagonal_relaxed",
    ).write_csv()


def catalog_lines(catalog: Catalog, kinds: list[str]) -> list[str]:
    """``catalog --format table``: each kind's name and aligned table, a blank line between."""
    lines: list[str] = []
    with pl.Config(
        tbl_rows=-1,
        tbl_cols=-1,
        tbl_width_chars=60_000,
        fmt_str_lengths=60_000,
        fmt_table_cell_list_len=-1,
        tbl_hide_dataframe_shape=True,
        tbl_hide_column_data_types=True,
        tbl_formatting="ASCII_MARKDOWN",
    ):
        for i, k in enumerate(kinds):
            if i:
                lines.append("")
            lines.append(f"{k}:")
            lines.append(str(catalog_table(catalog, k)))
    return lines

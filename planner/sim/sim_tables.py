"""The simulation's tables: ``SimResult``, the tables' schemas, and the rows that fill them.

Bandwidths follow the nccl-tests conventions: algbw = size / time, busbw = algbw x the
collective's factor; both are reported in Gb/s. The links table lists utilisation per link
class and direction (the scale-up domain's links last), and the link histogram the links per
utilisation bin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import polars as pl

from planner.schema.verify import TrafficSpec
from planner.sim import traffic as tr
from planner.sim.fabric import Fabric, FloatArray, IntArray
from planner.sim.routing import Routing
from planner.sim.scale_up import ScaleUp

#: Utilisation percentiles reported per link class.
PERCENTILES = (50, 99)
#: The flow completion percentiles the tables report (p50, p99).
FCT_PERCENTILES = (50.0, 99.0)


@dataclass(frozen=True)
class SimResult:
    """The simulation's tables and verdict."""

    collectives: pl.DataFrame
    links: pl.DataFrame
    failures: pl.DataFrame
    verdict: str
    reasons: tuple[str, ...]
    fractions: dict[str, float | None] = field(default_factory=dict)
    wall_s: float = 0.0
    cut: tuple[str, ...] = ()
    """Steps not run because the time limit had passed (empty: the simulation is complete)."""
    time_limit_hint_s: float | None = None
    """With steps cut: a ``--time-limit`` (seconds, for the whole command) under which they
    would have run too, estimated from the steps that did (``suggest_time_limit_s``)."""
    over_memory: tuple[str, ...] = ()
    """Steps not run because their routing tables would pass ``verify.memory_budget_gib``
    (``OverMemory``), each with the reason."""
    notes: tuple[str, ...] = ()
    """What the figures rest on beyond the model: phases streamed under the memory budget or
    the re-sharing cap, whose flow percentiles come from a sample."""
    link_histogram: pl.DataFrame = field(
        default_factory=lambda: pl.DataFrame(schema=LINK_HISTOGRAM_SCHEMA)
    )
    """Directed links per utilisation bin, per pattern, routing, tier and direction; each
    group's links add up to the ``links`` of its ``links`` row."""
    together: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=TOGETHER_SCHEMA))
    """The ``[verify]`` groups run together (``planner.sim.concurrent``): per group and pattern,
    its fluid time alone and with the others, healthy, under the verdict's routing."""


def collective_row(
    spec: TrafficSpec,
    t: tr.Traffic,
    routing: Routing,
    scenario: str,
    time_s: float,
    times: FloatArray,
    cut: int,
    ideal_s: float,
    bound_s: float | None,
    exact: bool = True,
    spread: tuple[int, float, float] | None = None,
    paths: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One row of the collectives table (``COLLECTIVES_SCHEMA``); ``spread`` from ``ecmp_seeds``.

    ``paths``: of an adaptive routing with group weights (``group_paths``), the share of the
    traffic between groups sent straight and the mean path in groups crossed.
    """
    seeds, least, greatest = spread or (1, time_s, time_s)
    ok = math.isfinite(time_s) and time_s > 0
    finite = times[np.isfinite(times)]
    return {
        "pattern": spec.label,
        "collective": t.name,
        "algorithm": t.algorithm,
        "routing": routing.value,
        "scenario": scenario,
        "group_size": t.group_size,
        "groups": t.groups,
        "size_bytes": t.size_bytes,
        "flows": t.flows,
        "time_s": time_s,
        "algbw_gbps": t.algbw_gbps(time_s) if ok else 0.0,
        "busbw_gbps": t.busbw_gbps(time_s) if ok else 0.0,
        "ideal_time_s": ideal_s,
        "fraction_of_ideal": ideal_s / time_s if ok else 0.0,
        "bound_time_s": bound_s,
        "fraction_of_bound": (bound_s / time_s) if (ok and bound_s is not None) else None,
        "p50_fct_s": float(np.percentile(finite, FCT_PERCENTILES[0])) if finite.size else None,
        "p99_fct_s": float(np.percentile(finite, FCT_PERCENTILES[1])) if finite.size else None,
        "disconnected_flows": cut,
        "exact": exact,
        "seeds": seeds,
        "min_time_s": least,
        "max_time_s": greatest,
        "direct_share": None if paths is None else paths[0],
        "mean_group_path": None if paths is None else paths[1],
    }


def link_utilisation_rows(
    fabric: Fabric,
    spec: TrafficSpec,
    routing: Routing,
    util: FloatArray,
    scale_up: ScaleUp | None = None,
    histogram: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Utilisation per link class and direction, the scale-up domain's links last.

    'up' is lower -> upper end: on a torus ring, position r -> r + 1; in the scale-up domain
    (tier "gpu-nvswitch"), a GPU's egress into its domain ('up') and its ingress ('down'). With
    a ``scale_up`` domain, ``util`` holds the plane's directed links and then the domain's.
    ``histogram``, when given, receives the ``LINK_HISTOGRAM_SCHEMA`` rows of the same links.
    """
    if scale_up is None:
        return _class_rows(fabric, spec, routing, util, histogram)
    return _class_rows(fabric, spec, routing, util[: fabric.links], histogram) + _class_rows(
        scale_up.fabric, spec, routing, util[fabric.links :], histogram
    )


def utilisation_bins(util: FloatArray) -> IntArray:
    """Links per utilisation bin: idle (exactly 0), then ``UTIL_BINS`` bins ``(lo, hi]`` to 1.

    A utilisation above 1 (the flow solution's tolerance) counts in the last bin.
    """
    k = np.clip(np.ceil(util * UTIL_BINS).astype(np.int64), 1, UTIL_BINS)
    k[util <= 0] = 0
    return np.bincount(k, minlength=UTIL_BINS + 1)


def _class_rows(
    fabric: Fabric,
    spec: TrafficSpec,
    routing: Routing,
    util: FloatArray,
    histogram: list[dict[str, Any]] | None = None,
) -> list[dict[str, Any]]:
    """Utilisation per link class and direction of one fabric (``link_utilisation_rows``)."""
    rows: list[dict[str, Any]] = []
    cls = fabric.directed_class
    up = np.zeros(fabric.links, dtype=bool)
    up[0::2] = True
    for c in range(fabric.link_classes):
        for direction, mask in (("up", up), ("down", ~up)):
            u = util[(cls == c) & mask & fabric.alive]
            if not u.size:
                continue
            key = {
                "pattern": spec.label,
                "routing": routing.value,
                "tier": fabric.class_name(c),
                "direction": direction,
            }
            rows.append(
                key
                | {
                    "links": int(u.size),
                    "mean_utilisation": float(u.mean()),
                    "p50_utilisation": float(np.percentile(u, PERCENTILES[0])),
                    "p99_utilisation": float(np.percentile(u, PERCENTILES[1])),
                    "max_utilisation": float(u.max()),
                    "idle_fraction": float((u <= 0).mean()),
                }
            )
            if histogram is None:
                continue
            counts = utilisation_bins(u).tolist()
            histogram.extend(
                key | {"bin_low": lo, "bin_high": hi, "links": n}
                for lo, hi, n in zip(UTIL_BIN_LOW, UTIL_BIN_HIGH, counts, strict=True)
            )
    return rows


def failure_row(
    scenario: str,
    trial: int,
    failed_links: int,
    planes_lost: int,
    spec: TrafficSpec,
    routing: Routing,
    time_s: float,
    healthy_s: float,
    ideal_s: float,
    cut: int,
) -> dict[str, Any]:
    """One row of the failures table (``FAILURES_SCHEMA``)."""
    ok = math.isfinite(time_s) and time_s > 0
    return {
        "scenario": scenario,
        "trial": trial,
        "failed_links": failed_links,
        "planes_lost": planes_lost,
        "pattern": spec.label,
        "routing": routing.value,
        "time_s": time_s,
        "fraction_of_healthy": healthy_s / time_s if ok else 0.0,
        "fraction_of_ideal": ideal_s / time_s if ok else 0.0,
        "disconnected_flows": cut,
    }


#: Columns of ``together``: one row per group and pattern.
TOGETHER_SCHEMA: dict[str, Any] = {
    "group": pl.Utf8,
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "scale": pl.Float64,
    "alone_s": pl.Float64,
    "together_s": pl.Float64,
    "slowdown": pl.Float64,
    "group_s": pl.Float64,
}


COLLECTIVES_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "collective": pl.Utf8,
    "algorithm": pl.Utf8,
    "routing": pl.Utf8,
    "scenario": pl.Utf8,
    "group_size": pl.Int64,
    "groups": pl.Int64,
    "size_bytes": pl.Float64,
    "flows": pl.Int64,
    "time_s": pl.Float64,
    "algbw_gbps": pl.Float64,
    "busbw_gbps": pl.Float64,
    "ideal_time_s": pl.Float64,
    "fraction_of_ideal": pl.Float64,
    "bound_time_s": pl.Float64,
    "fraction_of_bound": pl.Float64,
    "p50_fct_s": pl.Float64,
    "p99_fct_s": pl.Float64,
    "disconnected_flows": pl.Int64,
    "exact": pl.Boolean,
    "seeds": pl.Int64,
    "min_time_s": pl.Float64,
    "max_time_s": pl.Float64,
    "direct_share": pl.Float64,
    "mean_group_path": pl.Float64,
}
LINKS_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "tier": pl.Utf8,
    "direction": pl.Utf8,
    "links": pl.Int64,
    "mean_utilisation": pl.Float64,
    "p50_utilisation": pl.Float64,
    "p99_utilisation": pl.Float64,
    "max_utilisation": pl.Float64,
    "idle_fraction": pl.Float64,
}
LINK_HISTOGRAM_SCHEMA: dict[str, Any] = {
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "tier": pl.Utf8,
    "direction": pl.Utf8,
    "bin_low": pl.Float64,
    "bin_high": pl.Float64,
    "links": pl.Int64,
}
#: Utilisation bins of ``sim_link_histogram`` between 0 and 1, after the idle bin.
UTIL_BINS = 20
#: Lower and upper edge of every bin: the idle bin ``[0, 0]``, then ``(k / UTIL_BINS, (k + 1) / UTIL_BINS]``.
UTIL_BIN_LOW = (0.0, *(k / UTIL_BINS for k in range(UTIL_BINS)))
UTIL_BIN_HIGH = (0.0, *((k + 1) / UTIL_BINS for k in range(UTIL_BINS)))
FAILURES_SCHEMA: dict[str, Any] = {
    "scenario": pl.Utf8,
    "trial": pl.Int64,
    "failed_links": pl.Int64,
    "planes_lost": pl.Int64,
    "pattern": pl.Utf8,
    "routing": pl.Utf8,
    "time_s": pl.Float64,
    "fraction_of_healthy": pl.Float64,
    "fraction_of_ideal": pl.Float64,
    "disconnected_flows": pl.Int64,
}

"""Let the time lost to failures choose the planes and the optics: a walk over the options.

The sizing model minimises the network's cost; the time failures take from the GPUs depends on
decisions it makes for cost alone: how many planes the NIC is split into (with one, a leaf or
the leaf's end of a GPU's link stops the job; with two or more the GPU runs on through its other
planes, as HPN's dual-ToR does) and whether the switches' ports are co-packaged (their failure
rate and repair time differ from a pluggable module's). With the instance's ``[reliability]``
and ``objective.idle_gpu_weight = w > 0`` the planner minimises

    total(D) = network(D) + w V_idle(D) + w V_fail(D),    V_fail(D) = N p H (1 - G(D)) (1 - i(D))

(N GPUs, p the price of a GPU-hour, H the lifetime's hours, G the goodput share of
``planner.reliability.goodput``, i the step's idle share, so that V_idle + V_fail = N p H
(1 - (1 - i) G) counts each lost hour once) by decomposition over the options o:

1. **Options.** Every plane count the NIC allows (``cluster.nic_ports``, or the pinned one) with
   pluggable optics only, and, when the search allows co-packaged optics and the catalog has CPO
   switches, with CPO switches only; then the same for every NIC of ``reliability.nic_models``
   at each split it allows (a dual-port NIC: dual-ToR); all of it for each family of
   ``search.families`` when it names several.
2. **Inner optimum.** Each option is planned as any instance is (``network(D_o)`` is the search's
   optimum for it; with w > 0 its ratio ladder is walked too, ``planner.idle_pricing``).
3. **Evaluation.** D_o's interruptions and goodput come from the closed form, the healthy step's
   idle share entering its degraded speed.
4. **Choice.** The least total among the options that meet ``max_interruptions_per_day`` (when
   set) and whose simulation does not fail; without w the cheapest network among those that meet
   the cap.

The choice is exact over the options; within one option the sizing model does not see the
failure cost (more leaves of a cheaper switch fail more often), which the option table shows.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import polars as pl

from planner.design import Design
from planner.reliability import Assessment
from planner.schema.catalog import Catalog
from planner.schema.instance import Instance

R = TypeVar("R")

#: Optics of an option: pluggable modules only, or co-packaged switches only.
PLUGGABLE = "pluggable"
CPO = "cpo"


@dataclass(frozen=True)
class Option:
    """One combination of decisions the walk plans separately."""

    planes: int
    optics: str
    nic: str = ""
    """A NIC of ``reliability.nic_models`` ('': the cluster's own)."""
    family: str = ""
    """One of several ``search.families`` ('': the instance searches only one)."""

    @property
    def label(self) -> str:
        """'2 planes, pluggable' (with the NIC when not the cluster's, the family when chosen)."""
        text = f"{self.planes} plane{'s' if self.planes > 1 else ''}, {self.optics}"
        extra = [x for x in (self.nic, self.family) if x]
        return ", ".join([text, *extra])


@dataclass(frozen=True)
class Evaluated(Generic[R]):
    """An option planned: its result, design, network objective and what failures cost it."""

    option: Option
    result: R | None
    design: Design | None
    network_usd: float | None
    """The network objective (with w > 0: the chosen rung's network + w V_idle)."""
    assessment: Assessment | None
    failure_value_usd: float | None
    """w V_fail."""
    eligible: bool
    note: str

    @property
    def total_usd(self) -> float | None:
        """Network + w V_fail (None without a design)."""
        if self.network_usd is None or self.failure_value_usd is None:
            return None
        return self.network_usd + self.failure_value_usd


@dataclass(frozen=True)
class OptionSearch(Generic[R]):
    """Every option evaluated and the one chosen."""

    evaluated: tuple[Evaluated[R], ...]
    chosen: Evaluated[R] | None
    message: str


def options(inst: Instance, catalog: Catalog) -> list[Option]:
    """The options of step 1 (module docstring)."""
    pinned = inst.search.pin.planes
    planes = [pinned] if pinned is not None else sorted(inst.cluster.nic_ports)
    optics = [PLUGGABLE]
    if inst.search.cpo and cpo_switches(inst, catalog):
        optics.append(CPO)
    families = list(inst.search.families) if len(inst.search.families) > 1 else [""]
    out = [Option(p, o, "", f) for f in families for p in planes for o in optics]
    rel = inst.reliability
    for name in [] if rel is None else rel.nic_models:
        if name == inst.cluster.nic:
            continue
        splits = catalog.nic_named(name).port_splits
        out += [Option(p, o, name, f) for f in families for p in sorted(splits) for o in optics]
    return out


def cpo_switches(inst: Instance, catalog: Catalog) -> list[str]:
    """The co-packaged switches the search may choose."""
    allowed = inst.search.switch_models
    return [s.name for s in catalog.switch if s.cpo and (allowed is None or s.name in allowed)]


def option_instance(inst: Instance, catalog: Catalog, option: Option) -> Instance:
    """The instance planning one option: its planes pinned, its optics the only ones allowed."""
    changes: dict[str, object] = {"search.pin.planes": option.planes}
    if option.nic:
        changes["cluster.nic"] = option.nic
        changes["cluster.nic_ports"] = [option.planes]
    if option.family:
        changes["search.families"] = [option.family]
    if option.optics == PLUGGABLE:
        changes["search.cpo"] = False
    else:
        changes["search.switch_models"] = cpo_switches(inst, catalog)
    return inst.with_changes(changes)


def failure_value_usd(inst: Instance, assessment: Assessment) -> float:
    """W V_fail = w N p H (1 - G) (1 - i).

    The GPUs train a share (1 - i) G of the time: V_idle + V_fail = N p H (1 - (1 - i) G), so
    the time a failure takes is not counted again where the step had left the GPUs idle anyway
    (i = 0 when the step is not known).
    """
    w = inst.workload
    price = 0.0 if w is None else w.gpu.price_usd_per_hour
    g = assessment.closed
    busy = 1.0 - g.idle_fraction if g.step_known else 1.0
    return (
        inst.objective.idle_gpu_weight
        * inst.cluster.gpus
        * price
        * inst.objective.lifetime_hours
        * g.lost_fraction
        * busy
    )


def choose(
    inst: Instance,
    catalog: Catalog,
    evaluate: Callable[[Instance, Option], Evaluated[R]],
) -> OptionSearch[R]:
    """Plan and evaluate every option; choose by step 4 of the module docstring."""
    done = [evaluate(option_instance(inst, catalog, o), o) for o in options(inst, catalog)]
    cap = inst.constraints.max_interruptions_per_day
    pool = [e for e in done if e.eligible and e.total_usd is not None]
    if not pool:
        best = min(
            (e for e in done if e.assessment is not None),
            key=lambda e: (
                e.assessment.closed.network_interruptions_per_day if e.assessment else math.inf
            ),
            default=None,
        )
        why = (
            "no option has a design"
            if best is None or best.assessment is None
            else (
                f"no option meets constraints.max_interruptions_per_day = {cap:g}: the fewest "
                f"network interruptions a day are "
                f"{best.assessment.closed.network_interruptions_per_day:.3g}, with "
                f"{best.option.label}"
            )
        )
        return OptionSearch(tuple(done), None, why)
    chosen = min(pool, key=lambda e: (e.total_usd, e.option.planes, e.option.optics))
    return OptionSearch(
        tuple(done),
        chosen,
        f"chose {chosen.option.label} of {len(done)} options"
        + ("" if cap is None else f" meeting {cap:g} network interruptions a day"),
    )


def meets_cap(inst: Instance, assessment: Assessment | None) -> bool:
    """Whether a design's network interruptions a day meet the instance's cap (if any)."""
    cap = inst.constraints.max_interruptions_per_day
    if cap is None:
        return True
    return assessment is not None and assessment.closed.network_interruptions_per_day <= cap


#: Columns of the ``reliability_options`` table.
OPTIONS_SCHEMA = {
    "planes": pl.Int64,
    "optics": pl.Utf8,
    "nic": pl.Utf8,
    "family": pl.Utf8,
    "capex_usd": pl.Float64,
    "network_usd": pl.Float64,
    "network_interruptions_per_day": pl.Float64,
    "goodput_fraction": pl.Float64,
    "failure_value_usd": pl.Float64,
    "total_usd": pl.Float64,
    "eligible": pl.Boolean,
    "chosen": pl.Boolean,
    "note": pl.Utf8,
}


def options_table(search: OptionSearch[R]) -> pl.DataFrame:
    """One row per option, in the order they were planned."""
    rows = []
    for e in search.evaluated:
        a = e.assessment
        rows.append(
            {
                "planes": e.option.planes,
                "optics": e.option.optics,
                "nic": e.option.nic or (None if e.design is None else e.design.nic),
                "family": e.option.family or (None if e.design is None else e.design.family),
                "capex_usd": None if e.design is None else e.design.capex_usd,
                "network_usd": e.network_usd,
                "network_interruptions_per_day": (
                    None if a is None else a.closed.network_interruptions_per_day
                ),
                "goodput_fraction": None if a is None else a.closed.goodput_fraction,
                "failure_value_usd": e.failure_value_usd,
                "total_usd": e.total_usd,
                "eligible": e.eligible,
                "chosen": search.chosen is not None and e.option == search.chosen.option,
                "note": e.note,
            }
        )
    return pl.DataFrame(rows, schema=OPTIONS_SCHEMA)

"""The public Python API: everything the CLI does, as functions returning plain objects."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import polars as pl

from models.status import Status
from planner.checks import check_instance
from planner.design import Design
from planner.errors import InputError
from planner.loading import load_catalog
from planner.loading import load_instance as _load_instance
from planner.optics import SCENARIOS, comparison_table, scenario_instance
from planner.report import alternatives_table, summary_table
from planner.schema.catalog import Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S, Instance
from planner.schema.verify import Verify
from planner.sim.simulate import COLLECTIVES_SCHEMA, FAILURES_SCHEMA, SimProgress, SimResult
from planner.sim.simulate import LINKS_SCHEMA as SIM_LINKS_SCHEMA
from planner.sim.simulate import simulate as _simulate
from planner.sizing import Progress, SizingResult, search
from planner.validation import Violation, validate_design


@dataclass(frozen=True)
class PlanResult:
    """What ``plan`` and ``evaluate`` return: the design, its tables and how the search went."""

    instance: Instance
    status: Status
    design: Design | None
    explanation: tuple[str, ...]
    search: SizingResult
    sim: SimResult | None = None
    """The verification by simulation, when it ran."""
    optics_comparison: pl.DataFrame | None = None
    """Pluggable only vs LPO vs CPO allowed, when asked for (``compare_optics``)."""

    @property
    def found(self) -> bool:
        """Whether a design was found."""
        return self.design is not None

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the headline figures (DESIGN section 7)."""
        return summary_table(self.instance, self.search, self.sim)

    @property
    def alternatives(self) -> pl.DataFrame:
        """The best design of every structure and switch option, side by side."""
        return alternatives_table(self.instance, self.search)

    @property
    def bom(self) -> pl.DataFrame:
        """Bill of materials of the chosen design (empty when none)."""
        from planner.design import BOM_SCHEMA

        return self.design.bom() if self.design else pl.DataFrame(schema=BOM_SCHEMA)

    @property
    def sim_collectives(self) -> pl.DataFrame:
        """Simulated collectives and patterns: time, algbw, busbw, fraction of ideal and of the bound."""
        return self.sim.collectives if self.sim else pl.DataFrame(schema=COLLECTIVES_SCHEMA)

    @property
    def sim_links(self) -> pl.DataFrame:
        """Link utilisation distribution per tier, direction, pattern and routing."""
        return self.sim.links if self.sim else pl.DataFrame(schema=SIM_LINKS_SCHEMA)

    @property
    def sim_failures(self) -> pl.DataFrame:
        """Throughput under named failures and Monte Carlo draws, against the healthy fabric."""
        return self.sim.failures if self.sim else pl.DataFrame(schema=FAILURES_SCHEMA)

    @property
    def links(self) -> pl.DataFrame:
        """Link classes of the chosen design (empty when none)."""
        from planner.design import LINKS_SCHEMA

        return self.design.links_table() if self.design else pl.DataFrame(schema=LINKS_SCHEMA)


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance file."""
    return _load_instance(path)


def catalog_for(inst: Instance) -> Catalog:
    """The catalog an instance names ('default' or a file path)."""
    return load_catalog(inst.search.catalog)


def plan(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    alternatives: bool = True,
    verify: bool | None = None,
    sim_progress: SimProgress | None = None,
) -> PlanResult:
    """Choose the cheapest fabric (capex + lifetime energy) that meets the instance's constraints.

    The chosen design is then simulated under the instance's ``[verify]`` section, unless
    ``verify`` is False (or None and the instance turns verification off).
    """
    catalog = catalog or catalog_for(inst)
    check_instance(inst, catalog)
    result = search(
        inst, catalog, time_limit_s=time_limit_s, progress=progress, alternatives=alternatives
    )
    sim = None
    if result.design is not None and (inst.verify.enabled if verify is None else verify):
        try:
            sim = _simulate(result.design, inst.verify, progress=sim_progress)
        except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
            raise InputError(f"verify: {exc}") from None
    return PlanResult(inst, result.status, result.design, result.explanation, result, sim)


def simulate(
    design: Design, verify: Verify | None = None, *, progress: SimProgress | None = None
) -> SimResult:
    """Simulate a design under traffic, routing and failures (an instance's ``[verify]`` section)."""
    return _simulate(design, verify or Verify(), progress=progress)


#: Pins an evaluation needs: without them the planner would be choosing, not pricing.
EVALUATE_NEEDS = ("planes", "tiers", "switch_models")


def evaluate(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    verify: bool | None = None,
    sim_progress: SimProgress | None = None,
) -> PlanResult:
    """Price exactly the design pinned in ``search.pin`` (planes, tiers and switch models at least)."""
    pin = inst.search.pin
    missing = [name for name in EVALUATE_NEEDS if getattr(pin, name) is None]
    if missing:
        raise InputError(
            "evaluate prices a given design: set search.pin."
            + ", search.pin.".join(missing)
            + " (and optionally switches, downlinks, uplinks, parallel_links)"
        )
    return plan(
        inst,
        catalog=catalog,
        time_limit_s=time_limit_s,
        progress=progress,
        alternatives=False,
        verify=verify,
        sim_progress=sim_progress,
    )


@dataclass(frozen=True)
class OpticsComparison:
    """The instance planned once per optics scenario: the table and every scenario's result."""

    table: pl.DataFrame
    results: dict[str, PlanResult]


def compare_optics(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
) -> OpticsComparison:
    """Plan the instance with pluggable optics only, with LPO allowed and with CPO allowed.

    Each scenario is a full plan (switches, placement and media chosen together) restricted to
    what it allows; ``table`` has one row per scenario (``planner.optics.COMPARISON_SCHEMA``).
    """
    catalog = catalog or catalog_for(inst)
    results = {
        name: plan(
            scenario_instance(inst, name),
            catalog=catalog,
            time_limit_s=time_limit_s,
            progress=progress,
            alternatives=False,
            verify=False,
        )
        for name in SCENARIOS
    }
    table = comparison_table({name: r.search for name, r in results.items()})
    return OpticsComparison(table, results)


def validate(design: Design, catalog: Catalog | None = None) -> list[Violation]:
    """Independent check of a design: ports, spreads, ratios, hops, failure tolerance, totals."""
    return validate_design(design, catalog)

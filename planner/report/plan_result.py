"""What a plan is: ``PlanResult``, plain data the API builds and the reports read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status
from planner.design import Design
from planner.extras import require_extra
from planner.family_roles import Tables
from planner.loading import (
    changes_text,
)
from planner.report.tables import summary_table
from planner.schema.instance import Instance

if TYPE_CHECKING:
    from planner.bandwidth_loop import LoopResult
    from planner.family_roles import Family
    from planner.idle_pricing import PricedSearch
    from planner.reliability import Assessment
    from planner.reliability.options import OptionSearch
    from planner.sim.sim_tables import SimResult
    from planner.sizing import SizingResult
    from planner.workload.step import StepTime


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
    reconfiguration: pl.DataFrame | None = None
    """OCS direct-connect: the circuits re-assigned after device 0 fails, and how many changed."""
    family_sims: dict[str, SimResult] = field(default_factory=dict)
    """A plan over several families, verified: the healthy simulation of each family's best design
    (the chosen design's is ``sim``), by family name."""
    bandwidth_loop: LoopResult[Any] | None = None
    """Under ``search.until_verified``: every plan-simulate-tighten iteration, how the loop ended
    and why (``planner.bandwidth_loop``); ``instance`` is then the last, tightened instance."""
    family: Family | None = None
    """The design's family, resolved once by the planner and handed to the reports (None
    without a design)."""
    idle_pricing: PricedSearch[Any] | None = None
    """Under ``objective.idle_gpu_weight > 0``: every rung of the ladder of allowed ratios, planned
    and simulated, and the one of least network + idle GPU cost (``planner.idle_pricing``);
    ``instance`` is then the chosen rung's."""
    parallelism: pl.DataFrame | None = None
    """With ``[workload.search]``: the given layout beside the chosen one, in Megatron's terms
    (``planner.workload.parallelism_search.choose_parallelism``)."""
    reliability: Assessment | None = None
    """With a ``[reliability]`` section: the design's interruptions a day, goodput and their Monte
    Carlo check (``planner.reliability``)."""
    reliability_options: OptionSearch[Any] | None = None
    """With failures priced or capped: every option of planes and optics, planned and assessed,
    and the one chosen (``planner.reliability.options``)."""

    #: Summary columns of the notebook views (``__repr__``, ``_repr_html_``), when not null.
    HEADLINE_COLUMNS = (
        "instance",
        "status",
        "family",
        "gpus",
        "capex_usd",
        "tco_usd",
        "power_kw",
        "switches",
        "verdict",
        "sim_fraction_ecmp",
        "sim_fraction_spray",
        "step_time_s",
        "mfu",
    )

    @property
    def found(self) -> bool:
        """Whether a design was found."""
        return self.design is not None

    def __repr__(self) -> str:
        """A few lines: instance, status, family, GPUs, capex, power and verdict (not the tables)."""
        s = self.summary.row(0, named=True)
        lines = [f"PlanResult({s['instance']!r}: {s['status']}, {s['gpus']:,} GPUs"]
        derived = self.instance.derived_from
        if derived is not None:
            lines.append(f"  from {derived[0]!r} with {changes_text(derived[1])}")
        if s["capex_usd"] is not None:
            lines.append(
                f"  {s['family']}, capex ${s['capex_usd']:,.0f}, power {s['power_kw']:,.1f} kW"
            )
        lines.append(f"  verdict: {s['verdict']})")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        """The headline summary as a small HTML table (Jupyter shows it for the result)."""
        import html

        s = self.summary.row(0, named=True)
        cells = [
            (name, self._cell(s[name])) for name in self.HEADLINE_COLUMNS if s.get(name) is not None
        ]
        derived = self.instance.derived_from
        if derived is not None:
            cells.insert(1, ("changes", f"{derived[0]} with {changes_text(derived[1])}"))
        rows = "".join(
            f"<tr><th style='text-align:left'>{html.escape(name)}</th>"
            f"<td>{html.escape(text)}</td></tr>"
            for name, text in cells
        )
        return f"<table><caption>PlanResult</caption>{rows}</table>"

    @staticmethod
    def _cell(value: Any) -> str:
        """A summary value as a table cell: thousands separated, fractions to 3 digits."""
        if isinstance(value, float):
            return f"{value:,.0f}" if abs(value) >= 1000 else f"{value:.3g}"
        if isinstance(value, int):
            return f"{value:,}"
        return str(value)

    def to_pandas(self) -> Any:
        """The summary row as a pandas DataFrame (needs the ``pandas`` extra: pandas, pyarrow)."""
        for module in ("pandas", "pyarrow"):
            require_extra(module, "PlanResult.to_pandas()")
        return self.summary.to_pandas()

    @property
    def family_tables(self) -> dict[str, pl.DataFrame]:
        """The design's family's own tables (``Family.extra_tables``), by name; {} without one."""
        d, family = self.design, self.family
        return family.extra_tables(d) if d is not None and isinstance(family, Tables) else {}

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the headline figures (the `summary` columns of docs/reports.md)."""
        s = self.search
        return summary_table(
            self.instance, s.status, s.design, s.bound_usd, s.wall_s, self.sim, self.reliability
        )

    @property
    def alternatives(self) -> pl.DataFrame:
        """The best design of every structure and switch option, side by side."""
        from planner.alternatives import alternatives_table

        return alternatives_table(self.search, self.family_sims)

    @property
    def alternatives_sim(self) -> pl.DataFrame:
        """Each family's best design simulated (healthy): one row per family, traffic, routing."""
        from planner.alternatives import alternatives_sim_table, family_bests

        return alternatives_sim_table(family_bests(self.search), self.family_sims)

    @property
    def workload(self) -> pl.DataFrame | None:
        """The collectives of one training iteration on the design (None without a workload)."""
        from planner.report.tables import workload_step

        step = workload_step(self.instance, self.design, self.sim)
        return None if step is None else step[0]

    @property
    def step(self) -> StepTime | None:
        """The step of the workload on the design, once the simulation timed every collective."""
        from planner.report.tables import workload_step

        step = workload_step(self.instance, self.design, self.sim)
        return None if step is None else step[1]

    @property
    def bom(self) -> pl.DataFrame:
        """Bill of materials of the chosen design (empty when none)."""
        from planner.design import BOM_SCHEMA

        return self.design.bom() if self.design else pl.DataFrame(schema=BOM_SCHEMA)

    @property
    def sim_collectives(self) -> pl.DataFrame:
        """Simulated collectives and patterns: time, algbw, busbw, fraction of ideal and of the bound."""
        from planner.sim.sim_tables import COLLECTIVES_SCHEMA

        return self.sim.collectives if self.sim else pl.DataFrame(schema=COLLECTIVES_SCHEMA)

    @property
    def sim_links(self) -> pl.DataFrame:
        """Link utilisation distribution per tier, direction, pattern and routing."""
        from planner.sim.sim_tables import LINKS_SCHEMA as SIM_LINKS_SCHEMA

        return self.sim.links if self.sim else pl.DataFrame(schema=SIM_LINKS_SCHEMA)

    @property
    def sim_link_histogram(self) -> pl.DataFrame:
        """Directed links per utilisation bin, per pattern, routing, tier and direction."""
        from planner.sim.sim_tables import LINK_HISTOGRAM_SCHEMA

        return self.sim.link_histogram if self.sim else pl.DataFrame(schema=LINK_HISTOGRAM_SCHEMA)

    @property
    def sim_failures(self) -> pl.DataFrame:
        """Throughput under named failures and Monte Carlo draws, against the healthy fabric."""
        from planner.sim.sim_tables import FAILURES_SCHEMA

        return self.sim.failures if self.sim else pl.DataFrame(schema=FAILURES_SCHEMA)

    @property
    def links(self) -> pl.DataFrame:
        """Link classes of the chosen design (empty when none)."""
        from planner.design import LINKS_SCHEMA

        return self.design.links_table() if self.design else pl.DataFrame(schema=LINKS_SCHEMA)

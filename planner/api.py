"""The public Python API: everything the CLI does, as functions returning plain objects.

Importing this module is cheap: the solver libraries (OR-Tools, PuLP/HiGHS, SciPy) and the
modules that use them load on the first call that needs them (``_load_solvers``), so a command
whose input is bad is reported before they load. The CLI imports nothing else from the planner.

Planning: ``plan``, ``evaluate``, ``compare_optics``, ``compare_fabrics``, ``plan_torus``,
``simulate``, ``validate``, ``verify_demand``, ``verify_for`` (the ``[verify]`` section with
the workload's traffic). Input: ``load_instance``, ``load_catalog``,
``catalog_for``, ``load_design``, ``parse_override``, ``DEFAULT_CATALOG``. Output:
``write_reports``, ``write_table``, ``write_sim_reports``, ``write_set``, ``prepare_outdir``,
``claimed``, ``parse_formats``, ``output_formats`` (the ``--formats`` written), ``export_htsim``,
``headline``, ``bandwidth_loop_lines``, ``catalog_table``, ``catalog_entries``,
``catalog_csv``, ``catalog_lines``,
``json_text``, ``safe_name``. Types: ``Instance``, ``Catalog``, ``Verify``, ``Design``,
``Status``, ``InputError``, ``PlanResult``. Running a command: ``interruptible`` (Ctrl-C stops
CP-SAT solves too).
"""

from __future__ import annotations

import importlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import polars as pl

from models.status import Status as Status
from planner.checks import check_instance, check_run
from planner.deadline import Deadline as Deadline
from planner.deadline import cut_note
from planner.deadline import cut_notes as cut_notes
from planner.design import Design as Design
from planner.errors import InputError as InputError
from planner.families import (
    CLOS,
    FAMILIES,
    OCS_DIRECT,
    family_of,
    read_design,
    search_families,
)
from planner.interrupt import interruptible as interruptible
from planner.interrupt import patch_cp_sat
from planner.loading import DEFAULT_CATALOG as DEFAULT_CATALOG
from planner.loading import changes_text as changes_text
from planner.loading import derived_instance as derived_instance
from planner.loading import load_catalog as load_catalog
from planner.loading import load_instance as _load_instance
from planner.loading import parse_override as parse_override
from planner.loading import read_text
from planner.output import Writer, text_writer
from planner.output import claimed as claimed
from planner.output import json_text as json_text
from planner.output import output_formats as output_formats
from planner.output import parse_formats as parse_formats
from planner.output import safe_name as safe_name
from planner.output import write_set as write_set
from planner.quiet import silence_highs_banner
from planner.report import bandwidth_loop_lines as bandwidth_loop_lines
from planner.report import catalog_csv as catalog_csv
from planner.report import catalog_entries as catalog_entries
from planner.report import catalog_lines as catalog_lines
from planner.report import catalog_table as catalog_table
from planner.report import headline as headline
from planner.report import idle_pricing_lines as idle_pricing_lines
from planner.report import prepare_outdir as prepare_outdir
from planner.report import summary_table
from planner.report import time_limit_advice as time_limit_advice
from planner.report import write_reports as write_reports
from planner.report import write_sim_reports as _write_sim_reports
from planner.report import write_table as write_table
from planner.schema.catalog import Catalog as Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S as DEFAULT_TIME_LIMIT_S
from planner.schema.instance import Instance as Instance
from planner.schema.verify import Verify as Verify
from planner.validation import Violation, validate_design
from planner.workload.step import verify_with_workload

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from planner.bandwidth_loop import LoopResult, Planned
    from planner.families.ocs_torus.pod import TorusPlan
    from planner.family_roles import Family
    from planner.idle_pricing import PricedSearch
    from planner.sim.fabric import Fabric
    from planner.sim.sim_tables import SimResult
    from planner.sim.simulate import SimProgress
    from planner.sizing import Progress, SizingResult
    from planner.workload.step import StepTime


#: The optional extras (pyproject's ``[project.optional-dependencies]``) by module they bring.
EXTRAS = {"distributed": "dask", "pandas": "pandas", "pyarrow": "pandas"}


def require_extra(module: str, what: str) -> ModuleType:
    """Import an optional dependency; InputError naming the extra to install when it is missing.

    ``what`` names what the user asked for (``--dask``, ``PlanResult.to_pandas()``).
    """
    extra = EXTRAS[module]
    try:
        return importlib.import_module(module)
    except ImportError:
        raise InputError(
            f"{what} needs {module}, which comes with the optional '{extra}' extra: install "
            f"it with pip install 'fabric-planner[{extra}]' (in a clone: uv sync --extra {extra})"
        ) from None


#: What ``_load_solvers`` can load: the search (CP-SAT), the simulator (SciPy), the OCS circuit
#: engineering (CP-SAT, PuLP/HiGHS, networkx) and the torus pod (networkx, scipy.stats).
SOLVER_PARTS = {
    "search": "planner.sizing",
    "sim": "planner.sim.simulate",
    "ocs": "planner.families.ocs_direct.circuits",
    "torus": "planner.families.ocs_torus.pod",
}


def _load_solvers(*parts: str) -> None:
    """Load the parts of the planner a call needs (``SOLVER_PARTS``; all of them without any).

    Each loads once per process and only when asked for, so a command pays for what it uses: a
    Clos plan never loads the OCS models, a plan without verification never loads the simulator.
    Once OCS is loaded, HiGHS's banner is kept off stdout, where it would land in the middle of
    --json output (``planner/quiet.py``); once CP-SAT is, it is patched so Ctrl-C can stop its
    solves if a command asked for it (``planner/interrupt.py``).
    """
    for part in parts or tuple(SOLVER_PARTS):
        if part == "ocs":
            silence_highs_banner()
        importlib.import_module(SOLVER_PARTS[part])
    patch_cp_sat()


def _parts_for(inst: Instance, verifying: bool) -> tuple[str, ...]:
    """The solver parts a plan of ``inst`` needs: its families' and the simulator's if it verifies."""
    own = dict.fromkeys(g for f in _families(inst) for g in f.solver_groups)
    return ("search", *(("sim",) if verifying else ()), *own)


def _fabric(design: Design) -> Fabric:
    """One plane of the design as the simulator's graph, built by the design's family."""
    return family_of(design.family).build_fabric(design)


def _families(inst: Instance) -> list[Family]:
    """The instance's families, resolved once (``planner.families.search_families``).

    ``search.families`` and ``search.pin.family`` are checked against the registry when the
    instance is read; an instance built in code with an unknown name is bad input here.
    """
    try:
        return search_families(inst)
    except ValueError as exc:
        raise InputError(f"search.families: {exc}") from None


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
    idle_pricing: PricedSearch[Any] | None = None
    """Under ``objective.idle_gpu_weight > 0``: every rung of the ladder of allowed ratios, planned
    and simulated, and the one of least network + idle GPU cost (``planner.idle_pricing``);
    ``instance`` is then the chosen rung's."""

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
    def family(self) -> Family | None:
        """The design's family, resolved from the registry (None without a design)."""
        return None if self.design is None else family_of(self.design.family)

    @property
    def family_tables(self) -> dict[str, pl.DataFrame]:
        """The design's family's own tables (``Family.extra_tables``), by name; {} without one."""
        d, family = self.design, self.family
        return {} if d is None or family is None else family.extra_tables(d)

    @property
    def summary(self) -> pl.DataFrame:
        """One row: the headline figures (the README's `summary` columns)."""
        s = self.search
        return summary_table(self.instance, s.status, s.design, s.bound_usd, s.wall_s, self.sim)

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
        from planner.report import workload_step

        step = workload_step(self.instance, self.design, self.sim)
        return None if step is None else step[0]

    @property
    def step(self) -> StepTime | None:
        """The step of the workload on the design, once the simulation timed every collective."""
        from planner.report import workload_step

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


def check_workload_fits(inst: Instance, design: Design) -> None:
    """The instance's workload occupies exactly the GPUs its traffic is simulated on.

    tensor x pipeline x data = the GPUs of the design's simulated fabric

    That is the design's ``gpus`` for every family but a torus pod, whose simulation runs on
    its largest slice. ``planner.checks.check_workload`` holds the same rule against
    ``cluster.gpus`` before a solve; ``simulate --instance`` pairs a saved design with any
    instance, so the rule is checked again against the design: a workload written for 128 GPUs
    on a 256-GPU design would otherwise get a step time it cannot have.
    """
    work = inst.workload
    if work is None:
        return
    par = work.parallelism
    fabric_gpus = family_of(design.family).build_fabric(design).gpus
    if par.gpus == fabric_gpus:
        return
    where = (
        f"the design has {design.gpus:,} GPUs"
        if fabric_gpus == design.gpus
        else f"the design's simulation runs on {fabric_gpus:,} of its {design.gpus:,} GPUs"
    )
    raise InputError(
        f"workload.parallelism: tensor x pipeline x data = {par.tensor} x {par.pipeline} x "
        f"{par.data} = {par.gpus:,} GPUs, but {where} ({design.family}): the parallel degrees "
        "must multiply to the GPUs the workload runs on; give a workload written for this design"
    )


def verify_for(inst: Instance, design: Design) -> Verify:
    """The ``[verify]`` section a design of ``inst`` is simulated under: the workload's included.

    With a ``[workload]``, one call of each collective of its iteration is simulated
    (``planner.workload.step.verify_with_workload``): instead of the default traffic when
    ``[verify]`` lists none, after it when it does. Groups are placed in the design's domain.
    A workload that does not occupy the design's GPUs is bad input (``check_workload_fits``).
    """
    check_workload_fits(inst, design)
    return verify_with_workload(inst.verify, inst.workload, design.scale_up.gpus)


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance file."""
    return _load_instance(path, families=tuple(FAMILIES))


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
    deadline: Deadline | None = None,
) -> PlanResult:
    """Choose the cheapest fabric (capex + lifetime energy) that meets the instance's constraints.

    The chosen design is then simulated under the instance's ``[verify]`` section, unless
    ``verify`` is False (or None and the instance turns verification off).

    ``time_limit_s`` bounds the whole call: the search, the post-solve steps (at least
    ``planner.deadline.MIN_STEP_S`` each, as the design needs them) and the simulation, whose
    steps not started in time are listed in ``sim.cut`` (verdict ``incomplete``). ``deadline``,
    when given, is a command's shared end instead (the search then gets what is left of it).

    Progress, both optional and called from the calling thread between steps:
    ``progress(done, total, label)`` after every sub-solve of the search (``done`` of ``total``
    structures, the last being ``label``), and ``sim_progress(label)`` after every simulation
    step (a bound, a traffic under a routing, a failure scenario, a Monte Carlo trial). A study
    of many plans (``planner.study.sweep``) reports per scenario instead:
    ``progress(done, total, scenario)``.
    """
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    check_instance(inst, catalog)
    verifying = inst.verify.enabled if verify is None else verify
    _load_solvers(*_parts_for(inst, verifying))
    check_run(inst, verifying)
    if inst.objective.idle_gpu_weight > 0:
        return _plan_priced(
            inst, catalog, time_limit_s, progress, alternatives, sim_progress, deadline
        )
    if verifying and inst.search.until_verified:
        return _plan_until_verified(
            inst, catalog, time_limit_s, progress, alternatives, sim_progress, deadline
        )
    result, reconfiguration = _search(inst, catalog, time_limit_s, progress, alternatives, deadline)
    sim = None
    family_sims: dict[str, SimResult] = {}
    if result.design is not None and verifying:
        sim, family_sims = _verify(inst, catalog, result, sim_progress, deadline)
    return PlanResult(
        inst,
        result.status,
        result.design,
        result.explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
    )


def _search(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    deadline: Deadline,
) -> tuple[SizingResult, pl.DataFrame | None]:
    """The search and the chosen design's post-solve steps: the result and its reconfiguration.

    The post-solve steps and the search tables share ``deadline``: what they cut is said in the
    design's notes (``planner.deadline.cut_notes``), a table left out included.
    """
    from planner.sizing import search

    result = search(
        inst,
        catalog,
        _families(inst),
        time_limit_s=min(time_limit_s, deadline.step_s()),
        progress=progress,
        alternatives=alternatives,
    )
    reconfiguration = None
    if result.design is not None:
        family = family_of(result.design.family)
        design = family.after_solve(result.design, inst, deadline, verify_demand)
        tables = family.search_tables(design, deadline)
        left_out = tuple(
            cut_note(f"the {name} table was left out: the time limit passed before it was done")
            for name, table in tables.items()
            if table is None
        )
        if left_out:
            design = replace(design, notes=design.notes + left_out)
        result = replace(result, design=design)
        reconfiguration = tables.get("reconfiguration")
    return result, reconfiguration


def _verify(
    inst: Instance,
    catalog: Catalog,
    result: SizingResult,
    sim_progress: SimProgress | None,
    deadline: Deadline,
    sim: SimResult | None = None,
) -> tuple[SimResult, dict[str, SimResult]]:
    """The chosen design simulated under [verify] (unless ``sim`` is given), and the families'."""
    from planner.sim.simulate import simulate as _simulate

    assert result.design is not None
    family_sims: dict[str, SimResult] = {}
    try:
        if sim is None:
            verify = verify_for(inst, result.design)
            sim = _simulate(
                result.design,
                verify,
                fabric=_fabric(result.design),
                progress=sim_progress,
                deadline=deadline,
            )
        if len(inst.search.families) > 1:
            family_sims = _family_sims(inst, catalog, result, sim, sim_progress, deadline)
    except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
        raise InputError(f"verify: {exc}") from None
    return sim, family_sims


def _plan_and_simulate(
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> tuple[
    Callable[[Instance], Planned[tuple[SizingResult, pl.DataFrame | None]]],
    Callable[[Instance, Design], SimResult],
]:
    """The plan and the simulation of one iteration of a loop over instances.

    Used by the bandwidth loop and the priced ladder; both share the command's deadline.
    """
    from planner.bandwidth_loop import Planned
    from planner.sim.simulate import simulate as _simulate

    def plan_once(current: Instance) -> Planned[tuple[SizingResult, pl.DataFrame | None]]:
        found = _search(current, catalog, time_limit_s, progress, alternatives, deadline)
        return Planned(found, found[0].design, found[0].explanation)

    def simulate_once(current: Instance, design: Design) -> SimResult:
        try:
            verify = verify_for(current, design)
            return _simulate(
                design, verify, fabric=_fabric(design), progress=sim_progress, deadline=deadline
            )
        except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
            raise InputError(f"verify: {exc}") from None

    return plan_once, simulate_once


def _plan_until_verified(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> PlanResult:
    """``plan`` under ``search.until_verified``: the bandwidth loop, then the last plan's tables.

    Every iteration's search gets what is left of the time limit (capped at ``time_limit_s``);
    the simulations share the same deadline.
    """
    from planner.bandwidth_loop import run_loop

    plan_once, simulate_once = _plan_and_simulate(
        catalog, time_limit_s, progress, alternatives, sim_progress, deadline
    )

    loop = run_loop(inst, plan_once, simulate_once)
    result, reconfiguration = loop.planned.result
    last = loop.instance
    sim: SimResult | None = None
    family_sims: dict[str, SimResult] = {}
    if result.design is not None:
        sim, family_sims = _verify(last, catalog, result, sim_progress, deadline, loop.sim)
    explanation = result.explanation
    if result.design is None:
        explanation = (
            f"bandwidth loop: no design after tightening max_oversubscription to "
            f"{last.constraints.max_oversubscription}",
            *explanation,
        )
    return PlanResult(
        last,
        result.status,
        result.design,
        explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
        bandwidth_loop=loop,
    )


def _plan_priced(
    inst: Instance,
    catalog: Catalog,
    time_limit_s: float,
    progress: Progress | None,
    alternatives: bool,
    sim_progress: SimProgress | None,
    deadline: Deadline,
) -> PlanResult:
    """``plan`` with idle GPU time priced: the ladder walk, then the chosen rung's tables."""
    from planner.idle_pricing import run_priced
    from planner.report import workload_step

    plan_once, simulate_once = _plan_and_simulate(
        catalog, time_limit_s, progress, alternatives, sim_progress, deadline
    )

    def step_of(current: Instance, design: Design, sim: SimResult) -> StepTime | None:
        found = workload_step(current, design, sim)
        return None if found is None else found[1]

    priced = run_priced(inst, plan_once, simulate_once, step_of)
    chosen = priced.chosen
    if chosen is None or chosen.planned is None or chosen.design is None:
        last = priced.rungs[0]
        assert last.planned is not None
        result, reconfiguration = last.planned.result
        return PlanResult(
            inst,
            result.status,
            None,
            result.explanation,
            result,
            reconfiguration=reconfiguration,
            idle_pricing=priced,
        )
    result, reconfiguration = chosen.planned.result
    current = inst.with_changes({"constraints.max_oversubscription": list(chosen.caps)})
    sim, family_sims = _verify(current, catalog, result, sim_progress, deadline, chosen.sim)
    return PlanResult(
        current,
        result.status,
        result.design,
        result.explanation,
        result,
        sim,
        reconfiguration=reconfiguration,
        family_sims=family_sims,
        idle_pricing=priced,
    )


def _family_sims(
    inst: Instance,
    catalog: Catalog,
    result: SizingResult,
    sim: SimResult,
    progress: SimProgress | None,
    deadline: Deadline,
) -> dict[str, SimResult]:
    """The best design of every other family simulated under the [verify] traffic, healthy.

    Failures and Monte Carlo trials are left out (they judge the chosen design); what the time
    limit cuts shows as the family's simulation being incomplete.
    """
    from planner.alternatives import design_of_outcome, family_bests
    from planner.sim.simulate import simulate as _simulate
    from planner.sizing.search_loop import TIE_BREAK_TIME_S

    assert result.design is not None
    healthy_update = {"failures": [], "single_switch_failures": False, "monte_carlo_trials": 0}
    sims = {result.design.family: sim}
    for name, outcome in family_bests(result).items():
        if name in sims:
            continue
        design = design_of_outcome(inst, outcome, catalog, min(TIE_BREAK_TIME_S, deadline.step_s()))
        design = family_of(name).after_solve(design, inst, deadline, verify_demand)
        say = None if progress is None else (lambda text, n=name: progress(f"{n}: {text}"))
        healthy = verify_for(inst, design).model_copy(update=healthy_update)
        sims[name] = _simulate(
            design, healthy, fabric=_fabric(design), progress=say, deadline=deadline
        )
    return sims


def verify_demand(design: Design, verify: Verify) -> npt.NDArray[np.float64]:
    """Block-level demand of a [verify] section's traffic: bytes from block a to block b.

    The diagonal holds the bytes that stay inside a block: they use no circuit but are part of
    what the block injects, which scales the throughput (``models.ocs_topology``, Units).
    """
    _load_solvers("sim", "ocs")
    import numpy as np

    from planner.families.ocs_direct import circuits as ocs
    from planner.sim.traffic_kinds import build_traffic

    n = design.pods
    total = np.zeros((n, n))
    blocks = ocs.block_of_gpus(design)
    for spec in verify.traffic:
        try:
            traffic = build_traffic(
                spec,
                design.gpus,
                design.gpus_per_node,
                verify.seed,
                domain_gpus=design.scale_up.gpus,
            )
        except ValueError as exc:
            raise InputError(f"verify: {exc}") from None
        for phase in traffic.phases:
            a, b = blocks[phase.src], blocks[phase.dst]
            np.add.at(total, (a, b), phase.size_bytes * phase.repeat)
    return total


def simulate(
    design: Design,
    verify: Verify | None = None,
    *,
    progress: SimProgress | None = None,
    time_limit_s: float | None = None,
) -> SimResult:
    """Simulate a design under traffic, routing and failures (an instance's ``[verify]`` section)."""
    _load_solvers("sim", *family_of(design.family).solver_groups)
    from planner.sim.simulate import simulate as _simulate

    deadline = Deadline.after(time_limit_s)
    return _simulate(
        design, verify or Verify(), fabric=_fabric(design), progress=progress, deadline=deadline
    )


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
    deadline: Deadline | None = None,
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
        deadline=deadline,
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
    deadline: Deadline | None = None,
) -> OpticsComparison:
    """Plan the instance with pluggable optics only, with LPO allowed and with CPO allowed.

    Each scenario is a full plan (switches, placement and media chosen together) restricted to
    what it allows; ``table`` has one row per scenario (``planner.optics.COMPARISON_SCHEMA``).
    The scenarios share ``time_limit_s`` (or ``deadline``): each gets an equal part of what is
    left when it starts.
    """
    deadline = deadline or Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    _load_solvers("search")
    from planner.optics import SCENARIOS, comparison_table, scenario_instance

    results = {}
    for done, name in enumerate(SCENARIOS):
        results[name] = plan(
            scenario_instance(inst, name),
            catalog=catalog,
            time_limit_s=deadline.step_s() / (len(SCENARIOS) - done),
            progress=progress,
            alternatives=False,
            verify=False,
        )
    table = comparison_table({name: r.search for name, r in results.items()})
    return OpticsComparison(table, results)


#: Columns of the electrical-vs-OCS comparison: one row per fabric and traffic.
FABRIC_COMPARISON_SCHEMA: dict[str, Any] = {
    "fabric": pl.Utf8,
    "circuits_for": pl.Utf8,
    "status": pl.Utf8,
    "switch_models": pl.Utf8,
    "switches": pl.Int64,
    "ocs_devices": pl.Int64,
    "capex_usd": pl.Float64,
    "power_kw": pl.Float64,
    "tco_usd": pl.Float64,
    "max_switch_hops": pl.Int64,
    "throughput_scale": pl.Float64,
    "traffic": pl.Utf8,
    "routing": pl.Utf8,
    "fraction_of_ideal": pl.Float64,
}


@dataclass(frozen=True)
class FabricComparison:
    """Electrical spine vs OCS direct-connect: the table and every fabric's result."""

    table: pl.DataFrame
    results: dict[str, PlanResult]


def compare_fabrics(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    progress: Progress | None = None,
    sim_progress: SimProgress | None = None,
) -> FabricComparison:
    """Price and simulate the instance as an electrical Clos and as OCS direct-connect.

    Three fabrics: the best electrical Clos; the best direct-connect design with its circuits
    engineered for uniform demand; and the same devices with the circuits engineered for the
    block-level demand of the instance's ``[verify]`` traffic. Each is simulated under every
    ``[verify]`` traffic (healthy fabric), one row per fabric, traffic and routing.

    ``time_limit_s`` bounds the whole comparison: the two searches and the engineering each get
    an equal part of what is left when they start (at least ``planner.deadline.MIN_STEP_S``),
    and the simulations start only while time is left: a fabric none of whose traffic was
    simulated has one row without traffic or fraction, and each result's ``sim.cut`` lists what
    was left out.
    """
    deadline = Deadline.after(time_limit_s)
    catalog = catalog or catalog_for(inst)
    _load_solvers("search", "sim", "ocs")
    from planner.families.ocs_direct import circuits as ocs
    from planner.sim.simulate import simulate as _simulate

    fabrics = {
        "electrical": inst.with_changes({"search.families": [CLOS]}),
        OCS_DIRECT: inst.with_changes(
            {"search.families": [OCS_DIRECT], "search.ocs_demand": "uniform"}
        ),
    }
    results: dict[str, PlanResult] = {}
    # Heavy steps left: the two searches and the engineering of the circuits.
    for done, (name, variant) in enumerate(fabrics.items()):
        results[name] = plan(
            variant,
            catalog=catalog,
            time_limit_s=deadline.step_s() / (3 - done),
            progress=progress,
            alternatives=False,
            verify=False,
        )
    base = results[OCS_DIRECT]
    if base.design is not None:
        demand = verify_demand(base.design, inst.verify)
        step = Deadline.after(deadline.step_s(), deadline.clock)
        engineered = ocs.engineer(base.design, demand, deadline=step)
        design = ocs.with_circuits(base.design, engineered.circuits)
        design = replace(design, notes=design.notes + engineered.cut)
        results["ocs_engineered"] = replace(
            base, design=design, search=replace(base.search, design=design)
        )
    rows: list[dict[str, Any]] = []
    for name, result in results.items():
        d = result.design
        row: dict[str, Any] = dict.fromkeys(FABRIC_COMPARISON_SCHEMA)
        row.update(fabric=name, status=result.status.value)
        if d is None:
            rows.append(row)
            continue
        try:
            sim = _simulate(
                d,
                verify_for(inst, d).model_copy(
                    update={
                        "failures": [],
                        "single_switch_failures": False,
                        "monte_carlo_trials": 0,
                    }
                ),
                fabric=_fabric(d),
                progress=sim_progress,
                deadline=deadline,
            )
        except ValueError as exc:  # traffic that does not fit the cluster, as in plan()
            raise InputError(f"verify: {exc}") from None
        results[name] = replace(result, sim=sim)
        row.update(
            circuits_for={"electrical": None, OCS_DIRECT: "uniform"}.get(name, "verify traffic"),
            switch_models=" ".join(f"{t.role}={t.switch_model}" for t in d.tiers),
            switches=d.switches,
            ocs_devices=d.ocs_devices,
            capex_usd=d.capex_usd,
            power_kw=d.power_w / 1000.0,
            tco_usd=d.tco_usd,
            max_switch_hops=d.max_switch_hops,
            throughput_scale=family_of(d.family).throughput_scale(d, inst, verify_demand),
        )
        healthy = sim.collectives.filter(pl.col("scenario") == "healthy")
        if healthy.is_empty():  # the time limit cut every simulation: the fabric, unsimulated
            rows.append(row)
        for r in healthy.iter_rows(named=True):
            rows.append(
                row
                | {
                    "traffic": r["pattern"],
                    "routing": r["routing"],
                    "fraction_of_ideal": r["fraction_of_ideal"],
                }
            )
    return FabricComparison(pl.DataFrame(rows, schema=FABRIC_COMPARISON_SCHEMA), results)


def plan_torus(
    inst: Instance,
    *,
    catalog: Catalog | None = None,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    deadline: Deadline | None = None,
) -> TorusPlan:
    """Size a TPU-style torus pod ([torus] section): cubes, spares, OCS, slices, a cube failure.

    ``time_limit_s`` (or ``deadline``, a command's shared end) bounds the chip-by-chip torus
    checks: a check not run leaves ``torus_ok`` null and is listed in ``TorusPlan.cut``.
    """
    deadline = deadline or Deadline.after(time_limit_s)
    _load_solvers("torus")
    from planner.families.ocs_torus.pod import plan_torus as _plan_torus

    return _plan_torus(inst, catalog or catalog_for(inst), deadline)


def validate(design: Design, catalog: Catalog | None = None) -> list[Violation]:
    """Independent check of a design: ports, spreads, ratios, hops, failure tolerance, totals."""
    return validate_design(design, family_of(design.family), catalog)


def load_design(path: Path) -> Design:
    """Read a design.json written by ``solve`` or ``evaluate``; InputError when it is not one."""
    text = read_text(path)
    try:
        data: Any = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", source=str(path)) from None
    if not isinstance(data, dict):
        raise InputError(
            "expected a JSON object written by fabric-planner (design.json)", source=str(path)
        )
    try:
        return read_design(data)
    except KeyError as exc:
        raise InputError(f"not a design.json: missing field {exc}", source=str(path)) from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise InputError(f"not a design.json: {exc}", source=str(path)) from None


def export_htsim(
    design: Design, verify: Verify, *, note: Callable[[str], None] | None = None
) -> dict[str, Writer]:
    """Htsim topology (.topo) and connection matrix (.cm) of the first traffic's first phase.

    Returns the files by name, for ``write_set`` or ``write_sim_reports(extra=...)``; they are
    named after the design's instance, made safe (``safe_name``). A topology htsim cannot take
    is left out and said through ``note``; a connection matrix that cannot be written is bad
    input (InputError).
    """
    _load_solvers("sim")
    from planner.sim.htsim import connection_matrix_text, topology_text
    from planner.sim.traffic_kinds import build_traffic

    fabric = family_of(design.family).build_fabric(design)
    try:
        traffic = build_traffic(
            verify.traffic[0],
            fabric.gpus,
            design.gpus_per_node,
            verify.seed,
            domain_gpus=design.scale_up.gpus,
        )
    except ValueError as exc:  # traffic that does not fit the cluster (group sizes, ...)
        raise InputError(f"verify: {exc}") from None
    phase = traffic.phases[0]
    stem = safe_name(design.instance)
    files = {}
    try:
        files[f"{stem}.topo"] = text_writer(
            topology_text(
                fabric,
                # The design's worst link into each tier (at least 1 ns: htsim rejects 0) and
                # its switches' latency.
                link_latency_ns=[max(1, math.ceil(c.latency_ns)) for c in design.link_classes],
                switch_latency_ns=[t.latency_ns for t in design.tiers],
            )
        )
    except ValueError as exc:
        if note is not None:
            note(f"htsim topology not written: {exc}")
    try:
        cm = connection_matrix_text(fabric, phase.src, phase.dst, phase.size_bytes / fabric.planes)
    except ValueError as exc:
        raise InputError(f"htsim: {exc}") from None
    files[f"{stem}.cm"] = text_writer(cm)
    return files


def write_sim_reports(sim: SimResult, outdir: Path, design: Design, **options: Any) -> list[Path]:
    """``planner.report.write_sim_reports`` with the design's family handed in."""
    return _write_sim_reports(sim, outdir, design, family=family_of(design.family), **options)

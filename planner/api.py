"""The public Python API: everything the CLI does, as functions returning plain objects.

Importing this module is cheap: the solver libraries (OR-Tools, PuLP/HiGHS, SciPy) and the
modules that use them load on the first call that needs them (``_load_solvers``), so a command
whose input is bad is reported before they load. The CLI imports nothing else from the planner.

Planning: ``plan``, ``evaluate``, ``compare_optics``, ``compare_fabrics``, ``plan_torus``,
``plan_life`` (an instance's ``[life]``: phases, generations, refresh; ``write_life``),
``plan_mix`` (an instance's ``[jobs]``: the mix placed and simulated per family; ``write_mix``),
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

import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from models.status import Status as Status
from planner.catalog_tables import catalog_csv as catalog_csv
from planner.catalog_tables import catalog_entries as catalog_entries
from planner.catalog_tables import catalog_lines as catalog_lines
from planner.catalog_tables import catalog_table as catalog_table
from planner.comparisons import FabricComparison as FabricComparison
from planner.comparisons import OpticsComparison as OpticsComparison
from planner.comparisons import compare_fabrics as compare_fabrics
from planner.comparisons import compare_optics as compare_optics
from planner.deadline import Deadline as Deadline
from planner.deadline import cut_notes as cut_notes
from planner.design import Design as Design
from planner.errors import InputError as InputError
from planner.families import (
    FAMILIES,
    fabric_of,
    family_of,
)
from planner.family_roles import NeedsSolvers
from planner.interrupt import interruptible as interruptible
from planner.life import LifePlan as LifePlan
from planner.life import plan_life as plan_life
from planner.life.plan import life_of as life_of
from planner.life.report import write_life as write_life
from planner.loading import DEFAULT_CATALOG as DEFAULT_CATALOG
from planner.loading import changes_text as changes_text
from planner.loading import derived_instance as derived_instance
from planner.loading import load_catalog as load_catalog
from planner.loading import load_instance as _load_instance
from planner.loading import parse_override as parse_override
from planner.mix import jobs_of as jobs_of
from planner.output import Writer, text_writer
from planner.output import claimed as claimed
from planner.output import json_text as json_text
from planner.output import output_formats as output_formats
from planner.output import parse_formats as parse_formats
from planner.output import safe_name as safe_name
from planner.output import write_set as write_set
from planner.planning import catalog_for as catalog_for
from planner.planning import check_workload_fits as check_workload_fits
from planner.planning import load_design as load_design
from planner.planning import plan as plan
from planner.planning import verify_demand as verify_demand
from planner.planning import verify_for as verify_for
from planner.reliability.text import failure_lines as failure_lines
from planner.reliability.text import options_lines as options_lines
from planner.report import prepare_outdir as prepare_outdir
from planner.report import write_reports as write_reports
from planner.report import write_sim_reports as _write_sim_reports
from planner.report import write_table as write_table
from planner.report.markdown import bandwidth_loop_lines as bandwidth_loop_lines
from planner.report.markdown import headline as headline
from planner.report.markdown import idle_pricing_lines as idle_pricing_lines
from planner.report.markdown import time_limit_advice as time_limit_advice
from planner.report.plan_result import PlanResult as PlanResult
from planner.schema.catalog import Catalog as Catalog
from planner.schema.instance import DEFAULT_TIME_LIMIT_S as DEFAULT_TIME_LIMIT_S
from planner.schema.instance import Instance as Instance
from planner.schema.verify import Verify as Verify
from planner.solver_parts import load_solvers
from planner.solver_parts import require_extra as require_extra
from planner.validation import Violation, validate_design

if TYPE_CHECKING:
    from planner.families.ocs_torus.pod import TorusPlan
    from planner.mix.plan import MixPlan
    from planner.sim.sim_tables import SimResult
    from planner.sim.simulate import SimProgress
    from planner.sizing import Progress


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance file."""
    return _load_instance(path, families=tuple(FAMILIES))


def simulate(
    design: Design,
    verify: Verify | None = None,
    *,
    progress: SimProgress | None = None,
    time_limit_s: float | None = None,
) -> SimResult:
    """Simulate a design under traffic, routing and failures (an instance's ``[verify]`` section)."""
    family = family_of(design.family)
    load_solvers("sim", *(family.solver_groups if isinstance(family, NeedsSolvers) else ()))
    from planner.sim.simulate import simulate as _simulate

    deadline = Deadline.after(time_limit_s)
    return _simulate(
        design, verify or Verify(), fabric=fabric_of(design), progress=progress, deadline=deadline
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


def plan_mix(
    inst: Instance,
    *,
    time_limit_s: float = DEFAULT_TIME_LIMIT_S,
    deadline: Deadline | None = None,
    progress: Callable[[str], None] | None = None,
) -> MixPlan:
    """Plan each family for the instance's [jobs] mix and choose (``planner.mix.plan``)."""
    load_solvers("sim")
    from planner.mix.plan import plan_mix as _plan_mix

    return _plan_mix(inst, time_limit_s=time_limit_s, deadline=deadline, progress=progress)


def write_mix(
    plan: MixPlan, outdir: Path, *, force: bool = False, formats: Any = None
) -> list[Path]:
    """Write a planned mix's tables, picture and ``mix.md`` (``planner.mix.report``)."""
    from planner.mix.report import write_mix as _write_mix

    return _write_mix(plan, outdir, force=force, formats=formats)


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
    load_solvers("torus")
    from planner.families.ocs_torus.pod import plan_torus as _plan_torus

    return _plan_torus(inst, catalog or catalog_for(inst), deadline)


def validate(design: Design, catalog: Catalog | None = None) -> list[Violation]:
    """Independent check of a design: ports, spreads, ratios, hops, failure tolerance, totals."""
    return validate_design(design, family_of(design.family), catalog)


def export_htsim(
    design: Design, verify: Verify, *, note: Callable[[str], None] | None = None
) -> dict[str, Writer]:
    """Htsim topology (.topo) and connection matrix (.cm) of the first traffic's first phase.

    Returns the files by name, for ``write_set`` or ``write_sim_reports(extra=...)``; they are
    named after the design's instance, made safe (``safe_name``). A topology htsim cannot take
    is left out and said through ``note``; a connection matrix that cannot be written is bad
    input (InputError).
    """
    load_solvers("sim")
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

"""Failure rates and what an interruption costs: the catalog's and the instance's [reliability].

The catalog gives, per component class, an annual failure rate (AFR: failures per unit per year)
and a mean time to repair, each with its source; link media carry their own AFR per end
(``Medium.afr``). The instance gives what the job does about a failure: how long a restart
takes, how long a checkpoint takes to write and how often one is written, the failures that
come from outside the network (GPUs, hosts, software), and how often a failure inside the
fabric is not hidden by routing. ``planner.reliability`` turns both and a design into
interruptions per day and goodput.
"""

from __future__ import annotations

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict

#: Days in a mean (Julian) year: the one year every annual rate and lifetime is counted in
#: (``planner.design``, ``planner.reliability``, ``planner.schema.instance`` import it from here).
DAYS_PER_YEAR = 365.25
#: Hours in that year.
HOURS_PER_YEAR = DAYS_PER_YEAR * 24.0

#: Figures of ``ComponentRates`` that must name their source.
RATE_FIGURES = (
    "switch_afr",
    "switch_mttr_hours",
    "nic_afr",
    "cpo_port_afr",
    "cpo_port_mttr_hours",
    "module_mttr_hours",
    "ocs_afr",
    "ocs_mttr_hours",
    "scale_up_switch_afr",
)


class ComponentRates(Strict):
    """Annual failure rates and repair times of the components the catalog's entries share.

    A switch, NIC, OCS or scale-up switch fails as a whole; a co-packaged port fails alone (its
    optical engine and its share of the external laser), taking one link down; a pluggable
    module or cable end fails at its medium's ``afr``.
    """

    switch_afr: float = Field(ge=0, le=10)
    """Failures of one packet switch a year (hardware, power and software crashes alike: any of
    them stops the traffic through it)."""
    switch_mttr_hours: float = Field(gt=0, le=HOURS_PER_YEAR)
    """Mean time a failed switch stays down (reboot, or replacement)."""
    nic_afr: float = Field(ge=0, le=10)
    """Failures of one scale-out NIC a year."""
    cpo_port_afr: float = Field(ge=0, le=10)
    """Failures of one co-packaged optical port a year (engine and laser share)."""
    cpo_port_mttr_hours: float = Field(gt=0, le=HOURS_PER_YEAR)
    """Mean time a failed co-packaged port stays down: its engine is not field-replaceable, so
    the link waits for the switch to be swapped."""
    cpo_laser_afr: float | None = Field(None, ge=0, le=10)
    """Failures of one external laser module a year; it feeds ``cpo_ports_per_laser`` ports,
    which all go down with it (a shared risk). None: the lasers are in ``cpo_port_afr``."""
    cpo_ports_per_laser: int = Field(8, ge=1, le=1024)
    """Ports one external laser module feeds."""
    cpo_laser_mttr_hours: float = Field(2.0, gt=0, le=HOURS_PER_YEAR)
    """Mean time a failed external laser stays down (a front-panel module, swapped hot)."""
    module_mttr_hours: float = Field(gt=0, le=HOURS_PER_YEAR)
    """Mean time a failed pluggable module or cable stays down (a swap by a technician)."""
    ocs_afr: float = Field(ge=0, le=10)
    """Failures of one optical circuit switch a year."""
    ocs_mttr_hours: float = Field(gt=0, le=HOURS_PER_YEAR)
    """Mean time a failed optical circuit switch stays down."""
    scale_up_switch_afr: float = Field(ge=0, le=10)
    """Failures of one scale-up (NVLink) switch a year; its domain's GPUs stop with it."""
    source: dict[str, str]
    """Where each figure came from (a URL, a document, or 'estimate: why')."""

    @model_validator(mode="after")
    def _check(self) -> ComponentRates:
        laser = ("cpo_laser_afr", "cpo_ports_per_laser") if self.cpo_laser_afr is not None else ()
        missing = [f for f in (*RATE_FIGURES, *laser) if not self.source.get(f, "").strip()]
        if missing:
            raise ValueError(
                f"reliability: no source given for {', '.join(missing)} "
                "(a URL, a document, or 'estimate: why')"
            )
        return self


#: Llama 3's unexpected interruptions outside the network, per GPU-year: (419 - 35 - 7) in 54
#: days on 16,384 GPUs (Llama Team, "The Llama 3 Herd of Models", arXiv 2407.21783, Table 5).
LLAMA3_OTHER_PER_GPU_YEAR = (419 - 35 - 7) / 54 * DAYS_PER_YEAR / 16_384


class Reliability(Strict):
    """What a failure costs the job: restarts, checkpoints and the failures outside the network.

    Present (even empty) it turns the reliability figures on for the report; with
    ``objective.idle_gpu_weight`` > 0 and a ``[workload]`` (the GPUs' price) the time lost to
    failures joins the objective and the planner chooses the planes and co-packaged optics with
    it (``planner.reliability.options``).
    """

    restart_minutes: float = Field(20.0, ge=0, le=10_000)
    """From an interruption to training again: detection, rescheduling onto spare nodes,
    loading the last checkpoint."""
    checkpoint_write_s: float = Field(60.0, ge=0, le=100_000)
    """Time training stops to write one checkpoint (the blocking part)."""
    checkpoint_interval_minutes: float | None = Field(None, gt=0, le=1_000_000)
    """Minutes of wall time between checkpoints; the Young/Daly optimum when absent."""
    other_interruptions_per_gpu_year: float = Field(LLAMA3_OTHER_PER_GPU_YEAR, ge=0, le=100)
    """Interruptions from outside the network (GPU, memory, host, software) per GPU-year. The
    default is Llama 3's: 377 unexpected non-network interruptions in 54 days on 16,384 H100s
    (arXiv 2407.21783, Table 5), about 0.156 a GPU-year."""
    planned_interruptions_per_day: float = Field(0.0, ge=0, le=1000)
    """Planned stops a day (maintenance, upgrades); Llama 3 had 47 in 54 days."""
    fabric_interrupt_fraction: float = Field(0.1, ge=0, le=1)
    """Share of failures inside the fabric (above the GPUs' own links and leaves, where paths
    are redundant) that still stop the job because routing does not hide them in time (flaps,
    silent drops, slow convergence). Estimate: Wetherall et al., SIGCOMM 2023 ('Improving
    network availability with Protective ReRoute') report a non-negligible share of faults that
    routing does not quickly repair; 0 trusts routing fully, 1 trusts it not at all."""
    nic_models: list[str] = Field(default_factory=list, max_length=16)
    """Other catalog NICs the failure-priced walk may plan with, each at every split it allows
    (``planner.reliability.options``): a dual-port NIC such as 'connectx-7-2p' puts each GPU on
    two leaves (dual-ToR) where the cluster's NIC may not."""
    monte_carlo_trials: int = Field(200, ge=0, le=100_000)
    """Trials of the month-long Monte Carlo (0: the closed form alone)."""
    monte_carlo_days: float = Field(30.0, gt=0, le=3650)
    """Length of each Monte Carlo trial, in days."""
    seed: int = Field(1, ge=0, le=2**32 - 1)
    """Seed of the Monte Carlo draws."""

    @property
    def restart_s(self) -> float:
        """The restart time in seconds."""
        return self.restart_minutes * 60.0

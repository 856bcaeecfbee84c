"""The components of a design that can fail, grouped by what their failure does to the job.

A synchronous training job stops when a GPU loses its place in the fabric: every collective
waits for it. A failure *interrupts* the job (it restarts from its last checkpoint, on spare
nodes) or *degrades* it (it runs on with less bandwidth until the part is repaired). Which one
follows from the design:

=====================  ============================================  ===========================
class                  units                                          a failure
=====================  ============================================  ===========================
nic                    GPUs (one scale-out NIC each)                  interrupts
gpu_link_nic_end       access links x planes: the module (or cable    interrupts: one module
                       end) at the NIC                                serves every plane of its
                                                                      GPU (shared risk), unless
                                                                      the NIC has a cage per
                                                                      port (then 1 - 1/cages left)
gpu_link_leaf_end      access links x planes: the leaf's end (its     interrupts with 1 plane;
                       module, cable end or co-packaged port)        with P planes the GPU runs
                                                                      on 1 - 1/P of its bandwidth
leaf                   first-tier switches x planes                   as the leaf end above
fabric_switch          switches above the first tier x planes         degrades (paths are
                                                                      redundant) but for the
                                                                      share q routing does not
                                                                      hide, which interrupts
fabric_link            every end of the links between switches        as fabric_switch
ocs                    optical circuit switches x planes              as fabric_switch
scale_up_switch        scale-up (NVLink) switches                     interrupts
other                  GPUs: GPU, memory, host and software faults,   interrupts
                       less the scale-up switches' own (below)
=====================  ============================================  ===========================

Each fault is counted once. The instance's ``reliability.other_interruptions_per_gpu_year`` is
every interruption from outside the scale-out network, the scale-up domain's NVLink and NVSwitch
faults included: its default is Llama 3's Table 5 (arXiv 2407.21783) less its network rows
(419 - 35 switch/cable - 7 NIC = 377 in 54 days on 16,384 GPUs), and that table has no NVLink
row: its NVLink faults sit in "Faulty GPU" (the catalog's ``scale_up_switch_afr`` source says
so). The ``scale_up_switch`` class shows the share the catalog's NVSwitch rate takes, and the
``other`` class keeps the rest, never below 0: per GPU-year
``max(other_interruptions_per_gpu_year - scale_up_switches x scale_up_switch_afr / GPUs, 0)``.
Scale-up and outside together are therefore the instance's rate (or the NVSwitches' alone where
they exceed it), whatever the catalog says of NVSwitches.

q is the instance's ``reliability.fabric_interrupt_fraction``. A co-packaged port's engine fails
at the catalog's ``cpo_port_afr`` and waits ``cpo_port_mttr_hours`` for repair, and the external
laser feeding ``cpo_ports_per_laser`` ports fails at ``cpo_laser_afr`` for all of them at once
(one failure, one interruption where the ports stop the job: a shared risk); a pluggable module or
cable plug at its medium's ``afr`` and ``module_mttr_hours``, once for every link it carries (a
twin-port module is one unit: its failure takes both links, and at the NIC the module serving
all of a GPU's planes is why a NIC-end failure stops the job whatever the planes). The first link class is
the access (GPU to first-tier switch) when its lower role is the GPU's; a family without one
(none today) would count every link as fabric.

Bandwidth lost while a degrading part is down, as a share of an affected GPU's scale-out
bandwidth: 1/P for the access (one plane of P); for a fabric switch, the share of the tier
below's uplinks that ran through it (``parallel_links / uplinks``), for a fabric link one uplink
of the tier below (``1 / uplinks``), the largest over the tiers: an upper estimate of what the
GPUs under the failure lose.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.design import Design, LinkGroup, TierDesign
from planner.schema.reliability import DAYS_PER_YEAR, ComponentRates, Reliability

#: Where a failure comes from: the scale-out network, the scale-up domain, or outside both.
Group = Literal["network", "scale_up", "outside"]
#: The role of the GPUs' end of a link class.
GPU_ROLE = "gpu"


@dataclass(frozen=True)
class ComponentClass:
    """Components that fail alike: how many, how often, for how long, and what it does."""

    name: str
    group: Group
    units: float
    """Components in the class (link ends count one each)."""
    afr: float
    """Failures per unit per year (the units' mean when the class mixes media)."""
    mttr_hours: float
    """Mean time a failed unit stays down (matters for degraded time, not for restarts)."""
    interrupt_share: float
    """Share of failures that stop the job (the rest degrade it)."""
    bandwidth_loss: float
    """Share of an affected GPU's scale-out bandwidth lost while one unit is down."""

    @property
    def failures_per_day(self) -> float:
        """Units x AFR / days a year (``DAYS_PER_YEAR``, 365.25)."""
        return self.units * self.afr / DAYS_PER_YEAR

    @property
    def interruptions_per_day(self) -> float:
        """Failures that stop the job, a day."""
        return self.failures_per_day * self.interrupt_share

    @property
    def degradations_per_day(self) -> float:
        """Failures the job runs through, slower, a day."""
        return self.failures_per_day * (1.0 - self.interrupt_share)

    @property
    def mean_down_units(self) -> float:
        """Units degraded at a time on average (Little's law): degradations/day x MTTR in days."""
        return self.degradations_per_day * self.mttr_hours / 24.0


def _end_afr(group: LinkGroup, upper: bool, cpo: bool, rates: ComponentRates) -> float:
    """AFR of one link end: the co-packaged port, the module there, or the cable end."""
    if cpo:
        return rates.cpo_port_afr
    module = group.module_at(upper)
    return group.afr if module is None else module.afr


def _units_at(group: LinkGroup, upper: bool, cpo: bool) -> int:
    """Parts that fail alone at one end of a group's links, per plane.

    A co-packaged port fails alone (one per link); a module or cable plug fails as a whole,
    taking every link it carries (a twin-port module two): one failure per module.
    """
    if cpo or group.module_at(upper) is None:
        return group.links
    return group.upper_modules if upper else group.lower_modules


def _links_class(
    name: str,
    groups: tuple[LinkGroup, ...],
    upper: bool | None,
    cpo_lower: bool,
    cpo_upper: bool,
    planes: int,
    rates: ComponentRates,
    interrupt_share: float,
    bandwidth_loss: float,
) -> ComponentClass:
    """The ends of a link class: the lower ends, the upper ends, or both (``upper`` None)."""
    sides = (False, True) if upper is None else (upper,)
    units = 0.0
    failures = 0.0
    repair = 0.0
    for g in groups:
        for side in sides:
            cpo = cpo_upper if side else cpo_lower
            n = planes * _units_at(g, side, cpo)
            afr = _end_afr(g, side, cpo, rates)
            units += n
            failures += n * afr
            repair += n * afr * (rates.cpo_port_mttr_hours if cpo else rates.module_mttr_hours)
            if cpo and rates.cpo_laser_afr is not None:
                # One laser feeds several ports: it fails once for all of them.
                lasers = planes * -(-g.links // rates.cpo_ports_per_laser)
                units += lasers
                failures += lasers * rates.cpo_laser_afr
                repair += lasers * rates.cpo_laser_afr * rates.cpo_laser_mttr_hours
    afr = failures / units if units else 0.0
    mttr = repair / failures if failures else rates.module_mttr_hours
    return ComponentClass(name, "network", units, afr, mttr, interrupt_share, bandwidth_loss)


def _uplink_share(tier: TierDesign) -> float:
    """Share of a tier's uplinks that one switch (or link bundle) above carries."""
    return tier.parallel_links / tier.uplinks if tier.uplinks else 0.0


def component_classes(
    design: Design, rates: ComponentRates, reliability: Reliability
) -> tuple[ComponentClass, ...]:
    """The classes of the module docstring for one design, in its order."""
    planes = design.planes
    single = planes == 1
    access_interrupts = 1.0 if single else 0.0
    access_loss = 1.0 / planes
    q = reliability.fabric_interrupt_fraction
    tiers = design.tiers
    cpo_at = {t.role: t.cpo for t in tiers}
    out = [ComponentClass("nic", "network", design.gpus, rates.nic_afr, 0.0, 1.0, 1.0)]
    classes = list(design.link_classes)
    if classes and classes[0].lower_role == GPU_ROLE:
        access = classes.pop(0)
        leaf_cpo = cpo_at.get(access.upper_role, False)
        # A module at the NIC serves the planes of its cage: all of them (it stops the job) unless
        # the NIC spreads its ports over several cages (a dual-port NIC: it degrades the job).
        cages = min(design.nic_cages, planes)
        nic_end_interrupts = 1.0 if cages == 1 else 0.0
        out.append(
            _links_class(
                "gpu_link_nic_end",
                access.groups,
                False,
                False,
                leaf_cpo,
                planes,
                rates,
                nic_end_interrupts,
                1.0 / cages,
            )
        )
        out.append(
            _links_class(
                "gpu_link_leaf_end",
                access.groups,
                True,
                False,
                leaf_cpo,
                planes,
                rates,
                access_interrupts,
                access_loss,
            )
        )
    packet = [t for t in tiers if not t.ocs]
    if packet:
        first = packet[0]
        out.append(
            ComponentClass(
                "leaf",
                "network",
                planes * first.switches,
                rates.switch_afr,
                rates.switch_mttr_hours,
                access_interrupts,
                access_loss,
            )
        )
    upper = packet[1:]
    if upper:
        loss = max(_uplink_share(t) for t in tiers[:-1]) if len(tiers) > 1 else 0.0
        out.append(
            ComponentClass(
                "fabric_switch",
                "network",
                planes * sum(t.switches for t in upper),
                rates.switch_afr,
                rates.switch_mttr_hours,
                q,
                loss,
            )
        )
    if classes:
        loss = max((1.0 / t.uplinks for t in tiers[:-1] if t.uplinks), default=0.0)
        parts = [
            _links_class(
                "fabric_link",
                c.groups,
                None,
                cpo_at.get(c.lower_role, False),
                cpo_at.get(c.upper_role, False),
                planes,
                rates,
                q,
                loss,
            )
            for c in classes
        ]
        out.append(_merged("fabric_link", parts))
    ocs = [t for t in tiers if t.ocs]
    if ocs:
        out.append(
            ComponentClass(
                "ocs",
                "network",
                planes * sum(t.switches for t in ocs),
                rates.ocs_afr,
                rates.ocs_mttr_hours,
                q,
                max((_uplink_share(t) for t in tiers[:-1]), default=0.0),
            )
        )
    scale_up = design.scale_up.switches(design.gpus) if design.scale_up.switch_model else 0
    scale_up_per_year = scale_up * rates.scale_up_switch_afr
    if scale_up:
        out.append(
            ComponentClass(
                "scale_up_switch",
                "scale_up",
                scale_up,
                rates.scale_up_switch_afr,
                rates.switch_mttr_hours,
                1.0,
                1.0,
            )
        )
    out.append(
        ComponentClass(
            "other",
            "outside",
            design.gpus,
            other_afr(reliability.other_interruptions_per_gpu_year, scale_up_per_year, design.gpus),
            0.0,
            1.0,
            1.0,
        )
    )
    return tuple(out)


def other_afr(per_gpu_year: float, scale_up_per_year: float, gpus: int) -> float:
    """The ``other`` class's AFR per GPU: the instance's rate less the NVSwitches' share.

    ``per_gpu_year`` holds the scale-up domain's faults already (module docstring), so the
    ``scale_up_switch`` class's failures a year are taken out of it, never below 0: each fault
    is counted once.
    """
    if gpus <= 0:
        return 0.0
    return max(per_gpu_year - scale_up_per_year / gpus, 0.0)


def _merged(name: str, parts: list[ComponentClass]) -> ComponentClass:
    """One class from several of the same effect: units added, AFR and MTTR weighted."""
    units = sum(p.units for p in parts)
    failures = sum(p.units * p.afr for p in parts)
    repair = sum(p.units * p.afr * p.mttr_hours for p in parts)
    first = parts[0]
    return ComponentClass(
        name,
        first.group,
        units,
        failures / units if units else 0.0,
        repair / failures if failures else first.mttr_hours,
        first.interrupt_share,
        first.bandwidth_loss,
    )

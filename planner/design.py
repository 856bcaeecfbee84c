"""A chosen fabric, frozen: tiers, link classes, the figures they were priced with, and totals.

A Design holds no solver object and no catalog reference: every unit figure it was priced with is
copied into it, so it can be written to JSON, read back, re-priced and validated alone. Its tables
(BOM, links) are computed here, once, and every report reads them from here.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from models.status import Status
from planner.schema.reliability import DAYS_PER_YEAR
from planner.wiring import UP_DOWN_WIRING, Wiring, wiring_to_dict

if TYPE_CHECKING:
    from planner.schema.catalog import Catalog
    from planner.schema.instance import ScaleUp

#: Hops per path and roles per tier count.
ROLES: dict[int, tuple[str, ...]] = {
    1: ("leaf",),
    2: ("leaf", "spine"),
    3: ("leaf", "spine", "core"),
}


@dataclass(frozen=True)
class TierDesign:
    """One switch tier of one plane."""

    level: int
    role: str
    switch_model: str
    port_speed_gbps: int
    radix: int
    switches: int
    """Switches per plane."""
    downlinks: int
    """Ports per switch facing down (reserved for GPUs on a leaf; used by the wiring above)."""
    uplinks: int
    fanout: int
    """Switches above that each switch of this tier connects to."""
    parallel_links: int
    """Links from each switch to each switch it connects to above."""
    cpo: bool
    unit_cost_usd: float
    unit_power_w: float
    latency_ns: int
    source: str = ""
    cpo_lane_gbps: int | None = None
    """For a CPO switch: the optical lane rate, connector and reach of its engines."""
    cpo_connector: str = ""
    cpo_reach_m: float | None = None
    ocs: bool = False
    """An optical circuit switch layer: 'switches' are OCS devices, 'downlinks' ports used on each."""
    insertion_loss_db: float | None = None
    protocol: str = ""
    """'infiniband' or 'ethernet' (empty for an OCS layer, which carries either)."""
    cage_form_factor: str = ""
    """The module cage of its pluggable ports (empty for CPO and OCS)."""
    cage_lane_gbps: int | None = None
    """Electrical lane rate of those cages."""
    ports_per_cage: int = 0
    """Logical ports at ``port_speed_gbps`` one cage, so one module or plug, carries."""


@dataclass(frozen=True)
class EndModule:
    """The module at one end of a group's links when it is not the medium's own module.

    It carries its own figures (per link end, as the catalog priced it), what it plugs into,
    and the line side it drives (its medium's kind, lanes, lane rate and connector), which must
    be the group's: the two ends of a link put the same signal on the fibre, each module with
    its own host lanes behind its gearbox.
    """

    name: str
    """The catalog module (one of its medium's ``modules``)."""
    cost_usd: float
    """Price per link end it serves."""
    power_w: float
    afr: float
    host_lane_gbps: tuple[int, ...]
    form_factors: tuple[str, ...]
    line_kind: str
    """Line side: the kind of medium ('dr', 'sr', 'dac', ...)."""
    line_lanes: int | None
    """Line side: lanes on the fibre (or cable); None when the medium's lane rate is unknown."""
    line_lane_gbps: int | None
    """Line side: the rate of each of those lanes."""
    connector: str
    """Line side: the connector of each end."""
    source: str = ""
    """Where its price comes from (catalog)."""
    nic_only: bool = False
    """Made for NIC cages only (a switch's cage does not take it)."""


@dataclass(frozen=True)
class LinkGroup:
    """The links of one class that share a medium: how many, how long, and the medium's figures."""

    medium: str
    kind: str
    links: int
    """Links per plane."""
    min_length_m: float
    max_length_m: float
    pluggable_ends: int
    """Modules per link: 2, 1 when one end is a CPO switch, 0 between two; copper counts 2 ends."""
    end_cost_usd: float
    """Price per link end of the medium's own module (an end may carry another: ``*_module``)."""
    end_power_w: float
    """Power per link end of the medium's own module."""
    cable_cost_usd: float
    latency_ns: int
    reach_m: float
    """The medium's own reach (a CPO end may cap it at its engine's reach)."""
    afr: float
    """Annual failure rate per end of the medium's own module."""
    copper: bool
    lane_gbps: int | None = None
    connector: str = ""
    channel_loss_db: float | None = None
    source: str = ""
    """Where the price of the medium's own module (or copper assembly end) comes from."""
    cable_source: str = ""
    """Where the price of the fibre (``cable_cost_usd``) comes from (catalog)."""
    lower_ports_per_module: int = 1
    """Logical links one module (or cable plug) at the lower end carries: 2 for a twin-port
    module; 0 when no module sits there (a CPO port)."""
    upper_ports_per_module: int = 1
    """The same at the upper end (0 at a CPO port or an OCS mirror)."""
    host_lane_gbps: tuple[int, ...] = ()
    """Host lane rates the medium's own module is made for."""
    form_factors: tuple[str, ...] = ()
    """Cage form factors the medium's own module is made in."""
    ns_per_m: float = 0.0
    """Propagation delay of the medium, ns per metre."""
    length_histogram: tuple[tuple[float, int], ...] = ()
    """Links per length, ``(length_m, links)`` pairs, lengths strictly ascending, per plane.

    Lengths are the floor plan's, binned to ``LENGTH_BIN_M`` (wider for a very long spread, so
    at most ``MAX_LENGTH_BINS`` pairs) with the shortest and the longest kept exact: the counts
    sum to ``links`` and the first and last lengths are ``min_length_m`` and ``max_length_m``.
    Empty: not known (a design from an older file, or a family that keeps only the range).
    """
    lower_module: EndModule | None = None
    """The module at the lower ends when it is another module of the medium (not its own);
    None: the medium's own module (``end_cost_usd``, ...) sits there, or no module at all."""
    upper_module: EndModule | None = None
    """The same at the upper ends."""

    def module_at(self, upper: bool) -> EndModule | None:
        """The module at the lower (False) or upper (True) ends; None where no module sits.

        A module sits where its end carries links per module (``*_ports_per_module`` >= 1);
        it is the end's own ``*_module``, or else the medium's own module.
        """
        k = self.upper_ports_per_module if upper else self.lower_ports_per_module
        if k < 1:
            return None
        other = self.upper_module if upper else self.lower_module
        return other if other is not None else self.own_module

    @property
    def own_module(self) -> EndModule:
        """The medium's own module, as an end module."""
        return EndModule(
            name=self.medium,
            cost_usd=self.end_cost_usd,
            power_w=self.end_power_w,
            afr=self.afr,
            host_lane_gbps=self.host_lane_gbps,
            form_factors=self.form_factors,
            line_kind=self.kind,
            line_lanes=None,
            line_lane_gbps=self.lane_gbps,
            connector=self.connector,
            source=self.source,
        )

    @property
    def modules(self) -> tuple[EndModule, ...]:
        """The module at each end of one link that carries one, lower end first."""
        return tuple(m for m in (self.module_at(False), self.module_at(True)) if m is not None)

    @property
    def ends_cost_usd(self) -> float:
        """Modules (or cable ends) of one link, both ends: their prices added."""
        return sum(m.cost_usd for m in self.modules)

    @property
    def ends_power_w(self) -> float:
        """Power of the modules (or cable ends) of one link."""
        return sum(m.power_w for m in self.modules)

    @property
    def ends_afr(self) -> float:
        """Annual failures of one link's ends: the sum of their AFRs."""
        return sum(m.afr for m in self.modules)

    @property
    def lower_modules(self) -> int:
        """Modules (or plugs) at the lower ends of these links, per plane."""
        return _modules(self.links, self.lower_ports_per_module)

    @property
    def upper_modules(self) -> int:
        """Modules (or plugs) at the upper ends of these links, per plane."""
        return _modules(self.links, self.upper_ports_per_module)

    @property
    def cable_assemblies(self) -> int:
        """Copper: assemblies per plane; a twin-port or splitter assembly carries several links."""
        if not self.copper:
            return 0
        return _modules(self.links, max(self.lower_ports_per_module, self.upper_ports_per_module))

    @property
    def worst_latency_ns(self) -> float:
        """Electronics plus propagation on the longest link of the group, one way."""
        return self.latency_ns + self.max_length_m * self.ns_per_m


#: Width of a length bin of ``LinkGroup.length_histogram``, in metres.
LENGTH_BIN_M = 0.1

#: Most pairs in one ``LinkGroup.length_histogram`` (bins widen to stay within it).
MAX_LENGTH_BINS = 4096


def length_histogram(
    length_m: Sequence[float], links: Sequence[int]
) -> tuple[tuple[float, int], ...]:
    """Links per length, binned for ``LinkGroup.length_histogram``.

    Parameters
    ----------
    length_m
        Lengths in metres, ascending (whole centimetres, as the floor plan gives them).
    links
        Links at each length; zeros are dropped.

    Returns
    -------
    tuple[tuple[float, int], ...]
        ``(length_m, links)`` pairs: the shortest and the longest length with links kept exact,
        every other length moved to the nearest multiple of the bin width (``LENGTH_BIN_M``, or
        wider so that at most ``MAX_LENGTH_BINS`` pairs remain), equal lengths merged.
    """
    cm = np.rint(np.asarray(length_m, dtype=np.float64) * 100.0).astype(np.int64)
    count = np.asarray(links, dtype=np.int64)
    keep = count > 0
    cm, count = cm[keep], count[keep]
    if cm.size == 0:
        return ()
    lo, hi = int(cm[0]), int(cm[-1])
    step_cm = round(LENGTH_BIN_M * 100)
    width = max(step_cm, math.ceil((hi - lo) / (MAX_LENGTH_BINS - 3)))
    width = -(-width // step_cm) * step_cm
    rep = np.clip(np.rint(cm / width).astype(np.int64) * width, lo, hi)
    rep[0], rep[-1] = lo, hi
    bins, which = np.unique(rep, return_inverse=True)
    summed = np.zeros(bins.size, dtype=np.int64)
    np.add.at(summed, which.reshape(-1), count)
    return tuple((x / 100.0, int(n)) for x, n in zip(bins.tolist(), summed.tolist(), strict=True))


def _modules(links: int, ports_per_module: int) -> int:
    """Modules carrying ``links`` logical ports, ``ports_per_module`` each (0: none)."""
    return -(-links // ports_per_module) if ports_per_module > 0 else 0


@dataclass(frozen=True)
class LinkClass:
    """All links between two adjacent tiers of one plane (class 0: GPU NIC port to leaf)."""

    index: int
    lower_role: str
    upper_role: str
    links: int
    """Links per plane."""
    speed_gbps: int
    groups: tuple[LinkGroup, ...]
    """The links by medium, shortest first; their counts add up to ``links``."""
    placement: str = ""
    """Leaf placement the lengths assume (classes touching a leaf); empty above."""

    @property
    def latency_ns(self) -> float:
        """Worst one-way latency of a link of the class: media electronics plus propagation."""
        return max((g.worst_latency_ns for g in self.groups if g.links), default=0.0)

    @property
    def max_length_m(self) -> float:
        """Longest link of the class."""
        return max((g.max_length_m for g in self.groups if g.links), default=0.0)

    @property
    def propagation_ns(self) -> float:
        """Propagation delay of the class's slowest link, one way."""
        return max((g.max_length_m * g.ns_per_m for g in self.groups if g.links), default=0.0)


@dataclass(frozen=True)
class ScaleUpDomain:
    """The scale-up domain (NVLink or similar) the GPUs sit in, as the instance gave it.

    The simulator carries traffic between two GPUs of one domain over it (never over a NIC); its
    switches, when the instance names a model, are priced into the whole interconnect's power and
    capex. It is given, not chosen: the scale-out objective does not include it.
    """

    gpus: int = 8
    """GPUs per scale-up domain (8 in a DGX node, 72 in an NVL72 rack)."""
    gbps_per_gpu: float = 3600.0
    """Scale-up bandwidth per GPU, each way, Gb/s (3,600 = 450 GB/s, NVLink 4)."""
    switch_model: str = ""
    """The catalog's scale-up switch model ('' when the instance names none: not priced)."""
    switches_per_domain: int = 0
    """Scale-up switches in one domain (0 when not priced)."""
    switch_cost_usd: float = 0.0
    """Price of one scale-up switch, as the catalog gave it."""
    switch_power_w: float = 0.0
    """Power of one scale-up switch, as the catalog gave it."""

    @classmethod
    def of(cls, spec: ScaleUp, catalog: Catalog | None = None) -> ScaleUpDomain:
        """The domain an instance's ``cluster.scale_up`` describes, priced from ``catalog``.

        Without a catalog, or without a switch model in the instance, the domain is not priced.
        """
        if spec.switch is None or catalog is None:
            return cls(gpus=spec.gpus, gbps_per_gpu=float(spec.gbps_per_gpu))
        sw = catalog.scale_up_switch_named(spec.switch)
        return cls(
            gpus=spec.gpus,
            gbps_per_gpu=float(spec.gbps_per_gpu),
            switch_model=sw.name,
            switches_per_domain=spec.switches or sw.switches_for(spec.gpus),
            switch_cost_usd=sw.cost_usd,
            switch_power_w=sw.power_w,
        )

    def domains(self, gpus: int) -> int:
        """Domains holding ``gpus`` GPUs (the last one may be partial): ceil(gpus / domain)."""
        return -(-gpus // self.gpus)

    def switches(self, gpus: int) -> int:
        """Scale-up switches of ``gpus`` GPUs: domains x switches per domain."""
        return self.domains(gpus) * self.switches_per_domain

    def capex_usd(self, gpus: int) -> float:
        """Price of the scale-up switches of ``gpus`` GPUs."""
        return self.switches(gpus) * self.switch_cost_usd

    def power_w(self, gpus: int) -> float:
        """Power of the scale-up switches of ``gpus`` GPUs."""
        return self.switches(gpus) * self.switch_power_w


@dataclass(frozen=True)
class Requirements:
    """The constraints the design was chosen under, as plain numbers."""

    max_oversubscription: tuple[float, ...]
    max_switch_hops: int | None
    max_latency_ns: float | None
    min_fraction_after_failure: float | None
    protected_tiers: tuple[int, ...]
    max_power_w: float | None
    max_capex_usd: float | None


@dataclass(frozen=True)
class Design:
    """A priced fabric design; totals as the solver reported them, tables recomputed from counts."""

    instance: str
    family: str
    status: Status
    gpus: int
    planes: int
    link_speed_gbps: int
    tiers: tuple[TierDesign, ...]
    link_classes: tuple[LinkClass, ...]
    requirements: Requirements
    energy_usd_per_w: float
    capex_weight: float
    energy_weight: float
    capex_usd: float
    power_w: float
    objective_usd: float
    bound_usd: float
    pods: int = 1
    leaves_per_pod: int = 0
    gpus_per_node: int = 8
    leaf_placement: str = ""
    """Where the leaves stand: top_of_rack, middle_of_row or end_of_row."""
    catalog: str = "default"
    """The catalog the design was priced from: 'default' or a file path (validate checks against it)."""
    solve_s: float = 0.0
    notes: tuple[str, ...] = field(default_factory=tuple)
    circuits: tuple[tuple[int, int, int, int], ...] = ()
    """OCS direct-connect: (block a, block b, device, circuits) per plane, a < b; blocks are pods."""
    routing: str = ""
    """The routing the model chose between blocks, when the family has a choice (OCS
    direct-connect: ``direct`` or ``wcmp``); empty: the family's only routing."""
    routing_hedge: float = 0.0
    """With ``routing = "wcmp"``: the traffic engineering's hedge (``search.ocs_hedge``)."""
    nic: str = ""
    """The NIC model at the GPU end (empty: none known, any module assumed to fit)."""
    nic_form_factor: str = ""
    nic_lane_gbps: int | None = None
    nics_per_cage: int = 1
    """NICs sharing one cage at the GPU end (a module there carries ``nics_per_cage x planes``)."""
    nic_cages: int = 1
    """Cages of one NIC: a module at the GPU end carries ``nics_per_cage x planes / nic_cages``."""
    protocol: str = ""
    """The protocol every plane speaks end to end: 'infiniband' or 'ethernet'."""
    wiring: Wiring = UP_DOWN_WIRING
    """How the tiers are joined: owns the path figures (``planner.wiring``)."""
    scale_up: ScaleUpDomain = field(default_factory=ScaleUpDomain)
    """The scale-up domain of the instance's GPUs."""

    # ---- derived figures -------------------------------------------------------------------
    @property
    def endpoints_per_plane(self) -> int:
        """NIC ports per plane: one per GPU."""
        return self.gpus

    @property
    def num_tiers(self) -> int:
        """Switch tiers."""
        return len(self.tiers)

    @property
    def gap(self) -> float:
        """Relative gap between the design's objective and the proven lower bound."""
        if self.objective_usd <= 0:
            return 0.0
        return max(0.0, (self.objective_usd - self.bound_usd) / self.objective_usd)

    @property
    def switches(self) -> int:
        """Packet switches over all planes (optical circuit switches are not counted)."""
        return self.planes * sum(t.switches for t in self.tiers if not t.ocs)

    @property
    def ocs_devices(self) -> int:
        """Optical circuit switches over all planes."""
        return self.planes * sum(t.switches for t in self.tiers if t.ocs)

    @property
    def transit_blocks(self) -> int:
        """Transit blocks the longest path may cross.

        1 when the blocks route with WCMP over one-transit paths (``routing = "wcmp"``), else 0.
        """
        return 1 if self.routing == "wcmp" else 0

    @property
    def max_switch_hops(self) -> int:
        """Switches on the longest GPU-to-GPU path (the wiring's formula)."""
        return self.wiring.max_switch_hops(self)

    @property
    def max_latency_ns(self) -> float:
        """One-way latency of the longest path: switches crossed, media electronics, propagation."""
        return self.wiring.max_latency_ns(self)

    @property
    def propagation_ns(self) -> float:
        """The propagation part of ``max_latency_ns``."""
        return self.wiring.propagation_ns(self)

    def oversubscription(self) -> tuple[float, ...]:
        """Down:up ratio of every tier below the top, leaf first."""
        return tuple(t.downlinks / t.uplinks for t in self.tiers[:-1] if t.uplinks)

    @property
    def bisection_gbps(self) -> float:
        """Bandwidth, one way, across the narrowest cut halving the GPUs (the wiring's formula)."""
        return self.wiring.bisection_gbps(self)

    def _groups(self) -> list[LinkGroup]:
        return [g for c in self.link_classes for g in c.groups]

    @property
    def transceivers(self) -> int:
        """Physical optical modules over all planes: a twin-port module serving two links is one.

        Copper assemblies are not counted; ``transceiver_ports`` counts the logical link ends.
        """
        return self.planes * sum(
            g.lower_modules + g.upper_modules for g in self._groups() if not g.copper
        )

    @property
    def transceiver_ports(self) -> int:
        """Logical link ends served by optical modules over all planes (two per twin module)."""
        return self.planes * sum(g.links * g.pluggable_ends for g in self._groups() if not g.copper)

    @property
    def cable_assemblies(self) -> int:
        """Copper cable assemblies over all planes (a splitter or twin assembly counts once)."""
        return self.planes * sum(g.cable_assemblies for g in self._groups())

    @property
    def fibres(self) -> int:
        """Fibre cables over all planes: one per optical link (a twin module has two connectors)."""
        return self.planes * sum(g.links for g in self._groups() if not g.copper)

    @property
    def optics_power_w(self) -> float:
        """Power of the pluggable optical modules over all planes (CPO engines sit in the switches)."""
        return self.planes * sum(g.links * g.ends_power_w for g in self._groups() if not g.copper)

    @property
    def media_power_w(self) -> float:
        """Power of every link end: optical modules and active copper, over all planes."""
        return self.planes * sum(g.links * g.ends_power_w for g in self._groups())

    @property
    def optics_power_share(self) -> float:
        """Pluggable optics' share of the network's power."""
        return self.optics_power_w / self.power_w if self.power_w > 0 else 0.0

    @property
    def expected_link_failures_per_day(self) -> float:
        """Expected failed link ends (modules or cable ends) per day: count x AFR / days a year.

        Each end counts its own module's AFR (the two ends of a link may carry different ones).
        """
        return self.planes * sum(g.links * g.ends_afr for g in self._groups()) / DAYS_PER_YEAR

    @property
    def energy_usd(self) -> float:
        """Lifetime energy cost of the network's power draw."""
        return self.power_w * self.energy_usd_per_w

    @property
    def tco_usd(self) -> float:
        """Capex plus lifetime energy cost."""
        return self.capex_usd + self.energy_usd

    @property
    def interconnect_capex_usd(self) -> float:
        """Capex of the whole interconnect: the scale-out fabric plus the scale-up switches."""
        return self.capex_usd + self.scale_up.capex_usd(self.gpus)

    @property
    def interconnect_power_w(self) -> float:
        """Power of the whole interconnect: the scale-out fabric plus the scale-up switches."""
        return self.power_w + self.scale_up.power_w(self.gpus)

    @property
    def blast_radius_gpus(self) -> int:
        """GPUs that lose one plane when one switch fails (the wiring's formula)."""
        return self.wiring.blast_radius_gpus(self)

    def tier_with_role(self, role: str) -> TierDesign | None:
        """The switch group of that role (None for the GPUs' end, 'gpu')."""
        return next((t for t in self.tiers if t.role == role), None)

    def objective_terms(self) -> dict[str, float]:
        """The solver's objective split into its terms."""
        return {
            "capex_usd": self.capex_usd,
            "power_w": self.power_w,
            "energy_usd": self.energy_usd,
            "objective_usd": self.capex_weight * self.capex_usd
            + self.energy_weight * self.energy_usd,
        }

    # ---- tables ----------------------------------------------------------------------------
    def bom(self) -> pl.DataFrame:
        """Bill of materials over all planes: component, tier, count, unit and total cost and power."""
        rows: list[dict[str, Any]] = []
        for t in self.tiers:
            n = self.planes * t.switches
            component = "ocs" if t.ocs else "switch"
            rows.append(
                _bom_row(
                    component, t.switch_model, t.role, n, t.unit_cost_usd, t.unit_power_w, t.source
                )
            )
        for c in self.link_classes:
            tier = f"{c.lower_role}-{c.upper_role}"
            for g in c.groups:
                links = self.planes * g.links
                if g.copper and g.pluggable_ends:
                    per = max(g.lower_ports_per_module, g.upper_ports_per_module, 1)
                    rows.append(
                        _bom_row(
                            "cable assembly",
                            g.medium,
                            tier,
                            self.planes * g.cable_assemblies,
                            per * g.ends_cost_usd,
                            per * g.ends_power_w,
                            g.source,
                            ports=links,
                            ports_per_unit=per,
                            per_port=(g.ends_cost_usd, g.ends_power_w),
                        )
                    )
                for side, k, modules, module in (
                    (c.lower_role, g.lower_ports_per_module, g.lower_modules, g.module_at(False)),
                    (c.upper_role, g.upper_ports_per_module, g.upper_modules, g.module_at(True)),
                ):
                    if g.copper or module is None or not g.pluggable_ends:
                        continue
                    rows.append(
                        _bom_row(
                            "transceiver",
                            module.name,
                            f"{tier} at {side}",
                            self.planes * modules,
                            k * module.cost_usd,
                            k * module.power_w,
                            module.source,
                            ports=links,
                            ports_per_unit=k,
                            per_port=(module.cost_usd, module.power_w),
                        )
                    )
                if g.cable_cost_usd > 0:
                    rows.append(
                        _bom_row(
                            "fibre",
                            f"{g.medium} cable",
                            tier,
                            links,
                            g.cable_cost_usd,
                            0.0,
                            g.cable_source,
                        )
                    )
        return pl.DataFrame(rows, schema=BOM_SCHEMA)

    def links_table(self) -> pl.DataFrame:
        """One row per link class and medium: count, length range, medium, ends, latency."""
        rows = [
            {
                "tier": f"{c.lower_role}-{c.upper_role}",
                "lower_role": c.lower_role,
                "upper_role": c.upper_role,
                "placement": c.placement,
                "count": self.planes * g.links,
                "count_per_plane": g.links,
                "min_length_m": g.min_length_m,
                "max_length_m": g.max_length_m,
                "medium": g.medium,
                "kind": g.kind,
                "speed_gbps": c.speed_gbps,
                "reach_m": g.reach_m,
                "pluggable_ends_per_link": g.pluggable_ends,
                "transceivers": 0
                if g.copper
                else self.planes * (g.lower_modules + g.upper_modules),
                "ports_per_module": f"{g.lower_ports_per_module}/{g.upper_ports_per_module}",
                "cable_assemblies": self.planes * g.cable_assemblies,
                "power_w": self.planes * g.links * g.ends_power_w,
                "latency_ns": g.latency_ns,
                "propagation_ns": g.max_length_m * g.ns_per_m,
                "afr_per_end": g.ends_afr / len(g.modules) if g.modules else g.afr,
                "modules": "/".join(
                    "" if (m := g.module_at(side)) is None else m.name for side in (False, True)
                ),
            }
            for c in self.link_classes
            for g in c.groups
        ]
        return pl.DataFrame(rows, schema=LINKS_SCHEMA)

    # ---- serialisation ---------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Plain data, JSON-ready."""
        d = asdict(self)
        d["status"] = self.status.value
        d["wiring"] = wiring_to_dict(self.wiring)
        return d

    def to_json(self) -> str:
        """The design as JSON; ``planner.families.read_design`` reads it back equal."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True)


BOM_SCHEMA = {
    "component": pl.Utf8,
    "model": pl.Utf8,
    "tier": pl.Utf8,
    "count": pl.Int64,
    "ports_per_unit": pl.Int64,
    "ports": pl.Int64,
    "unit_cost_usd": pl.Float64,
    "total_cost_usd": pl.Float64,
    "unit_power_w": pl.Float64,
    "total_power_w": pl.Float64,
    "source": pl.Utf8,
}
LINKS_SCHEMA = {
    "tier": pl.Utf8,
    "lower_role": pl.Utf8,
    "upper_role": pl.Utf8,
    "placement": pl.Utf8,
    "count": pl.Int64,
    "count_per_plane": pl.Int64,
    "min_length_m": pl.Float64,
    "max_length_m": pl.Float64,
    "medium": pl.Utf8,
    "kind": pl.Utf8,
    "speed_gbps": pl.Int64,
    "reach_m": pl.Float64,
    "pluggable_ends_per_link": pl.Int64,
    "transceivers": pl.Int64,
    "ports_per_module": pl.Utf8,
    "cable_assemblies": pl.Int64,
    "power_w": pl.Float64,
    "latency_ns": pl.Int64,
    "propagation_ns": pl.Float64,
    "afr_per_end": pl.Float64,
    "modules": pl.Utf8,
}


def _bom_row(
    component: str,
    model: str,
    tier: str,
    count: int,
    unit_cost: float,
    unit_power: float,
    source: str,
    *,
    ports: int | None = None,
    ports_per_unit: int = 1,
    per_port: tuple[float, float] | None = None,
) -> dict[str, Any]:
    """One BOM line.

    A module line is priced per port it carries (a last, part-filled module carries, and costs,
    fewer), so its totals are ``ports x per-port figures``.
    """
    if ports is None or per_port is None:
        total_cost, total_power = count * unit_cost, count * unit_power
        ports = count
    else:
        total_cost, total_power = ports * per_port[0], ports * per_port[1]
    return {
        "component": component,
        "model": model,
        "tier": tier,
        "count": count,
        "ports_per_unit": ports_per_unit,
        "ports": ports,
        "unit_cost_usd": unit_cost,
        "total_cost_usd": total_cost,
        "unit_power_w": unit_power,
        "total_power_w": total_power,
        "source": source,
    }

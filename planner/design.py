"""A chosen fabric, frozen: tiers, link classes, the figures they were priced with, and totals.

A Design holds no solver object and no catalog reference: every unit figure it was priced with is
copied into it, so it can be written to JSON, read back, re-priced and validated alone. Its tables
(BOM, links) are computed here, once, and every report reads them from here.

Its link classes, their groups by medium and end modules are defined in ``planner.design_links``
and named here too. Its ``wiring`` is defined here with it, because each names the other: the
``Wiring`` protocol (whose formulas read a ``Design``) and the up-down kind every design has
unless its family wires it otherwise (``planner.wiring`` reads the kinds back from design.json).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import polars as pl

from models.hops import class_crossings, hops, tier_crossings
from models.status import Status
from planner.design_links import LENGTH_BIN_M as LENGTH_BIN_M
from planner.design_links import MAX_LENGTH_BINS as MAX_LENGTH_BINS
from planner.design_links import EndModule as EndModule
from planner.design_links import LinkClass as LinkClass
from planner.design_links import LinkGroup as LinkGroup
from planner.design_links import length_histogram as length_histogram
from planner.schema.reliability import DAYS_PER_YEAR

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


# ---- the wiring: how the tiers are joined, and the up-down kind --------------------------------
#: The kind of the tiered (folded Clos) wiring.
UP_DOWN = "up_down"


class Wiring(Protocol):
    """One wiring kind: its parameters, and one formula for each path figure of a design."""

    kind: ClassVar[str]

    def params(self) -> dict[str, Any]:
        """The parameters, JSON-ready (without ``kind``); the kind's parser reads them back."""
        ...

    def max_switch_hops(self, d: Design) -> int:
        """Switches on the longest GPU-to-GPU path (an OCS mirror is not a hop)."""
        ...

    def max_latency_ns(self, d: Design) -> float:
        """One-way latency of the longest path: switches, media electronics and propagation."""
        ...

    def propagation_ns(self, d: Design) -> float:
        """The propagation part of ``max_latency_ns``."""
        ...

    def bisection_gbps(self, d: Design) -> float:
        """Bandwidth, one way, across the narrowest cut that halves the GPUs, over all planes."""
        ...

    def blast_radius_gpus(self, d: Design) -> int:
        """GPUs that lose one plane (or their place in the fabric) when one switch fails."""
        ...

    def oversubscription(self, d: Design) -> float:
        """The fabric's worst ratio of offered load to capacity at line rate (1.0: non-blocking)."""
        ...

    def shape_errors(self, d: Design) -> list[str]:
        """What makes the design's tiers and link classes no instance of this wiring ([] if none)."""
        ...


def wiring_to_dict(w: Wiring) -> dict[str, Any]:
    """A wiring as design.json holds it: its kind and its parameters."""
    return {"kind": w.kind, **w.params()}


@dataclass(frozen=True)
class UpDown:
    """Tiers wired up and down: every path climbs to the lowest common tier and comes back.

    Link class i joins tier i (the GPUs for i = 0) to tier i + 1; the longest path crosses every
    class twice and every tier twice, the top once. An OCS layer on top is mirrors: no hop and no
    switch latency of its own.
    """

    kind: ClassVar[str] = UP_DOWN

    def params(self) -> dict[str, Any]:
        """No parameters: the tiers say everything."""
        return {}

    def max_switch_hops(self, d: Design) -> int:
        """2T - 1 switches, less one per OCS layer, one more per transit block."""
        return hops(d.num_tiers, sum(1 for t in d.tiers if t.ocs), d.transit_blocks)

    def max_latency_ns(self, d: Design) -> float:
        """Up every tier and down again, each link class crossed twice on its worst link.

        A transit block's spine is crossed once more and its circuits twice (``models.hops``).
        """
        top, transit = d.num_tiers, d.transit_blocks
        switch_ns = sum(tier_crossings(top, t.level, transit) * t.latency_ns for t in d.tiers)
        media_ns = sum(
            class_crossings(top, c.index, transit) * c.latency_ns for c in d.link_classes
        )
        return float(switch_ns + media_ns)

    def propagation_ns(self, d: Design) -> float:
        """The longest link of each class, times its ns per metre, as often as the path crosses it."""
        top, transit = d.num_tiers, d.transit_blocks
        return sum(
            class_crossings(top, c.index, transit) * c.propagation_ns for c in d.link_classes
        )

    def bisection_gbps(self, d: Design) -> float:
        """The narrowest of the NIC links and the link classes above, halved, over all planes."""
        s = d.link_speed_gbps
        per_plane = [d.gpus * s] + [c.links * s for c in d.link_classes[1:]]
        return d.planes * min(per_plane) / 2

    def blast_radius_gpus(self, d: Design) -> int:
        """The GPUs of one leaf."""
        return d.tiers[0].downlinks

    def oversubscription(self, d: Design) -> float:
        """The largest down:up ratio of a tier; a single switch has no uplinks: ratio 1."""
        ratios = d.oversubscription()
        return max(ratios) if ratios else 1.0

    def shape_errors(self, d: Design) -> list[str]:
        """One link class per tier, class i up to tier i + 1, roles matching."""
        if len(d.link_classes) != len(d.tiers):
            return [
                f"link_classes: expected one per tier ({len(d.tiers)}), got {len(d.link_classes)}"
            ]
        below = ("gpu", *(t.role for t in d.tiers))
        return [
            f"link_classes.{i}: expected {below[i]} up to the {t.role} tier, got "
            f"{c.lower_role} up to {c.upper_role}"
            for i, (c, t) in enumerate(zip(d.link_classes, d.tiers, strict=True))
            if c.upper_role != t.role or c.lower_role != below[i]
        ]


#: The one up-down wiring (it has no parameters).
UP_DOWN_WIRING = UpDown()


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
    block_speed_gbps: tuple[int, ...] = ()
    """Speed of each pod's generation (a Clos's pod or a direct-connect fabric's block), one per
    pod: its GPUs' NICs and its links run at it; empty: every pod at ``link_speed_gbps`` (the
    fastest). A link to the top layer runs at the slower end's rate (an OCS circuit's two ends)."""
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

    def block_rate_gbps(self, block: int) -> int:
        """Rate of one uplink of aggregation block ``block`` into the OCS layer (Gb/s).

        ``block_speed_gbps[block]``, or ``link_speed_gbps`` when the design sets none; a
        circuit between blocks a and b runs at min(rate a, rate b).
        """
        return self.block_speed_gbps[block] if self.block_speed_gbps else self.link_speed_gbps

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

"""The component catalog: switches, link media and NICs, each figure with its source."""

from __future__ import annotations

import re
from typing import Literal

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict
from planner.schema.reliability import ComponentRates

MediumKind = Literal["dac", "aec", "sr", "dr", "fr", "lpo"]
#: The link protocol a switch speaks; one plane speaks one protocol end to end, NIC included.
Protocol = Literal["infiniband", "ethernet"]
#: Largest price of one catalog unit, USD, and largest power, W: far above any real part, and
#: within what the models' integer units hold (``models.scaling``).
MAX_UNIT_COST_USD = 1e9
MAX_UNIT_POWER_W = 1e7
#: Upper bounds of the catalog's rates, delays and reaches: every figure the planner sums or
#: multiplies them into (a tier's capacity, a path's latency, a link count) stays finite and
#: inside 64-bit integers. Each is far above any product: the fastest port is 1.6 Tb/s (the
#: design file's own cap is 6,400 Gb/s), the largest switch 115.2 Tb/s, a lane 200 Gb/s.
MAX_SPEED_GBPS = 6400
MAX_LANE_GBPS = 400
MAX_CAPACITY_GBPS = 10_000_000
#: One second, as design.json's ``latency_ns`` cap.
MAX_LATENCY_NS = 1_000_000_000
#: A thousand kilometres.
MAX_REACH_M = 1e6
#: A day.
MAX_RECONFIGURATION_MS = 86_400_000.0
#: A module or plug form factor ('osfp', 'qsfp-dd', 'qsfp112', ...).
FORM_FACTOR_PATTERN = r"^[a-z0-9][a-z0-9-]*$"
#: Media kinds that are copper (no optics at either end).
COPPER_KINDS: frozenset[str] = frozenset({"dac", "aec"})


def _require_sources(source: dict[str, str], figures: tuple[str, ...], entry: str) -> None:
    missing = [f for f in figures if not source.get(f, "").strip()]
    if missing:
        raise ValueError(
            f"{entry}: no source given for {', '.join(missing)} (a URL, a document, or 'estimate: why')"
        )


class PortConfig(Strict):
    """One logical port configuration of a switch (a breakout)."""

    ports: int = Field(ge=1, le=4096)
    speed_gbps: int = Field(ge=1, le=6400)


class Cage(Strict):
    """A physical port: a module cage of one form factor and its electrical lanes.

    A logical port at speed s takes s / lane_gbps lanes of the cage, so one cage carries
    lanes x lane_gbps / s logical ports, all served by one module (a twin-port 800G module in a
    cage of eight 100G lanes carries two 400G ports) or one cable plug.
    """

    form_factor: str = Field(pattern=FORM_FACTOR_PATTERN)
    """What plugs in: 'osfp', 'qsfp-dd', 'qsfp112', 'qsfp56', 'qsfp28'."""
    lanes: int = Field(ge=1, le=16)
    """Electrical lanes (SerDes) behind the cage."""
    lane_gbps: int = Field(ge=1, le=400)
    """Rate of each lane; a module must take exactly this host lane rate."""

    @property
    def capacity_gbps(self) -> int:
        """What the cage carries in all."""
        return self.lanes * self.lane_gbps

    def ports_at(self, speed_gbps: int) -> int | None:
        """Logical ports one cage carries at this speed, or None when the lanes cannot run it."""
        if speed_gbps % self.lane_gbps:
            return None
        per_port = speed_gbps // self.lane_gbps
        if per_port > self.lanes or self.lanes % per_port:
            return None
        return self.lanes // per_port


class CpoOptics(Strict):
    """The co-packaged optical engine behind every port of a CPO switch, at one port speed."""

    lane_gbps: int = Field(gt=0, le=MAX_LANE_GBPS)
    """Optical lane rate; a pluggable at the far end must run the same lanes."""
    connector: str = Field(min_length=1)
    """Fibre connector of each port (for example 'mpo-12'); the far end must match it."""
    reach_m: float = Field(gt=0, le=MAX_REACH_M)
    """Longest fibre the engine drives."""


class Switch(Strict):
    """A switch system."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    capacity_gbps: int = Field(gt=0, le=MAX_CAPACITY_GBPS)
    """Aggregate switching capacity in Gb/s."""
    port_configs: list[PortConfig] = Field(min_length=1)
    """Every logical port configuration (64x800G, 128x400G by breakout, ...)."""
    cost_usd: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    """System price without pluggable optics (with its optical engines when CPO)."""
    power_w: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    """Typical power without pluggable optics (with its optical engines when CPO)."""
    latency_ns: int = Field(ge=0, le=MAX_LATENCY_NS)
    """Port-to-port latency in ns."""
    rack_units: int = Field(1, ge=1, le=64)
    cpo: bool = False
    """Ports are co-packaged optics: no pluggable module at this end of a link."""
    cpo_optics: CpoOptics | None = None
    """The optical engine of a CPO switch (required when ``cpo``): what the far end must match."""
    cage: Cage | None = None
    """The module cage of every port (required unless ``cpo``): what a module must plug into."""
    cages: int | None = Field(None, ge=1, le=4096)
    """Cages on the front panel (required with ``cage``)."""
    protocol: Protocol
    """InfiniBand or Ethernet: every switch of a plane, and its NICs, speak the same one."""
    source: dict[str, str]
    """Where each figure came from: ports, cost_usd, power_w, latency_ns (and cpo_optics, cage,
    protocol)."""

    @model_validator(mode="after")
    def _check(self) -> Switch:
        _require_sources(
            self.source, ("ports", "cost_usd", "power_w", "latency_ns"), f"switch {self.name}"
        )
        if self.cpo != (self.cpo_optics is not None):
            raise ValueError(
                f"switch {self.name}: a CPO switch (cpo = true) needs cpo_optics "
                "{ lane_gbps, connector, reach_m }, and only a CPO switch may have them"
            )
        if self.cpo_optics is not None:
            _require_sources(self.source, ("cpo_optics",), f"switch {self.name}")
        _require_sources(self.source, ("protocol",), f"switch {self.name}")
        if self.cpo == (self.cage is not None):
            raise ValueError(
                f"switch {self.name}: a switch with pluggable ports needs cage "
                "{ form_factor, lanes, lane_gbps } and cages; a CPO switch has none"
            )
        if (self.cage is None) != (self.cages is None):
            raise ValueError(f"switch {self.name}: cage and cages go together")
        if self.cage is not None:
            _require_sources(self.source, ("cage",), f"switch {self.name}")
        for pc in self.port_configs:
            if pc.ports * pc.speed_gbps > self.capacity_gbps:
                raise ValueError(
                    f"switch {self.name}: {pc.ports}x{pc.speed_gbps}G exceeds its capacity_gbps {self.capacity_gbps}"
                )
            if self.cage is not None and self.cages is not None:
                per_cage = self.cage.ports_at(pc.speed_gbps)
                if per_cage is None:
                    raise ValueError(
                        f"switch {self.name}: {pc.speed_gbps}G ports do not fit its cages of "
                        f"{self.cage.lanes} x {self.cage.lane_gbps}G lanes"
                    )
                if pc.ports > per_cage * self.cages:
                    raise ValueError(
                        f"switch {self.name}: {pc.ports}x{pc.speed_gbps}G needs more than its "
                        f"{self.cages} cages of {per_cage} ports each"
                    )
        return self

    def ports_per_cage(self, speed_gbps: int) -> int:
        """Logical ports one module (or cable plug) carries at this speed; 0 for CPO ports."""
        if self.cage is None:
            return 0
        return self.cage.ports_at(speed_gbps) or 0

    def radix_at(self, speed_gbps: int) -> int | None:
        """Ports at this speed, or None when no configuration runs it."""
        radices = [pc.ports for pc in self.port_configs if pc.speed_gbps == speed_gbps]
        return max(radices) if radices else None


#: Media kinds without a gearbox: their modules' (or plugs') host lanes are their line lanes.
LANE_MATCHED_KINDS: frozenset[str] = COPPER_KINDS | {"lpo"}


class Module(Strict):
    """Another module of a medium's line side: its own host side, price, power and source.

    A link's two ends must put the same signal on the fibre (the medium's PMD: its lanes, their
    rate and its connector), but each end may carry a different module to do so, each taking its
    own cage's host lanes behind a DSP gearbox (an 800G 2xDR4 module on a ConnectX-8's 200G
    lanes at one end, one on a switch's 100G lanes at the other). A module of a copper or
    linear-drive (LPO) medium has no gearbox: its host lanes are the medium's lanes.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    """Unique among the catalog's media and modules (the BOM names the module by it)."""
    description: str = ""
    host_lane_gbps: list[int] = Field(min_length=1, max_length=8)
    """Electrical lane rates it is made for, any of which a cage must run."""
    form_factors: list[str] = Field(min_length=1, max_length=16)
    """Cage form factors it is made in."""
    cost_usd_per_end: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    """Price per link end it serves (a twin-port module serving two links costs twice this)."""
    power_w_per_end: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    afr: float | None = Field(None, ge=0, le=1)
    """Annual failure rate per end; None: the medium's."""
    nic_only: bool = False
    """Made for NIC cages only: a flat-top OSFP module under the card's riding heat sink (as a
    ConnectX-8 takes), which an air-cooled switch's cage for finned modules does not take."""
    source: dict[str, str]
    """Where each figure came from: host_lane_gbps, cost_usd_per_end, power_w_per_end (and afr,
    nic_only when given)."""

    @model_validator(mode="after")
    def _check(self) -> Module:
        figures = ("host_lane_gbps", "cost_usd_per_end", "power_w_per_end")
        _require_sources(
            self.source,
            figures
            + (("afr",) if self.afr is not None else ())
            + (("nic_only",) if self.nic_only else ()),
            f"module {self.name}",
        )
        if any(not re.match(FORM_FACTOR_PATTERN, f) for f in self.form_factors):
            raise ValueError(f"module {self.name}: form_factors must match {FORM_FACTOR_PATTERN}")
        return self

    def plugs_into(self, cage: Cage, nic: bool = False) -> bool:
        """Whether the module fits the cage (a NIC's when ``nic``): form factor, host lanes."""
        return (
            cage.form_factor in self.form_factors
            and cage.lane_gbps in self.host_lane_gbps
            and (nic or not self.nic_only)
        )


class Medium(Strict):
    """A link medium: a cable assembly or a pair of pluggable modules and a fibre.

    The medium is the link's line side (its kind, lanes and their rate on the fibre or cable,
    connector, reach, fibre price, DSP latency) and its own module (``cost_usd_per_end``,
    ``power_w_per_end``, ``afr``, ``host_lane_gbps``, ``form_factors``). ``modules`` lists more
    modules of the same line side, each for other cages: every end of a link takes whichever of
    them fits its cage, so the two ends may carry different modules.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: MediumKind
    speed_gbps: int = Field(gt=0, le=MAX_SPEED_GBPS)
    reach_m: float = Field(gt=0, le=MAX_REACH_M)
    cost_usd_per_end: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    power_w_per_end: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    cable_cost_usd: float = Field(0.0, ge=0, le=MAX_UNIT_COST_USD)
    """Per link: the fibre for optics; 0 for copper assemblies priced in their ends."""
    latency_ns: int = Field(0, ge=0, le=MAX_LATENCY_NS)
    """Electronics latency (DSP, FEC, retimer) added per link, one way."""
    afr: float = Field(ge=0, le=1)
    """Annual failure rate per end."""
    lane_gbps: int | None = Field(None, gt=0, le=MAX_LANE_GBPS)
    """Lane rate (optical lanes for optics, electrical for copper); None: unknown, so the medium
    never meets a co-packaged port, which must match it."""
    host_lane_gbps: list[int] = Field(default_factory=list)
    """Electrical lane rates its modules (or cable plugs) are made for, any of which a cage must
    run (a gearbox module takes 50G host lanes to 100G optical lanes); empty: ``lane_gbps`` only.
    Linear-drive optics and copper have no gearbox: their host lanes are their lanes."""
    form_factors: list[str] = Field(min_length=1)
    """Cage form factors its modules or plugs are made in ('osfp', 'qsfp-dd', ...)."""
    connector: str = ""
    """Connector at each end ('mpo-12', 'lc-duplex', 'osfp' for copper, ...); a co-packaged
    port takes only media with its own connector and lane rate."""
    channel_loss_db: float | None = Field(None, ge=0, le=30)
    """Largest channel insertion loss the optics tolerate, in dB; a link through an optical
    circuit switch must fit the switch's loss in it. None: not usable through one."""
    modules: list[Module] = Field(default_factory=list, max_length=16)
    """More modules of this line side, for other host lanes or form factors (a gearbox module
    for a 200G-lane NIC of a medium whose own module takes 100G lanes); empty: its own only."""
    source: dict[str, str]

    @model_validator(mode="after")
    def _check(self) -> Medium:
        _require_sources(
            self.source,
            ("reach_m", "cost_usd_per_end", "power_w_per_end", "latency_ns", "afr"),
            f"medium {self.name}",
        )
        if self.lane_gbps is not None and self.speed_gbps % self.lane_gbps:
            raise ValueError(
                f"medium {self.name}: lane_gbps {self.lane_gbps} does not divide speed_gbps {self.speed_gbps}"
            )
        if not self.host_lanes:
            raise ValueError(
                f"medium {self.name}: give lane_gbps or host_lane_gbps (the lanes a cage must run)"
            )
        bad = [r for r in self.host_lanes if r <= 0 or self.speed_gbps % r]
        if bad:
            raise ValueError(
                f"medium {self.name}: host_lane_gbps {bad} do not divide speed_gbps {self.speed_gbps}"
            )
        if any(not re.match(FORM_FACTOR_PATTERN, f) for f in self.form_factors):
            raise ValueError(f"medium {self.name}: form_factors must match {FORM_FACTOR_PATTERN}")
        for mod in self.modules:
            where = f"medium {self.name}, module {mod.name}"
            bad = [r for r in mod.host_lane_gbps if r <= 0 or self.speed_gbps % r]
            if bad:
                raise ValueError(
                    f"{where}: host_lane_gbps {bad} do not divide speed_gbps {self.speed_gbps}"
                )
            if self.kind in LANE_MATCHED_KINDS and self.lane_gbps is None:
                raise ValueError(f"{where}: a {self.kind} medium with modules needs its lane_gbps")
            if self.kind in LANE_MATCHED_KINDS and mod.host_lane_gbps != [self.lane_gbps]:
                raise ValueError(
                    f"{where}: a {self.kind} module has no gearbox, so its host lanes are the "
                    f"medium's lanes: expected host_lane_gbps = [{self.lane_gbps}], got "
                    f"{mod.host_lane_gbps}"
                )
        names = [self.name] + [mod.name for mod in self.modules]
        if len(set(names)) != len(names):
            raise ValueError(f"medium {self.name}: its modules' names repeat ({', '.join(names)})")
        return self

    def module_named(self, name: str) -> Module | None:
        """Another module of this medium, by name (None: the medium's own module, or none)."""
        return next((mod for mod in self.modules if mod.name == name), None)

    @property
    def lanes(self) -> int | None:
        """Lanes on the line side (optical lanes for optics; None when the lane rate is unknown)."""
        return None if self.lane_gbps is None else self.speed_gbps // self.lane_gbps

    @property
    def host_lanes(self) -> tuple[int, ...]:
        """The host lane rates a cage may run to take this medium."""
        if self.host_lane_gbps:
            return tuple(self.host_lane_gbps)
        return () if self.lane_gbps is None else (self.lane_gbps,)

    def plugs_into(self, cage: Cage) -> bool:
        """Whether a module (or plug) of this medium fits the cage: its form factor and lanes."""
        return cage.form_factor in self.form_factors and cage.lane_gbps in self.host_lanes

    @property
    def copper(self) -> bool:
        """Whether the medium is copper."""
        return self.kind in COPPER_KINDS

    def meets(self, engine: CpoOptics) -> bool:
        """Whether this medium's module plugs into the far end of a co-packaged port."""
        return (
            not self.copper
            and self.lane_gbps == engine.lane_gbps
            and self.connector == engine.connector
        )


class Ocs(Strict):
    """An optical circuit switch: mirrors join its ports in pairs, with no packet processing."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    ports: int = Field(ge=2, le=4096)
    """Bidirectional ports (a circuit joins two of them)."""
    cost_usd: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    power_w: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    insertion_loss_db: float = Field(ge=0, le=20)
    """Optical loss a circuit adds, in dB; a medium must have the budget for it."""
    reconfiguration_ms: float = Field(ge=0, le=MAX_RECONFIGURATION_MS)
    """Time to set up a new circuit, in ms."""
    source: dict[str, str]

    @model_validator(mode="after")
    def _check(self) -> Ocs:
        _require_sources(
            self.source,
            ("ports", "cost_usd", "power_w", "insertion_loss_db", "reconfiguration_ms"),
            f"ocs {self.name}",
        )
        return self


class Nic(Strict):
    """A scale-out NIC."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    speed_gbps: int = Field(gt=0, le=MAX_SPEED_GBPS)
    port_splits: list[int] = Field(min_length=1)
    """Into how many ports (planes) the NIC's lanes may be split."""
    cost_usd: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    power_w: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    cage: Cage
    """The module cage the NIC's lanes leave through."""
    nics_per_cage: int = Field(1, ge=1, le=8)
    """NICs sharing one cage (two on a DGX H100's twin-port OSFP network cages)."""
    cages: int = Field(1, ge=1, le=8)
    """Cages of one NIC (2 on a dual-port adapter): its ports are spread over them evenly, so a
    module at the NIC serves only its cage's share of the planes (and its failure leaves the
    GPU the other cages' planes)."""
    protocols: list[Protocol] = Field(min_length=1)
    """The protocols the NIC speaks (a VPI adapter speaks both)."""
    source: dict[str, str]

    @model_validator(mode="after")
    def _check(self) -> Nic:
        _require_sources(
            self.source, ("cost_usd", "power_w", "ports", "cage", "protocols"), f"nic {self.name}"
        )
        if self.cages > 1 and self.nics_per_cage > 1:
            raise ValueError(
                f"nic {self.name}: a NIC with several cages (cages = {self.cages}) shares none "
                "with another NIC (nics_per_cage must be 1)"
            )
        lanes, rest = divmod(self.cage.lanes * self.cages, self.nics_per_cage)
        if rest or lanes * self.cage.lane_gbps != self.speed_gbps:
            raise ValueError(
                f"nic {self.name}: {self.nics_per_cage} NIC(s) of {self.speed_gbps}G do not fill "
                f"{self.cages} cage(s) of {self.cage.lanes} x {self.cage.lane_gbps}G lanes"
            )
        bad = [p for p in self.port_splits if p < 1 or lanes % p or p % self.cages]
        if bad:
            raise ValueError(
                f"nic {self.name}: port_splits {bad} do not divide its {lanes} lanes into whole "
                f"ports over its {self.cages} cage(s)"
            )
        return self

    def ports_per_cage(self, planes: int) -> int:
        """Logical ports one module (or plug) at the NIC carries when split into ``planes``."""
        return self.nics_per_cage * planes // self.cages


class ScaleUpSwitch(Strict):
    """A switch of the scale-up domain (an NVSwitch chip on a baseboard, an NVLink switch tray).

    It is priced into the whole interconnect's figures, never into the scale-out objective: the
    scale-up domain is given by the GPUs the instance names, not chosen by the planner.
    """

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    ports: int = Field(ge=1, le=4096)
    """Scale-up ports (NVLink links) of one switch."""
    port_gbps: float = Field(gt=0, le=6400)
    """Bandwidth of one port, each way, Gb/s."""
    domain_gpus: int = Field(ge=1, le=1024)
    """GPUs of the product's own domain (8 on an HGX baseboard, 72 in an NVL72 rack)."""
    switches_per_domain: int = Field(ge=1, le=4096)
    """Switches the product puts in that domain."""
    cost_usd: float = Field(ge=0, le=MAX_UNIT_COST_USD)
    power_w: float = Field(ge=0, le=MAX_UNIT_POWER_W)
    source: dict[str, str]

    @model_validator(mode="after")
    def _check(self) -> ScaleUpSwitch:
        _require_sources(
            self.source,
            ("ports", "switches_per_domain", "cost_usd", "power_w"),
            f"scale_up_switch {self.name}",
        )
        return self

    def switches_for(self, gpus: int) -> int:
        """Switches a domain of ``gpus`` GPUs takes: the product's count, scaled by GPUs.

        switches = ceil(gpus * switches_per_domain / domain_gpus)
        """
        return -(-gpus * self.switches_per_domain // self.domain_gpus)


class Catalog(Strict):
    """All components the planner may choose from."""

    switch: list[Switch] = Field(min_length=1)
    medium: list[Medium] = Field(min_length=1)
    nic: list[Nic] = Field(default_factory=list)
    ocs: list[Ocs] = Field(default_factory=list)
    scale_up_switch: list[ScaleUpSwitch] = Field(default_factory=list)
    reliability: ComponentRates | None = None
    """Failure rates and repair times by component class (``planner.reliability``); a catalog
    without them takes the shipped catalog's when it is loaded."""

    @model_validator(mode="after")
    def _unique(self) -> Catalog:
        for kind in ("switch", "medium", "nic", "ocs", "scale_up_switch"):
            names = [e.name for e in getattr(self, kind)]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(sorted(dup))}")
        modules = [mod.name for m in self.medium for mod in m.modules]
        taken = {m.name for m in self.medium}
        dup = {n for n in modules if modules.count(n) > 1 or n in taken}
        if dup:
            raise ValueError(
                "module names must be unique among media and modules; repeated: "
                + ", ".join(sorted(dup))
            )
        return self

    def switch_named(self, name: str) -> Switch:
        """The switch of this name (KeyError when absent)."""
        for s in self.switch:
            if s.name == name:
                return s
        raise KeyError(name)

    def nic_named(self, name: str) -> Nic:
        """The NIC of this name (KeyError when absent)."""
        for n in self.nic:
            if n.name == name:
                return n
        raise KeyError(name)

    def nic_for(self, name: str | None, speed_gbps: int) -> Nic | None:
        """The NIC an instance names, or else the first of the catalog at its speed (or None)."""
        if name is not None:
            return self.nic_named(name)
        return next((n for n in self.nic if n.speed_gbps == speed_gbps), None)

    def scale_up_switch_named(self, name: str) -> ScaleUpSwitch:
        """The scale-up switch of this name (KeyError when absent)."""
        for s in self.scale_up_switch:
            if s.name == name:
                return s
        raise KeyError(name)

    def ocs_named(self, name: str) -> Ocs:
        """The optical circuit switch of this name (KeyError when absent)."""
        for o in self.ocs:
            if o.name == name:
                return o
        raise KeyError(name)

    def medium_named(self, name: str) -> Medium:
        """The medium of this name (KeyError when absent)."""
        for m in self.medium:
            if m.name == name:
                return m
        raise KeyError(name)

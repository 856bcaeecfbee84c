"""The component catalog: switches, link media and NICs, each figure with its source."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from planner.schema.instance_base import Strict

MediumKind = Literal["dac", "aec", "sr", "dr", "fr", "lpo"]
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


class CpoOptics(Strict):
    """The co-packaged optical engine behind every port of a CPO switch, at one port speed."""

    lane_gbps: int = Field(gt=0)
    """Optical lane rate; a pluggable at the far end must run the same lanes."""
    connector: str = Field(min_length=1)
    """Fibre connector of each port (for example 'mpo-12'); the far end must match it."""
    reach_m: float = Field(gt=0)
    """Longest fibre the engine drives."""


class Switch(Strict):
    """A switch system."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    description: str = ""
    capacity_gbps: int = Field(gt=0)
    """Aggregate switching capacity in Gb/s."""
    port_configs: list[PortConfig] = Field(min_length=1)
    """Every logical port configuration (64x800G, 128x400G by breakout, ...)."""
    cost_usd: float = Field(ge=0)
    """System price without pluggable optics (with its optical engines when CPO)."""
    power_w: float = Field(ge=0)
    """Typical power without pluggable optics (with its optical engines when CPO)."""
    latency_ns: int = Field(ge=0)
    """Port-to-port latency in ns."""
    rack_units: int = Field(1, ge=1, le=64)
    cpo: bool = False
    """Ports are co-packaged optics: no pluggable module at this end of a link."""
    cpo_optics: CpoOptics | None = None
    """The optical engine of a CPO switch (required when ``cpo``): what the far end must match."""
    source: dict[str, str]
    """Where each figure came from: ports, cost_usd, power_w, latency_ns (and cpo_optics)."""

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
        for pc in self.port_configs:
            if pc.ports * pc.speed_gbps > self.capacity_gbps:
                raise ValueError(
                    f"switch {self.name}: {pc.ports}x{pc.speed_gbps}G exceeds its capacity_gbps {self.capacity_gbps}"
                )
        return self

    def radix_at(self, speed_gbps: int) -> int | None:
        """Ports at this speed, or None when no configuration runs it."""
        radices = [pc.ports for pc in self.port_configs if pc.speed_gbps == speed_gbps]
        return max(radices) if radices else None


class Medium(Strict):
    """A link medium: a cable assembly or a pair of pluggable modules and a fibre."""

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9-]*$")
    kind: MediumKind
    speed_gbps: int = Field(gt=0)
    reach_m: float = Field(gt=0)
    cost_usd_per_end: float = Field(ge=0)
    power_w_per_end: float = Field(ge=0)
    cable_cost_usd: float = Field(0.0, ge=0)
    """Per link: the fibre for optics; 0 for copper assemblies priced in their ends."""
    latency_ns: int = Field(0, ge=0)
    """Electronics latency (DSP, FEC, retimer) added per link, one way."""
    afr: float = Field(ge=0, le=1)
    """Annual failure rate per end."""
    lane_gbps: int | None = Field(None, gt=0)
    """Lane rate (optical lanes for optics, electrical for copper); None: unknown, so the medium
    never meets a co-packaged port, which must match it."""
    connector: str = ""
    """Connector at each end ('mpo-12', 'lc-duplex', 'osfp' for copper, ...); a co-packaged
    port takes only media with its own connector and lane rate."""
    channel_loss_db: float | None = Field(None, ge=0, le=30)
    """Largest channel insertion loss the optics tolerate, in dB; a link through an optical
    circuit switch must fit the switch's loss in it. None: not usable through one."""
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
        return self

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
    cost_usd: float = Field(ge=0)
    power_w: float = Field(ge=0)
    insertion_loss_db: float = Field(ge=0, le=20)
    """Optical loss a circuit adds, in dB; a medium must have the budget for it."""
    reconfiguration_ms: float = Field(ge=0)
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
    speed_gbps: int = Field(gt=0)
    port_splits: list[int] = Field(min_length=1)
    cost_usd: float = Field(ge=0)
    power_w: float = Field(ge=0)
    source: dict[str, str]

    @model_validator(mode="after")
    def _check(self) -> Nic:
        _require_sources(self.source, ("cost_usd", "power_w", "ports"), f"nic {self.name}")
        return self


class Catalog(Strict):
    """All components the planner may choose from."""

    switch: list[Switch] = Field(min_length=1)
    medium: list[Medium] = Field(min_length=1)
    nic: list[Nic] = Field(default_factory=list)
    ocs: list[Ocs] = Field(default_factory=list)

    @model_validator(mode="after")
    def _unique(self) -> Catalog:
        for kind in ("switch", "medium", "nic", "ocs"):
            names = [e.name for e in getattr(self, kind)]
            dup = {n for n in names if names.count(n) > 1}
            if dup:
                raise ValueError(f"{kind} names must be unique; repeated: {', '.join(sorted(dup))}")
        return self

    def switch_named(self, name: str) -> Switch:
        """The switch of this name (KeyError when absent)."""
        for s in self.switch:
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

"""A design's links: the class between two adjacent tiers, its groups by medium, their end modules.

A ``LinkClass`` holds every link between two adjacent tiers of one plane; its groups
(``LinkGroup``) split them by medium, each with the figures it was priced with and the lengths
the floor plan gave (``length_histogram``); an ``EndModule`` is the module at one end when it is
not the medium's own. Part of ``planner.design``, which names them all.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


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

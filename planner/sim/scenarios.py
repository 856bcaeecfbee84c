"""Failure scenarios: named switches, links and planes, and Monte Carlo draws from media AFRs."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from planner.design import Design
from planner.errors import InputError
from planner.schema.instance import HOURS_PER_YEAR
from planner.schema.verify import FailureSpec
from planner.sim.fabric import Fabric, IntArray

#: A node by its group's role and index ('spine3', 'switch12', 'router5'); a circuit device by
#: the plane's device role and index ('ocs2' on a direct-connect design).
_NAME = re.compile(r"^([a-z_]+?)(\d+)$")


@dataclass(frozen=True)
class Scenario:
    """What is down: links of plane 0 (a plane stands for any) and whole planes."""

    name: str
    failed_links: IntArray
    """Physical link ids of plane 0 that are down."""
    planes_lost: int = 0
    single_switch_tier: int | None = None
    """Tier of the one switch that failed, when the scenario is a single-switch failure."""
    fabric: Fabric | None = None
    """The plane after the failure of switches it merges (``Fabric.degrade``), on which
    ``failed_links`` then fail; None: the healthy plane with ``failed_links`` down."""

    def failed_fabric(self, healthy: Fabric) -> Fabric | None:
        """The plane 0 this scenario leaves; None when it takes nothing of plane 0."""
        base = healthy if self.fabric is None else self.fabric
        if self.failed_links.size:
            return base.with_failed_links(self.failed_links)
        return self.fabric


def node_of(fabric: Fabric, name: str) -> int:
    """Node id of a switch named by role and index ('spine3'); InputError when there is none."""
    m = _NAME.match(name.strip())
    roles = list(fabric.roles)
    if not m or m.group(1) not in roles:
        known = [r + "N" for r in roles[1:]] + (
            [f"{fabric.device_role}N"] if fabric.circuit_device is not None else []
        )
        raise InputError(
            f"verify.failures: unknown switch {name!r}; expected one of {', '.join(known)}"
        )
    tier, index = roles.index(m.group(1)), int(m.group(2))
    count = fabric.tier_offsets[tier + 1] - fabric.tier_offsets[tier]
    if index >= count:
        raise InputError(
            f"verify.failures: {name!r} does not exist; this design has {count} {m.group(1)} switches per plane"
        )
    return fabric.tier_offsets[tier] + index


def links_of_switches(fabric: Fabric, nodes: list[int]) -> IntArray:
    """Physical links touching any of these nodes."""
    return np.flatnonzero(np.isin(fabric.lower, nodes) | np.isin(fabric.upper, nodes))


def link_between(fabric: Fabric, pair: str) -> int:
    """One physical link between two named switches ('leaf3-spine1')."""
    if "-" not in pair:
        raise InputError(
            f"verify.failures.links: {pair!r}: expected 'lower-upper', e.g. 'leaf3-spine1'"
        )
    a, b = (node_of(fabric, x) for x in pair.split("-", 1))
    hit = np.flatnonzero(
        ((fabric.lower == a) & (fabric.upper == b)) | ((fabric.lower == b) & (fabric.upper == a))
    )
    if hit.size == 0:
        raise InputError(f"verify.failures.links: no link between {pair.replace('-', ' and ')}")
    return int(hit[0])


def _nodes_of(fabric: Fabric, name: str) -> list[int]:
    """The nodes a named switch stands for: itself, or a circuit device's circuits ('ocs2').

    A device is named by the plane's ``device_role`` (``Fabric.device_role``) and its index.
    """
    m = _NAME.match(name.strip())
    if fabric.circuit_device is not None and m and m.group(1) == fabric.device_role:
        device = int(m.group(2))
        if device > int(fabric.circuit_device.max(initial=-1)):
            raise InputError(f"verify.failures: {name!r}: this design has no such device")
        hit = np.flatnonzero(fabric.circuit_device == device)
        return [int(fabric.tier_offsets[-2] + c) for c in hit]
    return [node_of(fabric, name)]


def named_scenario(fabric: Fabric, spec: FailureSpec) -> Scenario:
    """A scenario from the instance's description (a circuit device's name takes down its circuits).

    Switches the graph merges (``Fabric.degrade``) give the plane after their failure, and the
    other names fail on it.
    """
    merged, names = None, tuple(spec.switches)
    if fabric.degrade is not None and names:
        merged, names = fabric.degrade(names)
    base = fabric if merged is None else merged
    links, tier = _named_links(base, spec, names)
    if merged is not None and len(spec.switches) == 1 and not spec.links and not spec.planes:
        tier = None
    return Scenario(spec.label, links, spec.planes, tier, merged)


def _named_links(
    fabric: Fabric, spec: FailureSpec, names: tuple[str, ...]
) -> tuple[IntArray, int | None]:
    """The links that a spec's links and its switches among ``names`` take down.

    Also the tier of its switch when it names exactly one.
    """
    nodes = [n for s in names for n in _nodes_of(fabric, s)]
    links = np.union1d(
        links_of_switches(fabric, nodes),
        np.array([link_between(fabric, p) for p in spec.links], dtype=np.int64),
    )
    if spec.planes >= fabric.planes and spec.planes:
        raise InputError(
            f"verify.failures.planes: {spec.planes} of {fabric.planes} planes cannot fail and leave a fabric"
        )
    tier = None
    if len(spec.switches) == 1 and len(nodes) == 1 and not spec.links and not spec.planes:
        tier = int(fabric.tier_of(np.array(nodes))[0])
    return links.astype(np.int64), tier


def single_switch_scenarios(fabric: Fabric, design: Design) -> list[Scenario]:
    """One failed switch (the first) of every tier that the design's constraints protect."""
    out = []
    for level in design.requirements.protected_tiers:
        if level == 1 and fabric.planes == 1:
            continue  # a leaf failure cuts its GPUs off: nothing left to measure
        if fabric.degrade is not None and level <= len(design.tiers):
            name = f"{design.tiers[level - 1].role}0"
            merged, _ = fabric.degrade((name,))
            if merged is not None:
                out.append(Scenario(f"{name} down", np.zeros(0, dtype=np.int64), 0, level, merged))
                continue
        if level > fabric.tiers:
            continue
        if fabric.circuit_device is not None and level == fabric.tiers:
            # The OCS layer: device 0 fails and takes its circuits with it (before any
            # re-assignment moves them to the other devices).
            circuits = fabric.tier_offsets[level] + np.flatnonzero(fabric.circuit_device == 0)
            links = links_of_switches(fabric, [int(c) for c in circuits])
            out.append(Scenario("ocs0 down", links, 0, level))
            continue
        node = fabric.tier_offsets[level]
        out.append(
            Scenario(f"{fabric.roles[level]}0 down", links_of_switches(fabric, [node]), 0, level)
        )
    return out


def link_unavailability(design: Design, mttr_hours: float) -> np.ndarray:
    """Probability that a link of each class is down at a random moment: 1 - exp(-AFR MTTR / year).

    A link's AFR is the sum over its ends (modules or cable ends) of each end's own AFR (the two
    ends may carry different modules, ``LinkGroup.ends_afr``);
    a class whose links use several media gets their link-weighted mean, so the expected number
    of failed links is exact.
    """
    afr = np.array(
        [sum(g.links * g.ends_afr for g in c.groups) / max(1, c.links) for c in design.link_classes]
    )
    return 1.0 - np.exp(-afr * mttr_hours / HOURS_PER_YEAR)


def draw_failures(
    fabric: Fabric, design: Design, mttr_hours: float, rng: np.random.Generator
) -> list[IntArray]:
    """Failed physical links of every plane for one Monte Carlo draw.

    A link draws with the unavailability of its design class; a link the design does not price
    (``Fabric.design_class`` -1) has no failure model and never fails.
    """
    p_class = np.append(link_unavailability(design, mttr_hours), 0.0)
    p_down = p_class[fabric.design_classes]
    return [
        np.flatnonzero(rng.random(fabric.physical_links) < p_down) for _ in range(fabric.planes)
    ]

r"""The dragonfly sizing model: data, one function per constraint family, build, then solve.

Decisions, per plane count ``P`` (the NIC split, ``E`` GPUs on ``P`` identical planes): switch
model ``s`` (radix ``k`` at the plane's port speed), terminals per switch ``p``, switches per
group ``a``, groups ``g``, global links per group pair ``m`` and local links per switch pair
``q`` (``models.dragonfly.structure`` has the wiring and its closed forms; every design
takes the ``blocks`` arrangement of its global links). The routing ``R``
(``Requirements.routing``: minimal, Valiant, UGAL-L or UGAL-G) is chosen from the instance
before the model runs (``design.routing_of``) and decides what the links are sized for.

Constraints (``lambda`` = ``max_oversubscription``; n = min(a p, E) the GPUs of a full group,
h = ceil(m (g - 1) / a) the global ports a switch needs):

* ``holds_gpus``:      a p g >= E
* ``fits_radix``:      p + q (a - 1) + h <= k
* ``within_max_groups``: 2 <= g <= a h + 1, m >= 1 (every group pair joined), a >= 2 (a
  dragonfly has groups of switches; one group is a full mesh, groups of one switch a mesh of
  switches: other families)
* ``meets_ratios``:    lambda_G <= lambda  and  lambda_L <= lambda, the load ratios of the busiest
  global and local link for the traffic the routing is sized for
  (``structure.global_load_ratio``, ``structure.local_load_ratio``):

  - minimal: uniform all-to-all, lambda_G = n^2 / ((E - 1) m) and
    lambda_L = (2 h lambda_G / a + p^2 / (E - 1)) / q (in a full dragonfly lambda_G ~ p / h and
    lambda_L ~ 2 p / a, Kim et al.'s balance);
  - Valiant and UGAL: the larger of that and the worst case they leave, every group sending all
    it has to the next (an adversarial permutation). Each packet off the direct links crosses
    two global links, so it needs twice the global bandwidth of uniform traffic:
    lambda_G = 2 n / ((g - 2) m) under Valiant (its intermediate is any of the g - 2 other
    groups) and 2 n / (g m) under UGAL (its best split, 2 / g of each pair's traffic on the
    direct links); the local links carry the Valiant path's local hops:
    lambda_L = (n + 2 h p) / ((g - 2) m q) under Valiant and (n + 2 p (h + k)) / (g m q) under
    UGAL, k = ceil(h / (g - 1)) the most ends a switch holds towards one group (derivations in
    ``structure.shift_global_ratio`` and ``structure.shift_local_ratio``); with two groups,
    n / m and 2 p / q (nothing to go through). They assume Valiant's transit spread evenly
    over a group pair's links: exact with one link per pair; at the block edges of several
    copies the simulator shows up to about 1.2 to 1.4 times the global ratio on a few links;

* ``meets_hops``:      routed links + 1 <= max_switch_hops (4 switches for local-global-local;
  Valiant's route local-global-local-global-local, 6; UGAL's uncongested route is minimal)
* ``meets_latency``:   switches x latency + 2 GPU links + the local and global links of the
  longest route, each at its class's worst <= max_latency_ns
* ``meets_failure``:   a switch failure cuts its p GPUs off one plane: (P - 1) / P >= phi
* ``meets_caps``:      capex and power within their caps.
* ``reaches_across``:  some medium reaches the longest global link, at least the rows between
  the first group and the last (``layout.min_longest_global_m``).
* ``meets_pins``:      the counts ``search.pin`` fixes (``Pins``): p (downlinks), a g
  (switches), q (a - 1) + h (uplinks: every global port then carries a link) and q
  (parallel_links).

``CONSTRAINTS`` names these families (one predicate each). ``DragonflyProblem.leave_out`` drops
some (the binding tests; nothing by default), with the parts of the search each one shapes:
without ``holds_gpus`` the least g is the least the other rules allow (GPU links are laid out
for the a p g GPUs held); without ``fits_radix`` the candidates run over p <= E and
a <= max(2, ceil(E / p)) in place of p + (a - 1) <= k, and nothing is pruned by ports;
without ``within_max_groups`` a and g start at 1 (m >= 1 stays: ``price`` lays out no groups
joined by nothing); without ``meets_ratios`` m = q = 1; without ``meets_pins`` no count is
fixed; without ``reaches_across`` (a valid cut: ``price`` finds no medium for such a link)
every candidate is priced.

Objective: ``P (a g v_s + sum over links of v_medium)``, ``v(capex, power) = capex_weight capex
+ energy_weight energy_usd_per_w power``; every link takes the medium of least ``v`` that
reaches its length (``layout``) and fits both ends (``models.switch_media.media_table``).

Rules, not decisions: ``m`` and ``q`` are the least that meet the ratios (``min_global_links``,
``min_local_links``): more of either adds links of the same lengths and changes nothing else, so
only the least can be optimal (unless the pins fix them, ``links_of``); ``h`` is the global
ports the links need.

Exactness (best-first enumeration). The candidates ``(s, p, a)`` are finite: ``1 <= p``,
``2 <= a``, ``p + (a - 1) <= k``. For each, only the least ``g = max(2, ceil(E / (a p)))`` can be
optimal under minimal routing: ``m`` does not depend on ``g``, while ``h``, the local ratio, the
longest route, the switches, the links and their lengths (one row of racks more per group) all
grow with ``g``, so a larger ``g`` meets a rule only if the least does, and costs at least as
much. Under UGAL ``m`` falls as 1 / g but ``m (g - 1)``, and with it ``h``, the global links and
``q``, grow with ``g`` (up to the rounding of ``m``), so the least ``g`` is priced too. Under
Valiant ``h`` ~ 2 p (g - 1) / (g - 2) falls with ``g``, so a larger ``g`` may fit the radix where
the least does not: the least ``g`` that fits is priced (``groups_of``; a larger one costs more
switches and links). A pinned switch count fixes ``g = switches / a``. For each,
``LB = P (a g v_s + E v_gpu + a (a - 1) g / 2 v_local + m g (g - 1) / 2 v_global)`` is at most
its objective: ``v_gpu`` and ``v_local`` are the cheapest medium values over any length, and
``v_global`` the cheapest over the lengths a global link can have (two groups never share a rack,
so a global link is at least one rack apart: ``layout.min_global_m``). Candidates are
priced in order of ``LB`` until the least ``LB`` left reaches the best objective: every candidate
not priced costs at least the optimum, so the best priced is optimal and the least ``LB`` left
is the bound. A stop (the command's deadline, ``Stop``) that ends it early leaves that
bound and status ``FEASIBLE`` (``TIME_LIMIT`` with no design; with no bound either when it
passes while the candidates are still being listed).
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from models import cabling as cb
from models import switch_media as sm
from models.dragonfly import layout as ly
from models.dragonfly import structure as st
from models.leave_out import check_known
from models.status import Status


class Stop(Protocol):
    """When the search must stop: the command's deadline (``planner.deadline.Deadline``)."""

    @property
    def expired(self) -> bool:
        """Whether the time is up."""
        ...


@dataclass(frozen=True)
class Never:
    """A stop that never comes: the search runs to its end."""

    expired: bool = False


#: The default stop.
NEVER = Never()

#: Relative tolerance on a load ratio against its limit, and between two equal objectives.
RATIO_RTOL = 1e-9
OBJECTIVE_RTOL = 1e-9
#: Slack on a latency against its cap, in ns.
LATENCY_TOL_NS = 1e-9
#: The arrangement of the global links of every design the model plans (``structure``).
ARRANGEMENT = st.BLOCKS
#: Under Valiant, how many more groups than the least that holds the GPUs are tried for one
#: that fits the radix (``groups_of``).
VALIANT_GROUPS_SCAN = 64


@dataclass(frozen=True)
class Requirements:
    """The instance's constraints as the model reads them (None: no limit)."""

    max_ratio: float = 1.0
    max_switch_hops: int | None = None
    max_latency_ns: float | None = None
    min_fraction_after_failure: float | None = None
    max_power_w: float | None = None
    max_capex_usd: float | None = None
    routing: str = st.MINIMAL
    """The routing the fabric runs (``structure.ROUTINGS``), which sets the load ratios."""


@dataclass(frozen=True)
class Pins:
    """Counts the instance fixes (``search.pin``, first entry of each list); None: chosen."""

    gpus_per_switch: int | None = None
    """p (``pin.downlinks``: ports facing down, the GPU ports)."""
    switches: int | None = None
    """a g (``pin.switches``: switches per plane)."""
    switch_ports: int | None = None
    """q (a - 1) + h (``pin.uplinks``: ports facing other switches); every global port used."""
    local_links_per_pair: int | None = None
    """q (``pin.parallel_links``: links to each switch a switch connects to in its group)."""


@dataclass(frozen=True)
class DragonflyProblem:
    """Everything the model needs for one plane count."""

    gpus: int
    planes: int
    speed_gbps: int
    switches: tuple[sm.SwitchChoice, ...]
    media: tuple[cb.MediumOption, ...]
    floor: sm.Floor
    requirements: Requirements
    energy_usd_per_w: float
    capex_weight: float = 1.0
    energy_weight: float = 1.0
    nic: cb.PortKind = None
    pins: Pins = Pins()
    leave_out: frozenset[str] = frozenset()
    """Constraint families (names of ``CONSTRAINTS``) the search does not apply; tests only."""

    def __post_init__(self) -> None:
        check_known(self.leave_out, CONSTRAINTS)


@dataclass(frozen=True)
class Candidate:
    """One dragonfly: planes, switch, terminals p, group size a, groups g, links m and q."""

    planes: int
    switch: sm.SwitchChoice
    p: int
    a: int
    g: int
    m: int
    q: int

    @property
    def h(self) -> int:
        """Global ports per switch."""
        return st.global_ports(self.a, self.g, self.m)


@dataclass(frozen=True)
class Priced:
    """A candidate with its media bands (per plane), totals (all planes) and longest route."""

    candidate: Candidate
    gpu_bands: tuple[sm.Band, ...]
    local_bands: tuple[sm.Band, ...]
    global_bands: tuple[sm.Band, ...]
    capex_usd: float
    power_w: float
    objective_usd: float
    max_latency_ns: float


@dataclass(frozen=True)
class DragonflySolution:
    """The best dragonfly, or why there is none (``priced`` None)."""

    status: Status
    priced: Priced | None
    bound_usd: float | None
    wall_s: float
    examined: int
    reason: str = ""


@dataclass(frozen=True)
class DragonflyModel:
    """A problem with its media tables per switch: GPU links, and switch-to-switch links."""

    problem: DragonflyProblem
    gpu_tables: tuple[sm.MediaTable, ...]
    link_tables: tuple[sm.MediaTable, ...]


# ---- constraints, one family each ----------------------------------------------------------------
def holds_gpus(c: Candidate, gpus: int) -> bool:
    """Endpoints: a p g >= E."""
    return c.a * c.p * c.g >= gpus


def fits_radix(c: Candidate) -> bool:
    """Ports: p + q (a - 1) + h <= radix."""
    return st.ports_per_switch(c.p, c.a, c.q, c.h) <= c.switch.radix


def within_max_groups(c: Candidate) -> bool:
    """Groups: 2 <= g <= a h + 1, every pair of groups joined by m >= 1 links, a >= 2."""
    return c.a >= 2 and c.m >= 1 and 2 <= c.g <= st.max_groups(c.a, c.h)


def min_global_links(p: int, a: int, g: int, gpus: int, r: Requirements) -> int:
    """Bandwidth: the least m with lambda_G <= max_ratio (lambda_G falls as 1 / m)."""
    ratio = st.global_load_ratio(p, a, g, 1, gpus, r.routing)
    return max(1, math.ceil(ratio / r.max_ratio * (1 - RATIO_RTOL)))


def min_local_links(p: int, a: int, g: int, m: int, gpus: int, r: Requirements) -> int:
    """Bandwidth: the least q with lambda_L <= max_ratio (lambda_L falls as 1 / q)."""
    ratio = st.local_load_ratio(p, a, g, 1, m, gpus, r.routing, ARRANGEMENT)
    return max(1, math.ceil(ratio / r.max_ratio * (1 - RATIO_RTOL)))


def meets_ratios(c: Candidate, gpus: int, r: Requirements) -> bool:
    """Bandwidth: lambda_G and lambda_L of the routing within max_oversubscription."""
    limit = r.max_ratio * (1 + RATIO_RTOL)
    glob = st.global_load_ratio(c.p, c.a, c.g, c.m, gpus, r.routing)
    local = st.local_load_ratio(c.p, c.a, c.g, c.q, c.m, gpus, r.routing, ARRANGEMENT)
    return glob <= limit and local <= limit


def meets_hops(c: Candidate, r: Requirements) -> bool:
    """Hops: switches on the longest route of the routing within max_switch_hops."""
    if r.max_switch_hops is None:
        return True
    return st.switch_hops(c.a, c.g, c.m, ARRANGEMENT, r.routing) <= r.max_switch_hops


def meets_failure(planes: int, r: Requirements) -> bool:
    """Failure: one switch down cuts its GPUs off one plane: (P - 1) / P >= phi."""
    phi = r.min_fraction_after_failure
    return phi is None or (planes - 1) / planes >= phi - RATIO_RTOL


def meets_latency(latency_ns: float, r: Requirements) -> bool:
    """Latency: the longest route within max_latency_ns."""
    return r.max_latency_ns is None or latency_ns <= r.max_latency_ns + LATENCY_TOL_NS


def meets_caps(capex_usd: float, power_w: float, r: Requirements) -> bool:
    """Budgets: capex and power within their caps."""
    return (r.max_capex_usd is None or capex_usd <= r.max_capex_usd * (1 + RATIO_RTOL)) and (
        r.max_power_w is None or power_w <= r.max_power_w * (1 + RATIO_RTOL)
    )


def meets_pins(c: Candidate, pins: Pins) -> bool:
    """Pins: the counts the instance fixes."""
    ports = c.q * (c.a - 1) + c.h
    return (
        (pins.gpus_per_switch is None or c.p == pins.gpus_per_switch)
        and (pins.switches is None or c.a * c.g == pins.switches)
        and (pins.switch_ports is None or ports == pins.switch_ports)
        and (pins.local_links_per_pair is None or c.q == pins.local_links_per_pair)
    )


def reaches_across(model: DragonflyModel, si: int, p: int, a: int, g: int) -> bool:
    """Cabling: some medium reaches the longest global link (``layout.min_longest_global_m``).

    When none does, the candidate has a link without a medium (``price`` would say so after
    laying out every cable), so it is left out before it is priced.
    """
    table = model.link_tables[si]
    longest = ly.min_longest_global_m(model.problem.floor, p, a, g)
    return bool(table.reach_m) and table.reach_m[-1] >= longest


#: Every constraint family, by name (module docstring), with its predicate.
CONSTRAINTS: dict[str, Callable[..., bool]] = {
    "holds_gpus": holds_gpus,
    "fits_radix": fits_radix,
    "within_max_groups": within_max_groups,
    "meets_ratios": meets_ratios,
    "meets_hops": meets_hops,
    "meets_failure": meets_failure,
    "meets_latency": meets_latency,
    "meets_caps": meets_caps,
    "reaches_across": reaches_across,
    "meets_pins": meets_pins,
}


def applies(pr: DragonflyProblem, family: str) -> bool:
    """Whether the search applies ``family`` (not in ``leave_out``)."""
    return family not in pr.leave_out


def holds(pr: DragonflyProblem, family: str, *args: object) -> bool:
    """``family``'s predicate (``CONSTRAINTS``) on ``args``; True when it is left out."""
    return family in pr.leave_out or CONSTRAINTS[family](*args)


def pins_of(pr: DragonflyProblem) -> Pins:
    """The counts the search fixes: the pins, none without ``meets_pins``."""
    return pr.pins if applies(pr, "meets_pins") else Pins()


def least_groups(pr: DragonflyProblem, p: int, a: int) -> int:
    """The least g: holds the GPUs (``holds_gpus``), at least 2 (``within_max_groups``)."""
    low = 2 if applies(pr, "within_max_groups") else 1
    return max(low, st.groups_needed(pr.gpus, p, a)) if applies(pr, "holds_gpus") else low


def gpus_held(pr: DragonflyProblem, p: int, a: int, g: int) -> int:
    """GPUs with a GPU link: E (a p g >= E under ``holds_gpus``)."""
    return min(pr.gpus, a * p * g)


def route_latency_ns(
    c: Candidate,
    switch_ns: float,
    gpu_ns: float,
    local_ns: float,
    global_ns: float,
    routing: str = st.MINIMAL,
) -> float:
    """The longest route's latency, every link at its class's worst.

    Between groups: its switches, two GPU links, its local links and its global links (one,
    two on Valiant's route); inside a group: two switches, two GPU links and one local link.
    """
    links = st.switch_hops(c.a, c.g, c.m, ARRANGEMENT, routing) - 1
    inside = 2 * gpu_ns + (switch_ns * 2 + local_ns if c.a > 1 else switch_ns)
    if c.g < 2:
        return inside
    globs = st.global_hops(c.g, routing)
    across = (links + 1) * switch_ns + 2 * gpu_ns + globs * global_ns + (links - globs) * local_ns
    return max(inside, across)


# ---- build, price, solve ---------------------------------------------------------------------------
def build(problem: DragonflyProblem) -> DragonflyModel:
    """The media tables of every switch: GPU to switch, and switch to switch."""
    criteria = cb.Criteria(problem.energy_usd_per_w, problem.capex_weight, problem.energy_weight)
    gpu = tuple(
        sm.media_table(problem.media, problem.nic, s.engine, criteria) for s in problem.switches
    )
    link = tuple(
        sm.media_table(problem.media, s.engine, s.engine, criteria) for s in problem.switches
    )
    return DragonflyModel(problem, gpu, link)


def value_usd(p: DragonflyProblem, capex_usd: float, power_w: float) -> float:
    """The objective of these totals."""
    return p.capex_weight * capex_usd + p.energy_weight * p.energy_usd_per_w * power_w


def links_of(pr: DragonflyProblem, s: sm.SwitchChoice, p: int, a: int, g: int) -> tuple[int, int]:
    """(m, q) of (s, p, a, g): the least that meet the ratios, or what the pins fix.

    A pinned q is taken as it is. Pinned switch ports (``Pins.switch_ports``) fix
    h = ports - q (a - 1), and m is the most links h global ports a switch hold,
    floor(h a / (g - 1)), with q the pinned one or the least that meets the local ratio
    with that m. Without ``meets_ratios`` the least m and q are 1.
    """
    r, pins = pr.requirements, pins_of(pr)
    ratios = applies(pr, "meets_ratios")
    if g < 2:
        return 0, pins.local_links_per_pair or 1
    least_m = least_global_links(pr, p, a, g)
    if pins.switch_ports is None:
        q = pins.local_links_per_pair or (
            min_local_links(p, a, g, least_m, pr.gpus, r) if ratios else 1
        )
        return least_m, q
    qs = [pins.local_links_per_pair] if pins.local_links_per_pair else range(1, s.radix + 1)
    m, q = 0, 0
    for q in qs:
        h = pins.switch_ports - q * (a - 1)
        m = h * a // (g - 1)
        if h < 1 or m < least_m:
            return 0, q  # the ports hold too few global links: fails ``within_max_groups``
        if not ratios or st.local_load_ratio(
            p, a, g, q, m, pr.gpus, r.routing, ARRANGEMENT
        ) <= r.max_ratio * (1 + RATIO_RTOL):
            return m, q
    return m, q


def least_global_links(pr: DragonflyProblem, p: int, a: int, g: int) -> int:
    """The least m: the least that meets the global ratio (1 without ``meets_ratios``)."""
    if not applies(pr, "meets_ratios"):
        return 1
    return min_global_links(p, a, g, pr.gpus, pr.requirements)


def candidate_of(
    pr: DragonflyProblem, s: sm.SwitchChoice, p: int, a: int, g: int
) -> Candidate | None:
    """The candidate (s, p, a, g) with its m and q (``links_of``), None when a rule fails."""
    r = pr.requirements
    m, q = links_of(pr, s, p, a, g)
    c = Candidate(pr.planes, s, p, a, g, m, q)
    ok = holds(pr, "holds_gpus", c, pr.gpus) and holds(pr, "fits_radix", c)
    ok = ok and holds(pr, "within_max_groups", c) and holds(pr, "meets_pins", c, pr.pins)
    ok = ok and holds(pr, "meets_ratios", c, pr.gpus, r) and holds(pr, "meets_hops", c, r)
    return c if ok else None


def groups_of(pr: DragonflyProblem, s: sm.SwitchChoice, p: int, a: int) -> int | None:
    """The one g priced for (s, p, a) (module docstring), None when there is none.

    The least that holds the GPUs (``least_groups``); with ``Pins.switches``, a g = that
    count; under Valiant the least from there whose m and q fit the radix (up to
    ``VALIANT_GROUPS_SCAN`` more).
    """
    least = least_groups(pr, p, a)
    pins = pins_of(pr)
    if pins.switches is not None:
        g, rest = divmod(pins.switches, a)
        return g if rest == 0 and g >= least else None
    if pr.requirements.routing != st.VALIANT:
        return least
    for g in range(least, least + VALIANT_GROUPS_SCAN + 1):
        c = Candidate(pr.planes, s, p, a, g, *links_of(pr, s, p, a, g))
        if holds(pr, "within_max_groups", c) and holds(pr, "fits_radix", c):
            return g
    return least


def price(model: DragonflyModel, si: int, c: Candidate) -> Priced | None:
    """A candidate with its media, totals and longest route; None when a link has no medium."""
    pr = model.problem
    if c.g >= 2 and c.m < 1:
        return None  # groups joined by no link: no global links to lay out (``within_max_groups``)
    lens = ly.lengths(pr.floor, c.p, c.a, c.g, c.m, gpus_held(pr, c.p, c.a, c.g), ARRANGEMENT)
    gb = sm.bands(model.gpu_tables[si], lens.gpu_m, 1)
    lb = sm.bands(model.link_tables[si], lens.local_m, c.q)
    glb = sm.bands(model.link_tables[si], lens.global_m, 1)
    if gb is None or lb is None or glb is None:
        return None
    capex = c.a * c.g * c.switch.cost_usd
    power = c.a * c.g * c.switch.power_w
    for b in (*gb, *lb, *glb):
        medium = next(x for x in pr.media if x.name == b.medium)
        capex += b.links * (b.ends * medium.end_cost_usd + medium.cable_cost_usd)
        power += b.links * b.ends * medium.end_power_w
    capex, power = c.planes * capex, c.planes * power

    def worst(bands: tuple[sm.Band, ...]) -> float:
        return max((b.latency_ns for b in bands), default=0.0)

    latency = route_latency_ns(
        c, c.switch.latency_ns, worst(gb), worst(lb), worst(glb), pr.requirements.routing
    )
    return Priced(c, gb, lb, glb, capex, power, value_usd(pr, capex, power), latency)


def lower_bound(model: DragonflyModel, si: int, p: int, a: int, g: int, m: int) -> float:
    """LB of (s, p, a, g): switches, and every link at the least medium value it may take.

    A GPU or local link may be short enough for the cheapest medium; a global link joins two
    groups, which never share a rack (``layout``), so it is at least one rack apart
    (``min_global_m``) and takes no medium cheaper than the best that reaches that far.
    """
    pr = model.problem
    s = pr.switches[si]
    v_gpu = min(model.gpu_tables[si].values, default=math.inf)
    v_local = min(model.link_tables[si].values, default=math.inf)
    v_global = value_beyond(model.link_tables[si], ly.min_global_m(pr.floor))
    local, glob = st.local_links(a, g, 1), st.global_links(g, m)
    v_links = (local * v_local if local else 0.0) + (glob * v_global if glob else 0.0)
    held = gpus_held(pr, p, a, g)
    return pr.planes * (a * g * value_usd(pr, s.cost_usd, s.power_w) + held * v_gpu + v_links)


def value_beyond(table: sm.MediaTable, length_m: float) -> float:
    """The least value of a medium for a link at least ``length_m`` long (inf: none reaches).

    A link of length l >= ``length_m`` takes the entry of the first reach at or beyond l, whose
    reach is then at least ``length_m``: the least value among those entries bounds it.
    """
    return min(
        (v for r, v in zip(table.reach_m, table.values, strict=True) if r >= length_m),
        default=math.inf,
    )


def terminals(pr: DragonflyProblem, s: sm.SwitchChoice) -> range:
    """The p listed for switch s: p <= k (``fits_radix``; p <= E without it)."""
    return range(1, (s.radix if applies(pr, "fits_radix") else pr.gpus) + 1)


def group_sizes(pr: DragonflyProblem, s: sm.SwitchChoice, p: int) -> range:
    """The a listed with p terminals: 2 <= a, p + (a - 1) <= k (module docstring).

    From 1 without ``within_max_groups``; up to max(2, ceil(E / p)) without ``fits_radix``.
    """
    low = 2 if applies(pr, "within_max_groups") else 1
    top = s.radix - p + 1 if applies(pr, "fits_radix") else max(2, -(-pr.gpus // p))
    return range(low, top + 1)


def _max_groups_of(k: int, p: int, a: int, m: int) -> int:
    """Most groups the ports leave room for: h <= k - p - (a - 1) gives g - 1 <= a h / m."""
    free = k - p - (a - 1)
    return 1 if free < 1 or m < 1 else 1 + a * free // m


def better(x: Priced, y: Priced) -> bool:
    """Lower objective; on a tie (OBJECTIVE_RTOL) fewer switches, then the canonical order."""
    tol = OBJECTIVE_RTOL * max(1.0, abs(y.objective_usd))
    if abs(x.objective_usd - y.objective_usd) > tol:
        return x.objective_usd < y.objective_usd
    cx, cy = x.candidate, y.candidate
    return (cx.a * cx.g, cx.switch.name, cx.p, cx.a) < (cy.a * cy.g, cy.switch.name, cy.p, cy.a)


def solve(model: DragonflyModel, deadline: Stop = NEVER) -> DragonflySolution:
    """Best-first enumeration with the LB stopping rule (see the module docstring).

    Stops when ``deadline`` passes: while listing the candidates (``TIME_LIMIT``, no bound) or
    while pricing them (the best so far, the least lower bound left as the bound).
    """
    start = time.perf_counter()
    pr, r = model.problem, model.problem.requirements
    heap: list[tuple[float, int, int, int, int, int]] = []
    ports = applies(pr, "fits_radix")
    if holds(pr, "meets_failure", pr.planes, r):
        for si, s in enumerate(pr.switches):
            for p in terminals(pr, s):
                if deadline.expired:
                    wall = time.perf_counter() - start
                    return DragonflySolution(Status.TIME_LIMIT, None, None, wall, 0)
                if pins_of(pr).gpus_per_switch not in (None, p):
                    continue
                for a in group_sizes(pr, s, p):
                    g = groups_of(pr, s, p, a)
                    if g is None:
                        continue
                    m = least_global_links(pr, p, a, g)
                    if ports and g > _max_groups_of(s.radix, p, a, m):
                        continue
                    if not holds(pr, "reaches_across", model, si, p, a, g):
                        continue
                    heap.append((lower_bound(model, si, p, a, g, m), si, p, a, g, m))
    heapq.heapify(heap)
    best: Priced | None = None
    examined = 0
    timed_out = False
    while heap:
        lb, si, p, a, g, m = heap[0]
        if lb == math.inf:
            break  # no medium cables the GPU or switch links of what is left
        if best is not None and lb >= best.objective_usd * (1 - OBJECTIVE_RTOL):
            break
        if deadline.expired:
            timed_out = True
            break
        heapq.heappop(heap)
        s = pr.switches[si]
        c = candidate_of(pr, s, p, a, g)
        if c is None:
            continue
        examined += 1
        priced = price(model, si, c)
        if priced is None or not holds(pr, "meets_latency", priced.max_latency_ns, r):
            continue
        if holds(pr, "meets_caps", priced.capex_usd, priced.power_w, r) and (
            best is None or better(priced, best)
        ):
            best = priced
    wall = time.perf_counter() - start
    open_bound = heap[0][0] if heap else math.inf
    if best is None:
        if timed_out:
            return DragonflySolution(Status.TIME_LIMIT, None, open_bound, wall, examined)
        return DragonflySolution(Status.INFEASIBLE, None, None, wall, examined, why_none(model))
    bound = min(best.objective_usd, open_bound)
    status = Status.FEASIBLE if timed_out else Status.OPTIMAL
    return DragonflySolution(status, best, bound, wall, examined)


def why_none(model: DragonflyModel) -> str:
    """In a user's words, the first rule that leaves no dragonfly."""
    pr = model.problem
    r = pr.requirements
    if not pr.switches:
        return f"no allowed switch runs {pr.speed_gbps}G ports"
    if not holds(pr, "meets_failure", pr.planes, r):
        return (
            f"a switch failure cuts its GPUs off one of {pr.planes} plane(s); that keeps less "
            f"than {r.min_fraction_after_failure or 0:.0%} of their bandwidth"
        )
    if applies(pr, "meets_hops") and r.max_switch_hops is not None and r.max_switch_hops < 2:
        return (
            f"max_switch_hops = {r.max_switch_hops}: a dragonfly route crosses 2 switches or more"
        )
    if not any(
        holds(pr, "reaches_across", model, si, p, a, least_groups(pr, p, a))
        for si, s in enumerate(pr.switches)
        for p in terminals(pr, s)
        for a in group_sizes(pr, s, p)
    ):
        reach = max((t.reach_m[-1] for t in model.link_tables if t.reach_m), default=0.0)
        return (
            f"no medium reaches across the floor a dragonfly of {pr.gpus:,} GPUs spans: every "
            f"pair of groups is joined, and the first and last group stand further apart than "
            f"the longest reach, {reach:,.0f} m (groups stand in consecutive rows of racks)"
        )
    return (
        f"no dragonfly of the allowed switches holds {pr.gpus:,} GPUs within their ports with "
        f"load ratios <= {r.max_ratio:g}, the hop and latency limits and the budgets"
    )

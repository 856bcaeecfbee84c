r"""A torus of packet switches (k-ary d-cube, mixed radix): closed forms and the sizing model.

Structure, per plane. ``dims = (k_0, .., k_{d-1})``, every ``k_i >= 2``, ``d`` in {1, 2, 3} (a
ring, a 2-D or a 3-D torus); ``N = prod k_i`` switches. Switch ``r`` has the mixed-radix
coordinates of ``r``, dimension 0 fastest. It holds ``g`` GPUs (GPU ``e`` on switch ``e // g``)
and joins its two ring neighbours in every dimension with ``q`` parallel links each; along a
dimension of size 2 the two neighbours coincide and the ring is ONE link (times ``q``). Every
plane of a NIC split into ``p`` ports is one such torus at ``nic / p`` Gb/s.

Closed forms (``deg(k) = 2`` for ``k >= 3``, ``1`` for ``k = 2``, ``0`` for ``k = 1``):

* switches                ``N = prod_i k_i``
* torus links             ``L = q * sum_i N deg(k_i) / 2``  (``N`` per ring dimension of
  ``k >= 3``, ``N / 2`` for ``k = 2``)
* ports per switch        ``g + q * sum_i deg(k_i)``
* diameter (torus links)  ``D = sum_i floor(k_i / 2)``; switches on the longest path ``D + 1``
* bisection (links)       ``B = q * deg(k*) * N / k*``, ``k* = max_i k_i``: the cut that halves
  the largest dimension crosses ``deg(k*)`` links of each of its ``N / k*`` rings (the k-ary
  d-cube's ``2 k^(d-1)``; ``N / 2`` for a hypercube)
* load ratio under uniform all-to-all with dimension-order routing (DOR, ties split evenly
  both ways round a ring), every GPU injecting at line rate spread over the ``E - 1`` others,
  ``E = N g`` (every switch full):

      lambda = max_i  N g^2 floor(k_i^2 / 4) / ((E - 1) k_i deg(k_i) q)

  (each switch pair carries ``g^2 / (E - 1)`` of a link; a source's ring distances in
  dimension i sum to ``(N / k_i) floor(k_i^2 / 4)``; the ``N deg(k_i)`` directed links of the
  dimension share the load evenly by symmetry). The throughput per GPU is
  ``theta = min(1, 1 / lambda)`` of line rate. With fewer GPUs than ``N g`` (the last switches
  part-filled) a switch pair carries at most ``g^2 / (E - 1)``: the same formula with the real
  ``E`` bounds the load from above, and the model uses it so.

The requirement we define for bandwidth is the torus analogue of oversubscription:
``lambda <= max_oversubscription`` (1.0: uniform all-to-all runs at line rate).

Link lengths (``link_lengths``), a documented rule, since the hall model of a folded Clos does
not describe a torus. Every ring is folded (positions ``0, 2, 4, .., 5, 3, 1``), so that ring
neighbours stand at most two positions apart in their dimension; switch ``r`` stands at slot
``s = sum_i fold(c_i) * prod_{j<i} k_j``. Slot ``s`` holds ``g`` GPU positions ``s g ..``; racks
fill with ``gpus_per_rack`` positions in slot order, ``racks_per_row`` racks a row, rows one behind
the other (``row_pitch_m`` apart). A switch stands in the rack of its middle GPU position. A link
inside one rack is ``in_rack_m`` long; otherwise ``run_factor * (|dx| + |dy|) + slack_m``,
rounded up to the centimetre.

Media. Each link takes the medium of least objective value that reaches its length and fits
both ends (``models.cabling.usable``); ties go to the lower latency, then the catalog order.

The sizing model. Decisions: plane count ``p`` (among the NIC splits), switch model ``s``,
``dims`` (ordered: the order changes the lengths), ``q``. ``g = ceil(E / N)`` is a rule of the model,
not a decision: reserving more GPU ports on a switch than it needs only costs ports and bandwidth
(and, under the length rule, spreads the switches apart). Constraints, one function each:
``fits_ports``, ``min_parallel_links`` (bandwidth), ``meets_hops``, ``meets_failure``,
``meets_latency``, ``meets_caps``. Objective: ``p * (N v_s + sum over links of v_medium)``,
``v(capex, power) = capex_weight capex + energy_weight energy_usd_per_w power``.

``CONSTRAINTS`` names these families. ``TorusProblem.leave_out`` drops some (the binding tests;
nothing by default), with the parts of the search each one shapes: without ``fits_ports`` N
starts at 2 (not at ``E / (radix - 1)``); without ``min_parallel_links`` q = 1; without
``meets_hops`` or ``meets_latency`` its limit leaves the hop cap.

Exactness. Cost rises with ``q`` at fixed ``(p, s, dims)`` (more links of the same lengths) while
hops and latency do not change, so the least ``q`` meeting the bandwidth and port rules is the
only one to price. The enumeration runs over ``N`` ascending for every ``(p, s)`` and stops when
``LB(N) = p (N v_s + E v_gpu + ceil(N / 2) v_torus)`` (the cheapest usable media per link, at
least ``N / 2`` torus links) reaches the best objective found: ``LB`` never falls as ``N`` grows,
so every structure not priced costs at least the optimum. ``N`` also stops at ``E`` (``g >= 1``)
and at the most switches within the hop cap (``hop_cap``: the hop limit, and the latency limit
over the switch latency, since every switch on the path adds its latency). ``bound_usd`` is that proof; a time
limit that stops the enumeration early leaves the least ``LB`` not yet passed as the bound.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import numpy.typing as npt

from models import cabling as cb
from models.leave_out import check_known
from models.status import Status
from models.switch_media import (
    Band,
    Floor,
    MediaTable,
    SwitchChoice,
    bands,
    cable_length_m,
    media_table,
)

#: Largest number of dimensions the model considers (a 3-D torus).
MAX_DIMS = 3
#: Relative tolerance under which two objectives are equal (the canonical order decides).
OBJECTIVE_RTOL = 1e-9

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


# ---- closed forms -------------------------------------------------------------------------------
def degree(k: int) -> int:
    """Torus links per switch and parallel link along a ring of ``k`` switches: 2, 1 or 0."""
    return 2 if k >= 3 else 1 if k == 2 else 0


def switches(dims: tuple[int, ...]) -> int:
    """``N = prod k_i``."""
    return math.prod(dims)


def torus_links(dims: tuple[int, ...], parallel_links: int) -> int:
    """Torus links of one plane: ``q * sum_i N deg(k_i) / 2``."""
    n = switches(dims)
    return parallel_links * sum(n * degree(k) // 2 for k in dims)


def torus_ports(dims: tuple[int, ...], parallel_links: int) -> int:
    """Torus ports of one switch: ``q * sum_i deg(k_i)``."""
    return parallel_links * sum(degree(k) for k in dims)


def diameter(dims: tuple[int, ...]) -> int:
    """Torus links on the longest minimal path: ``sum_i floor(k_i / 2)``."""
    return sum(k // 2 for k in dims)


def switch_hops(dims: tuple[int, ...]) -> int:
    """Switches on the longest GPU-to-GPU path: the diameter plus one."""
    return diameter(dims) + 1


def bisection_links(dims: tuple[int, ...], parallel_links: int) -> int:
    """Links across the cut that halves the largest dimension: ``q deg(k*) N / k*``."""
    k = max(dims)
    return parallel_links * degree(k) * switches(dims) // k


def load_ratio(
    dims: tuple[int, ...], gpus_per_switch: int, parallel_links: int, gpus: int | None = None
) -> Fraction:
    """Busiest torus link's load over its capacity, uniform all-to-all at line rate, DOR.

    ``gpus`` (E, default N g: every switch full) below N g leaves the last switches part-filled;
    a switch pair then carries at most g^2 / (E - 1), so the formula with that E bounds the load.
    """
    n, g = switches(dims), gpus_per_switch
    e = n * g if gpus is None else gpus
    if e < 2:
        return Fraction(0)
    return max(
        (
            Fraction(n * g * g * (k * k // 4), (e - 1) * k * degree(k) * parallel_links)
            for k in dims
            if k >= 2
        ),
        default=Fraction(0),
    )


def throughput_fraction(
    dims: tuple[int, ...], gpus_per_switch: int, parallel_links: int, gpus: int | None = None
) -> float:
    """Uniform all-to-all throughput per GPU under DOR, as a fraction of line rate (at least)."""
    lam = load_ratio(dims, gpus_per_switch, parallel_links, gpus)
    return 1.0 if lam <= 1 else float(1 / lam)


# ---- data ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PlaneOption:
    """One NIC split: planes, the port speed, and the switches and media at that speed."""

    planes: int
    speed_gbps: int
    switches: tuple[SwitchChoice, ...]
    media: tuple[cb.MediumOption, ...]


@dataclass(frozen=True)
class Requirements:
    """The instance's constraints as the torus model reads them (None: no limit)."""

    max_load_ratio: Fraction = Fraction(1)
    max_switch_hops: int | None = None
    max_latency_ns: float | None = None
    min_fraction_after_failure: Fraction | None = None
    max_power_w: float | None = None
    max_capex_usd: float | None = None


@dataclass(frozen=True)
class TorusProblem:
    """Everything the model needs: GPUs, options per plane count, floor, limits, objective."""

    gpus: int
    options: tuple[PlaneOption, ...]
    floor: Floor
    requirements: Requirements
    energy_usd_per_w: float
    capex_weight: float = 1.0
    energy_weight: float = 1.0
    nic: cb.PortKind = None
    """The NIC end of the GPU links (None: any medium fits)."""
    max_dims: int = MAX_DIMS
    leave_out: frozenset[str] = frozenset()
    """Constraint families (names of ``CONSTRAINTS``) the search does not apply; tests only."""

    def __post_init__(self) -> None:
        check_known(self.leave_out, CONSTRAINTS)


@dataclass(frozen=True)
class Candidate:
    """One structure of the model: planes, switch, ring sizes, GPUs per switch, parallel links."""

    planes: int
    switch: SwitchChoice
    dims: tuple[int, ...]
    gpus_per_switch: int
    parallel_links: int


@dataclass(frozen=True)
class Priced:
    """A candidate priced: its link bands, totals and worst latency."""

    candidate: Candidate
    gpu_bands: tuple[Band, ...]
    torus_bands: tuple[Band, ...]
    capex_usd: float
    power_w: float
    objective_usd: float
    max_latency_ns: float


@dataclass(frozen=True)
class TorusSolution:
    """The best structure, or why there is none; ``priced`` is None unless a design was found."""

    status: Status
    priced: Priced | None
    bound_usd: float | None
    wall_s: float
    examined: int
    """Candidates priced (past the cheap rules)."""
    reason: str = ""


# ---- the length rule ----------------------------------------------------------------------------
def fold(c: IntArray, k: int) -> IntArray:
    """Physical position of ring coordinate ``c`` on a folded ring of ``k``: 0, 2, 4, .., 3, 1."""
    return np.where(2 * c < k, 2 * c, 2 * (k - 1 - c) + 1)


def coordinates(dims: tuple[int, ...]) -> IntArray:
    """Coordinates of every switch, shape (N, d): mixed radix of r, dimension 0 fastest."""
    r = np.arange(switches(dims), dtype=np.int64)
    strides = np.cumprod((1, *dims[:-1])).astype(np.int64)
    return (r[:, None] // strides[None, :]) % np.asarray(dims, dtype=np.int64)


def ring_links(dims: tuple[int, ...]) -> tuple[IntArray, IntArray]:
    """Both ends of every torus link of one plane with q = 1, dimension by dimension.

    Along a dimension of ``k >= 3`` every switch links to its ``+1`` neighbour (``k`` links a
    ring); of ``k = 2`` only the switches of coordinate 0 do (one link a ring).
    """
    r = np.arange(switches(dims), dtype=np.int64)
    lows, highs = [], []
    stride = 1
    for k in dims:
        c = (r // stride) % k
        ring = r[c == 0] if k == 2 else r if k >= 3 else r[:0]
        cr = (ring // stride) % k
        lows.append(ring)
        highs.append(ring + np.where(cr == k - 1, (1 - k) * stride, stride))
        stride *= k
    return np.concatenate(lows), np.concatenate(highs)


def link_lengths(
    floor: Floor, dims: tuple[int, ...], gpus_per_switch: int, gpus: int
) -> tuple[FloatArray, FloatArray]:
    """Lengths of the GPU links (one per GPU) and of the torus links (q = 1), in metres."""
    g = gpus_per_switch
    coords = coordinates(dims)
    strides = np.cumprod((1, *dims[:-1])).astype(np.int64)
    slot = sum(fold(coords[:, i], k) * strides[i] for i, k in enumerate(dims))
    switch_rack = (slot * g + (g - 1) // 2) // floor.gpus_per_rack
    e = np.arange(gpus, dtype=np.int64)
    owner = e // g
    gpu_rack = (slot[owner] * g + e % g) // floor.gpus_per_rack
    gpu_len = cable_length_m(floor, gpu_rack, switch_rack[owner])
    lo, hi = ring_links(dims)
    return gpu_len, cable_length_m(floor, switch_rack[lo], switch_rack[hi])


# ---- constraints, one family each ---------------------------------------------------------------
def fits_ports(c: Candidate) -> bool:
    """Switch ports: GPUs plus torus links within the radix.  g + q sum_i deg(k_i) <= radix."""
    return c.gpus_per_switch + torus_ports(c.dims, c.parallel_links) <= c.switch.radix


def min_parallel_links(
    dims: tuple[int, ...], gpus_per_switch: int, max_ratio: Fraction, gpus: int | None = None
) -> int:
    """Bandwidth: the least q with lambda(dims, g, q) <= max_ratio (lambda falls as 1 / q).

    q = max(1, ceil(lambda(q = 1) / max_ratio)), in integers: lambda is a maximum over the
    dimensions, and the ceiling of a maximum is the maximum of the ceilings (no ``Fraction``
    per candidate: the enumeration asks this of every candidate structure).
    """
    n, g = switches(dims), gpus_per_switch
    e = n * g if gpus is None else gpus
    if e < 2:
        return 1
    num, den = max_ratio.numerator, max_ratio.denominator
    return max(
        [1]
        + [
            -(-(n * g * g * (k * k // 4) * den) // ((e - 1) * k * degree(k) * num))
            for k in dims
            if k >= 2
        ]
    )


def meets_hops(dims: tuple[int, ...], r: Requirements) -> bool:
    """Hops: D + 1 <= max_switch_hops."""
    return r.max_switch_hops is None or switch_hops(dims) <= r.max_switch_hops


def meets_failure(planes: int, r: Requirements) -> bool:
    """Failure: one switch down cuts its GPUs, and every DOR path through it, off one plane.

    (p - 1) / p >= min_fraction_after_failure.
    """
    phi = r.min_fraction_after_failure
    return phi is None or Fraction(planes - 1, planes) >= phi


def path_latency_ns(
    dims: tuple[int, ...], switch_latency_ns: int, gpu_link_ns: float, torus_link_ns: float
) -> float:
    """Longest path: (D + 1) switches, two GPU links and D torus links, each at its class's worst."""
    d = diameter(dims)
    return (d + 1) * switch_latency_ns + 2 * gpu_link_ns + d * torus_link_ns


def meets_latency(latency_ns: float, r: Requirements) -> bool:
    """Latency: the longest path within max_latency_ns."""
    return r.max_latency_ns is None or latency_ns <= r.max_latency_ns + 1e-9


def meets_caps(capex_usd: float, power_w: float, r: Requirements) -> bool:
    """Budgets: capex and power within their caps."""
    return (r.max_capex_usd is None or capex_usd <= r.max_capex_usd * (1 + 1e-12)) and (
        r.max_power_w is None or power_w <= r.max_power_w * (1 + 1e-12)
    )


#: Every constraint family, by name (module docstring), with its function: a predicate, or the
#: least q of the bandwidth rule (``min_parallel_links``).
CONSTRAINTS: dict[str, Callable[..., bool | int]] = {
    "fits_ports": fits_ports,
    "min_parallel_links": min_parallel_links,
    "meets_hops": meets_hops,
    "meets_failure": meets_failure,
    "meets_latency": meets_latency,
    "meets_caps": meets_caps,
}


def applies(p: TorusProblem, family: str) -> bool:
    """Whether the search applies ``family`` (not in ``leave_out``)."""
    return family not in p.leave_out


def holds(p: TorusProblem, family: str, *args: object) -> bool:
    """``family``'s predicate (``CONSTRAINTS``) on ``args``; True when it is left out."""
    return family in p.leave_out or bool(CONSTRAINTS[family](*args))


# ---- the model: build, then solve ---------------------------------------------------------------
@dataclass(frozen=True)
class TorusModel:
    """A problem with its media tables per (plane option, switch): built once, solved after."""

    problem: TorusProblem
    criteria: cb.Criteria
    gpu_tables: tuple[tuple[MediaTable, ...], ...]
    torus_tables: tuple[tuple[MediaTable, ...], ...]


def build(problem: TorusProblem) -> TorusModel:
    """The media tables of every plane option and switch (GPU links and torus links)."""
    criteria = cb.Criteria(
        energy_usd_per_w=problem.energy_usd_per_w,
        capex_weight=problem.capex_weight,
        energy_weight=problem.energy_weight,
    )
    gpu, tor = [], []
    for o in problem.options:
        gpu.append(tuple(media_table(o.media, problem.nic, s.engine, criteria) for s in o.switches))
        tor.append(tuple(media_table(o.media, s.engine, s.engine, criteria) for s in o.switches))
    return TorusModel(problem, criteria, tuple(gpu), tuple(tor))


def value_usd(m: TorusModel, capex_usd: float, power_w: float) -> float:
    """The objective of these totals."""
    p = m.problem
    return p.capex_weight * capex_usd + p.energy_weight * p.energy_usd_per_w * power_w


def ordered_dims(n: int, max_dims: int = MAX_DIMS) -> Iterator[tuple[int, ...]]:
    """Every ordered tuple of 1 .. max_dims factors >= 2 whose product is n."""
    if n < 2 or max_dims < 1:
        return
    yield (n,)
    if max_dims < 2:
        return
    for k in divisors(n):
        if 2 <= k <= n // 2:
            for rest in ordered_dims(n // k, max_dims - 1):
                yield (k, *rest)


def divisors(n: int) -> list[int]:
    """The divisors of n, ascending."""
    low = [k for k in range(1, math.isqrt(n) + 1) if n % k == 0]
    return low + [n // k for k in reversed(low) if k * k != n]


def hop_cap(s: SwitchChoice, r: Requirements) -> int | None:
    """Most switches a path may cross: the hop limit, and the latency limit over the switch's.

    Latency >= (D + 1) x switch latency (links add to it), so D + 1 <= max_latency / latency.
    """
    caps = [] if r.max_switch_hops is None else [r.max_switch_hops]
    if r.max_latency_ns is not None and s.latency_ns > 0:
        caps.append(math.floor(r.max_latency_ns / s.latency_ns))
    return min(caps, default=None)


def hop_cap_applied(p: TorusProblem, s: SwitchChoice) -> int | None:
    """``hop_cap`` of the limits of the families applied (``meets_hops``, ``meets_latency``)."""
    r = p.requirements
    if p.leave_out:
        r = replace(
            r,
            max_switch_hops=r.max_switch_hops if applies(p, "meets_hops") else None,
            max_latency_ns=r.max_latency_ns if applies(p, "meets_latency") else None,
        )
    return hop_cap(s, r)


def max_switches_within(hops: int | None, gpus: int, max_dims: int = MAX_DIMS) -> int:
    """Most switches a torus worth pricing has: N <= E (g >= 1), and within the hop limit.

    D = sum_i floor(k_i / 2) <= hops - 1 gives k_i <= 2 floor_i + 1 with sum floor_i <= hops - 1,
    so N <= (2 (hops - 1) + 1)^max_dims (loose, but it bounds the enumeration).
    """
    n = max(gpus, 2)
    if hops is None:
        return n
    return min(n, (2 * max(hops - 1, 0) + 1) ** max_dims)


def price(m: TorusModel, option: int, switch: int, c: Candidate) -> Priced | None:
    """A candidate with its media, totals and latency; None when a link has no medium."""
    p = m.problem
    gpu_len, torus_len = link_lengths(p.floor, c.dims, c.gpus_per_switch, p.gpus)
    gb = bands(m.gpu_tables[option][switch], gpu_len, 1)
    tb = bands(m.torus_tables[option][switch], torus_len, c.parallel_links)
    if gb is None or tb is None:
        return None
    n = switches(c.dims)
    capex = n * c.switch.cost_usd
    power = n * c.switch.power_w
    for b in (*gb, *tb):
        medium = next(x for x in p.options[option].media if x.name == b.medium)
        capex += b.links * (b.ends * medium.end_cost_usd + medium.cable_cost_usd)
        power += b.links * b.ends * medium.end_power_w
    capex *= c.planes
    power *= c.planes
    latency = path_latency_ns(
        c.dims,
        c.switch.latency_ns,
        max((b.latency_ns for b in gb), default=0.0),
        max((b.latency_ns for b in tb), default=0.0),
    )
    return Priced(c, gb, tb, capex, power, value_usd(m, capex, power), latency)


def lower_bound(m: TorusModel, option: int, switch: int, n: int) -> float:
    """LB(N) of any structure of N switches (module docstring): never falls as N grows."""
    p, o = m.problem, m.problem.options[option]
    s = o.switches[switch]
    v_gpu = min(m.gpu_tables[option][switch].values, default=math.inf)
    v_torus = min(m.torus_tables[option][switch].values, default=math.inf)
    v_switch = value_usd(m, s.cost_usd, s.power_w)
    return o.planes * (n * v_switch + p.gpus * v_gpu + math.ceil(n / 2) * v_torus)


def candidate_bound(m: TorusModel, option: int, switch: int, c: Candidate) -> float:
    """A candidate's objective is at least its switches, GPU links and torus links at the cheapest."""
    p = m.problem
    v_gpu = min(m.gpu_tables[option][switch].values, default=math.inf)
    v_torus = min(m.torus_tables[option][switch].values, default=math.inf)
    v_switch = value_usd(m, c.switch.cost_usd, c.switch.power_w)
    n = switches(c.dims)
    return c.planes * (
        n * v_switch + p.gpus * v_gpu + torus_links(c.dims, c.parallel_links) * v_torus
    )


def candidates_of(m: TorusModel, option: int, switch: int, n: int) -> Iterator[Candidate]:
    """The structures of N switches that pass the cheap rules (ports, bandwidth, hops, failure)."""
    p, o = m.problem, m.problem.options[option]
    s, r = o.switches[switch], p.requirements
    if not holds(p, "meets_failure", o.planes, r):
        return
    g = -(-p.gpus // n)
    cap = hop_cap_applied(p, s)
    bandwidth = applies(p, "min_parallel_links")
    for dims in ordered_dims(n, p.max_dims):
        if not holds(p, "meets_hops", dims, r) or (cap is not None and switch_hops(dims) > cap):
            continue  # too many hops, or too many switch latencies for the latency limit
        q = min_parallel_links(dims, g, r.max_load_ratio, p.gpus) if bandwidth else 1
        c = Candidate(o.planes, s, dims, g, q)
        if holds(p, "fits_ports", c):
            yield c


def _key(pr: Priced) -> tuple[float, int, str, int, tuple[int, ...], int]:
    c = pr.candidate
    return (pr.objective_usd, c.planes, c.switch.name, switches(c.dims), c.dims, c.parallel_links)


def solve(m: TorusModel, time_limit_s: float = math.inf) -> TorusSolution:
    """Enumerate with the LB(N) stopping rule; the best priced structure is optimal."""
    start = time.perf_counter()
    deadline = start + time_limit_s
    p, r = m.problem, m.problem.requirements
    best: Priced | None = None
    examined = 0
    open_bound = math.inf
    for oi, o in enumerate(p.options):
        for si, s in enumerate(o.switches):
            n_min = max(2, -(-p.gpus // max(1, s.radix - 1))) if applies(p, "fits_ports") else 2
            n_max = max_switches_within(hop_cap_applied(p, s), p.gpus, p.max_dims)
            for n in range(n_min, n_max + 1):
                lb = lower_bound(m, oi, si, n)
                if lb == math.inf:
                    break  # no medium cables the GPU or the torus links of this switch
                if best is not None and lb >= best.objective_usd * (1 - OBJECTIVE_RTOL):
                    break
                if time.perf_counter() > deadline:
                    open_bound = min(open_bound, lb)
                    break
                for c in candidates_of(m, oi, si, n):
                    if best is not None and candidate_bound(m, oi, si, c) > best.objective_usd * (
                        1 + OBJECTIVE_RTOL
                    ):
                        continue
                    examined += 1
                    pr = price(m, oi, si, c)
                    if pr is None or not holds(p, "meets_latency", pr.max_latency_ns, r):
                        continue
                    if not holds(p, "meets_caps", pr.capex_usd, pr.power_w, r):
                        continue
                    if best is None or _better(pr, best):
                        best = pr
    wall = time.perf_counter() - start
    if best is None:
        if open_bound < math.inf:
            return TorusSolution(Status.TIME_LIMIT, None, open_bound, wall, examined)
        return TorusSolution(Status.INFEASIBLE, None, None, wall, examined, _why_none(m))
    bound = min(best.objective_usd, open_bound)
    status = Status.OPTIMAL if open_bound >= best.objective_usd else Status.FEASIBLE
    return TorusSolution(status, best, bound, wall, examined)


def _better(a: Priced, b: Priced) -> bool:
    """Lower objective, or an equal one (within OBJECTIVE_RTOL) earlier in the canonical order."""
    tol = OBJECTIVE_RTOL * max(1.0, abs(b.objective_usd))
    if a.objective_usd < b.objective_usd - tol:
        return True
    if a.objective_usd > b.objective_usd + tol:
        return False
    return _key(a)[1:] < _key(b)[1:]


def _why_none(m: TorusModel) -> str:
    """In a user's words, the first rule that leaves no torus (checked rule by rule)."""
    p, r = m.problem, m.problem.requirements
    if not p.options or not any(o.switches for o in p.options):
        return "no allowed switch runs the planes' port speed"
    if not any(holds(p, "meets_failure", o.planes, r) for o in p.options):
        return (
            "a switch failure cuts its GPUs off one plane; no allowed plane count keeps "
            f"{float(r.min_fraction_after_failure or 0):.0%} of their bandwidth"
        )
    if applies(p, "meets_hops") and r.max_switch_hops is not None and r.max_switch_hops < 2:
        return f"max_switch_hops = {r.max_switch_hops}: a torus path crosses at least 2 switches"
    return (
        "no torus of the allowed switches meets ports, bandwidth (load ratio "
        f"<= {float(r.max_load_ratio):g}), hops, latency and budgets together"
    )

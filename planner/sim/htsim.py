"""Export a plane and a traffic phase to htsim, the packet-level simulator of the NDP/EQDS/UEC work.

Both formats follow the parsers in github.com/Broadcom/csg-htsim (``sim/datacenter/``):

* **Connection matrix** (``.cm``), read by ``ConnectionMatrix::load`` in ``connection_matrix.cpp``
  (example: ``connection_matrices/perm_16n_16c_2MB.cm``)::

      Nodes 16
      Connections 16
      7->5 id 1 start 0 size 2000000

  Tokens are separated by single spaces. ``Nodes`` counts hosts (here: GPUs of the plane), flow
  ids must be non-zero, ``size`` is in bytes and parsed with ``stoi`` (so at most 2**31 - 1), and
  ``start`` is in microseconds: the ``main_*.cpp`` drivers convert it with
  ``timeFromUs((uint32_t)crt->start)``, so it is written as a whole number. Optional ``Triggers``
  / ``Failures`` sections are not written.
* **Topology** (``.topo``), read by ``FatTreeTopology::load`` in ``fat_tree_topology.cpp`` (the
  ``-topo`` option of the htsim drivers; examples: ``topologies/leaf_spine_tiny.topo``,
  ``topologies/fat_tree_1024.topo``). It is *parametric*: a header ``Nodes``/``Tiers``/``Podsize``,
  then per ``Tier t`` (0 = ToR/leaf, 1 = agg/spine, 2 = core) the keys ``Downlink_speed_Gbps``,
  ``Radix_Down``, ``Radix_Up`` (not on the top tier), ``Downlink_Latency_ns`` (must be non-zero),
  ``Switch_Latency_ns``, ``Oversubscribed`` and ``Bundle`` (parallel links from the tier below).
  htsim rebuilds the switch counts from these (``set_custom_params``): leaves = Nodes / Radix_Down[0],
  spines per pod = (uplinks of a pod) / Radix_Down[1], cores = (spine uplinks) / Radix_Down[2],
  with Radix_Down[0] / Radix_Up[0] == Oversubscribed[0] and integer ratios throughout. Queue sizes
  come from the driver's command line and are not written.

Every intact Clos plane the planner designs is written, as the smallest *uniform* fat tree that
contains it (``htsim_layout``); what is added carries no flow, and up-down routing never crosses
a leaf or host it does not start or end at, so htsim simulates the same plane:

* **idle hosts** where a leaf holds fewer GPUs than the fullest leaf (``h100-1k``: 1,016 GPUs
  on 32 leaves of 32, the last holding 24), and where a leaf's down radix is not a whole
  multiple of its up radix: htsim's ``Oversubscribed`` is ``Radix_Down / Radix_Up`` in whole
  numbers, so 48 down and 32 up is written as 64 down (2:1) with 16 idle hosts a leaf, and a
  leaf with more uplinks than GPUs as one of equal counts;
* **idle leaves** in a pod whose spines' down radix (leaves a pod x bundle) is not a whole
  multiple of their up radix, and in a last pod that is only partly filled;
* **one idle Agg switch** above a one-tier plane (a single switch), since htsim's FatTree has 2
  or 3 tiers; the leaf gets one uplink to it (``Oversubscribed`` = its GPUs) and nothing goes up.

GPUs keep their leaf, and their order on it: GPU g on leaf l at position i is htsim host
``slot(l) x Radix_Down[0] + i``, where ``slot(l)`` is the leaf's place once every pod is padded to
the same number of leaves (``htsim_hosts``). The ``.cm`` writes these host ids and the padded
``Nodes`` (``htsim_nodes``), since htsim's drivers require the two files to agree. Up radices and
bundles must be uniform per tier (every design the sizing model makes has them).

htsim asserts at most 96 ports on a ToR and 64 on an Agg or Core switch (``HTSIM_MAX_PORTS``);
many production radices exceed that (a leaf of 64 GPU ports and 64 uplinks, a 128-port spine).
Such a plane is still written, exactly, with a comment line naming the tiers that are over and
saying that the asserts in ``fat_tree_topology.cpp`` must be raised to load it.

Limits, stated plainly:

* The parametric format cannot describe failed links, so :func:`topology_text` refuses a plane with
  failures; every switch and link of the intact plane is implied by the counts (the tests check
  that htsim's formulas give back the Fabric's counts). htsim numbers 3-tier cores per spine
  position in its own order; the graph is the same up to that relabelling.
* htsim also has a per-element loader, ``GenericTopology`` (``generic_topology.cpp``: lines
  ``host``/``switch``/``queue``/``pipe`` after ``Hosts``/``Switches``/``Links``). It is not written
  here: its path lookup (``get_bidir_paths``) is a "TBD" stub returning no routes, and it reads
  lines into a 255-byte buffer, too short for a switch line listing 64 ports.
* Only connected Clos planes have a ``.topo``: a torus is refused with a ValueError naming its
  shape and strategy, an OCS direct-connect plane (its top tier is circuits between pairs of
  blocks, not core switches) likewise, and so is a plane of disjoint parts (a rail-only plane:
  one leaf/spine tree a rail, joined only through the scale-up domain; the format's counts would
  make one tree of them); their ``.cm`` is written with ``Nodes`` = GPUs. A rail-optimized plane
  is a connected Clos whose leaves are rails, and is written. htsim's drivers (``main_*.cpp``)
  build only ``FatTreeTopology``: a ``DragonFlyTopology`` class is in its tree, but no driver
  uses it and it has no file format, and there is no torus, so a dragonfly or torus plane has
  no htsim counterpart to export to.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.sparse import csgraph

from planner.sim.fabric import Fabric
from planner.sim.routing_strategies import is_valley_free

IntArray = npt.NDArray[np.int64]

#: Largest flow size htsim's ``stoi`` accepts.
MAX_FLOW_BYTES = 2**31 - 1
#: Default one-way latency of every link; htsim rejects 0.
DEFAULT_LINK_LATENCY_NS = 500
#: htsim's tier names, from the leaf up.
HTSIM_TIERS = ("ToR", "Agg", "Core")


# ---- connection matrix -------------------------------------------------------------------------
def connection_matrix_text(
    fabric: Fabric,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    size_bytes: npt.ArrayLike,
    start_us: npt.ArrayLike = 0,
    *,
    nodes: int | None = None,
) -> str:
    """The ``.cm`` text of one phase: one line per flow, ids 1..n in the given order.

    Parameters
    ----------
    fabric
        The plane (its GPU count is ``Nodes``).
    src, dst
        GPU ids of every flow.
    size_bytes
        Bytes per flow (scalar or one per flow), 1 .. 2**31 - 1.
    start_us
        Start time per flow in whole microseconds (scalar or one per flow).
    nodes
        ``Nodes`` of the header: by default the hosts of the ``.topo`` (``htsim_nodes``).
    """
    s = np.asarray(src, dtype=np.int64).ravel()
    t = np.asarray(dst, dtype=np.int64).ravel()
    size = np.broadcast_to(np.asarray(size_bytes), s.shape)
    start = np.broadcast_to(np.asarray(start_us), s.shape)
    if s.shape != t.shape:
        raise ValueError(f"src has {s.size} flows but dst has {t.size}")
    if s.size and (min(s.min(), t.min()) < 0 or max(s.max(), t.max()) >= fabric.gpus):
        raise ValueError(f"GPU ids must lie in 0 .. {fabric.gpus - 1}")
    if np.any(s == t):
        raise ValueError("htsim flows need distinct source and destination GPUs")
    if np.any(size != np.round(size)) or np.any(size < 1) or np.any(size > MAX_FLOW_BYTES):
        raise ValueError(f"size_bytes must be whole numbers from 1 to {MAX_FLOW_BYTES}")
    if np.any(start != np.round(start)) or np.any(start < 0):
        raise ValueError(
            "start_us must be whole, non-negative microseconds (htsim casts to uint32)"
        )
    ids = np.arange(1, s.size + 1)
    host = htsim_hosts(fabric)
    s, t = host[s], host[t]
    lines = [f"Nodes {htsim_nodes(fabric) if nodes is None else nodes}", f"Connections {s.size}"]
    lines += [
        f"{a}->{b} id {i} start {st} size {sz}"
        for a, b, i, st, sz in zip(
            s.tolist(),
            t.tolist(),
            ids.tolist(),
            start.astype(np.int64).tolist(),
            size.astype(np.int64).tolist(),
            strict=True,
        )
    ]
    return "\n".join(lines) + "\n"


# ---- topology -------------------------------------------------------------------------------
#: Most ports htsim's FatTree lets a switch have (``fat_tree_topology.cpp``:
#: ``assert(switches_lp[tor]->addPort(...) < 96)`` on port indices, ``< 64`` for Agg and Core
#: switches). The assert wraps the ``addPort`` call itself, so htsim cannot be built without it.
HTSIM_MAX_PORTS = (96, 64, 64)


@dataclass(frozen=True)
class HtsimLayout:
    """How one plane sits in htsim's parametric fat tree (see the module docstring).

    ``tiers`` holds htsim's keys per tier (``Radix_Down``, ``Radix_Up``, ``Oversubscribed``,
    ``Bundle``) and the plane's own ``switches``; ``host`` is the htsim host of every GPU.
    """

    tiers: tuple[dict[str, int], ...]
    nodes: int
    podsize: int
    host: IntArray
    idle_top: bool = False
    """A one-tier plane, written with one idle Agg switch above its single leaf."""

    @property
    def ports(self) -> tuple[int, ...]:
        """Ports of a switch of each htsim tier: down radix plus up radix."""
        return tuple(t["Radix_Down"] + t.get("Radix_Up", 0) for t in self.tiers)

    def over_port_limits(self) -> list[str]:
        """The tiers whose switches have more ports than htsim's asserts allow."""
        return [
            f"{HTSIM_TIERS[i]} switches of {p} ports (htsim allows {HTSIM_MAX_PORTS[i]})"
            for i, p in enumerate(self.ports)
            if p > HTSIM_MAX_PORTS[i]
        ]


def _uniform(counts: IntArray, what: str) -> int:
    """The one value every switch of a tier shares, or a clear error."""
    values = np.unique(counts)
    if values.size != 1:
        raise ValueError(
            f"htsim's FatTree needs the same {what} on every switch; got {values.tolist()}"
        )
    return int(values[0])


def _bundle(fabric: Fabric, link_class: int) -> int:
    """Parallel links between every connected pair of a class (must be uniform)."""
    sel = fabric.link_class == link_class
    pairs = fabric.lower[sel] * fabric.nodes + fabric.upper[sel]
    return _uniform(np.unique(pairs, return_counts=True)[1], f"bundle (tier {link_class})")


def _radix(fabric: Fabric, tier: int, up: bool) -> IntArray:
    """Up or down links of every switch of a tier (node group ``tier``)."""
    off = fabric.tier_offsets
    count = off[tier + 1] - off[tier]
    if up:
        ends = fabric.lower[fabric.link_class == tier]
    else:
        ends = fabric.upper[fabric.link_class == tier - 1]
    return np.bincount(ends - off[tier], minlength=count)


def _components(fabric: Fabric) -> int:
    """Connected parts of the plane's graph (GPUs, switches and links)."""
    ones = np.ones(fabric.lower.size, dtype=np.int8)
    graph = sparse.coo_matrix((ones, (fabric.lower, fabric.upper)), shape=(fabric.nodes,) * 2)
    return int(csgraph.connected_components(graph, directed=False, return_labels=False))


def _round_up(value: int, step: int) -> int:
    return -(-value // step) * step


def htsim_layout(fabric: Fabric) -> HtsimLayout:
    """The smallest uniform htsim fat tree that holds the plane, and where its GPUs sit.

    Leaves whose down radix is not a whole multiple of their up radix (the ratio htsim calls
    ``Oversubscribed`` must be whole), or that hold fewer GPUs than the fullest leaf, get idle
    padding hosts; pods whose spines' down radix is not a whole multiple of their up radix, or
    the last pod when it is partly filled, get idle padding leaves. Raises ValueError for what
    cannot be written (a torus, failed links, unequal up radices or bundles).
    """
    if not is_valley_free(fabric):  # htsim's FatTree routes up-down only
        shape = f"a {'x'.join(map(str, fabric.dims))} torus" if fabric.dims else "this plane"
        raise ValueError(
            f"htsim's .topo format describes up-down fat trees only; {shape} is routed by "
            f"{fabric.strategy.name!r} and cannot be exported (the .cm connection matrix still can)"
        )
    if fabric.circuit_device is not None:
        raise ValueError(
            "htsim's .topo format describes fat trees; an OCS direct-connect plane joins blocks "
            "by circuits, not core switches (the .cm connection matrix still can be written)"
        )
    if not fabric.alive.all():
        raise ValueError(
            "htsim's .topo format cannot describe failed links; export the intact plane"
        )
    if fabric.tiers not in (1, 2, 3):
        raise ValueError(f"htsim's FatTree has 2 or 3 tiers; this plane has {fabric.tiers}")
    parts = _components(fabric)
    if parts > 1:
        raise ValueError(
            f"htsim's fat tree is one connected tree; this plane is {parts} disjoint parts (a "
            "rail-only plane's rails, whose GPUs meet only over the scale-up domain), which its "
            "counts cannot state (the .cm connection matrix still can be written)"
        )
    if fabric.class_speed_gbps is not None and len(set(fabric.class_speed_gbps)) > 1:
        raise ValueError("htsim's export takes one link speed for every tier")
    off = fabric.tier_offsets
    nic = fabric.link_class == 0
    gpu = fabric.lower[nic]
    leaf = fabric.upper[nic] - off[1]
    per_leaf = _radix(fabric, 1, up=False)
    fullest = int(per_leaf.max())
    # Position of every GPU on its leaf, in GPU order.
    order = np.lexsort((gpu, leaf))
    starts = np.concatenate([[0], np.cumsum(per_leaf)[:-1]])
    pos = np.empty(gpu.size, dtype=np.int64)
    pos[order] = np.arange(gpu.size) - starts[leaf[order]]
    position = np.empty(fabric.gpus, dtype=np.int64)
    position[gpu] = pos
    leaf_of = np.empty(fabric.gpus, dtype=np.int64)
    leaf_of[gpu] = leaf
    if fabric.tiers == 1:
        # One switch: an idle Agg above it, so htsim has its two tiers; nothing goes up.
        tor = {"Radix_Down": fullest, "Radix_Up": 1, "Oversubscribed": fullest, "Bundle": 1}
        tor["switches"] = 1
        agg = {"Radix_Down": 1, "Bundle": 1, "switches": 1}
        return HtsimLayout((tor, agg), fullest, fullest, position, idle_top=True)
    radix_up0 = _uniform(_radix(fabric, 1, up=True), "up radix (tier 0)")
    radix_down0 = _round_up(fullest, radix_up0)
    leaves = off[2] - off[1]
    q1 = _bundle(fabric, 1)
    tor = {
        "Radix_Down": radix_down0,
        "Radix_Up": radix_up0,
        "Oversubscribed": radix_down0 // radix_up0,
        "Bundle": 1,
        "switches": leaves,
    }
    spines = off[3] - off[2]
    spine_down = int(_radix(fabric, 2, up=False).max())
    if fabric.tiers == 2:
        agg = {"Radix_Down": spine_down, "Bundle": q1, "switches": spines}
        host = leaf_of * radix_down0 + position
        nodes = leaves * radix_down0
        return HtsimLayout((tor, agg), nodes, nodes, host)
    per_pod = spine_down // q1
    radix_up1 = _uniform(_radix(fabric, 2, up=True), "up radix (tier 1)")
    q2 = _bundle(fabric, 2)
    # Leaves a pod, padded until the spines' down radix is a whole multiple of their up radix.
    padded = per_pod
    while (padded * q1) % radix_up1:
        padded += 1
    pods = -(-leaves // per_pod)
    agg = {
        "Radix_Down": padded * q1,
        "Radix_Up": radix_up1,
        "Oversubscribed": padded * q1 // radix_up1,
        "Bundle": q1,
        "switches": spines,
    }
    cores = off[4] - off[3]
    core = {"Radix_Down": int(_radix(fabric, 3, up=False).max()), "Bundle": q2, "switches": cores}
    slot = (leaf_of // per_pod) * padded + leaf_of % per_pod
    return HtsimLayout(
        (tor, agg, core),
        pods * padded * radix_down0,
        padded * radix_down0,
        slot * radix_down0 + position,
    )


def tier_parameters(fabric: Fabric) -> list[dict[str, int]]:
    """Htsim's per-tier radices, bundles and oversubscription (``htsim_layout``)."""
    return [dict(t) for t in htsim_layout(fabric).tiers]


def htsim_nodes(fabric: Fabric) -> int:
    """The hosts htsim sees: the plane's GPUs, padded to a uniform fat tree when needed."""
    try:
        return htsim_layout(fabric).nodes
    except ValueError:
        return fabric.gpus


def htsim_hosts(fabric: Fabric) -> IntArray:
    """The htsim host id of every GPU (the GPU id itself where no ``.topo`` can be written)."""
    try:
        return htsim_layout(fabric).host
    except ValueError:
        return np.arange(fabric.gpus, dtype=np.int64)


def topology_text(
    fabric: Fabric,
    *,
    link_latency_ns: int | Sequence[int] = DEFAULT_LINK_LATENCY_NS,
    switch_latency_ns: int | Sequence[int] = 0,
) -> str:
    """The parametric ``.topo`` text of an intact 1-, 2- or 3-tier plane (module docstring).

    Latencies are one figure for every tier or one per tier of the plane, leaf first:
    ``link_latency_ns[t]`` for the links into tier t from below (the design's worst link of that
    class, electronics and propagation), ``switch_latency_ns[t]`` for the switches of tier t.
    The idle Agg tier of a one-tier plane repeats the leaf's figures.
    """
    layout = htsim_layout(fabric)
    link_ns = _per_tier(link_latency_ns, fabric.tiers, "link_latency_ns")
    switch_ns = _per_tier(switch_latency_ns, fabric.tiers, "switch_latency_ns")
    if layout.idle_top:
        link_ns, switch_ns = link_ns + link_ns[-1:], switch_ns + switch_ns[-1:]
    if any(x <= 0 for x in link_ns):
        raise ValueError("htsim rejects a zero link latency")
    speed = fabric.link_speed_gbps
    if speed != round(speed):
        raise ValueError(f"htsim reads whole Gb/s; link speed is {speed}")
    tiers = layout.tiers
    lines = [
        f"# fabric-planner export: one plane, {fabric.gpus} GPUs, {fabric.tiers} switch tiers",
    ]
    if layout.nodes != fabric.gpus:
        lines.append(
            f"# {layout.nodes - fabric.gpus} of the {layout.nodes} hosts pad the plane to a "
            "uniform fat tree; they send and receive nothing (the .cm maps GPUs to hosts)"
        )
    if layout.idle_top:
        lines.append("# one switch: Tier 1 is a single idle Agg switch that no flow reaches")
    over = layout.over_port_limits()
    if over:
        lines.append(
            f"# htsim as published refuses this file: {'; '.join(over)}; raise the limits in "
            "fat_tree_topology.cpp (the addPort asserts) to load it"
        )
    lines += [f"Nodes {layout.nodes}", f"Tiers {len(tiers)}", f"Podsize {layout.podsize}"]
    for index, params in enumerate(tiers):
        lines += ["", f"Tier {index}", f"Downlink_speed_Gbps {int(speed)}"]
        lines.append(f"Radix_Down {params['Radix_Down']}")
        if "Radix_Up" in params:
            lines.append(f"Radix_Up {params['Radix_Up']}")
            lines.append(f"Oversubscribed {params['Oversubscribed']}")
        lines.append(f"Downlink_Latency_ns {link_ns[index]}")
        lines.append(f"Switch_Latency_ns {switch_ns[index]}")
        if index > 0:
            lines.append(f"Bundle {params['Bundle']}")
    return "\n".join(lines) + "\n"


def _per_tier(value: int | Sequence[int], tiers: int, name: str) -> list[int]:
    """One whole figure per tier from one figure or a sequence of them."""
    if isinstance(value, int):
        return [value] * tiers
    values = [int(v) for v in value]
    if len(values) != tiers:
        raise ValueError(f"{name}: one figure per tier ({tiers}), got {len(values)}")
    return values


# ---- writers ----------------------------------------------------------------------------------
def _write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write through a temporary file in the same directory, then rename over ``path``.

    The file gets the usual permissions (0666 less the umask, 0644 by default), not the owner-only
    0600 of ``tempfile.mkstemp``.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        with os.fdopen(fd, "w", encoding="ascii", newline="\n") as handle:
            handle.write(text)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target


def write_topology(
    fabric: Fabric,
    path: str | os.PathLike[str],
    *,
    link_latency_ns: int = DEFAULT_LINK_LATENCY_NS,
    switch_latency_ns: int = 0,
) -> Path:
    """Write the plane as an htsim ``.topo`` file (atomically)."""
    text = topology_text(
        fabric, link_latency_ns=link_latency_ns, switch_latency_ns=switch_latency_ns
    )
    return _write_atomic(path, text)


def write_connection_matrix(
    fabric: Fabric,
    src: npt.ArrayLike,
    dst: npt.ArrayLike,
    size_bytes: npt.ArrayLike,
    path: str | os.PathLike[str],
    start_us: npt.ArrayLike = 0,
) -> Path:
    """Write one phase as an htsim ``.cm`` file (atomically)."""
    return _write_atomic(path, connection_matrix_text(fabric, src, dst, size_bytes, start_us))

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

Designs whose GPU count does not fill every leaf (``h100-1k``: 1,016 GPUs on 32 leaves of 32, the
last leaf holding 24), or whose last pod is not full, have switches of unequal down radix, which
the parametric format cannot state. They are written as the smallest uniform fat tree that
contains the plane: every switch of a tier gets the tier's largest down radix, and ``Nodes``
counts the padded hosts (``htsim_nodes``; 1,024 for ``h100-1k``). The padding hosts (ids from
the plane's GPU count up) and padding leaves carry no flow, and up-down routing never crosses a
leaf or host it does not start or end at, so htsim simulates the same plane. Host ids are GPU ids
(GPU g sits on leaf g // Radix_Down[0] in both). The ``.cm`` writes the same padded ``Nodes``,
since htsim's drivers require the two to agree. Up radices, bundles and the per-tier
oversubscription must still be uniform and whole (every design the sizing model makes has them).

Limits, stated plainly:

* The parametric format cannot describe failed links, so :func:`topology_text` refuses a plane with
  failures; every switch and link of the intact plane is implied by the counts (the tests check
  that htsim's formulas give back the Fabric's counts). htsim numbers 3-tier cores per spine
  position in its own order; the graph is the same up to that relabelling.
* htsim also has a per-element loader, ``GenericTopology`` (``generic_topology.cpp``: lines
  ``host``/``switch``/``queue``/``pipe`` after ``Hosts``/``Switches``/``Links``). It is not written
  here: its path lookup (``get_bidir_paths``) is a "TBD" stub returning no routes, and it reads
  lines into a 255-byte buffer, too short for a switch line listing 64 ports.
* htsim's FatTree asserts at most 96 ports on a ToR and 64 on an agg switch (``addPort(...) < 96``).
* Only up-down planes (``Fabric.strategy == "up_down"``) have a ``.topo``: a torus is refused
  with a ValueError naming its shape and strategy; its ``.cm`` is written with ``Nodes`` = GPUs.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import numpy.typing as npt

from planner.sim.fabric import Fabric

IntArray = npt.NDArray[np.int64]

#: Largest flow size htsim's ``stoi`` accepts.
MAX_FLOW_BYTES = 2**31 - 1
#: Default one-way latency of every link; htsim rejects 0.
DEFAULT_LINK_LATENCY_NS = 500
#: The only routing strategy htsim's FatTree topology implements.
UP_DOWN = "up_down"
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
def _uniform(counts: IntArray, what: str) -> int:
    """The one value every switch of a tier shares, or a clear error."""
    values = np.unique(counts)
    if values.size != 1:
        raise ValueError(
            f"htsim's FatTree needs the same {what} on every switch; got {values.tolist()}"
        )
    return int(values[0])


def _ratio(num: int, den: int, what: str) -> int:
    if den == 0 or num % den:
        raise ValueError(f"htsim needs an integer {what}; got {num}/{den}")
    return num // den


def tier_parameters(fabric: Fabric) -> list[dict[str, int]]:
    """Htsim's per-tier radices, bundles and oversubscription, read off the Fabric's links.

    ``Radix_Down`` is the tier's largest down radix (switches with fewer are padded, see the
    module docstring); the other figures must be uniform.
    """
    off = fabric.tier_offsets
    tiers: list[dict[str, int]] = []
    for tier in range(1, fabric.tiers + 1):
        count = off[tier + 1] - off[tier]
        down = fabric.link_class == tier - 1
        up = fabric.link_class == tier
        radix_down = int(np.bincount(fabric.upper[down] - off[tier], minlength=count).max())
        bundle = 1
        if tier > 1:
            pairs = fabric.lower[down] * fabric.nodes + fabric.upper[down]
            bundle = _uniform(np.unique(pairs, return_counts=True)[1], f"bundle (tier {tier - 1})")
        params = {"Radix_Down": radix_down, "Bundle": bundle, "switches": count}
        if tier < fabric.tiers:
            radix_up = _uniform(
                np.bincount(fabric.lower[up] - off[tier], minlength=count), "up radix"
            )
            params["Radix_Up"] = radix_up
            params["Oversubscribed"] = _ratio(
                radix_down, radix_up, f"tier {tier - 1} oversubscription"
            )
        tiers.append(params)
    return tiers


def _padded(fabric: Fabric, tiers: list[dict[str, int]]) -> tuple[int, int]:
    """Hosts and pod size of the smallest uniform fat tree that contains the plane."""
    leaf = tiers[0]
    leaves = tiers[0]["switches"]
    if fabric.tiers == 3:
        spine = tiers[1]
        leaves_per_pod = _ratio(spine["Radix_Down"], spine["Bundle"], "leaves per pod")
        pods = -(-leaves // leaves_per_pod)
        nodes = pods * leaves_per_pod * leaf["Radix_Down"]
        podsize = leaves_per_pod * leaf["Radix_Down"]
    else:
        nodes = leaves * leaf["Radix_Down"]
        podsize = nodes
    gpu_leaf = fabric.upper[fabric.link_class == 0] - fabric.tier_offsets[1]
    gpu = fabric.lower[fabric.link_class == 0]
    if not np.array_equal(gpu_leaf, gpu // leaf["Radix_Down"]):
        raise ValueError("htsim numbers hosts leaf by leaf; this plane's GPUs are not")
    return nodes, podsize


def htsim_nodes(fabric: Fabric) -> int:
    """The hosts htsim sees: the plane's GPUs, padded to a uniform fat tree when needed."""
    if fabric.strategy != UP_DOWN:
        return fabric.gpus
    try:
        return _padded(fabric, tier_parameters(fabric))[0]
    except ValueError:
        return fabric.gpus


def topology_text(
    fabric: Fabric,
    *,
    link_latency_ns: int | Sequence[int] = DEFAULT_LINK_LATENCY_NS,
    switch_latency_ns: int | Sequence[int] = 0,
) -> str:
    """The parametric ``.topo`` text of an intact 2- or 3-tier plane (see the module docstring).

    Latencies are one figure for every tier or one per tier, leaf first: ``link_latency_ns[t]``
    for the links into tier t from below (the design's worst link of that class, electronics
    and propagation), ``switch_latency_ns[t]`` for the switches of tier t.
    """
    if fabric.strategy != UP_DOWN:
        shape = f"a {'x'.join(map(str, fabric.dims))} torus" if fabric.dims else "this plane"
        raise ValueError(
            f"htsim's .topo format describes up-down fat trees only; {shape} is routed by "
            f"{fabric.strategy!r} and cannot be exported (the .cm connection matrix still can)"
        )
    if not fabric.alive.all():
        raise ValueError(
            "htsim's .topo format cannot describe failed links; export the intact plane"
        )
    if fabric.tiers not in (2, 3):
        raise ValueError(f"htsim's FatTree has 2 or 3 tiers; this plane has {fabric.tiers}")
    link_ns = _per_tier(link_latency_ns, fabric.tiers, "link_latency_ns")
    switch_ns = _per_tier(switch_latency_ns, fabric.tiers, "switch_latency_ns")
    if any(x <= 0 for x in link_ns):
        raise ValueError("htsim rejects a zero link latency")
    speed = fabric.link_speed_gbps
    if speed != round(speed):
        raise ValueError(f"htsim reads whole Gb/s; link speed is {speed}")
    tiers = tier_parameters(fabric)
    nodes, podsize = _padded(fabric, tiers)
    lines = [
        f"# fabric-planner export: one plane, {fabric.gpus} GPUs, {fabric.tiers} switch tiers",
    ]
    if nodes != fabric.gpus:
        lines.append(
            f"# hosts {fabric.gpus} .. {nodes - 1} pad the plane to a uniform fat tree; "
            "they send and receive nothing"
        )
    lines += [f"Nodes {nodes}", f"Tiers {fabric.tiers}", f"Podsize {podsize}"]
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

"""htsim export: the connection matrix round-trips; the .topo implies the Fabric's counts."""

from __future__ import annotations

import os
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import pytest

from planner.families import fabric_of
from planner.sim.fabric import Fabric
from planner.sim.htsim import (
    connection_matrix_text,
    htsim_hosts,
    htsim_layout,
    htsim_nodes,
    topology_text,
    write_connection_matrix,
    write_topology,
)
from planner.sim.packet import switch_hops
from planner.sim.routing_strategies import UP_DOWN
from tests.sim.test_bound import make_fabric, planned_fabric

FABRICS = {
    "2tier-4x4-2sp": lambda: make_fabric(4, 4, 2),
    "2tier-8x4-2sp-q2": lambda: make_fabric(8, 4, 2, q1=2),
    "3tier-2pods": lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2),
    "3tier-4pods-q2": lambda: make_fabric(4, 8, 2, leaves_per_pod=2, cores_per_group=1, q2=2),
    "planned-1024": lambda: planned_fabric(1024),
    "planned-128-2to1": lambda: planned_fabric(128, 2.0),
}


# ---- tiny parsers, written from htsim's loaders --------------------------------------------
def parse_cm(text: str) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Header counts and flows of a .cm text (ConnectionMatrix::load, without triggers)."""
    header: dict[str, int] = {}
    flows: list[dict[str, int]] = []
    for line in text.splitlines():
        tokens = line.split(" ")
        if not tokens[0] or tokens[0].startswith("#"):
            continue
        if "->" in tokens[0]:
            a, b = tokens[0].split("->")
            flow = {"src": int(a), "dst": int(b)}
            flow.update({k: int(v) for k, v in zip(tokens[1::2], tokens[2::2], strict=True)})
            flows.append(flow)
        else:
            header[tokens[0]] = int(tokens[1])
    return header, flows


def parse_topo(text: str) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Header and per-tier keys of a .topo text (FatTreeTopology::load), lower-cased."""
    header: dict[str, int] = {}
    tiers: list[dict[str, int]] = []
    for line in text.splitlines():
        tokens = line.split(" ")
        if not tokens[0] or tokens[0].startswith("#"):
            continue
        key, value = tokens[0].lower(), int(tokens[1])
        if key == "tier":
            tiers.append({})
        elif tiers:
            tiers[-1][key] = value
        else:
            header[key] = value
    return header, tiers


def htsim_counts(header: dict[str, int], tiers: list[dict[str, int]]) -> dict[str, int]:
    """Switch and link counts as FatTreeTopology::set_custom_params derives them (equal speeds)."""
    nodes, pods = header["nodes"], header["nodes"] // header["podsize"]
    tor, agg = tiers[0], tiers[1]
    ntor = nodes // tor["radix_down"]
    assert tor["radix_down"] // tor["radix_up"] == tor["oversubscribed"]
    tor_uplinks = nodes // tor["oversubscribed"]
    agg_per_pod = tor_uplinks // (pods * agg["radix_down"])
    assert agg_per_pod * agg.get("bundle", 1) == tor["radix_up"]
    counts = {"leaf": ntor, "spine": agg_per_pod * pods, "links1": tor_uplinks, "links0": nodes}
    if header["tiers"] == 3:
        core = tiers[2]
        agg_uplinks = tor_uplinks // agg["oversubscribed"]
        ncore = agg_uplinks // core["radix_down"]
        assert ncore * core.get("bundle", 1) // agg_per_pod == agg["radix_up"]
        counts.update(core=ncore, links2=agg_uplinks)
    return counts


def fabric_counts(fabric: Fabric) -> dict[str, int]:
    off = fabric.tier_offsets
    names = ("leaf", "spine", "core")
    counts = {names[t]: off[t + 2] - off[t + 1] for t in range(fabric.tiers)}
    for cls in range(fabric.tiers):
        counts[f"links{cls}"] = int(np.count_nonzero(fabric.link_class == cls))
    return counts


# ---- connection matrix ---------------------------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1])
def test_connection_matrix_round_trips(seed: int) -> None:
    fabric = make_fabric(4, 4, 2)
    rng = np.random.default_rng(seed)
    src = rng.permutation(fabric.gpus)
    dst = (src + rng.integers(1, fabric.gpus, src.size)) % fabric.gpus
    size = rng.integers(1, 10**9, src.size)
    start = rng.integers(0, 100, src.size)
    header, flows = parse_cm(connection_matrix_text(fabric, src, dst, size, start))
    assert header == {"Nodes": fabric.gpus, "Connections": src.size}
    assert [f["src"] for f in flows] == src.tolist()
    assert [f["dst"] for f in flows] == dst.tolist()
    assert [f["id"] for f in flows] == list(range(1, src.size + 1))
    assert [f["size"] for f in flows] == size.tolist()
    assert [f["start"] for f in flows] == start.tolist()


def test_connection_matrix_matches_htsim_example_layout() -> None:
    text = connection_matrix_text(make_fabric(4, 4, 2), [7, 15], [5, 1], 2_000_000)
    assert (
        text
        == "Nodes 16\nConnections 2\n7->5 id 1 start 0 size 2000000\n15->1 id 2 start 0 size 2000000\n"
    )


@pytest.mark.parametrize(
    ("src", "dst", "size", "start"),
    [
        ([0], [0], 1, 0),
        ([0], [1], 2**31, 0),
        ([0], [1], 0, 0),
        ([0], [1], 10, 0.5),
        ([0], [99], 1, 0),
    ],
    ids=["self", "too-big", "empty", "fractional-start", "bad-gpu"],
)
def test_connection_matrix_rejects_what_htsim_cannot_read(
    src: list[int], dst: list[int], size: int, start: float
) -> None:
    with pytest.raises(ValueError, match=r"."):
        connection_matrix_text(make_fabric(4, 4, 2), src, dst, size, start)


def test_writers_write_the_text(tmp_path: Path) -> None:
    fabric = make_fabric(4, 4, 2)
    cm = write_connection_matrix(fabric, [0, 1], [5, 9], 1000, tmp_path / "phase.cm")
    topo = write_topology(fabric, tmp_path / "plane.topo")
    assert cm.read_text() == connection_matrix_text(fabric, [0, 1], [5, 9], 1000)
    assert topo.read_text() == topology_text(fabric)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["phase.cm", "plane.topo"]


# ---- topology ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(FABRICS))
def test_topology_implies_the_fabric_counts(name: str) -> None:
    fabric = FABRICS[name]()
    header, tiers = parse_topo(topology_text(fabric))
    assert header["nodes"] == fabric.gpus
    assert header["tiers"] == fabric.tiers == len(tiers)
    assert all(t["downlink_speed_gbps"] == int(fabric.link_speed_gbps) for t in tiers)
    assert all(t["downlink_latency_ns"] > 0 for t in tiers)
    assert "radix_up" not in tiers[-1]
    assert htsim_counts(header, tiers) == fabric_counts(fabric)


def test_topology_refuses_failed_links() -> None:
    fabric = make_fabric(4, 4, 2).with_failed_links([16])
    with pytest.raises(ValueError, match="failed links"):
        topology_text(fabric)


# ---- planes that do not fill every leaf or pod (issue 9) -----------------------------------------
PARTIAL = {
    # 1,016 GPUs on leaves of 32: the last leaf holds 24 (the Quick start design).
    "planned-1016": lambda: planned_fabric(1016),
    # 2,600 GPUs in 3 tiers: the last leaf and the last pod are partly filled.
    "planned-2600-3tier": lambda: planned_fabric(2600, tiers=3),
}


@pytest.mark.parametrize("name", sorted(PARTIAL))
def test_topology_pads_a_partly_filled_plane_to_a_uniform_fat_tree(name: str) -> None:
    fabric = PARTIAL[name]()
    header, tiers = parse_topo(topology_text(fabric))
    ours = fabric_counts(fabric)
    theirs = htsim_counts(header, tiers)
    # Every switch and every switch-to-switch link is htsim's; only host links are padded.
    assert {k: v for k, v in theirs.items() if k != "links0"} == {
        k: v for k, v in ours.items() if k != "links0"
    }
    assert header["nodes"] == theirs["links0"] > fabric.gpus
    assert header["nodes"] - fabric.gpus < tiers[0]["radix_down"] * (
        header["podsize"] // tiers[0]["radix_down"]
    )
    # GPU g sits on leaf g // Radix_Down in both numberings.
    gpu = fabric.lower[fabric.link_class == 0]
    leaf = fabric.upper[fabric.link_class == 0] - fabric.tier_offsets[1]
    assert np.array_equal(leaf, gpu // tiers[0]["radix_down"])


def test_connection_matrix_counts_the_same_hosts_as_the_topology() -> None:
    fabric = PARTIAL["planned-1016"]()
    topo, _ = parse_topo(topology_text(fabric))
    cm, flows = parse_cm(connection_matrix_text(fabric, [0, 1015], [1015, 0], 1000))
    assert cm["Nodes"] == topo["nodes"] == 1024
    assert max(max(f["src"], f["dst"]) for f in flows) < fabric.gpus


def test_written_files_are_readable_by_everyone_under_the_usual_umask(tmp_path: Path) -> None:
    import os

    fabric = make_fabric(4, 4, 2)
    old = os.umask(0o022)
    try:
        cm = write_connection_matrix(fabric, [0], [5], 1000, tmp_path / "phase.cm")
        topo = write_topology(fabric, tmp_path / "plane.topo")
    finally:
        os.umask(old)
    assert cm.stat().st_mode & 0o777 == 0o644
    assert topo.stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("tiers", [2, 3])
def test_the_export_takes_each_tiers_latency_from_the_design(tiers: int, tmp_path: Path) -> None:
    """Downlink latency = the design's worst link into the tier (ceil ns), switch latency its own."""
    from planner.api import export_htsim, plan
    from planner.schema.instance import Instance
    from planner.schema.verify import Verify

    inst = Instance.model_validate(
        {
            "name": f"htsim-latency-{tiers}",
            "cluster": {"gpus": 512, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"pin": {"tiers": tiers}, "switch_models": ["qm9700"]},
        }
    )
    design = plan(inst, verify=False).design
    assert design is not None
    verify = Verify.model_validate({"traffic": [{"kind": "random_permutation", "size_bytes": 1e6}]})
    files = export_htsim(design, verify)
    write = next(w for name, w in files.items() if name.endswith(".topo"))
    write(tmp_path / "plane.topo")
    _, parsed = parse_topo((tmp_path / "plane.topo").read_text())
    assert len(parsed) == tiers
    for t, c, tier in zip(parsed, design.link_classes, design.tiers, strict=True):
        assert t["downlink_latency_ns"] == max(1, int(np.ceil(c.latency_ns)))
        assert t["switch_latency_ns"] == tier.latency_ns


# ---- every Clos the planner designs (issue 11) -------------------------------------------------
def uniform_twin(text: str) -> Fabric:
    """The uniform fat tree a .topo describes, wired as the planner wires a Clos."""
    header, tiers = parse_topo(text)
    tor, agg = tiers[0], tiers[1]
    leaves = header["nodes"] // tor["radix_down"]
    spines_per_pod = tor["radix_up"] // agg.get("bundle", 1)
    if header["tiers"] == 2:
        return make_fabric(tor["radix_down"], leaves, spines_per_pod, q1=agg.get("bundle", 1))
    core = tiers[2]
    return make_fabric(
        tor["radix_down"],
        leaves,
        spines_per_pod,
        q1=agg.get("bundle", 1),
        leaves_per_pod=header["podsize"] // tor["radix_down"],
        cores_per_group=agg["radix_up"] // core.get("bundle", 1),
        q2=core.get("bundle", 1),
    )


def assert_same_plane(fabric: Fabric, seed: int = 0) -> None:
    """htsim's fat tree holds every switch of the plane, and maps every GPU pair to a host pair
    as far apart (switch hops) as the GPUs are in the plane."""
    text = topology_text(fabric)
    header, tiers = parse_topo(text)
    theirs = htsim_counts(header, tiers)
    ours = fabric_counts(fabric)
    assert theirs["leaf"] >= ours["leaf"]
    for key in ("spine", "core"):
        if key in ours and fabric.tiers > 1:
            assert theirs[key] == ours[key]
    host = htsim_hosts(fabric)
    assert np.unique(host).size == fabric.gpus
    assert host.max() < header["nodes"] == htsim_nodes(fabric)
    twin = uniform_twin(text)
    rng = np.random.default_rng(seed)
    a = rng.integers(0, fabric.gpus, 2_000)
    b = rng.integers(0, fabric.gpus, 2_000)
    assert np.array_equal(switch_hops(fabric, a, b), switch_hops(twin, host[a], host[b]))


SHAPES = {
    # 3 GPUs and 2 uplinks a leaf: 3 / 2 is not whole; written as 4 down (2:1), 1 idle host.
    "2tier-3down-2up": lambda: make_fabric(3, 4, 2),
    # 1 GPU and 2 uplinks: written as 2 down (1:1), 1 idle host a leaf.
    "2tier-1down-2up": lambda: make_fabric(1, 4, 2),
    # Spines of 3 leaves and 2 cores: 3 / 2 is not whole; 4 leaves a pod, 1 idle leaf each.
    "3tier-3leaves-2cores": lambda: make_fabric(2, 6, 2, leaves_per_pod=3, cores_per_group=2),
    "3tier-bundles": lambda: make_fabric(4, 8, 2, q1=2, leaves_per_pod=2, cores_per_group=1, q2=2),
}


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes_the_parametric_format_cannot_state_are_padded(name: str) -> None:
    assert_same_plane(SHAPES[name]())


def test_a_fractional_ratio_gets_idle_hosts_on_every_leaf() -> None:
    fabric = SHAPES["2tier-3down-2up"]()
    _, tiers = parse_topo(topology_text(fabric))
    assert (tiers[0]["radix_down"], tiers[0]["radix_up"], tiers[0]["oversubscribed"]) == (4, 2, 2)
    # GPU g on leaf g // 3 at position g % 3 is host 4 (g // 3) + g % 3.
    g = np.arange(fabric.gpus)
    assert htsim_hosts(fabric).tolist() == (4 * (g // 3) + g % 3).tolist()
    cm, flows = parse_cm(connection_matrix_text(fabric, [3], [11], 1000))
    assert cm["Nodes"] == 16
    assert (flows[0]["src"], flows[0]["dst"]) == (4, 14)


CLOS_INSTANCES = ["h100-1k", "oversubscribed-4k", "small-256", "tpu-pod-4k", "cluster-131k"]


@cache
def instance_fabric(name: str) -> Fabric:
    from planner.api import load_instance, plan

    design = plan(
        load_instance(Path("instances") / f"{name}.toml"), verify=False, alternatives=False
    ).design
    assert design is not None
    return fabric_of(design)


@pytest.mark.parametrize("name", CLOS_INSTANCES)
def test_every_clos_of_the_instances_is_exported(name: str) -> None:
    fabric = instance_fabric(name)
    assert_same_plane(fabric)


def test_a_single_switch_gets_an_idle_agg_above_it() -> None:
    fabric = instance_fabric("small-256")
    header, tiers = parse_topo(topology_text(fabric))
    assert fabric.tiers == 1
    assert header == {"nodes": 256, "tiers": 2, "podsize": 256}
    assert (tiers[0]["radix_down"], tiers[0]["radix_up"], tiers[0]["oversubscribed"]) == (
        256,
        1,
        256,
    )
    assert tiers[1]["radix_down"] == 1


@pytest.mark.parametrize(
    ("name", "over"), [("h100-1k", False), ("oversubscribed-4k", True), ("small-256", True)]
)
def test_switches_over_htsims_port_asserts_are_said_in_the_file(name: str, over: bool) -> None:
    fabric = instance_fabric(name)
    assert bool(htsim_layout(fabric).over_port_limits()) == over
    assert ("# htsim as published refuses this file" in topology_text(fabric)) == over


@pytest.mark.slow
@pytest.mark.parametrize(
    ("routing", "message"),
    [("direct", "OCS direct-connect plane joins blocks"), ("wcmp", "routed by 'ocs_wcmp'")],
)
def test_an_ocs_direct_plane_has_no_fat_tree_form(routing: str, message: str) -> None:
    from planner.api import load_instance, plan

    base = load_instance(Path("instances") / "ocs-65k.toml")
    inst = base.model_copy(
        update={"search": base.search.model_copy(update={"ocs_routing": routing})}
    )
    design = plan(inst, verify=False, alternatives=False).design
    assert design is not None
    assert design.routing == routing
    with pytest.raises(ValueError, match=message):
        topology_text(fabric_of(design))


# ---- htsim itself, where it is built (not in CI) ------------------------------------------------
HTSIM_DIR = Path(os.environ.get("HTSIM_DIR", "/tmp/csg-htsim/sim/datacenter"))
LOADABLE = {
    **{k: v for k, v in SHAPES.items()},
    "planned-1016": PARTIAL["planned-1016"],
    "planned-2600-3tier": PARTIAL["planned-2600-3tier"],
    "h100-1k": lambda: instance_fabric("h100-1k"),
}


@pytest.mark.slow
@pytest.mark.skipif(not (HTSIM_DIR / "htsim_ndp").exists(), reason="htsim is not built")
@pytest.mark.parametrize("name", sorted(LOADABLE))
def test_htsim_loads_the_export_and_finishes_every_flow(name: str, tmp_path: Path) -> None:
    """htsim_ndp reads the .topo and .cm and finishes a shift of every GPU by one leaf.

    Switches hash flows (``ecmp_host``): ``-strat perm`` enumerates every path, and NDP asserts
    path ids below 10,000, which a 3-tier plane with bundles exceeds (2,600 GPUs: 16,384 paths).
    """
    fabric = LOADABLE[name]()
    src = np.arange(fabric.gpus)
    per_leaf = int(np.bincount(fabric.upper[fabric.link_class == 0]).max())
    dst = (src + per_leaf) % fabric.gpus
    keep = src != dst
    write_topology(fabric, tmp_path / "plane.topo")
    write_connection_matrix(fabric, src[keep], dst[keep], 100_000, tmp_path / "phase.cm")
    args = ["-nodes", str(htsim_nodes(fabric)), "-topo", "plane.topo", "-tm", "phase.cm"]
    args += ["-strat", "ecmp_host", "-paths", "1"]
    args += ["-linkspeed", str(int(fabric.link_speed_gbps * 1000))]
    args += ["-q", "50", "-cwnd", "50", "-mtu", "4096", "-end", "100000"]
    out = subprocess.run(
        [str(HTSIM_DIR / "htsim_ndp"), *args],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "Topology load done" in out
    assert out.count(" finished at ") == int(keep.sum())


def test_a_plane_of_disjoint_rails_is_not_written_as_one_tree() -> None:
    """Two rails of 2 leaves of 4 GPUs, a spine each, joined nowhere (a rail-only plane)."""
    gpus = np.arange(16)
    leaves = np.arange(4)
    lower = np.concatenate([gpus, 16 + leaves])
    upper = np.concatenate([16 + gpus // 4, 20 + leaves // 2])
    rails = Fabric(
        gpus=16,
        planes=1,
        link_speed_gbps=400.0,
        tier_offsets=(0, 16, 20, 22),
        lower=lower,
        upper=upper,
        link_class=np.concatenate([np.zeros(16, np.int64), np.ones(4, np.int64)]),
        alive=np.ones(2 * lower.size, dtype=bool),
        strategy=UP_DOWN,
    )
    with pytest.raises(ValueError, match="2 disjoint parts"):
        topology_text(rails)
    # The same leaves each wired to both spines: one tree, written.
    assert "Tiers 2" in topology_text(
        Fabric(
            **{
                **rails.__dict__,
                "lower": np.concatenate([gpus, 16 + np.repeat(leaves, 2)]),
                "upper": np.concatenate([16 + gpus // 4, np.tile([20, 21], 4)]),
                "link_class": np.concatenate([np.zeros(16, np.int64), np.ones(8, np.int64)]),
                "alive": np.ones(48, dtype=bool),
            }
        )
    )

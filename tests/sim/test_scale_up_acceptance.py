"""Issue 12's acceptance on the scale-up domain, end to end through ``planner.api``.

A hierarchical all-reduce over 1,024 GPUs (128 nodes of 8, NVLink 4 inside each node, 400G NICs
on a non-blocking two-tier Clos) takes exactly the time of its two levels, one after the other:

    k = 8 GPUs per domain, m = 128 domains, S = 1 GiB = 8,589,934,592 bits per rank
    reduce-scatter + all-gather inside a domain:  2 (k-1)/k S / B_up
        = 2 * 7/8 * 8.5899e9 / 3.6e12              = 4.1757e-3 s
    all-reduce of S/k across the domains, per local rank:  2 (m-1)/m (S/k) / B_nic
        = 2 * 127/128 * 1.0737e9 / 4.0e11          = 5.3267e-3 s
    total                                          = 9.5024e-3 s

and its bus bandwidth is S / T * 2 (n-1)/n with n = 1,024, about 1,807 Gb/s: the NIC level is the
slowest (each GPU moves 2 (m-1)/m S/k over 400 Gb/s). An all-reduce inside one node puts zero
bytes on any NIC, leaf or spine link.
"""

from __future__ import annotations

import math

import polars as pl
import pytest

from planner.api import plan, simulate
from planner.schema.instance import Instance
from planner.schema.verify import Verify

#: Relative tolerance between a simulated time and its closed form (a fluid model: float noise).
RTOL = 1e-6
GIB = 2**30


@pytest.fixture(scope="module")
def design():  # type: ignore[no-untyped-def]
    inst = Instance.model_validate(
        {
            "name": "hier-1k",
            "cluster": {
                "gpus": 1024,
                "gpus_per_node": 8,
                "nic_gbps": 400,
                "nic_ports": [1],
                "scale_up": {"gpus": 8, "gbps_per_gpu": 3600},
            },
            "search": {"pin": {"tiers": 2}, "switch_models": ["qm9700"]},
        }
    )
    d = plan(inst, alternatives=False, verify=False).design
    assert d is not None
    return d


def _verify(**traffic: object) -> Verify:
    """Fluid: the closed forms below are of bandwidth alone."""
    return Verify.model_validate(
        {
            "fidelity": "fluid",
            "routing": ["spray"],
            "single_switch_failures": False,
            "bound_max_variables": 0,
            "traffic": [traffic],
        }
    )


def test_hierarchical_all_reduce_meets_the_two_level_closed_form(design) -> None:  # type: ignore[no-untyped-def]
    sim = simulate(
        design,
        _verify(
            kind="all_reduce_hierarchical", groups="consecutive", group_size=1024, size_bytes=GIB
        ),
    )
    row = sim.collectives.filter(pl.col("scenario") == "healthy").row(0, named=True)
    bits = GIB * 8
    k, m, n = 8, 128, 1024
    inside_s = 2 * (k - 1) / k * bits / 3.6e12
    across_s = 2 * (m - 1) / m * (bits / k) / 4.0e11
    assert math.isclose(row["time_s"], inside_s + across_s, rel_tol=RTOL)
    busbw_gbps = bits / (inside_s + across_s) * 2 * (n - 1) / n / 1e9
    assert math.isclose(row["busbw_gbps"], busbw_gbps, rel_tol=RTOL)
    assert math.isclose(row["fraction_of_ideal"], 1.0, rel_tol=RTOL)


def test_an_all_reduce_inside_a_node_puts_no_byte_on_the_scale_out(design) -> None:  # type: ignore[no-untyped-def]
    sim = simulate(
        design,
        _verify(kind="all_reduce_ring", groups="tensor_parallel", group_size=8, size_bytes=GIB),
    )
    links = sim.links
    scale_out = links.filter(pl.col("tier") != "gpu-nvswitch")
    assert len(scale_out) > 0
    assert scale_out["max_utilisation"].max() == 0.0
    nvlink = links.filter(pl.col("tier") == "gpu-nvswitch")
    assert nvlink["max_utilisation"].min() > 0.0
    row = sim.collectives.row(0, named=True)
    # 2 (k-1)/k S over NVLink: 2 * 7/8 * 8.5899e9 / 3.6e12 s.
    assert math.isclose(row["time_s"], 2 * 7 / 8 * GIB * 8 / 3.6e12, rel_tol=RTOL)


def test_rail_only_pays_the_detour_only_when_the_domain_is_slower_than_the_nic() -> None:
    """A uniform all-to-all over 16 GPUs (4 nodes of 4, one 4-GPU domain each), b = S/16 a peer.

    Rail-only (PXN forced): GPU s sends 3 b inside its domain and relays 9 b (its 9 cross-rail
    flows to other domains) to proxies over NVLink: 12 b out; it receives 3 b plus 9 b relayed to
    it: 12 b in. Its NIC carries 3 b same-rail plus 9 b relayed: 12 b. Pipelined, a flow ends with
    its later hop: T = 12 b / min(B_up, B_nic) when the loads are even, so with B_up = B_nic/2 the
    detour doubles the time (24 b / B_nic), while rail-optimized (no PXN: 3 b on NVLink, 12 b on
    the NIC) stays at 12 b / B_nic.
    """
    from dataclasses import replace

    from planner.design import ScaleUpDomain

    def designed(family: str):  # type: ignore[no-untyped-def]
        inst = Instance.model_validate(
            {
                "name": "detour",
                "cluster": {
                    "gpus": 16,
                    "gpus_per_node": 4,
                    "nic_gbps": 400,
                    "scale_up": {"gpus": 4, "gbps_per_gpu": 400},
                },
                "search": {"families": [family]},
            }
        )
        d = plan(inst, alternatives=False, verify=False).design
        assert d is not None
        assert d.family == family
        return replace(d, scale_up=ScaleUpDomain(gpus=4, gbps_per_gpu=200.0))

    size = 16 * 2**20
    b_bits = size / 16 * 8
    verify = _verify(kind="all_to_all", groups="consecutive", group_size=16, size_bytes=size)
    times = {}
    for family in ("rail_optimized", "rail_only"):
        times[family] = simulate(designed(family), verify).collectives.row(0, named=True)["time_s"]
    assert math.isclose(times["rail_optimized"], 12 * b_bits / 400e9, rel_tol=RTOL)
    assert math.isclose(times["rail_only"], 12 * b_bits / 200e9, rel_tol=RTOL)


@pytest.mark.parametrize(("pxn", "spine_bytes"), [(True, False), (False, True)])
@pytest.mark.slow
def test_pxn_keeps_a_rail_optimized_all_to_all_off_the_spine(pxn: bool, spine_bytes: bool) -> None:
    """All-to-all over the nodes of one scalable unit: with PXN every byte that leaves a node
    is same-rail and turns at its rail leaf; without it, cross-rail bytes climb to the spine."""
    inst = Instance.model_validate(
        {
            "name": "pxn-rail",
            "cluster": {"gpus": 256, "gpus_per_node": 8, "nic_gbps": 400},
            "search": {"families": ["rail_optimized"]},
        }
    )
    d = plan(inst, alternatives=False, verify=False).design
    assert d is not None
    unit_gpus = d.wiring.params()["su_nodes"] * 8
    verify = Verify.model_validate(
        {
            "routing": ["spray"],
            "single_switch_failures": False,
            "bound_max_variables": 0,
            "pxn": pxn,
            "traffic": [{"kind": "all_to_all", "groups": "consecutive", "group_size": unit_gpus}],
        }
    )
    links = simulate(d, verify).links
    spine = links.filter(pl.col("tier").str.contains("spine"))
    assert len(spine) > 0
    assert (spine["max_utilisation"].max() > 0.0) is spine_bytes


@pytest.mark.slow
def test_rail_only_with_more_rails_than_a_node_relays_within_its_domain() -> None:
    """1,152 GPUs in 16 NVL72-like domains of 18 nodes of 4: rail-only takes R > 4 rails (a rail
    group of R GPUs spans R / 4 nodes of one domain; tests/families/rail/test_rail_count.py); PXN relays
    through the GPU of the sender's rail group on the destination's rail, so every flow of an
    all-to-all across two domains arrives (none is cut off)."""
    inst = Instance.model_validate(
        {
            "name": "rails-72",
            "cluster": {
                "gpus": 1152,
                "gpus_per_node": 4,
                "nic_gbps": 400,
                "scale_up": {"gpus": 72, "gbps_per_gpu": 7200},
            },
            "search": {"families": ["rail_only"]},
        }
    )
    d = plan(inst, alternatives=False, verify=False).design
    assert d is not None
    rails = d.wiring.params()["rails"]
    assert rails > 4
    sim = simulate(
        d, _verify(kind="all_to_all", groups="consecutive", group_size=144, size_bytes=GIB)
    )
    row = sim.collectives.row(0, named=True)
    assert row["disconnected_flows"] == 0
    assert math.isfinite(row["time_s"])

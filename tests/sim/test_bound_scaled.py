"""The scaled optimal-routing bound against the reference LP (``method="lp"``).

Every case checks validity (the scaled lambda is never below the LP's: its time is never above
any routing's) and, where the case says so, equality within REL_TOL.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from functools import cache

import numpy as np
import pytest

from models.status import Status
from planner.api import plan
from planner.families import fabric_of
from planner.families.torus.fabric import torus_fabric
from planner.schema.instance import Instance
from planner.sim import bound, collectives, gpu_groups, traffic_patterns
from planner.sim import traffic as tr
from planner.sim.bound import length_bound, max_concurrent_flow, switch_links
from planner.sim.fabric import Fabric
from tests.sim.test_bound import make_fabric, planned_fabric

#: Relative agreement required between the scaled bound and the reference LP where equal.
REL_TOL = 1e-6
#: Slack on validity (scaled >= LP): solver round-off only.
VALID_RTOL = 1e-9
#: PDLP's certified bound may sit this far above HiGHS's optimum (bound.PDLP_RTOL, with room).
PDLP_CHECK_RTOL = 1e-4


@cache
def ocs_fabric(gpus: int) -> Fabric:
    """A direct-connect fabric the planner designs."""
    inst = Instance.model_validate(
        {
            "name": "ocs",
            "cluster": {"gpus": gpus, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": ["ocs_direct"]},
        }
    )
    design = plan(inst, verify=False, alternatives=False).design
    assert design is not None
    return fabric_of(design)


def torus(dims: tuple[int, ...], per_switch: int, q: int = 1) -> Fabric:
    gpus = math.prod(dims) * per_switch
    return torus_fabric(gpus, 1, dims, per_switch, q, 100.0, host_speed_gbps=600.0)


FABRICS: dict[str, Callable[[], Fabric]] = {
    "clos2-4x4-2sp": lambda: make_fabric(4, 4, 2),
    "clos2-4x4-2sp-q2": lambda: make_fabric(4, 4, 2, q1=2),
    "clos2-oversub-4x2-3sp": lambda: make_fabric(2, 4, 3),
    "clos3-2pods": lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2),
    "clos3-2pods-thin": lambda: make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=1),
    "clos3-4pods-q2": lambda: make_fabric(2, 8, 2, leaves_per_pod=2, cores_per_group=1, q2=2),
    "planned-clos2-128-2to1": lambda: planned_fabric(128, 2.0),
    "planned-clos2-256": lambda: planned_fabric(256),
    "planned-clos3-256": lambda: planned_fabric(256, tiers=3),
    "planned-ocs-256": lambda: ocs_fabric(256),
    "planned-ocs-512": lambda: ocs_fabric(512),
    "torus-4x4-2gps": lambda: torus((4, 4), 2),
    "torus-3x5-q2": lambda: torus((3, 5), 1, 2),
    "torus-4x4x2-2gps": lambda: torus((4, 4, 2), 2),
    "torus-8x8": lambda: torus((8, 8), 1),
    "torus-4x4x4": lambda: torus((4, 4, 4), 1),
}


def traffic(name: str, gpus: int) -> tr.Phase:
    """One phase of a named traffic on ``gpus`` GPUs (nodes of 2 GPUs)."""
    if name == "permutation":
        t = traffic_patterns.random_permutation(gpus, 1e9, 7)
    elif name == "uniform_all_to_all":
        t = traffic_patterns.uniform_all_to_all(gpus, 1e9)
    elif name == "ring_all_reduce_dp":
        t = collectives.ring_all_reduce(
            gpu_groups.data_parallel_groups(gpus, 2 if gpus % 2 == 0 else 1), 1e9
        )
    elif name == "ring_all_reduce_all":
        t = collectives.ring_all_reduce(gpu_groups.consecutive_groups(gpus, gpus), 1e9)
    elif name == "incast":
        t = traffic_patterns.incast(gpus, 6, 1e9, 3)
    elif name == "shift_half":
        g = np.arange(gpus)
        t = traffic_patterns.point_to_point(g, (g + gpus // 2) % gpus, 1e9)
    else:
        raise KeyError(name)
    return t.phases[0]


TRAFFICS = [
    "permutation",
    "uniform_all_to_all",
    "ring_all_reduce_dp",
    "ring_all_reduce_all",
    "incast",
    "shift_half",
]


def both(fabric: Fabric, phase: tr.Phase) -> tuple[bound.BoundResult, bound.BoundResult]:
    gbit = phase.size_bytes * 8 / 1e9
    scaled = max_concurrent_flow(fabric, phase.src, phase.dst, gbit, method="scaled")
    lp = max_concurrent_flow(
        fabric, phase.src, phase.dst, gbit, method="lp", max_variables=10_000_000
    )
    assert lp.status is Status.OPTIMAL
    return scaled, lp


# ---- (a) equal to the reference LP on every small fabric and traffic -------------------------
@pytest.mark.parametrize("traffic_name", TRAFFICS)
@pytest.mark.parametrize("name", sorted(FABRICS))
@pytest.mark.slow
def test_scaled_equals_reference_lp(name: str, traffic_name: str) -> None:
    fabric = FABRICS[name]()
    scaled, lp = both(fabric, traffic(traffic_name, fabric.gpus))
    assert scaled.lambda_per_s is not None
    assert lp.lambda_per_s is not None
    assert scaled.lambda_per_s >= lp.lambda_per_s * (1 - VALID_RTOL)  # valid: never faster
    assert scaled.lambda_per_s == pytest.approx(lp.lambda_per_s, rel=REL_TOL)
    assert scaled.lambda_fabric_per_s == pytest.approx(lp.lambda_fabric_per_s, rel=REL_TOL)


@pytest.mark.parametrize("traffic_name", ["permutation", "uniform_all_to_all", "incast"])
@pytest.mark.parametrize(
    "name", [n for n in sorted(FABRICS) if n.startswith(("clos", "planned-clos"))]
)
def test_symmetric_clos_is_certified_exact(name: str, traffic_name: str) -> None:
    fabric = FABRICS[name]()
    scaled, _ = both(fabric, traffic(traffic_name, fabric.gpus))
    assert scaled.exact
    assert scaled.status is Status.OPTIMAL
    assert scaled.method == "clos"


@pytest.mark.parametrize("name", [n for n in sorted(FABRICS) if n.startswith("torus")])
@pytest.mark.parametrize("traffic_name", ["uniform_all_to_all"])
@pytest.mark.slow
def test_translation_invariant_torus_traffic_is_certified_exact(
    name: str, traffic_name: str
) -> None:
    fabric = FABRICS[name]()
    scaled, lp = both(fabric, traffic(traffic_name, fabric.gpus))
    assert scaled.exact
    assert scaled.method == "torus"
    assert scaled.lambda_per_s == pytest.approx(lp.lambda_per_s, rel=REL_TOL)


def test_channel_load_closed_form_on_a_ring() -> None:
    """Uniform all-to-all on a ring of k (odd) switches: lambda = 8 c / (k^2 - 1) per unit."""
    k = 7
    fabric = torus((k,), 1)
    src, dst = np.nonzero(~np.eye(k, dtype=bool))
    res = max_concurrent_flow(fabric, src, dst, 1.0, method="scaled")
    # Each direction of a ring link carries sum_{d=1}^{(k-1)/2} d = (k^2 - 1) / 8 per switch.
    assert res.lambda_fabric_per_s == pytest.approx(100.0 * 8 / (k * k - 1), rel=REL_TOL)
    assert res.exact


# ---- (b) a valid bound where not proven exact --------------------------------------------------
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_torus_permutation_is_valid_and_flagged(seed: int) -> None:
    """3x3x3 permutations: the contractions sit 2.5-8.5 % above the LP (measured), flagged."""
    fabric = torus((3, 3, 3), 1)
    perm = traffic_patterns.random_permutation(fabric.gpus, 1e9, seed).phases[0]
    scaled, lp = both(fabric, perm)
    assert scaled.lambda_per_s is not None
    assert lp.lambda_per_s is not None
    assert scaled.lambda_per_s >= lp.lambda_per_s * (1 - VALID_RTOL)
    assert scaled.lambda_per_s > lp.lambda_per_s * (1 + REL_TOL)
    assert not scaled.exact
    assert scaled.status is Status.FEASIBLE
    auto = max_concurrent_flow(fabric, perm.src, perm.dst, perm.size_bytes * 8 / 1e9)
    assert auto.method == "lp"  # small enough: auto replaces the loose bound by the LP
    assert auto.lambda_per_s == pytest.approx(lp.lambda_per_s, rel=REL_TOL)


def test_failed_link_breaks_the_certificate_and_auto_falls_back_to_the_lp() -> None:
    fabric = make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=2).with_failed_links([16])
    phase = traffic("shift_half", fabric.gpus)
    scaled, lp = both(fabric, phase)
    assert not scaled.exact
    assert scaled.lambda_per_s is not None
    assert lp.lambda_per_s is not None
    assert scaled.lambda_per_s >= lp.lambda_per_s * (1 - VALID_RTOL)
    auto = max_concurrent_flow(fabric, phase.src, phase.dst, 8.0)
    assert auto.method == "lp"
    assert auto.lambda_per_s == pytest.approx(
        max_concurrent_flow(fabric, phase.src, phase.dst, 8.0, method="lp").lambda_per_s
    )


def test_whole_failed_spine_keeps_the_clos_symmetric() -> None:
    fabric = make_fabric(4, 4, 4)
    fabric = fabric.with_failed_switches([fabric.tier_offsets[2]])
    scaled, lp = both(fabric, traffic("shift_half", fabric.gpus))
    assert scaled.exact
    assert scaled.lambda_per_s == pytest.approx(lp.lambda_per_s, rel=REL_TOL)


def test_auto_at_scale_is_never_skipped() -> None:
    fabric = make_fabric(8, 64, 4, leaves_per_pod=8, cores_per_group=4)  # 512 GPUs, 3 tiers
    perm = traffic("permutation", fabric.gpus)
    res = max_concurrent_flow(fabric, perm.src, perm.dst, 1.0, max_variables=10)
    assert not res.skipped
    assert res.exact
    assert res.method == "clos"
    assert res.size is not None
    assert res.size.variables == 0


# ---- (c) the block LP's solvers and the weak-duality certificate ----------------------------
@pytest.mark.parametrize("traffic_name", ["permutation", "shift_half", "uniform_all_to_all"])
def test_pdlp_block_lp_is_a_valid_bound_within_its_tolerance(
    monkeypatch: pytest.MonkeyPatch, traffic_name: str
) -> None:
    fabric = ocs_fabric(512)
    phase = traffic(traffic_name, fabric.gpus)
    gbit = phase.size_bytes * 8 / 1e9
    highs = max_concurrent_flow(fabric, phase.src, phase.dst, gbit, method="scaled")
    monkeypatch.setattr(bound, "BLOCK_HIGHS_MAX_VARIABLES", 0)
    pdlp = max_concurrent_flow(fabric, phase.src, phase.dst, gbit, method="scaled")
    assert highs.lambda_fabric_per_s is not None
    assert pdlp.lambda_fabric_per_s is not None
    assert pdlp.lambda_fabric_per_s >= highs.lambda_fabric_per_s * (1 - VALID_RTOL)
    assert pdlp.lambda_fabric_per_s == pytest.approx(highs.lambda_fabric_per_s, rel=PDLP_CHECK_RTOL)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_any_lengths_bound_the_lp_from_above(seed: int) -> None:
    fabric = make_fabric(4, 4, 2, leaves_per_pod=2, cores_per_group=1)
    rng = np.random.default_rng(seed)
    src = rng.integers(0, fabric.gpus, 20)
    dst = (src + rng.integers(1, fabric.gpus, 20)) % fabric.gpus
    gbit = rng.uniform(1.0, 10.0, 20)
    lp = max_concurrent_flow(fabric, src, dst, gbit, method="lp")
    tail, head, cap = switch_links(fabric)
    s_leaf, t_leaf, pair = bound.leaf_demands(fabric, src, dst, gbit)
    first = fabric.first_switch
    lam = length_bound(
        fabric.switches,
        tail - first,
        head - first,
        cap,
        s_leaf - first,
        t_leaf - first,
        pair,
        rng.uniform(0.0, 1.0, tail.size),
    )
    assert lp.lambda_fabric_per_s is not None
    assert lam >= lp.lambda_fabric_per_s * (1 - VALID_RTOL)


def test_unknown_method_is_refused() -> None:
    with pytest.raises(ValueError, match="method"):
        max_concurrent_flow(make_fabric(4, 4, 2), [0], [15], 1.0, method="magic")  # type: ignore[arg-type]


# ---- (d) the simulator reports a bound above the old LP cap ----------------------------------
#: Slack on simulated / bound throughput (the simulation is a fluid model, the bound exact).
FRACTION_RTOL = 1e-6


@pytest.mark.parametrize("family", ["clos", "ocs_direct"])
def test_simulate_reports_a_bound_above_the_old_lp_cap(family: str) -> None:
    """2,048 GPUs: the reference LP would need ~262k variables, above the default 50k cap."""
    from planner.schema.verify import Verify
    from planner.sim.simulate import simulate

    inst = Instance.model_validate(
        {
            "name": "bound-sim",
            "cluster": {"gpus": 2048, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]},
            "search": {"families": [family]},
        }
    )
    design = plan(inst, verify=False, alternatives=False).design
    assert design is not None
    verify = Verify(single_switch_failures=False)
    assert verify.bound_max_variables < 262_000
    result = simulate(design, verify, fabric=fabric_of(design))
    rows = result.collectives.filter(result.collectives["scenario"] == "healthy")
    assert rows.height >= 2
    assert rows["bound_time_s"].is_not_null().all(), rows
    assert (rows["fraction_of_bound"] <= 1 + FRACTION_RTOL).all(), rows

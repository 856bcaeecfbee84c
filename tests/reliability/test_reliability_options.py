"""The time lost to failures chooses the planes and the optics (planner.reliability.options).

Each test plans the same instance twice, changing only what a failure costs or how often a part
fails, and shows the choice flip while the network-cheapest option stays the same: the failure
term, not the network's cost, decides. A third shows the interruption cap refusing every option
with the fewest interruptions named.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.api import load_catalog, load_instance, plan

PLANES_INSTANCE = """
name = "planes-choice"
[cluster]
gpus = 4096
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
nic = "connectx-7"
[layout]
nodes_per_rack = 4
racks_per_row = 16
[constraints]
max_oversubscription = 1.0
max_switch_hops = 5
[objective]
idle_gpu_weight = 1.0
[reliability]
nic_models = ["connectx-7-2p"]
restart_minutes = RESTART
checkpoint_write_s = 30.0
other_interruptions_per_gpu_year = 0.0
monte_carlo_trials = 0
[workload]
preset = "gpt3-175b"
parallelism = { tensor = 8, pipeline = 8, data = 64 }
gpu = { peak_flops = 989e12, utilisation = 0.4, price_usd_per_hour = 2.0 }
[verify]
traffic = [{ kind = "all_reduce_ring", size_bytes = 1e6 }]
routing = ["spray"]
"""

CPO_INSTANCE = """
name = "cpo-choice"
[cluster]
gpus = 1024
gpus_per_node = 8
nic_gbps = 800
nic_ports = [1]
nic = "connectx-8"
[layout]
nodes_per_rack = 4
racks_per_row = 16
[constraints]
max_oversubscription = 1.0
max_switch_hops = 5
[objective]
idle_gpu_weight = 1.0
[search]
switch_models = ["spectrum-x-photonics-102t", "tomahawk6-102t", "sn5600"]
[reliability]
restart_minutes = 10.0
checkpoint_write_s = 30.0
other_interruptions_per_gpu_year = 0.0
monte_carlo_trials = 0
[workload]
preset = "gpt3-175b"
parallelism = { tensor = 8, pipeline = 8, data = 16 }
gpu = { peak_flops = 2250e12, utilisation = 0.4, price_usd_per_hour = 4.0 }
[verify]
traffic = [{ kind = "all_reduce_ring", size_bytes = 1e6 }]
routing = ["spray"]
"""


def _instance(tmp_path: Path, text: str, name: str):
    path = tmp_path / f"{name}.toml"
    path.write_text(text)
    return load_instance(path)


def _choice(result) -> tuple[int, str, int, str]:
    """(chosen planes, chosen optics, network-cheapest planes, network-cheapest optics)."""
    search = result.reliability_options
    assert search is not None
    assert search.chosen is not None
    cheapest = min(
        (e for e in search.evaluated if e.network_usd is not None), key=lambda e: e.network_usd
    )
    return (
        search.chosen.option.planes,
        search.chosen.option.optics,
        cheapest.option.planes,
        cheapest.option.optics,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("restart_minutes", "planes"), [(10.0, 1), (720.0, 2)])
def test_dual_tor_follows_the_cost_of_a_restart(
    tmp_path: Path, restart_minutes: float, planes: int
) -> None:
    """Cheap restarts keep one 400G port per GPU; a 12-hour restart (no spare nodes) buys the
    dual-port NIC, each GPU on two leaves, which halves the network's interruptions."""
    text = PLANES_INSTANCE.replace("RESTART", f"{restart_minutes}")
    inst = _instance(tmp_path, text, "planes")
    result = plan(inst, time_limit_s=120, alternatives=False)
    chosen_planes, _, cheapest_planes, _ = _choice(result)
    assert cheapest_planes == 1
    assert chosen_planes == planes
    assert result.design is not None
    assert result.design.planes == planes
    search = result.reliability_options
    assert search is not None
    by_planes = {
        e.option.planes: e.assessment.closed.network_interruptions_per_day
        for e in search.evaluated
        if e.assessment is not None
    }
    assert by_planes[2] < 0.6 * by_planes[1]
    # Degraded time slows only the scale-out part of the step (tensor-parallel time is NVLink's,
    # which a lost NIC port leaves alone): with half the interruptions, dual-ToR's failures cost
    # less than single-homed's at either restart (at 10 minutes they were charged more).
    lost_usd = {
        e.option.planes: e.failure_value_usd
        for e in search.evaluated
        if e.failure_value_usd is not None
    }
    assert lost_usd[2] < lost_usd[1]
    if planes == 2:
        assert result.design.nic == "connectx-7-2p"
        assert result.design.nic_cages == 2


@pytest.mark.slow
@pytest.mark.parametrize(("cpo_port_afr", "optics"), [(0.00215, "cpo"), (0.05, "pluggable")])
def test_cpo_follows_its_failure_rate(tmp_path: Path, cpo_port_afr: float, optics: str) -> None:
    """Co-packaged ports at the catalog's rate (Meta's figure) are chosen; at 5 %/year pluggables win."""
    catalog = load_catalog()
    assert catalog.reliability is not None
    rates = catalog.reliability.model_copy(update={"cpo_port_afr": cpo_port_afr})
    catalog = catalog.model_copy(update={"reliability": rates})
    inst = _instance(tmp_path, CPO_INSTANCE, "cpo")
    result = plan(inst, catalog=catalog, time_limit_s=120, alternatives=False)
    _, chosen_optics, _, cheapest_optics = _choice(result)
    assert cheapest_optics == "cpo"
    assert chosen_optics == optics
    assert result.design is not None
    assert all(t.cpo for t in result.design.tiers) == (optics == "cpo")


@pytest.mark.slow
def test_interruption_cap_refuses_every_option(tmp_path: Path) -> None:
    """A cap below every option's interruptions: no design, and the best option is named."""
    text = CPO_INSTANCE.replace(
        "max_switch_hops = 5", "max_switch_hops = 5\nmax_interruptions_per_day = 0.001"
    ).replace("idle_gpu_weight = 1.0", "idle_gpu_weight = 0.0")
    inst = _instance(tmp_path, text, "capped")
    result = plan(inst, time_limit_s=120, alternatives=False, verify=False)
    assert result.design is None
    assert "max_interruptions_per_day = 0.001" in result.explanation[0]
    assert "fewest network interruptions" in result.explanation[0]


def test_options_span_nics_families_planes_and_optics(tmp_path: Path) -> None:
    """Every plane count of each NIC, each optics, for each family named; each pinned alone."""
    from planner.reliability.options import option_instance, options

    text = PLANES_INSTANCE.replace("RESTART", "10.0").replace(
        "[objective]", '[search]\nfamilies = ["clos", "rail_optimized"]\n[objective]'
    )
    inst = _instance(tmp_path, text, "opts")
    catalog = load_catalog()
    found = options(inst, catalog)
    labels = [o.label for o in found]
    # connectx-7 (1 plane) and connectx-7-2p (2 planes); CPO switches exist in the catalog.
    assert len(found) == 2 * 2 * 2, labels
    assert {o.family for o in found} == {"clos", "rail_optimized"}
    assert {(o.nic, o.planes) for o in found} == {("", 1), ("connectx-7-2p", 2)}
    for o in found:
        sub = option_instance(inst, catalog, o)
        assert sub.search.pin.planes == o.planes
        assert sub.search.families == [o.family]
        assert sub.cluster.nic == (o.nic or "connectx-7")
        if o.optics == "pluggable":
            assert sub.search.cpo is False
        else:
            names = sub.search.switch_models or []
            assert names
            assert all(catalog.switch_named(n).cpo for n in names)


@pytest.mark.slow
def test_failure_value_counts_each_lost_hour_once(tmp_path: Path) -> None:
    """V_idle + V_fail = N p H (1 - (1 - i) G): failures cost only the time the step used."""
    from planner.reliability import assess
    from planner.reliability.options import failure_value_usd
    from planner.schema.reliability import Reliability

    inst = _instance(tmp_path, PLANES_INSTANCE.replace("RESTART", "60.0"), "value")
    unpriced = inst.with_changes({"objective.idle_gpu_weight": 0.0})
    result = plan(unpriced, time_limit_s=60, verify=False, alternatives=False)
    assert result.design is not None
    catalog = load_catalog()
    assert catalog.reliability is not None
    rel = Reliability(restart_minutes=60, other_interruptions_per_gpu_year=0.0)
    npH = 4096 * 2.0 * inst.objective.lifetime_hours
    for idle in (None, 0.25):
        a = assess(result.design, catalog.reliability, rel, idle, trials=0)
        busy = 1.0 if idle is None else 1.0 - idle
        expected = npH * (1 - a.closed.goodput_fraction) * busy
        assert failure_value_usd(inst, a) == pytest.approx(expected)
        if idle is not None:
            total = npH * idle + failure_value_usd(inst, a)
            assert total == pytest.approx(npH * (1 - (1 - idle) * a.closed.goodput_fraction))

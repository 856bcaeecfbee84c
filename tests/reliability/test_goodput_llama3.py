"""Goodput's mechanisms held to the Llama 3 paper, and its figures always finite (issue 32).

"The Llama 3 Herd of Models" (arXiv 2407.21783, section 3.3.4, Table 5): 466 interruptions in
54 days on 16,384 H100s, 419 unexpected, 35 from network switches and cables, 7 from NICs; its
NVLink faults sit in the GPU rows. Checked here: one year everywhere, a closed form and a Monte
Carlo that stay finite at the schema's limits, NVLink faults counted once, a NIC loss slowing
only the scale-out part of the step, the Monte Carlo stopping at the command's deadline, and the
step's MFU reported beside the published one.
"""

from __future__ import annotations

import io
import itertools
import math
import tokenize
from dataclasses import fields
from pathlib import Path

import polars as pl
import pytest

from planner.api import load_catalog, load_instance, plan
from planner.deadline import CUT_NOTE_PREFIX, POLL_S, Deadline
from planner.reliability import assess
from planner.reliability.classes import ComponentClass, component_classes
from planner.reliability.goodput import (
    checkpoint_efficiency,
    class_speed,
    daly_interval_s,
    goodput,
    scale_out_idle_fraction,
)
from planner.reliability.monte_carlo import monte_carlo
from planner.schema.reliability import DAYS_PER_YEAR, LLAMA3_OTHER_PER_GPU_YEAR, Reliability
from planner.workload.step import StepTime
from tests.conftest import REPO_ROOT

ROOT = REPO_ROOT
RATES = load_catalog().reliability
assert RATES is not None
#: Relative tolerance of figures recomputed by hand.
REL = 1e-9
#: The days a year is written as in source (a numeric literal): only its one definition may hold it.
YEAR_LITERALS = {"365", "365.0", "365.25", "365.2425"}
#: The file that defines the year.
YEAR_HOME = ROOT / "planner" / "schema" / "reliability.py"
#: The schema's limits on what a failure costs (``planner.schema.reliability.Reliability``).
HOSTILE = {
    "restart_minutes": 10_000.0,
    "planned_interruptions_per_day": 1000.0,
    "checkpoint_write_s": 100_000.0,
}


# ---- one year ------------------------------------------------------------------------------
def test_one_year_everywhere() -> None:
    """The design, the classes and the instance's lifetime count the same 365.25-day year."""
    from planner import design
    from planner.reliability import classes
    from planner.schema import instance

    assert DAYS_PER_YEAR == 365.25
    assert design.DAYS_PER_YEAR is DAYS_PER_YEAR
    assert classes.DAYS_PER_YEAR is DAYS_PER_YEAR
    assert instance.HOURS_PER_YEAR == DAYS_PER_YEAR * 24


def _year_literals(path: Path) -> list[int]:
    text = path.read_text(encoding="utf-8")
    if "365" not in text:  # tokenize only the files that may hold one
        return []
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [t.start[0] for t in tokens if t.type == tokenize.NUMBER and t.string in YEAR_LITERALS]


@pytest.mark.parametrize("package", ["planner", "models"])
def test_no_other_year_in_the_code(package: str) -> None:
    """No number of days a year is written anywhere but where the year is defined."""
    found = {
        str(p.relative_to(ROOT)): lines
        for p in sorted((ROOT / package).rglob("*.py"))
        if p != YEAR_HOME and (lines := _year_literals(p))
    }
    assert found == {}


# ---- finite at the schema's limits ---------------------------------------------------------
@pytest.mark.parametrize(
    ("interval_s", "checkpoint_s", "restart_s", "mtbi_s"),
    [
        (300.0, 60.0, 600_000.0, 86.4),  # a restart 7,000 times M
        (6e7, 100_000.0, 0.0, 86.4),  # an interval 700,000 times M
        (1e-3, 0.0, 600_000.0, 1e9),
        (300.0, 60.0, 1200.0, 36_000.0),
    ],
)
def test_checkpoint_efficiency_is_finite_and_daly(
    interval_s: float, checkpoint_s: float, restart_s: float, mtbi_s: float
) -> None:
    """E(τ) in [0, 1], equal to Daly's formula wherever the formula itself is finite."""
    e = checkpoint_efficiency(interval_s, checkpoint_s, restart_s, mtbi_s)
    assert 0.0 <= e <= 1.0
    try:
        direct = interval_s / (
            mtbi_s * math.exp(restart_s / mtbi_s) * math.expm1((interval_s + checkpoint_s) / mtbi_s)
        )
    except OverflowError:
        direct = 0.0
    assert e == pytest.approx(direct, rel=REL, abs=1e-300)


@pytest.mark.parametrize(("restart_s", "mtbi_s"), [(0.0, 3600.0), (1200.0, 3600.0)])
def test_a_free_checkpoint_loses_only_restarts(restart_s: float, mtbi_s: float) -> None:
    """δ = 0: Daly's τ* is 0 and E is its limit e^{-R/M}, not 0."""
    tau = daly_interval_s(0.0, mtbi_s)
    assert tau == 0.0
    assert checkpoint_efficiency(tau, 0.0, restart_s, mtbi_s) == pytest.approx(
        math.exp(-restart_s / mtbi_s), rel=REL
    )


def _classes() -> tuple[ComponentClass, ...]:
    return (
        ComponentClass("stops", "network", 1000.0, 0.5, 4.0, 1.0, 1.0),
        ComponentClass("slows", "network", 2000.0, 1.0, 12.0, 0.0, 0.5),
        ComponentClass("other", "outside", 1000.0, 1.0, 0.0, 1.0, 1.0),
    )


def _finite_fields(obj: object) -> dict[str, float]:
    return {
        f.name: v
        for f in fields(obj)  # type: ignore[arg-type]
        if isinstance(v := getattr(obj, f.name), float) and not math.isfinite(v)
    }


@pytest.mark.parametrize(
    "extreme",
    [dict(HOSTILE), {"restart_minutes": 10_000.0, "planned_interruptions_per_day": 1000.0}],
    ids=["all-limits", "restart-and-planned"],
)
def test_goodput_is_finite_at_the_schema_limits(extreme: dict[str, float]) -> None:
    """A long restart with many planned stops a day: every figure finite, the share near 0."""
    rel = Reliability(**extreme, monte_carlo_trials=3, monte_carlo_days=2.0)
    g = goodput(_classes(), rel, idle_fraction=0.3)
    assert _finite_fields(g) == {}
    assert 0.0 <= g.goodput_fraction < 1e-6
    mc = monte_carlo(_classes(), rel, g)
    assert mc is not None
    assert _finite_fields(mc) == {}
    assert mc.goodput_fraction == pytest.approx(0.0, abs=1e-6)


def test_monte_carlo_with_a_free_checkpoint() -> None:
    """δ = 0 (τ* = 0): the trials commit all the time after restarts, as the closed form says."""
    rel = Reliability(checkpoint_write_s=0.0, restart_minutes=10, monte_carlo_trials=200, seed=5)
    g = goodput(_classes(), rel, idle_fraction=0.5)
    mc = monte_carlo(_classes(), rel, g)
    assert mc is not None
    assert g.checkpoint_efficiency > 0.5
    assert abs(mc.checkpoint_efficiency - g.checkpoint_efficiency) <= (
        1.5 * mc.checkpoint_efficiency_ci95 + 1e-4
    )


@pytest.mark.parametrize(("per_day", "mttr_s"), [(2.0, 3600.0 * 12), (50.0, 3600.0)])
def test_degraded_share_starts_in_the_steady_state(per_day: float, mttr_s: float) -> None:
    """The share of a trial with a unit down averages 1 - e^{-u}, u = per_day x MTTR (M/M/∞)."""
    import numpy as np

    from planner.reliability.monte_carlo import _covered_share

    rng = np.random.default_rng(11)
    shares = np.array([_covered_share(rng, 2 * 86_400.0, per_day, mttr_s) for _ in range(400)])
    u = per_day * mttr_s / 86_400.0
    half_width = 3 * shares.std(ddof=1) / math.sqrt(len(shares))
    assert abs(shares.mean() - (1 - math.exp(-u))) <= half_width + 1e-3


def test_a_saturated_class_is_down_the_whole_trial() -> None:
    """Ten thousand repairs a day lasting a year each: always one down, nothing drawn."""
    import numpy as np

    from planner.reliability.monte_carlo import _covered_share

    assert _covered_share(np.random.default_rng(0), 30 * 86_400.0, 1e4, 8766 * 3600.0) == 1.0


# ---- NVLink faults counted once --------------------------------------------------------------
@pytest.fixture(scope="module")
def nvswitched():
    """small-256 with NVSwitches priced in its scale-up domains."""
    inst = load_instance(ROOT / "instances" / "small-256.toml")
    inst = inst.with_changes({"cluster.scale_up.switch": "nvswitch-gen3"})
    result = plan(inst, time_limit_s=30, verify=False, alternatives=False)
    assert result.design is not None
    assert result.design.scale_up.switches(result.design.gpus) > 0
    return result.design


@pytest.mark.slow
@pytest.mark.parametrize("nvswitch_afr", [0.0, 0.01, 0.5])
def test_nvlink_faults_are_counted_once(nvswitched, nvswitch_afr: float) -> None:
    """Scale-up + outside = the instance's rate (Llama 3's holds its NVLink faults already).

    Table 5 has no NVLink row: its NVLink faults are among the 377 non-network interruptions the
    default rate is made of, so the NVSwitches' own rate is carved out of it, not added to it.
    """
    d = nvswitched
    rates = RATES.model_copy(update={"scale_up_switch_afr": nvswitch_afr})
    by = {c.name: c for c in component_classes(d, rates, Reliability())}
    expected = LLAMA3_OTHER_PER_GPU_YEAR * d.gpus / DAYS_PER_YEAR
    scale_up = by["scale_up_switch"].interruptions_per_day
    assert scale_up == pytest.approx(
        d.scale_up.switches(d.gpus) * nvswitch_afr / DAYS_PER_YEAR, rel=REL
    )
    assert scale_up + by["other"].interruptions_per_day == pytest.approx(
        max(expected, scale_up), rel=REL
    )


@pytest.mark.slow
def test_nvswitches_above_the_instance_rate_leave_no_negative_rate(nvswitched) -> None:
    """NVSwitches failing more often than the whole rate: 'other' is 0, never below."""
    by = {
        c.name: c
        for c in component_classes(
            nvswitched, RATES, Reliability(other_interruptions_per_gpu_year=0.0)
        )
    }
    assert by["other"].afr == 0.0
    assert by["scale_up_switch"].interruptions_per_day > 0


# ---- a NIC loss slows the scale-out part only --------------------------------------------------
def _step(compute_s: float, over_s: float, hidden_s: float, exposed_s: float) -> StepTime:
    step_s = compute_s + exposed_s
    return StepTime(
        compute_s=compute_s,
        comm_s=exposed_s + hidden_s,
        overlappable_comm_s=over_s,
        hidden_comm_s=hidden_s,
        exposed_comm_s=exposed_s,
        bubble_s=0.0,
        step_s=step_s,
        idle_fraction=exposed_s / step_s,
        bubble_fraction=0.0,
        mfu=0.4,
        tokens_per_s=1.0,
        usd_per_million_tokens=1.0,
        concurrent_comm_s=over_s,
        scale_out_overlappable_comm_s=over_s,
    )


def test_scale_out_share_of_the_step_by_hand() -> None:
    """TP over NVLink 2 s (exposed), PP over the fabric 1 s (exposed), DP 4 s half hidden.

    E = 2 + 1 + 2 = 5 s of a 15 s step; the fabric's part E_out = 1 + 2 = 3 s: 0.2 of the step.
    """
    table = pl.DataFrame(
        {
            "placement": ["tensor_parallel", "same_rail", "data_parallel"],
            "time_per_iteration_s": [2.0, 1.0, 4.0],
            "overlappable": [False, False, True],
        }
    )
    step = _step(compute_s=10.0, over_s=4.0, hidden_s=2.0, exposed_s=5.0)
    assert scale_out_idle_fraction(table, step) == pytest.approx(3.0 / 15.0, rel=REL)


@pytest.mark.parametrize(("scale_out", "expected_speed_loss"), [(0.0, False), (0.25, True)])
def test_a_nic_loss_leaves_nvlink_time_alone(scale_out: float, expected_speed_loss: bool) -> None:
    """All exposed time on NVLink: a degrading NIC-side class costs nothing; on the fabric it does.

    The speed of the degrading class is v = 1 / ((1 - i_out) + i_out / (1 - b)), i_out the
    scale-out share only (the tester's dual-ToR case was charged for the TP time too).
    """
    rel = Reliability(monte_carlo_trials=0)
    g = goodput(_classes(), rel, idle_fraction=0.25, scale_out_idle_fraction=scale_out)
    slows = _classes()[1]
    p = -math.expm1(-slows.mean_down_units)
    v = class_speed(slows.bandwidth_loss, scale_out)
    assert g.degraded_speed == pytest.approx(1 - p * (1 - v), rel=REL)
    assert (g.degraded_speed < 1.0) is expected_speed_loss
    # The busy share that prices the lost hours stays the whole step's.
    assert g.idle_fraction == 0.25


# ---- the Monte Carlo takes the command's deadline ----------------------------------------------
def _ticking(step_s: float):
    counter = itertools.count()
    return lambda: next(counter) * step_s


def _deadline(at_s: float) -> Deadline:
    """A deadline whose clock moves 1 s a reading, every check reading it (fake time only)."""
    return Deadline(at_s=at_s, clock=_ticking(1.0), pace=_ticking(POLL_S))


def test_monte_carlo_stops_at_the_deadline_and_keeps_its_trials() -> None:
    """A clock that passes the limit after a few readings: fewer trials, the finished ones kept."""
    rel = Reliability(monte_carlo_trials=1000, monte_carlo_days=3650.0)
    g = goodput(_classes(), rel, idle_fraction=0.5)
    mc = monte_carlo(_classes(), rel, g, deadline=_deadline(30.0))
    assert mc is not None
    assert 1 < mc.trials < 1000
    assert mc.trials_requested == 1000
    assert mc.trials_cut == 1000 - mc.trials
    assert _finite_fields(mc) == {}


def test_one_trial_writes_no_infinite_spread() -> None:
    """A deadline that lets one trial finish: its spread is unknown, written as empty, not inf."""
    from planner.reliability import Assessment
    from planner.reliability.tables import goodput_table
    from planner.reliability.text import failure_lines

    rel = Reliability(monte_carlo_trials=1000, monte_carlo_days=3650.0)
    g = goodput(_classes(), rel, idle_fraction=0.5)
    mc = monte_carlo(_classes(), rel, g, deadline=_deadline(4.0))
    assert mc is not None
    assert mc.trials == 1
    table = goodput_table(Assessment(_classes(), g, mc))
    numbers = [x for row in table.select(pl.exclude("figure")).iter_rows() for x in row]
    assert all(x is None or math.isfinite(x) for x in numbers)
    assert table.filter(pl.col("figure") == "goodput_fraction")["monte_carlo_ci95"][0] is None
    assert not any("inf" in line for line in failure_lines(Assessment(_classes(), g, mc)))


def test_monte_carlo_past_its_deadline_runs_no_trial() -> None:
    """A deadline already passed: no trial, the closed form alone."""
    rel = Reliability(monte_carlo_trials=50)
    g = goodput(_classes(), rel, idle_fraction=0.5)
    assert monte_carlo(_classes(), rel, g, deadline=_deadline(-1.0)) is None


def test_monte_carlo_without_a_deadline_runs_every_trial() -> None:
    """No limit: every trial runs."""
    rel = Reliability(monte_carlo_trials=20)
    g = goodput(_classes(), rel, idle_fraction=0.5)
    mc = monte_carlo(_classes(), rel, g)
    assert mc is not None
    assert mc.trials == 20
    assert mc.trials_cut == 0


@pytest.mark.slow
@pytest.mark.parametrize(
    ("at_s", "trials", "said"),
    [(6.0, 1000, "of 1,000 trials"), (-1.0, 50, "0 of 50 trials"), (None, 20, None)],
)
def test_assess_says_what_the_deadline_cut(
    nvswitched, at_s: float | None, trials: int, said: str | None
) -> None:
    """The assessment's note (printed with the failure lines) names the trials left out."""
    deadline = Deadline() if at_s is None else _deadline(at_s)
    rel = Reliability(monte_carlo_trials=trials, monte_carlo_days=3650.0)
    a = assess(nvswitched, RATES, rel, deadline=deadline)
    if said is None:
        assert a.notes == ()
        return
    assert len(a.notes) == 1
    assert a.notes[0].startswith(CUT_NOTE_PREFIX)
    assert said in a.notes[0]
    ran = 0 if a.monte_carlo is None else a.monte_carlo.trials
    assert f"after {ran:,} of" in a.notes[0]


# ---- the step's MFU, and the scale-out share, end to end ---------------------------------------
#: A 20B dense model on 64 GPUs: tensor 8 inside each node (NVLink), data 8 across the fabric.
SMALL_WORKLOAD = {
    "model": {
        "parameters": 20e9,
        "layers": 8,
        "hidden_size": 4096,
        "sequence_length_tokens": 1024,
        "global_batch_sequences": 64,
    },
    "parallelism": {"tensor": 8, "data": 8},
    "gpu": {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0},
    "overlap_fraction": 0.5,
    "published_mfu": 0.35,
}
#: FLOPs a parameter and a token of training (forward and backward): MFU's numerator.
FLOPS_PER_PARAMETER_TOKEN = 6


@pytest.fixture(scope="module")
def small_workload():
    """The workload above planned, simulated and assessed (one plane, no Monte Carlo)."""
    from planner.schema.instance import Instance

    inst = Instance.model_validate(
        {
            "name": "mfu-64",
            "cluster": {"gpus": 64, "gpus_per_node": 8, "nic_gbps": 400},
            "constraints": {"max_oversubscription": 1.0, "max_switch_hops": 3},
            "verify": {"single_switch_failures": False},
            "workload": SMALL_WORKLOAD,
            "reliability": {"monte_carlo_trials": 0},
        }
    )
    result = plan(inst, alternatives=False)
    assert result.step is not None
    assert result.reliability is not None
    return result


@pytest.mark.slow
def test_summary_mfu_is_the_simulated_steps(small_workload) -> None:
    """mfu = model FLOPs a step / (GPUs x peak x step), by hand; printed beside the throughput."""
    from planner.api import headline

    s = small_workload.summary.row(0, named=True)
    model = SMALL_WORKLOAD["model"]
    flops = FLOPS_PER_PARAMETER_TOKEN * model["parameters"] * 64 * model["sequence_length_tokens"]
    expected = flops / (64 * 989e12 * s["step_time_s"])
    assert s["mfu"] == pytest.approx(expected, rel=REL)
    assert 0 < s["mfu"] < SMALL_WORKLOAD["gpu"]["utilisation"]
    assert any(f"MFU {expected:.1%}" in line for line in headline(small_workload.summary))


@pytest.mark.slow
def test_the_published_mfu_is_printed_beside_the_planners(small_workload) -> None:
    """workload.published_mfu is carried to the summary and the headline as given, beside mfu."""
    from planner.api import headline

    s = small_workload.summary.row(0, named=True)
    assert s["published_mfu"] == SMALL_WORKLOAD["published_mfu"]
    line = next(x for x in headline(small_workload.summary) if x.startswith("throughput"))
    assert f"MFU {s['mfu']:.1%} (published for this run: 35.0%)" in line


@pytest.mark.slow
def test_plan_slows_degraded_parts_by_the_scale_out_share(small_workload) -> None:
    """The plan hands the step's scale-out share to the closed form: TP time is NVLink's."""
    g = small_workload.reliability.closed
    share = scale_out_idle_fraction(small_workload.workload, small_workload.step)
    assert g.scale_out_idle_fraction == pytest.approx(share, rel=REL)
    assert g.idle_fraction == pytest.approx(small_workload.step.idle_fraction, rel=REL)
    assert share < g.idle_fraction

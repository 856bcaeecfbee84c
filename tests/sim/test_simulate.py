"""Verification end to end: scenarios, planes, verdict, reproducibility, CLI."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from planner.api import plan, simulate
from planner.design import Design
from planner.errors import InputError
from planner.schema.instance import Instance
from planner.schema.verify import Verify

#: Relative tolerance on simulated fractions that have a closed form.
FRACTION_RTOL = 1e-6


def design(gpus: int = 256, planes: int = 1, **extra: Any) -> Design:
    data: dict[str, Any] = {
        "name": "sim",
        "cluster": {"gpus": gpus, "nic_gbps": 400, "nic_ports": [planes]},
        "search": {"pin": {"tiers": 2, "switch_models": "qm9700"}},
    }
    data.update(extra)
    d = plan(Instance.model_validate(data), alternatives=False, verify=False).design
    assert d is not None
    return d


def verify(**fields: Any) -> Verify:
    base: dict[str, Any] = {"single_switch_failures": False, "bound_max_variables": 0}
    base.update(fields)
    return Verify.model_validate(base)


CROSS = {"kind": "point_to_point", "pipeline_stages": 2, "size_bytes": 1e8}


def test_a_failed_spine_leaves_its_share_of_cross_traffic() -> None:
    d = design()
    spines = d.tiers[1].switches
    sim = simulate(
        d,
        verify(
            routing=["spray"],
            traffic=[CROSS],
            failures=[{"switches": ["spine0"]}],
            fidelity="fluid",  # the fluid share's closed form; latency would blur it
        ),
    )
    row = sim.failures.row(0, named=True)
    assert row["fraction_of_healthy"] == pytest.approx((spines - 1) / spines, rel=FRACTION_RTOL)


def test_a_failed_leaf_moves_its_gpus_to_the_other_plane() -> None:
    sim = simulate(
        design(planes=2),
        verify(
            routing=["spray"],
            traffic=[CROSS],
            failures=[{"switches": ["leaf0"]}],
            fidelity="fluid",
        ),
    )
    assert sim.failures["fraction_of_healthy"][0] == pytest.approx(0.5, rel=FRACTION_RTOL)
    assert sim.failures["disconnected_flows"][0] == 0


def test_a_lost_plane_halves_two_planes() -> None:
    sim = simulate(
        design(planes=2),
        verify(routing=["spray"], traffic=[CROSS], failures=[{"planes": 1}], fidelity="fluid"),
    )
    assert sim.failures["fraction_of_healthy"][0] == pytest.approx(0.5, rel=FRACTION_RTOL)


def test_single_switch_failures_follow_the_survive_constraint() -> None:
    d = design(constraints={"survive": {"min_bandwidth_fraction": 0.75}})
    sim = simulate(
        d,
        verify(routing=["spray"], traffic=[CROSS], single_switch_failures=True, fidelity="fluid"),
    )
    assert sim.failures["scenario"].to_list() == ["spine0 down"]
    assert sim.verdict == "meets"
    assert sim.fractions["sim_fraction_after_failure"] == pytest.approx(0.75, rel=FRACTION_RTOL)


@pytest.mark.parametrize(("routing", "verdict"), [("spray", "meets"), ("ecmp", "fails")])
def test_verdict_under_the_named_routing(routing: str, verdict: str) -> None:
    spec = {"kind": "random_permutation", "size_bytes": 1e8}
    sim = simulate(
        design(),
        verify(
            routing=["ecmp", "spray"],
            verdict_routing=routing,
            traffic=[spec],
            min_throughput_fraction=0.95,
        ),
    )
    assert sim.verdict == verdict
    assert (len(sim.reasons) > 0) == (verdict == "fails")


@pytest.mark.slow
def test_simulation_is_reproducible() -> None:
    v = verify(
        traffic=[{"kind": "random_permutation", "size_bytes": 1e8}, {"kind": "all_reduce_ring"}],
        monte_carlo_trials=3,
        mttr_hours=5000,
    )
    a, b = simulate(design(), v), simulate(design(), v)
    assert_frame_equal(a.collectives, b.collectives)
    assert_frame_equal(a.failures, b.failures)
    assert_frame_equal(a.links, b.links)


def test_monte_carlo_draws_failures_from_the_afr() -> None:
    sim = simulate(
        design(), verify(traffic=[CROSS], routing=["spray"], monte_carlo_trials=4, mttr_hours=8000)
    )
    mc = sim.failures.filter(pl.col("scenario") == "monte_carlo")
    assert mc.height == 4
    assert mc["failed_links"].sum() > 0
    assert (mc["fraction_of_healthy"] <= 1 + FRACTION_RTOL).all()


def test_small_cases_are_exact_and_within_the_bound() -> None:
    sim = simulate(
        design(128),
        verify(
            traffic=[{"kind": "random_permutation", "size_bytes": 1e8}], bound_max_variables=50_000
        ),
    )
    assert sim.collectives["exact"].all()
    assert (sim.collectives["fraction_of_bound"] <= 1 + FRACTION_RTOL).all()


@pytest.mark.parametrize("switch", ["spine99", "router1", "leaf"])
def test_unknown_switch_in_a_failure_is_bad_input(switch: str) -> None:
    with pytest.raises(InputError, match="verify.failures"):
        simulate(design(), verify(failures=[{"switches": [switch]}]))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "planner", *args], capture_output=True, text=True, check=False
    )


INSTANCE = """
name = "tiny"
[cluster]
gpus = 128
nic_gbps = 400
[verify]
routing = ["spray"]
"""


@pytest.mark.slow
def test_cli_solve_no_verify_then_simulate(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(INSTANCE)
    out = tmp_path / "out"
    solved = _cli(
        "solve", str(tmp_path / "tiny.toml"), "-o", str(out), "--no-verify", "--json", "--quiet"
    )
    assert solved.returncode == 0
    assert json.loads(solved.stdout)["verdict"] == "not verified"
    assert not (out / "sim_collectives.csv").exists()
    sim_out = tmp_path / "sim"
    simulated = _cli(
        "simulate",
        str(out / "design.json"),
        "--instance",
        str(tmp_path / "tiny.toml"),
        "-o",
        str(sim_out),
        "--htsim",
        str(tmp_path / "htsim"),
        "--quiet",
    )
    assert simulated.returncode == 0, simulated.stderr
    assert "verdict: meets" in simulated.stdout
    assert pl.read_parquet(sim_out / "sim_collectives.parquet").height == len(Verify().traffic)
    assert (tmp_path / "htsim" / "tiny.cm").read_text().startswith("Nodes 128")


@pytest.mark.slow
def test_cli_solve_writes_the_simulation(tmp_path: Path) -> None:
    (tmp_path / "tiny.toml").write_text(INSTANCE)
    out = tmp_path / "out"
    solved = _cli("solve", str(tmp_path / "tiny.toml"), "-o", str(out), "--quiet")
    assert solved.returncode == 0
    for name in ("sim_collectives", "sim_links", "sim_failures"):
        assert (out / f"{name}.parquet").exists()
    assert "simulation:" in solved.stdout


@pytest.mark.parametrize(("fraction", "verdict"), [(0.5 * (1 - 1e-12), "meets"), (0.499, "fails")])
def test_verdict_forgives_float_noise_only(fraction: float, verdict: str) -> None:
    """0.4999999999995 of ideal meets a 0.5 requirement (float noise); 0.499 does not."""
    from types import SimpleNamespace

    import polars as pl

    from planner.schema.verify import Verify
    from planner.sim.verdict import judge

    collectives = pl.DataFrame(
        {
            "scenario": ["healthy"],
            "routing": ["spray"],
            "pattern": ["shift"],
            "fraction_of_ideal": [fraction],
        }
    )
    failures = pl.DataFrame(
        {"trial": [], "scenario": [], "pattern": [], "fraction_of_healthy": []},
        schema={
            "trial": pl.Int64,
            "scenario": pl.Utf8,
            "pattern": pl.Utf8,
            "fraction_of_healthy": pl.Float64,
        },
    )
    design = SimpleNamespace(requirements=SimpleNamespace(min_fraction_after_failure=None))
    verify = Verify.model_validate({"verdict_routing": "spray", "min_throughput_fraction": 0.5})
    got, _, _ = judge(design, verify, collectives, failures, [])  # type: ignore[arg-type]
    assert got == verdict

"""The CLI's and report.md's headline lines say what the verification gave (issue 11) and the
scale-up domain the design records (issue 12)."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest

from planner.api import load_design, load_instance, plan
from planner.design import ScaleUpDomain
from planner.errors import InputError
from planner.report.markdown import headline
from planner.schema.instance import ScaleUp


@pytest.fixture(scope="module")
def summary() -> pl.DataFrame:
    return plan(load_instance("instances/small-256.toml"), verify=False).summary


@pytest.mark.parametrize(
    ("verdict", "spray", "ecmp", "line"),
    [
        ("meets", 0.98, 0.51, "simulation: meets (throughput of ideal: spray 0.98, ecmp 0.51)"),
        ("incomplete", None, 0.12, "simulation: incomplete (throughput of ideal: ecmp 0.12)"),
        (
            "incomplete",
            None,
            None,
            "simulation: incomplete (no throughput figure: no traffic was simulated)",
        ),
    ],
)
def test_the_simulation_line(
    summary: pl.DataFrame, verdict: str, spray: float | None, ecmp: float | None, line: str
) -> None:
    row = summary.with_columns(
        verdict=pl.lit(verdict),
        sim_fraction_spray=pl.lit(spray, dtype=pl.Float64),
        sim_fraction_ecmp=pl.lit(ecmp, dtype=pl.Float64),
        sim_fraction_after_failure=pl.lit(None, dtype=pl.Float64),
    )
    assert headline(row)[-1] == line


@pytest.mark.parametrize(("gpus", "gbps"), [(8, 7200.0), (72, 14400.0)])
@pytest.mark.slow
def test_the_design_records_its_scale_up_domain(gpus: int, gbps: float, tmp_path: Path) -> None:
    """cluster.scale_up reaches the design, its summary, its headline and design.json (issue 12)."""
    inst = load_instance("instances/small-256.toml")
    inst = inst.model_copy(
        update={
            "cluster": inst.cluster.model_copy(
                update={"scale_up": ScaleUp(gpus=gpus, gbps_per_gpu=gbps)}
            )
        }
    )
    result = plan(inst, verify=False)
    assert result.design is not None
    assert result.design.scale_up == ScaleUpDomain(gpus, gbps)
    row = result.summary.row(0, named=True)
    assert (row["scale_up_gpus"], row["scale_up_gbps_per_gpu"]) == (gpus, gbps)
    assert f"scale-up: {gpus} GPUs per domain at {gbps:,.0f} Gb/s per GPU" in "\n".join(
        headline(result.summary)
    )
    path = tmp_path / "design.json"
    path.write_text(result.design.to_json())
    assert load_design(path) == result.design


def test_a_design_json_without_a_scale_up_domain_reads_as_the_default(tmp_path: Path) -> None:
    design = plan(load_instance("instances/small-256.toml"), verify=False).design
    assert design is not None
    data = json.loads(design.to_json())
    del data["scale_up"]
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    assert load_design(path).scale_up == ScaleUpDomain()


@pytest.mark.parametrize("bad", [{"gpus": 0}, {"gbps_per_gpu": -1.0}, {"gpus": 8, "nvlink": 5}])
@pytest.mark.slow
def test_a_bad_scale_up_domain_in_design_json_is_refused(bad: dict, tmp_path: Path) -> None:  # type: ignore[type-arg]
    design = plan(load_instance("instances/small-256.toml"), verify=False).design
    assert design is not None
    data = json.loads(design.to_json())
    data["scale_up"] = bad
    path = tmp_path / "design.json"
    path.write_text(json.dumps(data))
    with pytest.raises(InputError, match="scale_up"):
        load_design(path)

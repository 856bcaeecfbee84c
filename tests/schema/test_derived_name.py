"""``--set``: a changed instance gets a name of its own, the study's, and the reports list the changes.

Before, ``solve --set cluster.gpus=65536`` kept the instance's name: it wrote into the base
instance's folder and its reports (and the notebook repr) showed the base's name.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.api import PlanResult, derived_instance, plan
from planner.cli import app
from planner.loading import MAX_DERIVED_NAME
from planner.report import plan_tables, solve_html
from planner.report.markdown import render_markdown
from planner.schema.instance import Instance
from planner.study.scenarios import build_study
from tests.study.conftest import tiny

runner = CliRunner()

SMALL = """
name = "small"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
"""


@pytest.mark.parametrize(
    ("changes", "name"),
    [
        ({"cluster.gpus": 128}, "tiny.gpus-128"),
        ({"cluster.gpus": 128, "cluster.nic_gbps": 800}, "tiny.gpus-128.nic_gbps-800"),
        ({"search.switch_models": ["sn5600"]}, "tiny.switch_models-sn5600"),
    ],
)
def test_the_name_is_derived_from_the_changes(changes: dict[str, Any], name: str) -> None:
    inst = derived_instance(tiny(), changes)
    assert inst.name == name
    assert inst.derived_from == ("tiny", tuple(changes.items()))


@pytest.mark.parametrize(
    "changes",
    [{"cluster.gpus": 128}, {"cluster.gpus": 128, "constraints.max_oversubscription": 2.0}],
)
def test_the_name_is_the_studys_name_of_the_same_changes(changes: dict[str, Any]) -> None:
    study = build_study(tiny(), [changes], settings={})
    assert derived_instance(tiny(), changes).name == study.scenarios[0].instance.name


LONG: dict[str, Any] = {
    "cluster.gpus": 65536,
    "cluster.nic_gbps": 800,
    "search.switch_models": ["sn5600", "qm9700", "tomahawk4-25t"],
    "constraints.max_oversubscription": [2.0, 1.0],
    "layout.racks_per_row": 20,
}


@pytest.mark.parametrize("count", [3, 4, 5])
def test_a_long_change_list_gets_a_short_stable_name(count: int) -> None:
    base = Instance.model_validate({"name": "tiny", "cluster": {"gpus": 64, "nic_gbps": 400}})
    changes = dict(list(LONG.items())[:count])
    first = derived_instance(base, changes)
    again = derived_instance(base, dict(changes))
    assert len(first.name) <= MAX_DERIVED_NAME
    assert first.name == again.name
    assert first.name.startswith("tiny.gpus-65536.")


def test_further_changes_keep_the_record() -> None:
    inst = derived_instance(tiny(), {"cluster.gpus": 128})
    tightened = inst.with_changes({"constraints.max_oversubscription": 2.0})
    assert tightened.name == inst.name
    assert tightened.derived_from == ("tiny", (("cluster.gpus", 128),))


def test_no_changes_keep_the_instance() -> None:
    inst = tiny()
    assert derived_instance(inst, {}) is inst
    assert inst.derived_from is None


@pytest.mark.slow
def test_solve_with_set_writes_its_own_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "small.toml").write_text(SMALL, encoding="utf-8")
    args = ["solve", "small.toml", "--set", "cluster.gpus=128", "--no-verify", "-q"]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    out = tmp_path / "reports" / "small.gpus-128"
    assert (out / "report.md").is_file()
    assert not (tmp_path / "reports" / "small").exists()
    line = "instance: small.gpus-128 = small with cluster.gpus = 128"
    assert line in (out / "report.md").read_text(encoding="utf-8")
    assert line in (out / "report.html").read_text(encoding="utf-8")
    assert "small.gpus-128" in (out / "summary.csv").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def changed() -> PlanResult:
    return plan(derived_instance(tiny(), {"cluster.gpus": 128}), verify=False)


@pytest.mark.slow
def test_repr_shows_the_name_and_the_changes(changed: PlanResult) -> None:
    text = repr(changed)
    assert text.startswith("PlanResult('tiny.gpus-128': optimal")
    assert "from 'tiny' with cluster.gpus = 128" in text


def test_repr_html_shows_the_name_and_the_changes(changed: PlanResult) -> None:
    text = changed._repr_html_()
    assert "<td>tiny.gpus-128</td>" in text
    assert "<td>tiny with cluster.gpus = 128</td>" in text


@pytest.mark.parametrize("render", ["md", "html"])
def test_the_reports_headline_lists_the_changes(changed: PlanResult, render: str) -> None:
    tables = plan_tables(changed)
    text = render_markdown(changed, tables) if render == "md" else solve_html(changed, tables, {})
    assert "tiny.gpus-128" in text.splitlines()[0] + text
    assert "instance: tiny.gpus-128 = tiny with cluster.gpus = 128" in text

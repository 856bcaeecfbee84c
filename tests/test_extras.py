"""Optional extras: without one, asking for what needs it is bad input naming the extra.

``distributed`` (``--dask``) and pandas/pyarrow (``PlanResult.to_pandas``) are optional
(``[project.optional-dependencies]``); the development environment has them all, so each test
hides the module (``sys.modules[name] = None`` makes its import fail, as if not installed).
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api import InputError, PlanResult, plan, require_extra
from planner.cli import app
from planner.solver_parts import EXTRAS
from tests.conftest import REPO_ROOT
from tests.study.conftest import tiny

runner = CliRunner()


def test_the_extras_are_declared_and_in_the_dev_group() -> None:
    project = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = project["project"]["optional-dependencies"]
    assert set(extras) == set(EXTRAS.values())
    required = " ".join(project["project"]["dependencies"])
    assert not [m for m in EXTRAS if m in required]
    dev = project["dependency-groups"]["dev"]
    assert f"fabric-planner[{','.join(sorted(extras))}]" in dev


@pytest.mark.parametrize(("module", "extra"), sorted(EXTRAS.items()))
def test_a_missing_extra_is_input_error_naming_it(
    module: str, extra: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InputError, match=rf"fabric-planner\[{extra}\]"):
        require_extra(module, "this")


@pytest.fixture(scope="module")
def result() -> PlanResult:
    return plan(tiny(), time_limit_s=30, verify=False)


@pytest.mark.parametrize("module", ["pandas", "pyarrow"])
def test_to_pandas_without_the_pandas_extra(
    module: str, result: PlanResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, module, None)
    with pytest.raises(InputError, match=r"to_pandas\(\) needs .*fabric-planner\[pandas\]"):
        result.to_pandas()


def test_dask_without_the_dask_extra_exits_2(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)
    path = tmp_path / "tiny.toml"
    path.write_text(
        'name = "tiny"\n[cluster]\ngpus = 64\ngpus_per_node = 8\nnic_gbps = 400\n', "utf-8"
    )
    args = ["sweep", str(path), "--grid", "cluster.gpus=16", "--dask", "tcp://127.0.0.1:9"]
    out = runner.invoke(app, [*args, "-q", "-o", str(tmp_path / "o")])
    assert out.exit_code == 2, out.output
    assert "error: --dask needs distributed" in out.output
    assert "fabric-planner[dask]" in out.output
    assert not (tmp_path / "o").exists()

"""The torus pod under a time limit: checks the deadline cuts are null and said; a million chips.

Deadlines run on clocks the tests drive; the million-chip cases use a user catalog written in
the test's folder (a 576-port OCS, so that 256 cubes of 16^3 chips and their spares fit one pod).
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner.api import load_instance, plan, plan_torus, validate
from planner.cli import app
from planner.deadline import CUT_NOTE_PREFIX, Deadline, cut_notes
from planner.families import family_of
from planner.families.ocs_torus import pod as tp
from planner.loading import load_catalog
from planner.schema.instance import Instance
from tests.conftest import REPO_ROOT

INSTANCE = "instances/tpu-pod-4k.toml"
#: Ports of the OCS of the million-chip pod's catalog.
BIG_OCS_PORTS = 576


@pytest.fixture(autouse=True)
def fresh_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    """No slice set checked by another test is served again."""
    monkeypatch.setattr(tp, "_CHECKED", OrderedDict())


def after(readings: int) -> Deadline:
    """A deadline that has not passed for ``readings`` readings of its clock, and has after."""
    clock = itertools.count().__next__
    return Deadline(at_s=readings - 0.5, clock=lambda: float(clock()))


@pytest.mark.parametrize(("readings", "unchecked"), [(0, 4), (2, 2), (4, 0)])
def test_checks_past_the_deadline_are_null_and_said(
    repo_root: Path, readings: int, unchecked: int
) -> None:
    inst = load_instance(repo_root / INSTANCE)
    full = plan_torus(inst, catalog=load_catalog("default"))
    tp._CHECKED.clear()
    cut = plan_torus(inst, catalog=load_catalog("default"), deadline=after(readings))
    oks = [*cut.slices["torus_ok"].to_list(), *cut.failure["torus_ok"].to_list()]
    assert oks.count(None) == unchecked
    assert len(cut.cut) == unchecked
    assert all(note.startswith(CUT_NOTE_PREFIX) for note in cut.cut)
    assert all(ok in (None, True) for ok in oks)
    assert cut.circuits.equals(full.circuits)
    assert cut.failure.drop("torus_ok").equals(full.failure.drop("torus_ok"))


def test_a_checked_set_is_served_again_and_a_cut_one_is_not(repo_root: Path) -> None:
    inst = load_instance(repo_root / INSTANCE)
    plan_torus(inst, deadline=after(0))
    assert not tp._CHECKED
    first = plan_torus(inst)
    assert len(tp._CHECKED) == 1
    again = plan_torus(inst, deadline=after(0))
    assert again.cut == ()
    assert again.slices.equals(first.slices)


def test_the_cli_says_which_slices_were_not_checked(
    repo_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = plan_torus

    def at_once(inst: Instance, **kwargs: object) -> tp.TorusPlan:
        return real(inst, deadline=after(0))

    monkeypatch.setattr("planner.api.plan_torus", at_once)
    result = CliRunner().invoke(app, ["torus", str(repo_root / INSTANCE), "-o", str(tmp_path)])
    assert result.exit_code == 0, result.stderr
    assert "torus not checked (time limit)" in result.stdout
    assert "BROKEN" not in result.stdout
    assert CUT_NOTE_PREFIX in result.stderr


def test_the_ocs_torus_design_notes_its_unchecked_slices(repo_root: Path) -> None:
    inst = load_instance(repo_root / INSTANCE).with_changes({"search.families": ["ocs_torus"]})
    catalog = load_catalog("default")
    (sized,) = family_of("ocs_torus").size(inst, catalog, [None], after(1))
    assert sized.design is not None
    assert cut_notes(sized.design.notes)
    assert validate(sized.design) == []


# --- a million chips ------------------------------------------------------------------------


def million_chips(tmp_path: Path) -> Instance:
    """One 128 x 128 x 64 slice of 16^3 cubes, on a catalog whose OCS has 576 ports."""
    text = (REPO_ROOT / "planner" / "catalog" / "default.toml").read_text()
    assert text.count("ports = 136\n") == 1
    (tmp_path / "big-ocs.toml").write_text(
        text.replace("ports = 136\n", f"ports = {BIG_OCS_PORTS}\n")
    )
    return Instance.model_validate(
        {
            "name": "pod-1m",
            "cluster": {"gpus": 2**20, "gpus_per_node": 4},
            "search": {"families": ["ocs_torus"], "catalog": str(tmp_path / "big-ocs.toml")},
            "torus": {"cube": 16, "slices": [[128, 128, 64]], "link_gbps": 400},
        }
    )


@pytest.mark.slow
def test_a_million_chip_pod_is_planned_and_checked(tmp_path: Path) -> None:
    pod = plan_torus(million_chips(tmp_path), time_limit_s=3600.0)
    assert pod.cut == ()
    (s,) = pod.slices.iter_rows(named=True)
    assert s["torus_ok"]
    assert s["twisted"]
    assert s["circuits"] == 256 * 3 * 16**2
    (f,) = pod.failure.iter_rows(named=True)
    assert f["torus_ok"]
    assert f["circuits_removed"] == f["circuits_added"] == 6 * 16**2
    assert f["circuits_kept"] == s["circuits"] - f["circuits_removed"]


@pytest.mark.slow
def test_a_million_chip_pod_design_validates(tmp_path: Path) -> None:
    result = plan(million_chips(tmp_path), verify=False, alternatives=False, time_limit_s=3600.0)
    assert result.design is not None
    assert not cut_notes(result.design.notes)
    assert validate(result.design) == []

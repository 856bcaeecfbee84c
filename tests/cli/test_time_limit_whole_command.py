"""Issue 32, "Time limits": the limit bounds the whole command, and a long -o name is bad input.

No test here times anything: the deadlines run on fake clocks that count their readings, so
the machine's speed or load never moves a result.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from planner import output
from planner.cli import app
from planner.deadline import (
    NO_DEADLINE,
    PICTURES_MIN_S,
    PICTURES_MIN_SHARE,
    REPORTS_SHARE,
    Deadline,
    process_age_s,
    suggest_time_limit_s,
)
from planner.errors import InputError

runner = CliRunner()

SMALL = """
name = "small"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
"""

#: The longest name a folder may have on the file system of the test's temporary folder.
NAME_MAX = os.pathconf("/", "PC_NAME_MAX")


@pytest.mark.parametrize(
    "parts",
    [
        pytest.param(("a" * (NAME_MAX + 45),), id="one-name-300"),
        pytest.param(("ok", "b" * (NAME_MAX + 1), "deeper"), id="inner-name"),
        pytest.param(("é" * (NAME_MAX // 2 + 1),), id="multibyte-name"),
    ],
)
def test_a_folder_name_too_long_is_bad_input(tmp_path: Path, parts: tuple[str, ...]) -> None:
    folder = tmp_path.joinpath(*parts)
    with pytest.raises(InputError) as err:
        output.check_folder(folder)
    message = str(err.value)
    assert "too long" in message
    assert str(NAME_MAX) in message
    with pytest.raises(InputError), output.claimed(folder):
        pass
    assert list(tmp_path.iterdir()) == []


def test_solve_with_a_300_character_folder_says_so_and_writes_nothing(tmp_path: Path) -> None:
    inst = tmp_path / "small.toml"
    inst.write_text(SMALL)
    name = "x" * 300
    result = runner.invoke(app, ["solve", str(inst), "-o", str(tmp_path / name), "-q"])
    assert result.exit_code == 2, result.stderr
    assert result.stderr.startswith("error: ")
    assert "internal error" not in result.stderr
    assert "too long" in result.stderr
    assert f"{NAME_MAX}" in result.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["small.toml"]


# ---- one deadline for the whole command, the reports' share kept ------------------------------
class Clock:
    """A clock the test sets."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_the_steps_end_a_share_of_the_limit_before_the_command() -> None:
    clock = Clock()
    command = Deadline(at_s=60.0, clock=clock, limit_s=60.0)
    steps = command.keep_for_reports()
    assert steps.remaining_s() == pytest.approx((1 - REPORTS_SHARE) * 60.0)
    assert steps.kept_share == REPORTS_SHARE
    clock.now = 50.0
    assert steps.expired
    assert not command.expired
    # One clock: the steps' deadline reads the command's.
    assert steps.clock is command.clock
    assert NO_DEADLINE.keep_for_reports() is NO_DEADLINE


@pytest.mark.parametrize(
    ("limit_s", "left_s", "drawn"),
    [
        (60.0, 12.0, True),
        (60.0, 6.0, True),
        (60.0, 5.9, False),
        (12.0, 3.0, True),
        (12.0, 1.8, False),
        (1.0, 1.0, False),
        (None, 0.5, False),
        (None, 3.0, True),
    ],
)
def test_pictures_are_drawn_only_with_enough_of_the_limit_left(
    limit_s: float | None, left_s: float, drawn: bool
) -> None:
    assert max(PICTURES_MIN_S, PICTURES_MIN_SHARE * (limit_s or 0.0)) > 0
    deadline = Deadline(at_s=left_s, clock=Clock(), limit_s=limit_s)
    assert deadline.pictures_fit() is drawn
    assert NO_DEADLINE.pictures_fit()


@pytest.mark.parametrize(("kept", "expected"), [(0.0, 130.0), (0.2, 170.0), (0.5, 260.0)])
def test_a_suggested_limit_leaves_the_reports_their_share_again(
    kept: float, expected: float
) -> None:
    # 100 s spent, 2 steps cut, the longest 10 s: 100 + 1.5 x 2 x 10 = 130 s of steps, over
    # 1 - kept (130 / 0.8 = 162.5 and 130 / 0.5 = 260), rounded up to two digits.
    assert suggest_time_limit_s(100.0, [4.0, 10.0], 2, kept) == expected
    assert suggest_time_limit_s(100.0, [4.0, 10.0], 0, kept) is None


def test_a_command_counts_from_its_process_start() -> None:
    age_s = process_age_s()
    assert age_s is not None  # Linux: /proc is there
    assert age_s >= 0.0
    from_start = Deadline.for_command(60.0, since_process_start=True)
    from_call = Deadline.for_command(60.0)
    assert from_start.limit_s == from_call.limit_s == 60.0
    assert from_start.at_s is not None
    assert from_call.at_s is not None
    # The test's process started before the call: its command's end is earlier.
    assert from_start.at_s < from_call.at_s
    assert from_start.started_s == pytest.approx(from_start.at_s - 60.0)
    assert from_start.remaining_s() <= from_call.remaining_s()


def test_a_short_limit_leaves_the_pictures_out_and_says_so(tmp_path: Path) -> None:
    """A 1 s limit can never leave PICTURES_MIN_S for the pictures: the tables, report.md and
    report.html are written, the pictures are not, and report.md and stderr say so."""
    inst = tmp_path / "small.toml"
    inst.write_text(SMALL)
    out = tmp_path / "out"
    result = runner.invoke(app, ["solve", str(inst), "-o", str(out), "--time-limit", "1"])
    assert result.exit_code in {0, 1, 4}, result.stderr
    names = {p.name for p in out.iterdir()}
    assert {"summary.csv", "report.md", "report.html"} <= names
    assert not [n for n in names if n.startswith("fig_")]
    assert "the pictures (fig_*.png, fig_*.svg) were left out" in result.stderr
    if result.exit_code != 1:  # a design: report.md lists what the limit cut
        report = (out / "report.md").read_text()
        assert "the pictures (fig_*.png, fig_*.svg) were left out" in report


@pytest.mark.slow
def test_a_generous_limit_draws_the_pictures(tmp_path: Path) -> None:
    inst = tmp_path / "small.toml"
    inst.write_text(SMALL)
    out = tmp_path / "out"
    result = runner.invoke(app, ["solve", str(inst), "-o", str(out), "--time-limit", "3600"])
    assert result.exit_code == 0, result.stderr
    assert (out / "fig_topology.png").is_file()
    assert "were left out" not in result.stderr


@pytest.mark.parametrize(
    ("argv0", "main_spec", "expected"),
    [
        ("/venv/bin/fabric-planner", None, True),
        ("/repo/planner/__main__.py", "planner.__main__", True),  # python -m planner
        ("/venv/bin/pytest", None, False),  # the app run inside a test's process
        ("-c", None, False),  # python -c: a call from Python
    ],
)
def test_only_the_command_counts_from_its_process_start(
    monkeypatch: pytest.MonkeyPatch, argv0: str, main_spec: str | None, expected: bool
) -> None:
    import importlib.machinery
    import sys
    import types

    from planner.cli.plan_commands import is_the_command

    fake_main = types.ModuleType("__main__")
    fake_main.__spec__ = (
        None if main_spec is None else importlib.machinery.ModuleSpec(main_spec, None)
    )
    monkeypatch.setattr(sys, "argv", [argv0])
    monkeypatch.setitem(sys.modules, "__main__", fake_main)
    assert is_the_command() is expected

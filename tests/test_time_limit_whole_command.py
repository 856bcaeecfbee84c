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

"""Bad input: exit status 2, the field or line at fault and what was expected, no traceback."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from planner.checks import check_instance
from planner.errors import InputError
from planner.loading import key_line, load_catalog, load_instance, parse_override

#: A small valid instance; each case below breaks one thing in it.
GOOD = """\
name = "bad-input"
description = "a small valid instance"

[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1, 2]
nic = "connectx-7"

[constraints]
max_switch_hops = 3

[search]
switch_models = ["sn5600", "qm9700"]
"""


def _edit(old: str, new: str) -> str:
    assert old in GOOD
    return GOOD.replace(old, new, 1)


#: id -> (instance text or None for a missing file, --set overrides, words expected in the message)
CASES: dict[str, tuple[str | None, list[str], list[str]]] = {
    "toml-missing-bracket": (_edit("[cluster]", "[cluster"), [], ["line 4", "TOML"]),
    "toml-missing-quote": (
        _edit('name = "bad-input"', 'name = "bad-input'),
        [],
        ["line 1", "TOML"],
    ),
    "unknown-field": (
        _edit("gpus_per_node = 8", "gpus_per_node = 8\ngpu = 8"),
        [],
        ["line 7", "cluster.gpu", "unknown field"],
    ),
    "wrong-type": (
        _edit("gpus = 256", 'gpus = "many"'),
        [],
        ["line 5", "cluster.gpus", "integer", "many"],
    ),
    "unknown-switch": (
        _edit('["sn5600", "qm9700"]', '["sn5600", "sn9999"]'),
        [],
        ["search.switch_models", "sn9999", "sn5600", "qm9700"],
    ),
    "unknown-nic": (
        _edit('"connectx-7"', '"connectx-99"'),
        [],
        ["cluster.nic", "connectx-99", "connectx-7"],
    ),
    "negative-gpus": (
        _edit("gpus = 256", "gpus = -8"),
        [],
        ["line 5", "cluster.gpus", "greater than or equal to 1"],
    ),
    "absurd-gpus": (
        _edit("gpus = 256", "gpus = 1000000000"),
        [],
        ["line 5", "cluster.gpus", "less than or equal to 4000000"],
    ),
    "gpus-not-whole-nodes": (
        _edit("gpus = 256", "gpus = 1001"),
        [],
        ["cluster", "1001", "gpus_per_node"],
    ),
    "nic-ports-not-dividing": (
        _edit("nic_ports = [1, 2]", "nic_ports = [1, 3]"),
        [],
        ["cluster", "nic_ports", "3", "divides nic_gbps"],
    ),
    "set-negative-gpus": (
        GOOD,
        ["cluster.gpus=-5"],
        ["cluster.gpus", "greater than or equal to 1"],
    ),
    "set-without-value": (GOOD, ["nonsense"], ["nonsense", "path=value"]),
    "missing-file": (None, [], ["file not found", "does-not-exist.toml"]),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path, write_instance: Callable[..., Path]):
    text, overrides, expected = CASES[request.param]
    path = tmp_path / "does-not-exist.toml" if text is None else write_instance(text)
    return path, overrides, expected


def test_cli_exits_2_with_location_and_no_traceback(case, tmp_path: Path, repo_root: Path) -> None:
    path, overrides, expected = case
    args = [sys.executable, "-m", "planner", "solve", str(path), "-o", str(tmp_path / "out")]
    for item in overrides:
        args += ["--set", item]
    proc = subprocess.run(args, capture_output=True, text=True, cwd=repo_root, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "Traceback" not in proc.stdout
    for words in expected:
        assert words in proc.stderr
    assert not (tmp_path / "out" / "summary.csv").exists()


def _load_like_the_cli(path: Path, overrides: list[str]) -> None:
    inst = load_instance(path)
    if overrides:
        inst = inst.with_changes(dict(parse_override(item) for item in overrides))
    check_instance(inst, load_catalog(inst.search.catalog))


def test_library_raises_input_error_with_location(case) -> None:
    """The same cases through the library: load, apply --set, check names against the catalog."""
    path, overrides, expected = case
    with pytest.raises(InputError) as info:
        _load_like_the_cli(path, overrides)
    message = str(info.value)
    for words in expected:
        assert words in message


TABLES = """\
name = "lines"

[cluster]
gpus = 1024
nic_ports = [1, 2]

[search.pin]
planes = 1
switches = [32, 16]
"""


@pytest.mark.parametrize(
    ("loc", "line"),
    [
        (("name",), 1),
        (("cluster", "gpus"), 4),
        (("cluster", "nic_ports", 1), 5),
        (("search", "pin", "planes"), 8),
        (("search", "pin", "switches", 0), 9),
        (("cluster",), 3),
        (("cluster", "gpus_per_node"), 3),  # not written: the enclosing table
        (("objective", "pue"), None),  # table not written at all
    ],
)
def test_key_line_follows_tables(loc: tuple[int | str, ...], line: int | None) -> None:
    assert key_line(TABLES, loc) == line


def test_error_in_a_table_names_its_line(write_instance: Callable[..., Path]) -> None:
    path = write_instance(TABLES.replace("planes = 1", "planes = 0"))
    with pytest.raises(
        InputError, match=r"line 8: search\.pin\.planes: .*greater than or equal to 1"
    ):
        load_instance(path)

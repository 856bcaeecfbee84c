"""Bad input: exit status 2, the field or line at fault and what was expected, no traceback."""

from __future__ import annotations

import math
import os
import subprocess
import sys
import time
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
    "unknown-scale-up-switch": (
        _edit(
            'nic = "connectx-7"',
            'nic = "connectx-7"\nscale_up = { gpus = 8, switch = "nvswitch9" }',
        ),
        [],
        ["cluster.scale_up.switch", "nvswitch9", "nvswitch-gen3"],
    ),
    "scale-up-switches-too-few": (
        _edit(
            'nic = "connectx-7"',
            'nic = "connectx-7"\nscale_up = { gpus = 8, switch = "nvswitch-gen3", switches = 2 }',
        ),
        [],
        ["cluster.scale_up", "128 ports", "28,800 Gb/s", "more switches"],
    ),
    "scale-up-domain-not-whole-nodes": (
        _edit('nic = "connectx-7"', 'nic = "connectx-7"\nscale_up = { gpus = 12 }'),
        [],
        ["cluster", "scale_up.gpus (12)", "gpus_per_node"],
    ),
    "set-negative-gpus": (
        GOOD,
        ["cluster.gpus=-5"],
        ["cluster.gpus", "greater than or equal to 1"],
    ),
    "set-tensor-parallel-without-size": (
        GOOD,
        ['verify.traffic=[{kind="all_reduce_ring",groups="tensor_parallel"}]'],
        ["verify.traffic.0", "tensor_parallel groups need group_size"],
    ),
    "workload-degrees-not-the-cluster": (
        GOOD
        + '\n[workload]\npreset = "gpt3-175b"\n'
        + "parallelism = { tensor = 8, pipeline = 16, data = 8 }\n"
        + "gpu = { peak_flops = 989e12, price_usd_per_hour = 2.0 }\n",
        [],
        ["workload.parallelism", "8 x 16 x 8 = 1,024 GPUs", "cluster.gpus is 256"],
    ),
    "workload-expert-not-dividing-data": (
        GOOD
        + '\n[workload]\npreset = "mixtral-8x7b"\n'
        + "parallelism = { data = 256, expert = 3 }\n"
        + "gpu = { peak_flops = 989e12, price_usd_per_hour = 2.0 }\n",
        [],
        ["line 19", "workload.parallelism", "expert (3) must divide data (256)"],
    ),
    "set-without-value": (GOOD, ["nonsense"], ["nonsense", "path=value"]),
    "missing-file": (None, [], ["file not found", "does-not-exist.toml"]),
}


@pytest.fixture(params=list(CASES), ids=list(CASES))
def case(request: pytest.FixtureRequest, tmp_path: Path, write_instance: Callable[..., Path]):
    text, overrides, expected = CASES[request.param]
    path = tmp_path / "does-not-exist.toml" if text is None else write_instance(text)
    return path, overrides, expected


@pytest.mark.slow
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


# ---- hostile files and values (issue 9): refused early, with the file, line or field ----------
#: id -> (bytes of the instance file, words expected in the message)
HOSTILE_FILES: dict[str, tuple[bytes, list[str]]] = {
    "deep-arrays": (
        (GOOD + "x = " + "[" * 5000 + "]" * 5000 + "\n").encode(),
        ["line 16", "nested more than"],
    ),
    "deep-inline-tables": (
        (GOOD + "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n").encode(),
        ["line 16", "nested more than"],
    ),
    "deep-dotted-key": (
        GOOD.replace('name = "bad-input"', "name." + ".".join(["a"] * 3000) + " = 1").encode(),
        ["name.a.a", "nested more than"],
    ),
    "int-of-5000-digits": (
        _edit("gpus = 256", "gpus = " + "9" * 5000).encode(),
        ["line 5", "more than 40 digits"],
    ),
    "int-beyond-64-bits": (
        _edit("max_switch_hops = 3", "max_switch_hops = " + "9" * 30).encode(),
        ["line 12", "constraints.max_switch_hops", "64-bit"],
    ),
    "latin-1": (
        _edit("a small valid", "a sm\u00e9ll valid").encode("latin-1"),
        ["line 2, column 20", "not UTF-8", "0xe9"],
    ),
    "lone-cr": (_edit("\n[cluster]", "\r[cluster]").encode(), ["line 3", "carriage return"]),
    "nul": ((GOOD + "\x00").encode(), ["line 16", "NUL"]),
    "too-large": (
        (GOOD + "# padding\n" * (500_000)).encode(),
        ["larger than the 4 MiB"],
    ),
}


@pytest.mark.parametrize("case", list(HOSTILE_FILES))
def test_hostile_file_is_refused_with_its_place(case: str, tmp_path: Path) -> None:
    data, expected = HOSTILE_FILES[case]
    path = tmp_path / "hostile.toml"
    path.write_bytes(data)
    with pytest.raises(InputError) as info:
        load_instance(path)
    for words in expected:
        assert words in str(info.value)


@pytest.mark.parametrize(
    ("path", "expected"),
    [("/dev/zero", "not a regular file"), ("/dev/urandom", "not a regular file"), ("/", "folder")],
)
def test_devices_and_folders_are_never_read(path: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        load_instance(path)
    with pytest.raises(InputError, match=expected):
        load_catalog(path)


def test_a_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    with pytest.raises(InputError, match="not a regular file"):
        load_instance(fifo)


@pytest.mark.slow
def test_four_mib_of_unknown_keys_is_refused_fast(tmp_path: Path) -> None:
    keys = "".join(f"unknown_{i} = {i}\n" for i in range(180_000))
    path = tmp_path / "keys.toml"
    path.write_text(GOOD.replace("[cluster]", keys + "[cluster]"), encoding="utf-8")
    start = time.perf_counter()
    with pytest.raises(InputError, match=r"unknown_0: unknown field[\s\S]*and 179,980 more errors"):
        load_instance(path)
    assert time.perf_counter() - start < 20


@pytest.mark.parametrize(
    ("item", "expected"),
    [
        ("cluster.gpus=" + "[" * 5000, "nested more than"),
        ("cluster.gpus=" + "9" * 5000, "more than 40 digits"),
        ("cluster.gpus=" + "9" * 25, "64-bit"),
        ("cluster.nic=" + "{a=" * 3000 + "1" + "}" * 3000, "nested more than"),
        ("." * 5000 + "=1", "dotted field path"),
        ("cluster." + "a." * 20 + "b=1", "dotted field path"),
        ("name=a\x00b", "NUL"),
    ],
)
def test_set_values_meet_the_limits_of_a_file(item: str, expected: str) -> None:
    with pytest.raises(InputError, match=expected):
        parse_override(item)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            {"constraints.max_latency_ns": math.inf},
            "constraints.max_latency_ns: Input should be a finite number",
        ),
        (
            {"constraints.max_power_kw": math.nan},
            "constraints.max_power_kw: Input should be a finite number",
        ),
        (
            {"constraints.max_power_kw": 1e300},
            "constraints.max_power_kw: Input should be less than or equal to 1",
        ),
        (
            {"constraints.max_capex_usd": 1e18},
            "constraints.max_capex_usd: Input should be less than or equal to 1",
        ),
        ({"objective.pue": math.inf}, "objective.pue: Input should be a finite number"),
        ({"layout.row_columns": 1000}, "16,000 network rack positions"),
        ({"verify.seed": 2**40}, "verify.seed"),
        ({"verify.failures": [{"planes": 10**6}]}, "verify.failures.0.planes"),
    ],
)
def test_values_the_machine_cannot_hold_are_refused(
    change: dict[str, object], expected: str, write_instance: Callable[..., Path]
) -> None:
    inst = load_instance(write_instance(GOOD))
    with pytest.raises(InputError) as info:
        inst.with_changes({"cluster.gpus": 4096} | change)
    assert expected in str(info.value)


def test_the_largest_caps_still_give_a_design(write_instance: Callable[..., Path]) -> None:
    from planner.api import plan

    inst = load_instance(write_instance(GOOD)).with_changes(
        {
            "constraints.max_latency_ns": 1e9,
            "constraints.max_power_kw": 1e7,
            "constraints.max_capex_usd": 1e13,
        }
    )
    result = plan(inst, verify=False, alternatives=False, time_limit_s=20)
    assert result.found


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"verify.routing": ["spray"] * 200}, "verify.routing"),
        ({"verify.traffic": [{"kind": "incast"}] * 500}, "verify.traffic"),
        ({"verify.failures": [{"switches": ["leaf0"]}] * 500}, "verify.failures"),
        ({"search.families": ["clos"] * 2000}, "search.families"),
        ({"search.switch_models": ["sn5600"] * 2000}, "search.switch_models"),
        ({"search.pin.switch_models": ["sn5600"] * 20}, "search.pin"),
    ],
)
def test_lists_whose_every_entry_costs_a_run_are_bounded(
    change: dict[str, object], expected: str, write_instance: Callable[..., Path]
) -> None:
    # 200 copies of one routing policy simulated the design 200 times.
    inst = load_instance(write_instance(GOOD))
    with pytest.raises(InputError, match=expected):
        inst.with_changes(change)

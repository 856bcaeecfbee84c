"""``--grid PATH=V1,V2,...``: the quoting rule (a quoted value is one value), and what is refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from planner.cli import app
from planner.cli.study_commands import parse_grid
from planner.errors import InputError
from planner.study import study_of
from tests.study.conftest import tiny

runner = CliRunner()


@pytest.mark.parametrize(
    ("item", "values"),
    [
        # A quoted value is one value: its commas and = are the value's.
        ('description="a=b,c"', ["a=b,c"]),
        ("description='a=b,c','d'", ["a=b,c", "d"]),
        ('name="a=b,c"', ["a=b,c"]),
        ('description = "a=b" , "c"', ["a=b", "c"]),
        ('description="""x,y"""', ["x,y"]),
        # So is a bracketed or braced one (a list, a table): its commas and = are its own.
        (
            'verify.traffic=[{kind="all_to_all",size_bytes=1e6}]',
            [[{"kind": "all_to_all", "size_bytes": 1e6}]],
        ),
        (
            'verify.traffic=[{kind="all_to_all",size_bytes=1e6}],[{kind="all_reduce",size_bytes=2e6}]',
            [
                [{"kind": "all_to_all", "size_bytes": 1e6}],
                [{"kind": "all_reduce", "size_bytes": 2e6}],
            ],
        ),
        ("cluster.nic_ports=[1],[1,2]", [[1], [1, 2]]),
        # Bare words and numbers: split at every comma.
        ("layout.name=clos,rail_only", ["clos", "rail_only"]),
        ("cluster.gpus=16, 32", [16, 32]),
        ("cluster.gpus=1,1.0", [1, 1.0]),
    ],
    ids=str,
)
def test_a_quoted_bracketed_or_braced_value_is_one_value(item: str, values: list[Any]) -> None:
    [(_, got)] = parse_grid([item]).items()
    assert got == values


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ('description="a,b', ["--grid description", "not closed", '"a,b']),
        ("description='a=b", ["--grid description", "not closed"]),
        ("cluster.nic_ports=[1,2", ["--grid cluster.nic_ports", "not closed", "[1,2"]),
        ('verify.traffic=[{kind="all_to_all"', ["--grid verify.traffic", "not closed"]),
        ('description="a"b', ["--grid description", '"a"b']),
        ("description=a=b", ["--grid description", "a=b", "quote it"]),
    ],
    ids=str,
)
def test_an_unclosed_or_unquoted_value_is_refused_naming_it(item: str, words: list[str]) -> None:
    with pytest.raises(InputError) as info:
        parse_grid([item])
    for word in words:
        assert word in str(info.value)


@pytest.mark.parametrize(
    "grid_or_sets",
    [{"name": ["a", "b"]}, [{"name": "a"}], {"cluster.gpus": [64], "name": ["x"]}],
    ids=str,
)
def test_the_instance_name_cannot_be_swept(grid_or_sets: Any) -> None:
    # Each scenario's instance is named <instance>.<scenario>: a swept name would be dropped
    # and its scenarios merged into one without a word.
    with pytest.raises(InputError, match="name: a study names each scenario's instance"):
        study_of(tiny(), grid_or_sets)


@pytest.mark.slow
def test_a_merge_is_said_even_with_quiet(tmp_path: Path) -> None:
    source = tmp_path / "tiny.toml"
    source.write_text(
        'name = "tiny"\n[cluster]\ngpus = 64\ngpus_per_node = 8\nnic_gbps = 400\nnic_ports = [1]\n',
        encoding="utf-8",
    )
    args = ["sweep", str(source), "--grid", "cluster.gpus=16,16.0", "--workers", "1"]
    result = runner.invoke(app, [*args, "--no-verify", "-q", "-o", str(tmp_path / "o")])
    assert result.exit_code == 0, result.output
    assert "merged: cluster.gpus = 16.0 is the same as cluster.gpus = 16" in result.stderr
    assert "scenarios: 1 computed" in result.stdout


@pytest.mark.parametrize(
    "value",
    [64, 2.5, 1e6, True, "a=b,c", 'say "hi"', [1, 2], [{"kind": "all_to_all", "size_bytes": 1e6}]],
    ids=str,
)
def test_a_value_written_for_set_reads_back_the_same(value: Any) -> None:
    from planner.cli.study_commands import toml_value
    from planner.loading import parse_override

    assert parse_override(f"description={toml_value(value)}") == ("description", value)


TABLE = {"gpus": 128, "gpus_per_node": 8, "nic_gbps": 400, "nic_ports": [1]}


@pytest.mark.parametrize(
    "grid_or_sets",
    [
        {"cluster.gpus": [16], "cluster": [TABLE]},
        {"cluster": [TABLE], "cluster.gpus": [16]},
        [{"cluster": TABLE, "cluster.gpus": 16}],
    ],
    ids=["field-then-table", "table-then-field", "change-set"],
)
def test_a_table_and_a_field_inside_it_are_refused(grid_or_sets: Any) -> None:
    # One would override the other (the field's value dropped without a word, or the table's
    # value changed in place), and the scenario's name would not say what it planned.
    with pytest.raises(InputError, match="cluster and cluster.gpus overlap"):
        study_of(tiny(), grid_or_sets)
    assert TABLE["gpus"] == 128


@pytest.mark.parametrize(
    ("item", "shown"),
    [("cluster.gpus=16,32]", "'32]'"), ("cluster.nic_ports=[1]],[2]", "'[1]]'")],
    ids=str,
)
def test_a_bracket_that_closes_nothing_names_its_value(item: str, shown: str) -> None:
    with pytest.raises(InputError, match="closes nothing") as info:
        parse_grid([item])
    assert f"cannot read {shown}" in str(info.value)


@pytest.mark.parametrize(
    "grid",
    [
        {"objective.energy_weight": [0.0, -0.0]},
        {"objective.energy_weight": [-0.0, 0]},
        {"constraints.max_oversubscription": [1, 1.0, 1e0]},
    ],
    ids=str,
)
def test_values_equal_as_the_fields_type_are_one_scenario(grid: dict[str, list[Any]]) -> None:
    study = study_of(tiny(), grid)
    assert len(study.scenarios) == 1
    assert study.merged

"""``--set PATH=VALUE``: the value is read whole, or refused; nothing after it is dropped (issue 22)."""

from __future__ import annotations

from typing import Any

import pytest

from planner.errors import InputError
from planner.loading import parse_override


@pytest.mark.parametrize(
    ("item", "value"),
    [
        ("cluster.gpus=16", 16),
        ('search.catalog="a#b.toml"', "a#b.toml"),  # a '#' inside a string is the value's
        ('search.switch_models=["x#1"]', ["x#1"]),
        ("search.catalog=my#catalog", "my#catalog"),  # not TOML: taken as the text it is
        ("verify.routing=[ 'spray' ]", ["spray"]),
    ],
)
def test_a_value_is_read_whole(item: str, value: Any) -> None:
    assert parse_override(item)[1] == value


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ("cluster.gpus=16 # sixteen", "text after the value"),
        ("cluster.gpus=16#", "text after the value"),
        ("cluster.gpus=16\nname = 'x'", "spans lines"),
        ("cluster.gpus=[1,\n2]", "spans lines"),
    ],
)
def test_text_after_the_value_is_refused_not_dropped(item: str, words: str) -> None:
    with pytest.raises(InputError, match=words):
        parse_override(item)


def _small() -> Any:
    from planner.schema.instance import Instance

    return Instance.model_validate(
        {"name": "set", "cluster": {"gpus": 64, "gpus_per_node": 8, "nic_gbps": 400}}
    )


@pytest.mark.parametrize(
    "changes",
    [
        {"cluster": {"gpus": 128, "gpus_per_node": 8}, "cluster.gpus": 16},
        {"cluster.gpus": 16, "cluster": {"gpus": 128, "gpus_per_node": 8}},
        {"search": {"families": ["clos"]}, "search.pin.tiers": 2},
    ],
    ids=["table-then-field", "field-then-table", "nested"],
)
def test_a_table_and_a_field_inside_it_are_refused_together(changes: dict[str, Any]) -> None:
    """One would silently override the other, whichever came last (--set, like --grid)."""
    with pytest.raises(InputError, match="overlap"):
        _small().with_changes(changes)


def test_changes_never_write_into_the_tables_they_are_given() -> None:
    table = {"gpus": 128, "gpus_per_node": 8}
    changed = _small().with_changes({"cluster": table})
    assert changed.cluster.gpus == 128
    again = changed.with_changes({"cluster.gpus": 256})
    assert again.cluster.gpus == 256
    assert table == {"gpus": 128, "gpus_per_node": 8}

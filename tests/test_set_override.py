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

"""The documentation: a short README, generated pages that match their sources, links that land.

``docs/instance-reference.md`` and ``docs/examples.md`` are made by ``planner.schema.reference``;
a schema or an instance changed without them fails here (``python -m planner.schema.reference``
writes them again). Every relative link of the README and the docs pages must name a file that
exists and, with an anchor, a heading of that file. The Polars snippet of the API page runs.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from planner.schema.files import generated
from planner.schema.reference import (
    EXAMPLES_PAGE,
    REFERENCE_PAGE,
    examples_index,
    instance_reference,
    tables,
)

ROOT = Path(__file__).parents[1]
README = ROOT / "README.md"
PAGES = sorted((ROOT / "docs").glob("*.md"))
#: The README is read in ten minutes: at most this many lines.
README_MAX_LINES = 400
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def _anchor(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    out, fenced = set(), False
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.+)$", line)):
            out.add(_anchor(m.group(1)))
    return out


def test_the_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES


@pytest.mark.parametrize(
    ("page", "make"),
    [
        (REFERENCE_PAGE, instance_reference),
        (EXAMPLES_PAGE, lambda: examples_index(ROOT / "instances")),
    ],
    ids=["instance-reference", "examples"],
)
def test_a_generated_page_matches_its_source(page: Path, make: object) -> None:
    assert callable(make)
    assert (ROOT / page).read_text(encoding="utf-8") == make(), (
        f"{page} is stale: run `uv run python -m planner.schema.reference`"
    )


def test_the_reference_has_every_field_of_the_schema() -> None:
    """Every property of every table of the model's own schema has its row."""
    schema = json.loads(generated("instance"))
    text = instance_reference(schema)
    for table in tables(schema):
        title = f"## `[{table.path}]`" if table.path else "## The top level"
        section = text.split(title + "\n", 1)[1].split("\n## ", 1)[0]
        for name in table.schema.get("properties", {}):
            assert f"| `{name}` |" in section, f"{table.path or 'top'}.{name}"


def test_every_example_instance_is_indexed() -> None:
    text = (ROOT / EXAMPLES_PAGE).read_text(encoding="utf-8")
    for path in (ROOT / "instances").glob("*.toml"):
        assert f"(../instances/{path.name})" in text, path.name


@pytest.mark.parametrize("page", [README, *PAGES], ids=lambda p: p.name)
def test_every_relative_link_lands(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)  # code is not linked
    for target in LINK.findall(text):
        if re.match(r"^[a-z]+:", target):
            continue  # an outside address
        file_part, _, anchor = target.partition("#")
        linked = (page.parent / file_part).resolve() if file_part else page
        assert linked.exists(), f"{page.name}: {target}"
        if anchor:
            assert anchor in _anchors(linked), f"{page.name}: {target}"


@pytest.mark.slow
def test_the_polars_snippet_runs(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (ROOT / "docs" / "python-api.md").read_text(encoding="utf-8")
    section = text.split("## Reading the results in Polars", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(ROOT)
    exec(compile(code, "python-api.md", "exec"), {})  # noqa: S102 - the page's own snippet
    printed = capsys.readouterr().out
    assert "capex_usd" in printed
    assert "fraction_of_ideal" in printed

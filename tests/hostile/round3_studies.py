"""Hostile cases of issue 32's category: study folders: resume after a catalog change, damaged parts, grid values."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

from tests.hostile.generator import (
    BAD,
    PART,
    STUDY_ARGS,
    Case,
    Content,
    Designs,
    Folder,
    Link,
    StudyCopy,
    small_text,
    sweep_args,
)

#: Exit statuses of a study that resumes and finishes.
RESUMES = frozenset({0})
#: Words of a damaged part's notice.
DAMAGED = ("was damaged", "planned again")
#: Words of a study.json the planner never reads or replaces.
NEVER = ("study.json", "even with --force")
#: The base study's first part.
FIRST_PART = f"out/parts/{PART}.parquet"


def _part_metadata_not_json(designs: Designs) -> bytes:
    """The base study's first part with its part metadata replaced by text that is not JSON."""
    import polars as pl

    study = designs["study"]
    frame = pl.read_parquet(io.BytesIO(study["files"][f"parts/{study['part']}.parquet"]))
    buffer = io.BytesIO()
    frame.write_parquet(buffer, metadata={"fabric_planner_part": "{not json"})
    return buffer.getvalue()


def _part_labelled_elsewhere(designs: Designs) -> bytes:
    """The base study's first part, its metadata kept, its row naming a scenario that leaves."""
    import polars as pl

    study = designs["study"]
    data = study["files"][f"parts/{study['part']}.parquet"]
    meta = pl.read_parquet_metadata(io.BytesIO(data))
    frame = pl.read_parquet(io.BytesIO(data)).with_columns(pl.lit("../../escape").alias("scenario"))
    buffer = io.BytesIO()
    frame.write_parquet(buffer, metadata=meta)
    return buffer.getvalue()


def _study_json_edited(designs: Designs) -> bytes:
    """The base study's study.json, valid JSON, but not the bytes the planner wrote."""
    record = json.loads(designs["study"]["files"]["study.json"])
    return json.dumps(record).encode()  # without the indent: other bytes


def _priced_catalog() -> bytes:
    """The default catalog with every price doubled."""
    import planner

    text = (Path(planner.__file__).parent / "catalog" / "default.toml").read_text(encoding="utf-8")

    def doubled(m: re.Match[str]) -> str:
        return f"cost_usd = {2 * float(m.group(1).replace('_', ''))}"

    return re.sub(r"(?m)^cost_usd = ([0-9][0-9_.e+]*)$", doubled, text).encode()


def _study_case(
    name: str,
    kind: str,
    files: dict[str, Content],
    *,
    extra: tuple[str, ...] = (),
    exit: frozenset[int] = BAD,
    words: tuple[str, ...] = (),
    instance: bytes | None = None,
) -> Case:
    """The base study folder with ``files`` over it, and the base study's sweep run into it."""
    return Case(
        f"sweep/round3/{name}",
        "sweep",
        f"study folder: {kind}",
        STUDY_ARGS + extra,
        {"instance.toml": instance or small_text().encode(), "out": StudyCopy(), **files},
        exit=exit,
        words=words,
        slow=True,
    )


def _grid_case(
    name: str, grid: str, *, exit: frozenset[int] = BAD, words: tuple[str, ...] = ()
) -> Case:
    """A fresh sweep of small-256 over ``cluster.gpus=64`` and ``grid``."""
    return Case(
        f"sweep/round3/{name}",
        "sweep",
        "sweep --grid",
        sweep_args("cluster.gpus=64", grid),
        {"instance.toml": small_text().encode()},
        exit=exit,
        words=words,
        slow=0 in exit,
    )


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    small = small_text()
    out: list[Case] = [
        # Damaged parts: planned again, said, and the damaged file kept aside.
        _study_case("part-empty", "parts", {FIRST_PART: b""}, exit=RESUMES, words=DAMAGED),
        _study_case(
            "part-metadata-not-json",
            "parts",
            {FIRST_PART: _part_metadata_not_json},
            exit=RESUMES,
            words=DAMAGED,
        ),
        _study_case(
            "part-damaged-twice",
            "parts",
            {FIRST_PART: b"garbage", f"{FIRST_PART}.damaged": b"older garbage"},
            exit=RESUMES,
            words=DAMAGED,
        ),
        _study_case(
            "part-damaged-aside-is-a-folder",
            "parts",
            {FIRST_PART: b"garbage", f"{FIRST_PART}.damaged": Folder()},
            words=(".damaged", "even with --force"),
        ),
        # A part of its scenario's key whose row names another scenario: planned again.
        _study_case(
            "part-labelled-another-scenario",
            "parts",
            {FIRST_PART: _part_labelled_elsewhere},
            exit=RESUMES,
        ),
        # A study.json the planner cannot use is named, and --force is not offered in vain.
        _study_case(
            "study-json-link",
            "study.json",
            {"out/study.json": Link("other.json"), "out/other.json": b"{}"},
            words=(*NEVER, "is a link"),
        ),
        _study_case(
            "study-json-link-forced",
            "study.json",
            {"out/study.json": Link("other.json"), "out/other.json": b"{}"},
            extra=("--force",),
            words=(*NEVER, "is a link"),
        ),
        _study_case(
            "study-json-dangling-link",
            "study.json",
            {"out/study.json": Link("nowhere.json")},
            words=(*NEVER, "is a link"),
        ),
        _study_case(
            "study-json-edited",
            "study.json",
            {"out/study.json": _study_json_edited},
            words=(*NEVER, "changed since"),
        ),
        # Inputs changed since the last run: the study resumes, plans again what they change,
        # and says which input changed.
        _study_case(
            "instance-edited",
            "changed inputs",
            {},
            instance=small.replace("max_switch_hops = 3", "max_switch_hops = 4").encode(),
            exit=RESUMES,
            words=("2 of 2 scenarios planned again", "the instance"),
        ),
        _study_case(
            "catalog-edited",
            "changed inputs",
            {"catalog.toml": _priced_catalog()},
            instance=(small + '\n[search]\ncatalog = "catalog.toml"\n').encode(),
            exit=RESUMES,
            words=("2 of 2 scenarios planned again", "the catalog's content"),
        ),
        _study_case(
            "time-limit-changed",
            "changed inputs",
            {},
            extra=("--time-limit", "7"),
            exit=RESUMES,
            words=("planned again", "--time-limit or --no-verify"),
        ),
        _study_case(
            "another-instance",
            "changed inputs",
            {},
            instance=small.replace('name = "small-256"', 'name = "other"').encode(),
            words=("another instance", "--force"),
        ),
        # --grid values: the quoting rule, merges said, the name never swept.
        _grid_case("grid-name", "name=a,b", words=("name: a study names",)),
        _grid_case("grid-unclosed-quote", 'description="a,b', words=('"a,b is not closed',)),
        _grid_case("grid-unclosed-bracket", "cluster.nic_ports=[1,[2]", words=("not closed",)),
        _grid_case(
            "grid-table-and-field-overlap",
            "cluster={gpus=128,gpus_per_node=8,nic_gbps=400,nic_ports=[1]}",
            words=("cluster and cluster.gpus overlap",),
        ),
        _grid_case("grid-bare-equals", "description=a=b", words=("'a=b'", "quote it")),
        _grid_case("grid-quoted-equals-commas", 'description="a=b,c","d"', exit=RESUMES),
        _grid_case(
            "grid-traffic-table",
            'verify.traffic=[{kind="all_to_all",size_bytes=1e6}]',
            exit=RESUMES,
        ),
        _grid_case(
            "grid-one-and-one-point-zero",
            "constraints.max_oversubscription=1,1.0",
            exit=RESUMES,
            words=("merged: constraints.max_oversubscription = 1.0 is the same",),
        ),
        _grid_case(
            "grid-minus-zero",
            "objective.energy_weight=0.0,-0.0",
            exit=RESUMES,
            words=("merged: objective.energy_weight = -0.0 is the same",),
        ),
    ]
    return out

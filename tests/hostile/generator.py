"""Generator of malformed and hostile inputs for every command of the CLI (issue 9).

Each case is a folder of files, a command line run inside that folder, the exit statuses it may
end with, and words its message must hold (the file or the field at fault). The cases are made
from the example instances, from real design.json files (one of every family) and from a real
study folder, deterministically (fixed seeds), so a failure names a case that can be re-run
alone. ``python -m tests.hostile.generator`` prints the counts per command, per input kind and
per surface (the input kind before its ':').

Surfaces: instance files, ``--set`` values, catalogs, design.json (the three planned designs and
a design of every family, ``design.json (<family>)``), ``sweep --grid`` values and options,
study folders (``study.json``, ``parts/``, the manifest and the lock of a folder ``sweep``
resumes), and ``[workload]`` sections (every field at its extremes, inconsistent parallelism).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from planner.cli.typer_app import EXIT_FAILS
from tests.hostile.family_designs import FAMILY_INSTANCES

REPO = Path(__file__).resolve().parents[2]
INSTANCES = REPO / "instances"

#: Every command of the CLI.
COMMANDS = (
    "solve",
    "evaluate",
    "compare-fabrics",
    "torus",
    "simulate",
    "validate",
    "catalog",
    "schema",
    "sweep",
)

#: Real designs written by the planner, by name: "small" (small-256, one switch), "h100"
#: (h100-1k, leaf and spine), "ocs" (1,024 GPUs, OCS direct-connect), one of every family by
#: the family's name (``tests.hostile.family_designs``), and "study": the base study folder
#: (``STUDY_ARGS`` run once), as {"files": {relative path: bytes}, "part": the first
#: scenario's key, "hostile-part": a part of that key with hostile values}.
Designs = dict[str, dict[str, Any]]
#: A file's content: bytes, or an edit of a real design.json's data made when the case runs.
DesignEdit = Callable[[Designs], Any]


@dataclass(frozen=True)
class Link:
    """A symbolic link to ``target`` (relative to the link's folder, or absolute)."""

    target: str


@dataclass(frozen=True)
class Folder:
    """An empty folder."""


@dataclass(frozen=True)
class StudyCopy:
    """The base study folder's files ("study" of ``Designs``), copied to this path."""


Content = bytes | DesignEdit | Link | Folder | StudyCopy | None
"""None: make a FIFO at that path. A path may hold ``{part}``: the base study's first part key."""
#: Placeholder in a file path for the first scenario's part key of the base study.
PART = "{part}"

BAD = frozenset({2})
NONE_OR_BAD = frozenset({1, 2})
ANY_ANSWER = frozenset({0, 1, 2})


@dataclass(frozen=True)
class Case:
    """One hostile run: files in a fresh folder, a command line, what it may end with."""

    id: str
    command: str
    kind: str
    args: tuple[str, ...]
    files: dict[str, Content] = field(default_factory=dict)
    exit: frozenset[int] = BAD
    words: tuple[str, ...] = ()
    """Words the message must hold (stderr), e.g. the file and the field at fault."""
    outputs: tuple[str, ...] = ("out",)
    """Folders (relative to the case folder) the command may write into."""
    output_side: str = ""
    """Why the case fails today because of a part owned elsewhere (the output side: cli.py,
    report.py, api.py; or the catalog schema, or the OCS models): marks it xfail, non-strict, so
    the merge of that side turns it on."""
    known_bug: str = ""
    """A bug this case exposes outside the inputs' files, fixed elsewhere or still open: marks it
    xfail(strict=True), so its fix turns the mark into a failure to remove."""
    slow: bool = False
    """The run plans or simulates for real (a study that resumes, a workload simulated)."""
    subprocess_only: bool = False
    """Unsafe in the test's own process (a read that never ends, or one that fills memory): run
    only as a subprocess under the memory and time limits."""


def small_text() -> str:
    return (INSTANCES / "small-256.toml").read_text(encoding="utf-8")


def torus_text() -> str:
    return (INSTANCES / "tpu-pod-4k.toml").read_text(encoding="utf-8")


def _edit(text: str, old: str, new: str) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _design_json(
    edit: Callable[[dict[str, Any]], None] | None = None, base: str = "small"
) -> DesignEdit:
    def make(designs: Designs) -> Any:
        data = json.loads(json.dumps(designs[base]))
        if edit is not None:
            edit(data)
        return data

    return make


# ---- hostile instance files ------------------------------------------------------------------
def hostile_instances() -> list[tuple[str, str, Content, tuple[str, ...]]]:
    """(name, input kind, content, words) of instance files that no command may accept."""
    s = small_text()
    deep = "[" * 5000 + "]" * 5000
    keys_10mb = "".join(f"unknown_key_{i:07d} = {i}\n" for i in range(400_000))
    keys_3mb = "".join(f"unknown_{i} = {i}\n" for i in range(150_000))
    cases: list[tuple[str, str, Content, tuple[str, ...]]] = [
        ("deep-arrays", "deep nesting", (s + f"x = {deep}\n").encode(), ("nested more than",)),
        (
            "deep-inline-tables",
            "deep nesting",
            (s + "x = " + "{a=" * 5000 + "1" + "}" * 5000 + "\n").encode(),
            ("nested more than",),
        ),
        (
            "deep-dotted-key",
            "deep nesting",
            _edit(s, 'name = "small-256"', "name." + ".".join(["a"] * 3000) + " = 1").encode(),
            ("nested more than",),
        ),
        (
            "deep-table-header",
            "deep nesting",
            (s + "\n[" + ".".join(["t"] * 3000) + "]\nx = 1\n").encode(),
            ("nested more than",),
        ),
        (
            "int-5000-digits",
            "huge int",
            _edit(s, "gpus = 256", "gpus = " + "7" * 5000).encode(),
            ("line 7", "digits"),
        ),
        (
            "int-30-digits",
            "huge int",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = " + "9" * 30).encode(),
            ("constraints.max_switch_hops", "64-bit"),
        ),
        (
            "float-5000-digits",
            "huge int",
            _edit(
                s, "max_oversubscription = 1.0", "max_oversubscription = 1." + "0" * 5000
            ).encode(),
            ("digits",),
        ),
        (
            "latin-1",
            "bad utf-8",
            _edit(s, "A small lab", "A sm\u00e9ll lab").encode("latin-1"),
            ("line 3", "UTF-8", "0xe9"),
        ),
        ("utf-16", "bad utf-8", s.encode("utf-16"), ("UTF-8",)),
        ("lone-cr", "lone cr", _edit(s, "\n[layout]", "\r[layout]").encode(), ("carriage return",)),
        ("cr-only-file", "lone cr", s.replace("\n", "\r").encode(), ("line 1", "carriage return")),
        ("nul-byte", "nul", (s + "\x00\x00").encode(), ("NUL",)),
        ("huge-10mb-unknown-keys", "huge file", (s + keys_10mb).encode(), ("4 MiB",)),
        ("empty-file", "instance toml", b"", ("name", "Field required")),
        (
            "binary-garbage",
            "bad utf-8",
            bytes(random.Random(9).randrange(256) for _ in range(4096)),
            ("UTF-8",),
        ),
        ("toml-syntax", "instance toml", _edit(s, "[cluster]", "[cluster").encode(), ("TOML",)),
        ("bom", "instance toml", b"\xef\xbb\xbf" + s.encode(), ("TOML",)),
        (
            "name-dotdot",
            "name with ..",
            _edit(s, '"small-256"', '"../../escape"').encode(),
            ("name", "pattern"),
        ),
        (
            "name-slash",
            "name with /",
            _edit(s, '"small-256"', '"a/b"').encode(),
            ("name", "pattern"),
        ),
        (
            "name-absolute",
            "absolute path",
            _edit(s, '"small-256"', '"/tmp/escape"').encode(),
            ("name", "pattern"),
        ),
        (
            "name-nul",
            "nul in name",
            _edit(s, '"small-256"', '"a\\u0000b"').encode(),
            ("name", "pattern"),
        ),
        (
            "name-empty",
            "instance toml",
            _edit(s, '"small-256"', '""').encode(),
            ("name", "pattern"),
        ),
        (
            "latency-inf",
            "inf budget",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = 3\nmax_latency_ns = inf").encode(),
            ("constraints.max_latency_ns", "finite"),
        ),
        (
            "latency-nan",
            "inf budget",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = 3\nmax_latency_ns = nan").encode(),
            ("constraints.max_latency_ns", "finite"),
        ),
        (
            "power-1e300",
            "inf budget",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = 3\nmax_power_kw = 1e300").encode(),
            ("constraints.max_power_kw", "less than or equal"),
        ),
        (
            "capex-1e18",
            "inf budget",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = 3\nmax_capex_usd = 1e18").encode(),
            ("constraints.max_capex_usd", "less than or equal"),
        ),
        (
            "capex-minus-inf",
            "inf budget",
            _edit(s, "max_switch_hops = 3", "max_switch_hops = 3\nmax_capex_usd = -inf").encode(),
            ("constraints.max_capex_usd",),
        ),
        (
            "row-columns-1000",
            "exhausting value",
            _edit(
                _edit(s, "gpus = 256", "gpus = 4096"),
                "racks_per_row = 8",
                "racks_per_row = 16\nrow_columns = 1000",
            ).encode(),
            ("layout", "network rack positions"),
        ),
        (
            "gpus-zero",
            "zero count",
            _edit(s, "gpus = 256", "gpus = 0").encode(),
            ("cluster.gpus", "greater than or equal to 1"),
        ),
        (
            "gpus-negative",
            "negative count",
            _edit(s, "gpus = 256", "gpus = -256").encode(),
            ("cluster.gpus",),
        ),
        (
            "gpus-string",
            "wrong type",
            _edit(s, "gpus = 256", 'gpus = "many"').encode(),
            ("cluster.gpus", "integer"),
        ),
        (
            "cluster-scalar",
            "wrong type",
            _edit(s, "[cluster]\n", "cluster = 5\n[cluster_]\n").encode(),
            ("cluster",),
        ),
        (
            "unknown-top-key",
            "instance toml",
            ("surprise = 1\n" + s).encode(),
            ("surprise", "unknown field"),
        ),
        (
            "monte-carlo-100k",
            "exhausting value",
            (s + "\n[verify]\nmonte_carlo_trials = 100000\n").encode(),
            ("verify.monte_carlo_trials",),
        ),
        (
            "seed-beyond-32-bits",
            "exhausting value",
            (s + "\n[verify]\nseed = 1099511627776\n").encode(),
            ("verify.seed",),
        ),
        (
            "bogus-family",
            "bogus family",
            (s + '\n[search]\nfamilies = ["hypercube"]\n').encode(),
            ("search.families",),
        ),
        (
            "fan-in-huge",
            "exhausting value",
            (s + '\n[verify]\ntraffic = [{kind = "incast", fan_in = 100000000}]\n').encode(),
            ("verify.traffic.0.fan_in",),
        ),
        (
            "torus-slices-not-cubes",
            "instance toml",
            _edit(
                torus_text(),
                "slices = [[4, 4, 8], [8, 8, 16], [16, 16, 8]]",
                "slices = [[1, 1, 1]]",
            ).encode(),
            ("torus", "multiple of the cube"),
        ),
        (
            "torus-cube-zero",
            "zero count",
            _edit(torus_text(), "cube = 4", "cube = 0").encode(),
            ("torus.cube",),
        ),
        (
            "torus-availability-one",
            "instance toml",
            _edit(torus_text(), "cube_availability = 0.995", "cube_availability = 1.0").encode(),
            ("torus.cube_availability",),
        ),
        (
            "torus-link-inf",
            "inf budget",
            _edit(torus_text(), "link_gbps = 400", "link_gbps = inf").encode(),
            ("torus.link_gbps",),
        ),
    ]
    # The same file under the cap (3 MB of unknown keys): parsed, then refused fast.
    cases.append(
        (
            "large-3mb-unknown-keys",
            "huge file",
            _edit(s, "[cluster]", keys_3mb + "[cluster]").encode(),
            ("unknown field", "more errors"),
        )
    )
    return cases


def hostile_catalogs() -> list[tuple[str, str, Content, tuple[str, ...], str]]:
    """(name, input kind, content, words, output-side reason) of catalog files."""
    cat = (REPO / "planner" / "catalog" / "default.toml").read_text(encoding="utf-8")
    price = re.search(r"^cost_usd = [0-9_.]+$", cat, re.M)
    assert price is not None
    with_price = lambda v: cat.replace(price.group(), f"cost_usd = {v}", 1).encode()  # noqa: E731
    return [
        (
            "deep",
            "deep nesting",
            (cat + "x = " + "[" * 5000 + "]" * 5000).encode(),
            ("nested",),
            "",
        ),
        ("latin-1", "bad utf-8", ("# caf\u00e9\n" + cat).encode("latin-1"), ("UTF-8",), ""),
        ("lone-cr", "lone cr", ("# a\rb\n" + cat).encode(), ("carriage return",), ""),
        ("nul", "nul", (cat + "\x00").encode(), ("NUL",), ""),
        ("huge", "huge file", cat.encode() + b"# " + b"x" * (5 * 2**20) + b"\n", ("MiB",), ""),
        ("empty", "catalog file", b"", ("switch",), ""),
        ("price-inf", "inf budget", with_price("inf"), ("cost_usd", "finite"), ""),
        ("price-nan", "inf budget", with_price("nan"), ("cost_usd", "finite"), ""),
        ("price-string", "wrong type", with_price('"cheap"'), ("cost_usd",), ""),
        ("price-negative", "negative count", with_price("-5"), ("cost_usd",), ""),
        ("big-int", "huge int", with_price("9" * 4400), ("digits",), ""),
        ("unknown-key", "catalog file", ("surprise = 1\n" + cat).encode(), ("surprise",), ""),
        ("syntax", "catalog file", (cat + "\n[[switch]\n").encode(), ("TOML",), ""),
    ]


def set_path(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    """An edit of design data: set the value at a dotted path ('tiers.0.switches')."""

    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = d
        for p in parents:
            node = node[int(p)] if isinstance(node, list) else node[p]
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return edit


def drop_key(key: str) -> Callable[[dict[str, Any]], None]:
    """An edit of design data: remove a top-level key."""
    return lambda d: d.pop(key)


def foreign_end_module(d: dict[str, Any]) -> None:
    """An edit of design data: the GPU end of the first link group carries a module whose line
    side is not the group's (its lanes run at another rate): the two ends would not link up."""
    group = d["link_classes"][0]["groups"][0]
    lanes = group["lane_gbps"] or 100
    group["lower_module"] = {
        "name": "foreign-module",
        "cost_usd": 100.0,
        "power_w": 1.0,
        "afr": 0.01,
        "host_lane_gbps": [lanes],
        "form_factors": ["osfp"],
        "line_kind": group["kind"],
        "line_lanes": 1,
        "line_lane_gbps": 2 * lanes,
        "connector": group["connector"],
    }


def design_mutations() -> list[tuple[str, str, DesignEdit, tuple[str, ...]]]:
    """(name, input kind, design edit, words) of design.json files that must be refused."""
    setter, drop = set_path, drop_key

    m: list[tuple[str, str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
        ("tiers-empty", "empty tiers", setter("tiers", []), ("tiers",)),
        ("tiers-null", "null", setter("tiers", None), ("tiers",)),
        ("gpus-null", "null", setter("gpus", None), ("gpus",)),
        ("requirements-null", "null", setter("requirements", None), ("requirements",)),
        ("switches-zero", "zero count", setter("tiers.0.switches", 0), ("tiers.0.switches",)),
        (
            "switches-negative",
            "negative count",
            setter("tiers.0.switches", -1),
            ("tiers.0.switches",),
        ),
        ("planes-zero", "zero count", setter("planes", 0), ("planes",)),
        ("planes-negative", "negative count", setter("planes", -2), ("planes",)),
        ("gpus-zero", "zero count", setter("gpus", 0), ("gpus",)),
        ("radix-zero", "zero count", setter("tiers.0.radix", 0), ("tiers.0.radix",)),
        (
            "links-negative",
            "negative count",
            setter("link_classes.0.links", -5),
            ("link_classes.0.links",),
        ),
        (
            "group-links-negative",
            "negative count",
            setter("link_classes.0.groups.0.links", -5),
            ("link_classes.0.groups.0.links",),
        ),
        ("gpus-string", "wrong type", setter("gpus", "256"), ("gpus",)),
        ("planes-float", "wrong type", setter("planes", 1.5), ("planes",)),
        ("cpo-string", "wrong type", setter("tiers.0.cpo", "no"), ("tiers.0.cpo",)),
        ("tiers-object", "wrong type", setter("tiers", {"0": {}}), ("tiers",)),
        ("tier-list", "wrong type", setter("tiers.0", [1, 2]), ("tiers.0",)),
        ("family-bogus", "bogus family", setter("family", "hypercube"), ("family",)),
        ("family-null", "bogus family", setter("family", None), ("family",)),
        ("family-number", "bogus family", setter("family", 7), ("family",)),
        ("status-bogus", "design json", setter("status", "splendid"), ("status",)),
        ("unknown-key", "design json", setter("bogus", 1), ("bogus",)),
        ("unknown-tier-key", "design json", setter("tiers.0.bogus", 1), ("bogus",)),
        ("missing-tiers", "design json", drop("tiers"), ("tiers",)),
        ("missing-gpus", "design json", drop("gpus"), ("gpus",)),
        ("name-dotdot", "name with ..", setter("instance", "../escape"), ("instance",)),
        (
            "name-dotdot-deep",
            "name with ..",
            setter("instance", "../../../../tmp/escape"),
            ("instance",),
        ),
        ("name-slash", "name with /", setter("instance", "a/b"), ("instance",)),
        ("name-absolute", "absolute path", setter("instance", "/tmp/escape"), ("instance",)),
        ("name-nul", "nul in name", setter("instance", "a\x00b"), ("instance",)),
        ("name-empty", "design json", setter("instance", ""), ("instance",)),
        ("name-dot", "name with ..", setter("instance", "."), ("instance",)),
        ("capex-huge", "inf budget", setter("capex_usd", 1e300), ("capex_usd",)),
        ("ports-over-radix", "design json", setter("tiers.0.downlinks", 100_000), ("tiers.0",)),
        ("afr-negative", "negative count", setter("link_classes.0.groups.0.afr", -0.1), ("afr",)),
        ("classes-empty", "empty tiers", setter("link_classes", []), ("link_classes",)),
        ("groups-empty", "empty tiers", setter("link_classes.0.groups", []), ("groups",)),
        ("circuits-bogus", "design json", setter("circuits", [[0, 0, 0, 0]]), ("circuits",)),
        ("circuits-string", "wrong type", setter("circuits", "all"), ("circuits",)),
        ("pods-huge", "huge int", setter("pods", 10**30), ("pods",)),
        ("level-zero", "zero count", setter("tiers.0.level", 0), ("tiers.0.level",)),
        ("role-bogus", "bogus family", setter("tiers.0.role", "router"), ("tiers.0.role",)),
        (
            "end-modules-mismatched",
            "design json",
            foreign_end_module,
            ("lower_module", "same line side"),
        ),
    ]
    out = [(n, k, _design_json(e), w) for n, k, e, w in m]
    # Well-typed files whose counts describe no fabric (simulate ran them into an IndexError).
    unbuildable = [
        ("h100", "gpus", 4_000_000),
        ("h100", "tiers.0.switches", 1),
        ("h100", "tiers.1.switches", 1),
        ("h100", "tiers.0.downlinks", 1),
        ("h100", "tiers.0.fanout", 1000),
        ("h100", "tiers.0.parallel_links", 0),
        ("h100", "tiers.0.switches", 10_000_000),
        ("h100", "link_classes.1.links", 1),
        ("h100", "tiers.0.uplinks", 0),
        ("h100", "link_speed_gbps", 1),
        ("ocs", "circuits.0.3", 1000),
        ("ocs", "circuits.0.2", 7),
        ("ocs", "pods", 2),
        ("ocs", "tiers.2.switches", 1),
        ("ocs", "family", "clos"),
        ("ocs", "tiers.2.ocs", False),
        ("small", "family", "ocs_direct"),
    ]
    out.append(
        (
            "circuits-1m-entries",
            "huge file",
            _design_json(setter("circuits", [[0, 1, 0, 1]] * 1_000_000), "ocs"),
            ("circuits on device 0",),
        )
    )
    for base, path, value in unbuildable:
        out.append(
            (
                f"unbuildable-{base}-{path}-{value}",
                "counts that do not add up",
                _design_json(setter(path, value), base),
                (),
            )
        )
    return out


def design_texts() -> list[tuple[str, str, Content, tuple[str, ...]]]:
    """(name, input kind, raw content, words) of design.json files that are not JSON designs."""
    deep = "[" * 100_000 + "]" * 100_000
    return [
        ("deep-json", "deep nesting", ('{"tiers": ' + deep + "}").encode(), ("nested more than",)),
        (
            "deep-json-objects",
            "deep nesting",
            ('{"a":' * 50_000 + "1" + "}" * 50_000).encode(),
            ("nested more than",),
        ),
        ("int-5000-digits", "huge int", ('{"gpus": ' + "9" * 5000 + "}").encode(), ("digits",)),
        ("latin-1", "bad utf-8", '{"instance": "caf\u00e9"}'.encode("latin-1"), ("UTF-8",)),
        ("lone-cr", "lone cr", b'{"instance":\r "x"}', ("carriage return",)),
        ("nul", "nul", b'{"instance": "x"}\x00', ("NUL",)),
        ("not-json", "design json", b"{not json", ("not valid JSON",)),
        ("array", "design json", b"[1, 2, 3]", ("JSON object",)),
        ("string", "design json", b'"design"', ("JSON object",)),
        ("null", "null", b"null", ("JSON object",)),
        ("empty", "design json", b"", ("JSON",)),
        ("nan", "inf budget", b'{"gpus": NaN}', ("gpus",)),
        ("huge", "huge file", b'{"notes": ["' + b"x" * (65 * 2**20) + b'"]}', ("MiB",)),
    ]


# ---- --set values ----------------------------------------------------------------------------
def hostile_sets() -> list[tuple[str, str, tuple[str, ...], tuple[str, ...]]]:
    """(name, input kind, --set items, words) that every command must refuse."""
    return [
        (
            "deep-array",
            "deep nesting",
            ("cluster.gpus=" + "[" * 5000 + "]" * 5000,),
            ("nested more than",),
        ),
        (
            "deep-table",
            "deep nesting",
            ("cluster.nic=" + "{a=" * 3000 + "1" + "}" * 3000,),
            ("nested more than",),
        ),
        ("int-5000-digits", "huge int", ("cluster.gpus=" + "9" * 5000,), ("digits",)),
        ("int-30-digits", "huge int", ("cluster.gpus=" + "9" * 30,), ("64-bit",)),
        ("path-5000-dots", "deep nesting", ("." * 5000 + "=1",), ("dotted field path",)),
        (
            "path-20-parts",
            "deep nesting",
            ("cluster." + "a." * 20 + "b=1",),
            ("dotted field path",),
        ),
        ("value-nul", "nul", ("name=a\x00b",), ("NUL",)),
        ("latency-inf", "inf budget", ("constraints.max_latency_ns=inf",), ("max_latency_ns",)),
        ("latency-nan", "inf budget", ("constraints.max_latency_ns=nan",), ("max_latency_ns",)),
        ("power-1e300", "inf budget", ("constraints.max_power_kw=1e300",), ("max_power_kw",)),
        ("capex-1e18", "inf budget", ("constraints.max_capex_usd=1e18",), ("max_capex_usd",)),
        ("capex-inf", "inf budget", ("constraints.max_capex_usd=inf",), ("max_capex_usd",)),
        (
            "row-columns",
            "exhausting value",
            ("cluster.gpus=4096", "layout.row_columns=1000"),
            ("network rack positions",),
        ),
        (
            "monte-carlo-100k",
            "exhausting value",
            ("verify.monte_carlo_trials=100000",),
            ("monte_carlo_trials",),
        ),
        ("name-dotdot", "name with ..", ('name="../escape"',), ("name",)),
        ("name-absolute", "absolute path", ('name="/tmp/escape"',), ("name",)),
        ("gpus-negative", "negative count", ("cluster.gpus=-8",), ("cluster.gpus",)),
        ("gpus-zero", "zero count", ("cluster.gpus=0",), ("cluster.gpus",)),
        ("gpus-string", "wrong type", ('cluster.gpus="lots"',), ("cluster.gpus",)),
        ("cluster-scalar", "wrong type", ("cluster=1",), ("cluster",)),
        ("family-bogus", "bogus family", ('search.families=["hypercube"]',), ("search.families",)),
        ("catalog-device", "device", ('search.catalog="/dev/zero"',), ("/dev/zero",)),
        ("seed-negative", "negative count", ("verify.seed=-1",), ("verify.seed",)),
        ("no-equals", "--set values", ("nonsense",), ("path=value",)),
        ("empty-path", "--set values", ("=5",), ("path",)),
        ("traffic-bogus", "--set values", ('verify.traffic=[{kind="nope"}]',), ("verify.traffic",)),
        (
            "failures-planes-huge",
            "exhausting value",
            ("verify.failures=[{planes=100000}]",),
            ("verify.failures",),
        ),
        ("value-too-long", "huge file", ("description=" + "x" * 70_000,), ("longer than",)),
        # Lists as long as the value cap allows: each entry costs a simulation or a solve.
        (
            "routing-200",
            "exhausting value",
            ("verify.routing=[" + '"spray",' * 200 + "]",),
            ("verify.routing",),
        ),
        (
            "traffic-500",
            "exhausting value",
            ("verify.traffic=[" + '{kind="incast"},' * 500 + "]",),
            ("verify.traffic",),
        ),
        (
            "failures-500",
            "exhausting value",
            ("verify.failures=[" + '{switches=["leaf0"]},' * 500 + "]",),
            ("verify.failures",),
        ),
        (
            "families-2000",
            "exhausting value",
            ("search.families=[" + '"clos",' * 2000 + "]",),
            ("search.families",),
        ),
        (
            "switch-models-2000",
            "exhausting value",
            ("search.switch_models=[" + '"sn5600",' * 2000 + "]",),
            ("search.switch_models",),
        ),
        (
            "pin-switches-1000",
            "exhausting value",
            ("search.pin.switches=[" + "1," * 1000 + "]",),
            ("search.pin.switches",),
        ),
    ]


# ---- mutations of the example instances --------------------------------------------------------
#: Values no field of an instance accepts: a table of an unknown key, non-finite numbers, an
#: integer beyond 64 bits, arrays nested too deep.
POISON = ("{ hostile = 1 }", "inf", "-inf", "nan", "9" * 25, "[" * 40 + "]" * 40)


def instance_mutations(per_instance: int = 8, seed: int = 2026) -> list[tuple[str, str, bytes]]:
    """(name, example, text) of example instances with one value replaced or one key misspelt."""
    rng = random.Random(seed)
    out: list[tuple[str, str, bytes]] = []
    assign = re.compile(r"^(\s*)([A-Za-z0-9_]+)(\s*=\s*)(.+)$")
    for path in sorted(INSTANCES.glob("*.toml")):
        lines = path.read_text(encoding="utf-8").splitlines()
        in_string = False
        spots = []
        for i, line in enumerate(lines):
            if line.count('"""') % 2:
                in_string = not in_string
                continue
            if not in_string and assign.match(line) and not line.lstrip().startswith("#"):
                spots.append(i)
        for n in range(per_instance):
            i = rng.choice(spots)
            m = assign.match(lines[i])
            assert m is not None
            if n % 4 == 3:
                new = f"{m.group(1)}{m.group(2)}_misspelt{m.group(3)}{m.group(4)}"
            else:
                new = f"{m.group(1)}{m.group(2)}{m.group(3)}{rng.choice(POISON)}"
            text = "\n".join(lines[:i] + [new] + lines[i + 1 :]) + "\n"
            out.append((f"{path.stem}-{n}-{m.group(2)}", path.stem, text.encode()))
    return out


def design_random_mutations(
    count: int = 40, seed: int = 7, base: str = "small"
) -> list[tuple[str, DesignEdit]]:
    """Random leaves of the real design.json replaced by random values (may stay valid)."""
    values: list[Any] = [None, -1, 0, "x", [], {}, 1e308, True, 10**30, -0.5, "../x", [[]]]

    def make(rng_seed: int) -> DesignEdit:
        def edit(designs: Designs) -> Any:
            rng = random.Random(rng_seed)
            data = json.loads(json.dumps(designs[base]))
            leaves: list[tuple[Any, Any]] = []
            stack: list[Any] = [data]
            while stack:
                node = stack.pop()
                items = node.items() if isinstance(node, dict) else enumerate(node)
                for k, v in items:
                    leaves.append((node, k))
                    if isinstance(v, dict | list):
                        stack.append(v)
            node, key = rng.choice(leaves)
            node[key] = rng.choice(values)
            return data

        return edit

    return [(f"random-{base}-{i}", make(seed * 1000 + i)) for i in range(count)]


# ---- the cases ---------------------------------------------------------------------------------
def _instance_args(command: str) -> tuple[str, ...]:
    return {
        "solve": ("solve", "instance.toml", "-o", "out", "--no-verify", "--time-limit", "5", "-q"),
        "evaluate": (
            "evaluate",
            "instance.toml",
            "-o",
            "out",
            "--no-verify",
            "--time-limit",
            "5",
            "-q",
        ),
        "compare-fabrics": (
            "compare-fabrics",
            "instance.toml",
            "-o",
            "out",
            "--time-limit",
            "5",
            "-q",
        ),
        "torus": ("torus", "instance.toml", "-o", "out"),
        "simulate": ("simulate", "design.json", "--instance", "instance.toml", "-o", "out", "-q"),
        "sweep": sweep_args(),
    }[command]


def sweep_args(*grids: str, out: str = "out") -> tuple[str, ...]:
    """A sweep of instance.toml in this process, no verification: ``SWEEP_GRID`` by default."""
    items = tuple(a for g in grids or (SWEEP_GRID,) for a in ("--grid", g))
    return ("sweep", "instance.toml", *items, *SWEEP_OPTIONS, "-o", out)


#: The base study's grid: two scenarios of small-256 that plan in a fraction of a second.
SWEEP_GRID = "cluster.gpus=64,128"
#: Options of every generated sweep: one process (the serial executor), no simulation.
SWEEP_OPTIONS = ("--workers", "1", "--no-verify", "--time-limit", "5", "-q")
#: The command that made the base study folder of ``Designs["study"]`` (run in "out").
STUDY_ARGS = sweep_args()

INSTANCE_COMMANDS = ("solve", "evaluate", "compare-fabrics", "torus", "simulate", "sweep")
REAL_DESIGN = _design_json()


def cases() -> list[Case]:
    """Every generated case, in a fixed order."""
    out: list[Case] = []
    small = small_text().encode()

    for name, kind, content, words in hostile_instances():
        for command in INSTANCE_COMMANDS:
            files: dict[str, Content] = {"instance.toml": content}
            kind_here = f"instance: {kind}"
            if command == "simulate":
                files["design.json"] = REAL_DESIGN
                kind_here = f"--instance: {kind}"
            out.append(
                Case(
                    f"{command}/instance/{name}",
                    command,
                    kind_here,
                    _instance_args(command),
                    files,
                    words=("instance.toml", *words),
                )
            )

    for name, kind, items, words in hostile_sets():
        for command in INSTANCE_COMMANDS:
            files = {"instance.toml": small}
            args = _instance_args(command)
            if command == "torus":
                files = {"instance.toml": torus_text().encode()}
            expected = words
            if command == "simulate":
                # simulate takes verify.* only: the others are refused by name.
                files["design.json"] = REAL_DESIGN
                args = ("simulate", "design.json", "-o", "out", "-q")
                heads = [i.split("=", 1)[0][:20] for i in items]
                others = [h for h in heads if not h.startswith("verify.")]
                expected = (others[0] or "path",) if others else words
            elif command == "evaluate" and name == "catalog-device":
                expected = ("search.pin",)  # evaluate asks for its pins before it reads a catalog
            set_args = tuple(a for i in items for a in ("--set", i))
            out.append(
                Case(
                    f"{command}/set/{name}",
                    command,
                    f"--set: {kind}",
                    args + set_args,
                    files,
                    words=expected,
                )
            )

    devices = [
        ("dev-zero", "device", "/dev/zero", ("/dev/zero", "not a regular file")),
        ("dev-urandom", "device", "/dev/urandom", ("/dev/urandom", "not a regular file")),
        ("fifo", "device", "fifo.toml", ("fifo.toml", "not a regular file")),
        ("folder", "device", "folder", ("folder", "folder")),
        ("missing", "device", "missing.toml", ("missing.toml", "not found")),
        ("nul-in-path", "nul in name", "a\x00b.toml", ("null byte",)),
        ("dotdot-path", "name with ..", "../../../../../../../dev/zero", ("not a regular file",)),
    ]
    for name, kind, target, words in devices:
        files = {"fifo.toml": None, "folder/keep": b"", "design.json": REAL_DESIGN}
        for command in INSTANCE_COMMANDS:
            args = tuple(target if a == "instance.toml" else a for a in _instance_args(command))
            where = "--instance" if command == "simulate" else "instance"
            out.append(
                Case(
                    f"{command}/{where.strip('-')}-path/{name}",
                    command,
                    f"{where}: {kind}",
                    args,
                    dict(files),
                    words=words,
                )
            )
        for command, args in (
            ("validate", ("validate", target)),
            ("simulate", ("simulate", target, "-o", "out", "-q")),
            ("catalog", ("catalog", "--catalog", target)),
            ("validate", ("validate", "design.json", "--catalog", target)),
        ):
            out.append(
                Case(
                    f"{command}/path/{'catalog-' if '--catalog' in args else ''}{name}",
                    command,
                    f"{'catalog file: ' if '--catalog' in args else 'design.json: '}{kind}",
                    args,
                    dict(files),
                    words=words,
                )
            )
        text = small_text().replace("[layout]", f'[search]\ncatalog = "{target}"\n\n[layout]')
        out.append(
            Case(
                f"solve/search-catalog/{name}",
                "solve",
                f"search.catalog: {kind}",
                _instance_args("solve"),
                {**files, "instance.toml": text.encode()},
                words=("NUL",) if "\x00" in target else words,
            )
        )

    for name, kind, content, words, reason in hostile_catalogs():
        files = {"catalog.toml": content, "design.json": REAL_DESIGN}
        text = small_text().replace("[layout]", '[search]\ncatalog = "catalog.toml"\n\n[layout]')
        runs = [
            ("catalog", ("catalog", "--catalog", "catalog.toml")),
            ("validate", ("validate", "design.json", "--catalog", "catalog.toml")),
            ("solve", _instance_args("solve")),
            ("compare-fabrics", _instance_args("compare-fabrics")),
        ]
        for command, args in runs:
            out.append(
                Case(
                    f"{command}/catalog/{name}",
                    command,
                    f"catalog file: {kind}",
                    args,
                    {**files, "instance.toml": text.encode()},
                    words=("catalog.toml", *words),
                    output_side=reason,
                )
            )

    for name, kind, edit, words in design_mutations():
        for command, args in (
            ("validate", ("validate", "design.json")),
            # No -o: the design's own instance name would choose the folder.
            ("simulate", ("simulate", "design.json", "-q")),
        ):
            out.append(
                Case(
                    f"{command}/design/{name}",
                    command,
                    f"design.json: {kind}",
                    args,
                    {"design.json": edit},
                    words=("design.json", *words),
                    outputs=("reports",),
                )
            )
    # The catalog a design names is read by validate like any other catalog file.
    for name, kind, target, words in (
        ("dev-zero", "device", "/dev/zero", ("/dev/zero", "not a regular file")),
        ("folder", "device", "/", ("folder",)),
        ("missing", "device", "missing.toml", ("missing.toml", "not found")),
        ("passwd", "name with ..", "../../../../../../etc/passwd", ("passwd",)),
    ):
        out.append(
            Case(
                f"validate/design-catalog/{name}",
                "validate",
                f"design.json: {kind}",
                ("validate", "design.json"),
                {"design.json": _design_json(lambda d, t=target: d.update(catalog=t))},
                words=words,
            )
        )
    for name, kind, content, words in design_texts():
        for command, args in (
            ("validate", ("validate", "design.json")),
            ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
        ):
            out.append(
                Case(
                    f"{command}/design-text/{name}",
                    command,
                    f"design.json: {kind}",
                    args,
                    {"design.json": content},
                    words=("design.json", *words),
                )
            )
    randoms = [
        (name, edit, both)
        for base, count, both in (("small", 40, True), ("h100", 30, False), ("ocs", 30, False))
        for name, edit in design_random_mutations(count, base=base)
    ]
    for i, (name, edit, both) in enumerate(randoms):
        runs = [("validate", ("validate", "design.json"))]
        if both or i % 3 == 0:  # simulate a third of the larger designs' mutations (time)
            runs.append(("simulate", ("simulate", "design.json", "-o", "out", "-q")))
        for command, args in runs:
            out.append(
                Case(
                    f"{command}/design-random/{name}",
                    command,
                    "design.json: random mutation",
                    args,
                    {"design.json": edit},
                    exit=ANY_ANSWER,
                )
            )

    commands = ("solve", "evaluate", "compare-fabrics", "torus")
    for i, (name, _example, text) in enumerate(instance_mutations()):
        command = commands[i % len(commands)]
        out.append(
            Case(
                f"{command}/example-mutation/{name}",
                command,
                "instance: example mutation",
                _instance_args(command),
                {"instance.toml": text},
                words=("instance.toml",),
            )
        )

    for name, args, words in (
        ("unknown-option", ("schema", "--bogus"), ("--bogus",)),
        ("extra-argument", ("schema", "extra"), ("extra",)),
        ("catalog-value", ("schema", "--catalog=yes"), ("--catalog",)),
        ("nul-argument", ("schema", "\x00"), ()),
        ("catalog-kind-bogus", ("catalog", "--kind", "router"), ("--kind",)),
    ):
        command = args[0]
        out.append(Case(f"{command}/usage/{name}", command, "command line", args, words=words))

    out += runtime_cases()
    out += sweep_grid_cases()
    out += study_folder_cases()
    out += workload_cases()
    out += family_design_cases()
    # Round three (issue 32): one module a category, each a cases() of its own.
    from tests.hostile import round3_figures, round3_goodput, round3_limits, round3_studies

    for module in (round3_figures, round3_goodput, round3_limits, round3_studies):
        out += module.cases()
    # Round four (issue 33): the routing a design carries and the inputs that choose it.
    from tests.hostile import round4_routing

    out += round4_routing.cases()
    # Legitimately valid inputs at the edges: they must give an answer (0 or 1), not a traceback.
    edge_caps = (
        "constraints.max_latency_ns=1e9",
        "constraints.max_power_kw=1e7",
        "constraints.max_capex_usd=1e13",
    )
    out += [
        Case(
            "solve/valid/largest-caps",
            "solve",
            "--set: edge of the caps",
            _instance_args("solve") + tuple(a for c in edge_caps for a in ("--set", c)),
            {"instance.toml": small},
            exit=frozenset({0}),
        ),
        Case(
            "torus/valid/untwistable-slice",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.slices=[[4,4,4],[4,4,8]]"),
            {"instance.toml": torus_text().encode()},
            exit=frozenset({0}),
        ),
        Case(
            "torus/valid/pod-too-large-for-ocs",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.slices=[[16,16,16],[16,16,16],[16,16,16]]"),
            {"instance.toml": torus_text().encode()},
            exit=frozenset({1}),
        ),
        Case(
            "torus/valid/cube-of-one",
            "torus",
            "instance: valid edge",
            _instance_args("torus") + ("--set", "torus.cube=1", "--set", "torus.twisted=false"),
            {"instance.toml": torus_text().encode()},
            exit=NONE_OR_BAD,
        ),
        Case(
            "validate/valid/real-design",
            "validate",
            "design.json: valid",
            ("validate", "design.json"),
            {"design.json": REAL_DESIGN},
            exit=frozenset({0}),
        ),
        Case(
            "schema/valid/instance",
            "schema",
            "command line",
            ("schema",),
            exit=frozenset({0}),
        ),
        Case(
            "catalog/valid/default",
            "catalog",
            "command line",
            ("catalog",),
            exit=frozenset({0}),
        ),
        Case(
            "solve/valid/leaf-lost-on-one-plane",
            "solve",
            "--set: failures",
            ("solve", "instance.toml", "-o", "out", "--time-limit", "5", "-q")
            + (
                "--set",
                'verify.failures=[{switches=["leaf0"]}]',
                "--set",
                "verify.routing=['spray']",
            ),
            {"instance.toml": small},
            exit=frozenset({0, 1, EXIT_FAILS}),
        ),
    ]
    return [replace(c, known_bug=KNOWN_BUGS.get(c.id, c.known_bug)) for c in out]


#: What a run says of a file at a part's name that it did not write (it never reads it).
FOREIGN_PART = ("not a part fabric-planner wrote",)
#: Words of a damaged part's notice (planned again, ``planner.study.parts``).
DAMAGED_PART = ("was damaged", "planned again")
#: Cases made in loops over commands that expose a bug outside the inputs' files, by id.
KNOWN_BUGS: dict[str, str] = {}


# ---- sweep: --grid values, scenario values, options ------------------------------------------


def sweep_grid_cases() -> list[Case]:
    """``sweep --grid`` items that are no grid, grids no study may hold, and bad options."""
    small = small_text().encode()
    deep = "[" * 5000 + "]" * 5000
    # (name, kind, grids, extra options, words, exit statuses, known bug)
    rows: list[
        tuple[str, str, tuple[str, ...], tuple[str, ...], tuple[str, ...], frozenset[int], str]
    ]
    rows = [
        ("no-equals", "grid syntax", ("nonsense",), (), ("--grid", "PATH=V1,V2"), BAD, ""),
        ("empty-path", "grid syntax", ("=64,128",), (), ("--grid", "path"), BAD, ""),
        ("empty-values", "grid syntax", ("cluster.gpus=",), (), ("cluster.gpus",), BAD, ""),
        ("only-commas", "grid syntax", ("cluster.gpus=,,,",), (), ("cluster.gpus",), BAD, ""),
        (
            "given-twice",
            "grid syntax",
            ("cluster.gpus=64", "cluster.gpus=128"),
            (),
            ("given twice",),
            BAD,
            "",
        ),
        ("path-5000-dots", "deep nesting", ("." * 5000 + "=1,2",), (), ("--grid",), BAD, ""),
        (
            "path-20-parts",
            "deep nesting",
            ("cluster." + "a." * 20 + "b=1,2",),
            (),
            ("dotted field path",),
            BAD,
            "",
        ),
        (
            "deep-array",
            "deep nesting",
            (f"cluster.gpus={deep}",),
            (),
            ("nested more than",),
            BAD,
            "",
        ),
        ("int-5000-digits", "huge int", ("cluster.gpus=" + "9" * 5000,), (), ("digits",), BAD, ""),
        ("int-30-digits", "huge int", ("cluster.gpus=64," + "9" * 30,), (), ("64-bit",), BAD, ""),
        ("value-nul", "nul", ('name="a\x00b","c"',), (), ("NUL",), BAD, ""),
        (
            "value-too-long",
            "huge file",
            ("description=" + "x" * 70_000,),
            (),
            ("longer than",),
            BAD,
            "",
        ),
        ("unknown-field", "grid syntax", ("cluster.bogus=1,2",), (), ("bogus",), BAD, ""),
        ("below-a-number", "wrong type", ("cluster.gpus.x=1,2",), (), ("cluster.gpus",), BAD, ""),
        (
            "too-many-scenarios",
            "exhausting value",
            tuple(
                f"{k}={','.join(str(v) for v in range(64, 164))}"
                for k in ("cluster.gpus", "verify.seed", "layout.racks_per_row")
            ),
            (),
            ("1,000,000 scenarios", "at most 100,000"),
            BAD,
            "",
        ),
        (
            "same-value-twice",
            "grid syntax",
            ("cluster.gpus=64,64",),
            (),
            (),  # one scenario (merged; said on stderr unless --quiet)
            frozenset({0}),
            "",
        ),
        # Valid TOML, a value the field refuses: the scenario and the field are named before
        # anything runs.
        (
            "gpus-zero",
            "scenario value",
            ("cluster.gpus=64,0",),
            (),
            ("gpus=0", "cluster.gpus"),
            BAD,
            "",
        ),
        (
            "gpus-negative",
            "scenario value",
            ("cluster.gpus=-8,64",),
            (),
            ("cluster.gpus",),
            BAD,
            "",
        ),
        (
            "gpus-string",
            "scenario value",
            ('cluster.gpus="many",64',),
            (),
            ("cluster.gpus",),
            BAD,
            "",
        ),
        (
            "latency-inf",
            "scenario value",
            ("constraints.max_latency_ns=inf,1000",),
            (),
            ("max_latency_ns",),
            BAD,
            "",
        ),
        (
            "latency-nan",
            "scenario value",
            ("constraints.max_latency_ns=nan,1000",),
            (),
            ("max_latency_ns",),
            BAD,
            "",
        ),
        (
            "power-1e300",
            "scenario value",
            ("constraints.max_power_kw=1e300",),
            (),
            ("max_power_kw",),
            BAD,
            "",
        ),
        (
            "capex-minus-inf",
            "scenario value",
            ("constraints.max_capex_usd=-inf",),
            (),
            ("max_capex_usd",),
            BAD,
            "",
        ),
        (
            "family-bogus",
            "scenario value",
            ('search.families=["hypercube"],["clos"]',),
            (),
            ("search.families",),
            BAD,
            "",
        ),
        (
            "family-bare-word",
            "scenario value",
            ("search.families=clos,hypercube",),
            (),
            ("search.families",),
            BAD,
            "",
        ),
        (
            "monte-carlo-100k",
            "scenario value",
            ("verify.monte_carlo_trials=1,100000",),
            (),
            ("monte_carlo_trials",),
            BAD,
            "",
        ),
        ("seed-negative", "scenario value", ("verify.seed=-1,1",), (), ("verify.seed",), BAD, ""),
        ("name-dotdot", "scenario value", ('name="../../escape","x"',), (), ("name",), BAD, ""),
        ("cluster-scalar", "scenario value", ("cluster=1,2",), (), ("cluster",), BAD, ""),
        (
            "nic-ports-zero",
            "scenario value",
            ("cluster.nic_ports=[0],[1]",),
            (),
            ("cluster.nic_ports",),
            BAD,
            "",
        ),
        (
            "traffic-bogus",
            "scenario value",
            ('verify.traffic=[{kind="nope"}]',),
            (),
            ("verify.traffic",),
            BAD,
            "",
        ),
        (
            "workload-without-model",
            "scenario value",
            ("workload.parallelism.data=2,4",),
            (),
            ("workload",),
            BAD,
            "",
        ),
        # Refused when the scenario is planned (a catalog that is no file, one GPU): an error
        # row, exit 1 (documented), or exit 2 once scenarios are checked before anything runs.
        (
            "catalog-device",
            "scenario value",
            ('search.catalog="/dev/zero","default"',),
            (),
            ("/dev/zero",),
            NONE_OR_BAD,
            "",
        ),
        ("one-gpu", "scenario value", ("cluster.gpus=1,2",), (), ("gpus=1",), NONE_OR_BAD, ""),
        # Options.
        ("workers-zero", "options", (SWEEP_GRID,), ("--workers", "0"), ("--workers",), BAD, ""),
        ("workers-text", "options", (SWEEP_GRID,), ("--workers", "many"), ("--workers",), BAD, ""),
        (
            "workers-and-dask",
            "options",
            (SWEEP_GRID,),
            ("--workers", "2", "--dask", "tcp://127.0.0.1:9"),
            ("--dask",),
            BAD,
            "",
        ),
        (
            "time-limit-zero",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "0"),
            ("--time-limit",),
            BAD,
            "",
        ),
        (
            "time-limit-nan",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "nan"),
            ("--time-limit",),
            BAD,
            "",
        ),
        (
            "time-limit-inf",
            "options",
            (SWEEP_GRID,),
            ("--time-limit", "inf"),
            (),
            frozenset({0, 2}),  # no limit, or refused
            "",
        ),
    ]
    out = []
    for name, kind, grids, extra, words, codes, bug in rows:
        args = sweep_args(*grids) + extra
        out.append(
            Case(
                f"sweep/grid/{name}",
                "sweep",
                f"sweep --grid: {kind}",
                args,
                {"instance.toml": small},
                exit=codes,
                words=words,
                known_bug=bug,
                slow=0 in codes,
            )
        )
    out.append(
        Case(
            "sweep/grid/no-grid",
            "sweep",
            "sweep --grid: grid syntax",
            ("sweep", "instance.toml", *SWEEP_OPTIONS, "-o", "out"),
            {"instance.toml": small},
            words=("at least one --grid",),
        )
    )
    # Where the study is written.
    for name, target, files, words in (
        ("output-is-a-file", "taken.txt", {"taken.txt": b"x"}, ("taken.txt",)),
        ("output-dev-null", "/dev/null", {}, ("/dev/null",)),
        ("output-holds-other-files", "out", {"out/notes.txt": b"mine"}, ("notes.txt",)),
    ):
        out.append(
            Case(
                f"sweep/output/{name}",
                "sweep",
                "sweep --grid: output folder",
                sweep_args(out=target),
                {"instance.toml": small, **files},
                words=words,
            )
        )
    return out


# ---- study folders: what a resumed sweep finds in its folder ----------------------------------
def _study_file(name: str, edit: Callable[[bytes], bytes]) -> DesignEdit:
    """A file of the base study folder, edited."""
    return lambda designs: edit(designs["study"]["files"][name])


def _manifest(listing: dict[str, str] | None = None, **changes: Any) -> DesignEdit:
    """The base study's manifest with fields changed and files added to its listing."""

    def edit(data: bytes) -> bytes:
        manifest = json.loads(data) | changes
        manifest["files"] = manifest["files"] | (listing or {})
        return json.dumps(manifest).encode()

    return _study_file(".fabric-planner", edit)


def study_folder_cases() -> list[Case]:
    """A study folder (the base study, planned once) with one file or folder made hostile, then
    the same sweep run into it: it resumes, replaces, or refuses; it never reads without end,
    never writes outside the folder and never ends in a traceback."""
    small = small_text().encode()
    part = f"out/parts/{PART}.parquet"
    deep = b"[" * 100_000 + b"]" * 100_000
    resumes = frozenset({0})
    # (name, kind, files over the copy, extra options, exit, words, known bug, subprocess only)
    rows: list[
        tuple[
            str,
            str,
            dict[str, Content],
            tuple[str, ...],
            frozenset[int],
            tuple[str, ...],
            str,
            bool,
        ]
    ] = [
        ("resume", "valid", {}, (), resumes, (), "", False),
        ("resume-forced", "valid", {}, ("--force",), resumes, (), "", False),
        (
            "study-json-garbage",
            "study.json",
            {"out/study.json": b"\x00\xff garbage"},
            (),
            BAD,
            ("out", "--force"),
            "",
            False,
        ),
        (
            "study-json-null",
            "study.json",
            {"out/study.json": b"null"},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-folder",
            "study.json",
            {"out/study.json": Folder()},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-huge",
            "study.json",
            {"out/study.json": b'{"x": "' + b"x" * (20 * 2**20) + b'"}'},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-deep",
            "study.json",
            {"out/study.json": deep},
            (),
            BAD,
            ("--force",),
            "",
            False,
        ),
        (
            "study-json-fifo",
            "study.json",
            {"out/study.json": None},
            (),
            BAD,
            (),
            "",
            True,
        ),
        (
            "study-json-dev-zero",
            "study.json",
            {"out/study.json": Link("/dev/zero")},
            (),
            BAD,
            (),
            "",
            True,
        ),
        ("parts-a-file", "parts", {"out/parts": b"x"}, (), BAD, ("parts",), "", False),
        (
            "parts-link-outside",
            "parts",
            {"out/parts": Link("../outside"), "outside/keep": b""},
            (),
            BAD,
            ("parts",),
            "",
            False,
        ),
        # A damaged part (not readable Parquet) is planned again, the file kept aside.
        ("part-garbage", "parts", {part: b"garbage"}, (), resumes, DAMAGED_PART, "", False),
        (
            "part-truncated",
            "parts",
            {part: lambda d: d["study"]["files"][f"parts/{d['study']['part']}.parquet"][:500]},
            (),
            resumes,
            DAMAGED_PART,
            "",
            False,
        ),
        (
            "part-other-table",
            "parts",
            {part: lambda d: d["study"]["files"]["study.parquet"]},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "part-hostile-values",
            "parts",
            {part: lambda d: d["study"]["hostile-part"]},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "part-folder",
            "parts",
            {part: Folder()},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        ("part-fifo", "parts", {part: None}, (), BAD, FOREIGN_PART, "", False),
        ("part-dev-zero", "parts", {part: Link("/dev/zero")}, (), BAD, FOREIGN_PART, "", False),
        ("part-passwd", "parts", {part: Link("/etc/passwd")}, (), BAD, FOREIGN_PART, "", False),
        (
            "part-link-outside",
            "parts",
            {part: Link("../../outside/x.parquet"), "outside/keep": b""},
            (),
            BAD,
            FOREIGN_PART,
            "",
            False,
        ),
        (
            "tmp-folder",
            "parts",
            {"out/parts/.evil.tmp": Folder()},
            (),
            resumes,
            (),
            "",
            False,
        ),
        ("tmp-fifo", "parts", {"out/parts/.evil.tmp": None}, (), resumes, (), "", False),
        (
            "tmp-link-outside",
            "parts",
            {"out/parts/.evil.tmp": Link("../../outside/victim"), "outside/victim": b"keep"},
            (),
            resumes,
            (),
            "",
            False,
        ),
        (
            "manifest-garbage",
            "manifest",
            {"out/.fabric-planner": b"garbage"},
            (),
            BAD,
            ("out",),
            "",
            False,
        ),
        (
            "manifest-folder",
            "manifest",
            {"out/.fabric-planner": Folder()},
            (),
            BAD,
            ("out",),
            "",
            False,
        ),
        (
            "manifest-other-command",
            "manifest",
            {"out/.fabric-planner": _manifest(command="solve")},
            (),
            BAD,
            ("solve", "--force"),
            "",
            False,
        ),
        (
            "manifest-lists-outside-forced",
            "manifest",
            {
                "out/.fabric-planner": _manifest({"../outside/victim": "0" * 64}),
                "outside/victim": b"keep",
            },
            ("--force",),
            BAD,
            ("not written by fabric-planner",),
            "",
            False,
        ),
        (
            "manifest-staging-outside",
            "manifest",
            {
                "out/.fabric-planner": _manifest(staging="../outside", complete=False),
                "outside/victim": b"keep",
            },
            (),
            frozenset({0, 2}),
            (),
            "",
            False,
        ),
        (
            "lock-folder",
            "lock",
            {"out/.fabric-planner.lock": Folder()},
            (),
            resumes,
            (),
            "",
            False,
        ),
        ("lock-fifo", "lock", {"out/.fabric-planner.lock": None}, (), resumes, (), "", False),
    ]
    out = []
    for name, kind, files, extra, codes, words, bug, unsafe in rows:
        runs = 0 in codes
        out.append(
            Case(
                f"sweep/study-folder/{name}",
                "sweep",
                f"study folder: {kind}",
                STUDY_ARGS + extra,
                {"instance.toml": small, "out": StudyCopy(), **files},
                exit=codes,
                words=words,
                known_bug=bug,
                slow=runs or unsafe,
                subprocess_only=unsafe,
            )
        )
    return out


# ---- [workload] sections -------------------------------------------------------------------------
#: A workload of small-256's 256 GPUs: a 1B dense model, tensor 8 x pipeline 2 x data 16.
WORKLOAD: dict[str, dict[str, str]] = {
    "workload": {"micro_batch_sequences": "1", "overlap_fraction": "0.0"},
    "workload.parallelism": {
        "tensor": "8",
        "pipeline": "2",
        "data": "16",
        "expert": "1",
        "sequence_parallel": "false",
        "zero_stage": "0",
    },
    "workload.gpu": {"peak_flops": "989e12", "utilisation": "0.4", "price_usd_per_hour": "2.0"},
    "workload.model": {
        "parameters": "1e9",
        "layers": "4",
        "hidden_size": "1024",
        "sequence_length_tokens": "1024",
        "global_batch_sequences": "64",
        "activation_bytes": "2",
        "gradient_bytes": "2",
    },
}
#: A mixture of experts in the same 256 GPUs: 8 experts of which 2 per token, expert parallel 8.
MOE_MODEL = {
    "parameters": "8e9",
    "active_parameters": "2.6e9",
    "experts": "8",
    "top_k": "2",
    "moe_layers": "4",
}


def workload_text(changes: dict[str, str | None]) -> bytes:
    """small-256 with ``WORKLOAD``, ``changes`` applied: "table.key" -> TOML value (None: drop)."""
    tables = {t: dict(fields) for t, fields in WORKLOAD.items()}
    for dotted, value in changes.items():
        table, _, key = dotted.rpartition(".")
        table = table or "workload"
        if value is None:
            tables[table].pop(key, None)
        else:
            tables.setdefault(table, {})[key] = value
    lines = [small_text().rstrip("\n"), ""]
    for table, fields in tables.items():
        lines.append(f"[{table}]")
        lines += [f"{k} = {v}" for k, v in fields.items()]
        lines.append("")
    return "\n".join(lines).encode()


def _moe(**extra: str) -> dict[str, str | None]:
    base: dict[str, str | None] = {f"workload.model.{k}": v for k, v in MOE_MODEL.items()}
    base["workload.parallelism.expert"] = "8"
    return base | {k.replace("__", "."): v for k, v in extra.items()}


def _shown(value: str) -> str:
    """A TOML value as a case id shows it: short, without spaces or quotes."""
    text = re.sub(r"[^A-Za-z0-9.+-]", "", value)
    return text if len(text) <= 12 else f"{len(value)}-chars"


def workload_cases() -> list[Case]:
    """Every workload field at its extremes, products of fields beyond a simulated call, and
    parallelism that does not fit: refused naming the field, through solve, simulate
    --instance, sweep and compare-fabrics; extremes that are allowed end in an answer."""
    m, p, g = "workload.model.", "workload.parallelism.", "workload.gpu."
    bounds: list[tuple[str, str, str]] = [
        # (field, value, words): one past each bound, and values of the wrong kind.
        (m + "parameters", "0", "parameters"),
        (m + "parameters", "1e15", "parameters"),
        (m + "parameters", "nan", "parameters"),
        (m + "parameters", '"big"', "parameters"),
        (m + "layers", "0", "layers"),
        (m + "layers", "10001", "layers"),
        (m + "hidden_size", "0", "hidden_size"),
        (m + "hidden_size", "1000001", "hidden_size"),
        (m + "sequence_length_tokens", "0", "sequence_length_tokens"),
        (m + "sequence_length_tokens", "10000001", "sequence_length_tokens"),
        (m + "global_batch_sequences", "0", "global_batch_sequences"),
        (m + "global_batch_sequences", "100000001", "global_batch_sequences"),
        (m + "activation_bytes", "0", "activation_bytes"),
        (m + "activation_bytes", "9", "activation_bytes"),
        (m + "gradient_bytes", "9", "gradient_bytes"),
        (m + "experts", "0", "experts"),
        (m + "experts", "100001", "experts"),
        (m + "top_k", "1025", "top_k"),
        (m + "moe_layers", "-1", "moe_layers"),
        (m + "capacity_factor", "0.5", "capacity_factor"),
        (m + "capacity_factor", "inf", "capacity_factor"),
        (m + "bogus", "1", "bogus"),
        (p + "tensor", "0", "tensor"),
        (p + "tensor", "1025", "tensor"),
        (p + "pipeline", "100001", "pipeline"),
        (p + "data", "4000001", "data"),
        (p + "expert", "0", "expert"),
        (p + "zero_stage", "4", "zero_stage"),
        (p + "sequence_parallel", '"maybe"', "sequence_parallel"),
        (g + "peak_flops", "0", "peak_flops"),
        (g + "peak_flops", "1e19", "peak_flops"),
        (g + "peak_flops", "inf", "peak_flops"),
        (g + "utilisation", "1.5", "utilisation"),
        (g + "price_usd_per_hour", "-1", "price_usd_per_hour"),
        (g + "power_w", "1e6", "power_w"),
        ("workload.micro_batch_sequences", "0", "micro_batch_sequences"),
        ("workload.micro_batch_sequences", "100001", "micro_batch_sequences"),
        ("workload.overlap_fraction", "1.1", "overlap_fraction"),
        ("workload.overlap_fraction", "nan", "overlap_fraction"),
        (m + "active_parameters", "1e5", "active_parameters"),
        (m + "gradient_bytes", "0", "gradient_bytes"),
        (m + "top_k", "0", "top_k"),
        (m + "moe_layers", "10001", "moe_layers"),
        (m + "capacity_factor", "17", "capacity_factor"),
        (
            m + "source",
            "{ " + ", ".join(f'f{i} = "x"' for i in range(65)) + " }",
            "source",
        ),
        (p + "pipeline", "0", "pipeline"),
        (p + "data", "0", "data"),
        (p + "expert", "100001", "expert"),
        (g + "utilisation", "0", "utilisation"),
        (g + "price_usd_per_hour", "1e5", "price_usd_per_hour"),
        (g + "power_w", "0", "power_w"),
        ("workload.overlap_fraction", "-0.1", "overlap_fraction"),
        ("workload.preset", '"gpt-5"', "preset"),
        ("workload.preset", '"gpt3-175b"', "exactly one of preset"),
    ]
    refused: list[tuple[str, str, dict[str, str | None], tuple[str, ...]]] = [
        (
            f"{field.rsplit('.', 1)[1]}-{_shown(value)}",
            "field out of bounds",
            {field: value},
            (word,),
        )
        for field, value, word in bounds
    ]
    refused += [
        (
            "tensor-activations-2e13",
            "beyond a simulated call",
            {m + "hidden_size": "1000000", m + "sequence_length_tokens": "10000000"},
            ("tp_all_reduce sends", "model.hidden_size"),
        ),
        (
            "gradients-8e14",
            "beyond a simulated call",
            {
                m + "parameters": "1e14",
                m + "gradient_bytes": "8",
                p + "tensor": "1",
                p + "pipeline": "1",
                p + "data": "256",
                m + "global_batch_sequences": "256",
            },
            ("dp_all_reduce sends", "model.gradient_bytes"),
        ),
        (
            "pipeline-activations",
            "beyond a simulated call",
            {
                m + "sequence_length_tokens": "10000000",
                m + "hidden_size": "1000000",
                p + "tensor": "1",
                p + "pipeline": "2",
                p + "data": "128",
                m + "global_batch_sequences": "128",
            },
            ("sends", "model.sequence_length_tokens"),
        ),
        (
            "expert-all-to-all",
            "beyond a simulated call",
            _moe(
                workload__model__sequence_length_tokens="10000000",
                workload__model__hidden_size="65536",
                workload__model__capacity_factor="16.0",
            ),
            ("ep_dispatch sends", "model.capacity_factor"),
        ),
        (
            "expert-no-token",
            "beyond a simulated call",
            _moe(
                workload__model__sequence_length_tokens="4",
                workload__parallelism__sequence_parallel="true",
            ),
            ("ep_dispatch sends no byte",),
        ),
        (
            "product-128",
            "inconsistent parallelism",
            {p + "data": "8"},
            ("workload.parallelism", "128"),
        ),
        (
            "product-512",
            "inconsistent parallelism",
            {p + "data": "32"},
            ("workload.parallelism", "512"),
        ),
        (
            "expert-not-dividing-data",
            "inconsistent parallelism",
            {p + "expert": "3"},
            ("must divide data",),
        ),
        (
            "expert-not-dividing-experts",
            "inconsistent parallelism",
            _moe(workload__parallelism__expert="16"),
            ("must divide the model's experts",),
        ),
        (
            "pipeline-beyond-layers",
            "inconsistent parallelism",
            {p + "pipeline": "8", p + "data": "4"},
            ("exceeds the model's layers",),
        ),
        (
            "batch-not-whole-microbatches",
            "inconsistent parallelism",
            {m + "global_batch_sequences": "65"},
            ("multiple of",),
        ),
        (
            "moe-without-active",
            "inconsistent parallelism",
            _moe(workload__model__active_parameters=None),
            ("active_parameters",),
        ),
        (
            "top-k-all-experts",
            "inconsistent parallelism",
            _moe(workload__model__top_k="8"),
            ("top_k",),
        ),
        ("no-model", "inconsistent parallelism", {m + "parameters": None}, ("parameters",)),
    ]
    commands = ("solve", "simulate", "sweep", "compare-fabrics")
    out: list[Case] = []
    for i, (name, kind, changes, words) in enumerate(refused):
        command = commands[i % len(commands)]
        files: dict[str, Content] = {"instance.toml": workload_text(changes)}
        if command == "simulate":
            files["design.json"] = REAL_DESIGN
        args, codes = _instance_args(command), BAD
        if command == "sweep":
            # A grid that keeps the cluster's GPUs. A product that does not fill the cluster
            # passes the schema: each scenario's plan refuses it (error rows, exit 1).
            args = sweep_args("constraints.max_oversubscription=1,2")
            codes = NONE_OR_BAD if "workload.parallelism" in words else BAD
        # solve refuses a product that does not fill the cluster against cluster.gpus, the
        # simulate path against the design's GPUs; a schema error names the instance file.
        out.append(
            Case(
                f"{command}/workload/{name}",
                command,
                f"workload: {kind}",
                args,
                files,
                exit=codes,
                words=words if "workload.parallelism" in words else ("instance.toml", *words),
            )
        )
    # Allowed extremes: a plan verified under the workload's own traffic, or a clear refusal.
    answer = frozenset({0, 1, EXIT_FAILS})
    allowed: list[tuple[str, dict[str, str | None]]] = [
        ("layers-10000", {m + "layers": "10000"}),
        ("micro-batch-4", {"workload.micro_batch_sequences": "4"}),
        ("bytes-8", {m + "activation_bytes": "8", m + "gradient_bytes": "8"}),
        ("overlap-all", {"workload.overlap_fraction": "1.0"}),
        ("zero-3", {p + "zero_stage": "3"}),
        ("sequence-parallel", {p + "sequence_parallel": "true"}),
        ("parameters-5e13", {m + "parameters": "5e13"}),
        ("hidden-1e6", {m + "hidden_size": "1000000", m + "sequence_length_tokens": "1000"}),
        ("free-gpus", {g + "price_usd_per_hour": "0", g + "peak_flops": "1e18"}),
        ("moe", _moe()),
        (
            "tensor-1-data-256",
            {
                p + "tensor": "1",
                p + "pipeline": "1",
                p + "data": "256",
                m + "global_batch_sequences": "256",
            },
        ),
        (
            "at-the-message-cap",
            {m + "hidden_size": "500000", m + "sequence_length_tokens": "10000000"},
        ),
    ]
    for name, changes in allowed:
        for command in ("solve", "simulate"):
            args = (
                ("solve", "instance.toml", "-o", "out", "--time-limit", "10", "-q")
                if command == "solve"
                else _instance_args("simulate") + ("--time-limit", "10")
            )
            files = {"instance.toml": workload_text(changes)}
            if command == "simulate":
                files["design.json"] = REAL_DESIGN
            out.append(
                Case(
                    f"{command}/workload-valid/{name}",
                    command,
                    "workload: allowed extreme",
                    args,
                    files,
                    exit=answer,
                    slow=True,
                )
            )
    # The workload written for 128 GPUs on the 256-GPU design (the instance itself is whole).
    text = workload_text({p + "data": "8"}).replace(b"gpus = 256", b"gpus = 128", 1)
    out.append(
        Case(
            "simulate/workload/written-for-other-gpus",
            "simulate",
            "workload: inconsistent parallelism",
            _instance_args("simulate"),
            {"instance.toml": text, "design.json": REAL_DESIGN},
            words=("workload.parallelism", "8 x 2 x 8 = 128 GPUs", "the design has 256 GPUs"),
        )
    )
    return out


# ---- design.json of every family -----------------------------------------------------------------
#: Every family, as ``tests.hostile.family_designs`` plans one (a test keeps it the registry).
FAMILIES = tuple(FAMILY_INSTANCES)
#: The wiring kind of each family (clos and ocs_direct share the up-down wiring).
WIRING_KIND = {"clos": "up_down", "ocs_direct": "up_down"}


def _foreign_wiring(family: str) -> DesignEdit:
    """The design of ``family`` wired as the next family in ``FAMILIES`` with another kind."""

    def make(designs: Designs) -> Any:
        data = json.loads(json.dumps(designs[family]))
        own = WIRING_KIND.get(family, family)
        i = FAMILIES.index(family)
        other = next(f for f in FAMILIES[i + 1 :] + FAMILIES[:i] if WIRING_KIND.get(f, f) != own)
        wiring = dict(designs[other]["wiring"])
        if "rails" in data["wiring"] and "rails" in wiring:  # the same SU, another rail kind
            wiring = {**data["wiring"], "kind": wiring["kind"]}
        data["wiring"] = wiring
        return data

    return make


def _wiring_param(value: Any) -> Callable[[dict[str, Any]], None]:
    """Set the first parameter of the design's wiring (up-down has none: add one)."""

    def edit(d: dict[str, Any]) -> None:
        params = [k for k in d["wiring"] if k != "kind"]
        d["wiring"][params[0] if params else "bogus"] = value

    return edit


def family_design_cases() -> list[Case]:
    """A design.json of every family, mutated per category, through validate and simulate."""
    setter = set_path
    per_category: list[tuple[str, str, Callable[[dict[str, Any]], None], tuple[str, ...]]] = [
        ("switches-zero", "zero count", setter("tiers.0.switches", 0), ("tiers.0.switches",)),
        (
            "links-negative",
            "negative count",
            setter("link_classes.0.links", -1),
            ("link_classes.0.links",),
        ),
        ("gpus-string", "wrong type", setter("gpus", "8"), ("gpus",)),
        ("radix-null", "null", setter("tiers.0.radix", None), ("tiers.0.radix",)),
        ("switches-huge", "huge int", setter("tiers.0.switches", 10**30), ("tiers.0.switches",)),
        ("capex-1e300", "inf budget", setter("capex_usd", 1e300), ("capex_usd",)),
        ("family-bogus", "bogus family", setter("family", "hypercube"), ("family",)),
        ("name-dotdot", "name with ..", setter("instance", "../../escape"), ("instance",)),
        ("unknown-key", "design json", setter("tiers.0.bogus", 1), ("bogus",)),
        ("planes-17", "huge int", setter("planes", 17), ("planes",)),
        ("groups-empty", "empty tiers", setter("link_classes.0.groups", []), ("groups",)),
        ("wiring-param-zero", "wiring", _wiring_param(0), ("wiring",)),
        ("wiring-param-string", "wiring", _wiring_param("x"), ("wiring",)),
        (
            "wiring-unknown-kind",
            "wiring",
            setter("wiring", {"kind": "hypercube"}),
            ("wiring", "hypercube"),
        ),
        (
            "no-module-at-the-nic",
            "modules",
            setter("link_classes.0.groups.0.lower_ports_per_module", 0),
            ("link_classes.0.groups.0.lower_ports_per_module", "expected 1 or more"),
        ),
        ("gpus-doubled", "counts that do not add up", lambda d: d.update(gpus=2 * d["gpus"]), ()),
        (
            "class-links-plus-one",
            "counts that do not add up",
            lambda d: d["link_classes"][0].update(links=d["link_classes"][0]["links"] + 1),
            (),
        ),
    ]
    out: list[Case] = []
    for family in FAMILIES:
        edits: list[tuple[str, str, DesignEdit, tuple[str, ...]]] = [
            (name, kind, _design_json(edit, family), words)
            for name, kind, edit, words in per_category
        ]
        edits.append(
            (
                "wiring-of-another-family",
                "wiring",
                _foreign_wiring(family),
                ("wiring.kind", f"the {family} family is wired"),
            )
        )
        if family in ("ocs_torus", "ocs_direct"):
            index = 0 if family == "ocs_torus" else 2
            edits.append(
                (
                    "module-at-the-ocs",
                    "modules",
                    _design_json(
                        setter(f"link_classes.{index}.groups.0.upper_ports_per_module", 1), family
                    ),
                    ("upper_ports_per_module", "OCS mirror"),
                )
            )
        else:
            edits.append(
                (
                    "circuits-without-ocs",
                    "design json",
                    _design_json(setter("circuits", [[0, 1, 0, 1]]), family),
                    ("circuits",),
                )
            )
        for name, kind, edit, words in edits:
            for command, args in (
                ("validate", ("validate", "design.json")),
                ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
            ):
                out.append(
                    Case(
                        f"{command}/design-{family}/{name}",
                        command,
                        f"design.json ({family}): {kind}",
                        args,
                        {"design.json": edit},
                        words=("design.json", *words),
                    )
                )
        for name, edit in design_random_mutations(10, seed=11, base=family):
            out.append(
                Case(
                    f"validate/design-{family}-random/{name}",
                    "validate",
                    f"design.json ({family}): random mutation",
                    ("validate", "design.json"),
                    {"design.json": edit},
                    exit=ANY_ANSWER,
                )
            )
    return out


def runtime_cases() -> list[Case]:
    """Inputs the schema accepts that drive the solver, the simulator or the torus planner to odd
    corners (one GPU, shifts and groups that stay inside a block, 10,000 Monte Carlo trials, OCS
    failures, odd slices): they must end in an answer or a clear error."""
    small = small_text().encode()
    ocs65 = (INSTANCES / "ocs-65k.toml").read_bytes()
    h100 = (INSTANCES / "h100-1k.toml").read_bytes()
    torus = torus_text().encode()
    cat = (REPO / "planner" / "catalog" / "default.toml").read_text(encoding="utf-8")
    huge_price = re.sub(r"^cost_usd = [0-9_.]+$", "cost_usd = 1e300", cat, count=1, flags=re.M)
    answer = frozenset({0, 1, EXIT_FAILS})  # a design (meets or fails its verification), or none
    solve = ("solve", "instance.toml", "-o", "out", "--time-limit", "5", "-q")
    compare = ("compare-fabrics", "instance.toml", "-o", "out", "--time-limit", "5", "-q")
    torus_args = ("torus", "instance.toml", "-o", "out")
    simulate = ("simulate", "design.json", "-o", "out", "-q")

    def sets(*items: str) -> tuple[str, ...]:
        return tuple(a for i in items for a in ("--set", i))

    runs: list[tuple[str, str, tuple[str, ...], dict[str, Content], frozenset[int], str]] = [
        (
            "compare-fabrics/runtime/one-node",
            "compare-fabrics",
            compare + sets("cluster.gpus=8"),
            {"instance.toml": small},
            answer,
            "",
        ),
        (
            "compare-fabrics/runtime/two-gpus",
            "compare-fabrics",
            compare + sets("cluster.gpus=2", "cluster.gpus_per_node=1"),
            {"instance.toml": small},
            answer,
            "",
        ),
        (
            "compare-fabrics/runtime/one-gpu",
            "compare-fabrics",
            compare + sets("cluster.gpus=1", "cluster.gpus_per_node=1"),
            {"instance.toml": small},
            BAD,
            "",
        ),
        (
            "compare-fabrics/runtime/groups-inside-blocks",
            "compare-fabrics",
            compare
            + sets(
                "cluster.gpus=1024",
                'verify.traffic=[{kind="all_to_all",groups="consecutive",group_size=2}]',
            ),
            {"instance.toml": ocs65},
            answer,
            "",
        ),
        (
            "compare-fabrics/runtime/shift-beyond-cluster",
            "compare-fabrics",
            compare + sets("cluster.gpus=1024"),
            {"instance.toml": ocs65},
            BAD,
            "",
        ),
        (
            "compare-fabrics/runtime/odd-gpus",
            "compare-fabrics",
            compare + sets("cluster.gpus=1032", 'verify.traffic=[{kind="random_permutation"}]'),
            {"instance.toml": ocs65},
            answer,
            "",
        ),
        (
            "compare-fabrics/runtime/torus-instance",
            "compare-fabrics",
            compare,
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/cube-of-two",
            "torus",
            torus_args + sets("torus.cube=2", "torus.slices=[[2,2,4],[2,4,4],[4,4,8]]"),
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/cube-of-three",
            "torus",
            torus_args + sets("torus.cube=3", "torus.slices=[[3,3,6]]"),
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/long-slice",
            "torus",
            torus_args + sets("torus.slices=[[8,4,4]]"),
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/availability-half",
            "torus",
            torus_args + sets("torus.cube_availability=0.5"),
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/target-tiny",
            "torus",
            torus_args + sets("torus.target_availability=0.01"),
            {"instance.toml": torus},
            answer,
            "",
        ),
        (
            "torus/runtime/unknown-ocs",
            "torus",
            torus_args + sets('torus.ocs="nope"'),
            {"instance.toml": torus},
            BAD,
            "",
        ),
        (
            "torus/runtime/no-medium",
            "torus",
            torus_args + sets("torus.link_gbps=800"),
            {"instance.toml": torus},
            BAD,
            "",
        ),
        ("torus/runtime/no-torus-section", "torus", torus_args, {"instance.toml": small}, BAD, ""),
        (
            "solve/runtime/one-gpu",
            "solve",
            solve + sets("cluster.gpus=1", "cluster.gpus_per_node=1"),
            {"instance.toml": small},
            BAD,
            "",
        ),
        (
            "solve/runtime/capex-cap-one-dollar",
            "solve",
            solve + sets("constraints.max_capex_usd=1"),
            {"instance.toml": small},
            frozenset({1}),
            "",
        ),
        (
            "solve/runtime/latency-cap-one-ns",
            "solve",
            solve + sets("constraints.max_latency_ns=1"),
            {"instance.toml": small},
            frozenset({1}),
            "",
        ),
        (
            "solve/runtime/no-switch-models",
            "solve",
            solve + sets("search.switch_models=[]"),
            {"instance.toml": small},
            NONE_OR_BAD,
            "",
        ),
        (
            "solve/runtime/one-rack-per-row",
            "solve",
            solve + sets("layout.racks_per_row=1", "layout.nodes_per_rack=1"),
            {"instance.toml": small},
            answer,
            "",
        ),
        (
            "solve/runtime/zero-weights",
            "solve",
            solve + sets("objective.capex_weight=0", "objective.energy_weight=0"),
            {"instance.toml": small},
            answer,
            "",
        ),
        (
            "solve/runtime/monte-carlo-10000",
            "solve",
            solve + sets("verify.monte_carlo_trials=10000"),
            {"instance.toml": small},
            answer,
            "",
        ),
        (
            "solve/runtime/h100-leaf-lost",
            "solve",
            solve + sets('verify.failures=[{switches=["leaf0"]}]'),
            {"instance.toml": h100},
            answer,
            "",
        ),
        (
            "solve/runtime/catalog-price-1e300",
            "solve",
            ("solve", "instance.toml", "-o", "out", "--no-verify", "--time-limit", "5", "-q")
            + sets('search.catalog="catalog.toml"'),
            {"instance.toml": small, "catalog.toml": huge_price.encode()},
            BAD,
            "",
        ),
        (
            "simulate/runtime/monte-carlo-10000",
            "simulate",
            simulate + sets("verify.monte_carlo_trials=10000"),
            {"design.json": _design_json()},
            answer,
            "",
        ),
        (
            "simulate/runtime/ocs-device-down",
            "simulate",
            simulate + sets('verify.failures=[{switches=["ocs0"]}]'),
            {"design.json": _design_json(base="ocs")},
            answer,
            "",
        ),
        (
            "simulate/runtime/ocs-device-unknown",
            "simulate",
            simulate + sets('verify.failures=[{switches=["ocs99"]}]'),
            {"design.json": _design_json(base="ocs")},
            BAD,
            "",
        ),
        (
            "simulate/runtime/every-spine-down",
            "simulate",
            simulate
            + sets(
                'verify.failures=[{switches=["spine0","spine1","spine2","spine3","spine4","spine5","spine6","spine7","spine8","spine9","spine10","spine11","spine12","spine13","spine14","spine15"]}]'
            ),
            {"design.json": _design_json(base="h100")},
            answer,
            "",
        ),
        (
            "simulate/runtime/only-plane-lost",
            "simulate",
            simulate + sets("verify.failures=[{planes=1}]"),
            {"design.json": _design_json(base="h100")},  # one plane: losing it loses all
            BAD,
            "",
        ),
        (
            "simulate/runtime/shift-onto-itself",
            "simulate",
            simulate + sets('verify.traffic=[{kind="shift",group_size=256}]'),
            {"design.json": _design_json()},
            BAD,
            "",
        ),
        (
            "simulate/runtime/incast-wider-than-cluster",
            "simulate",
            simulate + sets('verify.traffic=[{kind="incast",fan_in=1000}]'),
            {"design.json": _design_json()},
            answer,
            "",
        ),
        (
            "simulate/runtime/groups-larger-than-cluster",
            "simulate",
            simulate
            + sets('verify.traffic=[{kind="all_to_all",groups="consecutive",group_size=4000000}]'),
            {"design.json": _design_json()},
            BAD,
            "",
        ),
        (
            "simulate/runtime/tensor-parallel-wider-than-domain",
            "simulate",
            simulate
            + sets(
                'verify.traffic=[{kind="all_reduce_ring",groups="tensor_parallel",group_size=16}]'
            ),
            {"design.json": _design_json()},  # scale-up domains of 8: no group of 16 fits one
            BAD,
            "",
        ),
        (
            "simulate/runtime/self-link",
            "simulate",
            simulate + sets('verify.failures=[{links=["leaf0-leaf0"]}]'),
            {"design.json": _design_json()},
            BAD,
            "",
        ),
    ]
    return [
        Case(cid, command, "runtime: odd valid input", args, files, exit=codes, output_side=reason)
        for cid, command, args, files, codes, reason in runs
    ]


def counts(all_cases: list[Case]) -> tuple[Counter[str], Counter[str]]:
    """Cases per command and per input kind (the part of the kind before any ':' detail)."""
    return Counter(c.command for c in all_cases), Counter(c.kind for c in all_cases)


def main() -> None:
    """Print the counts per command, per input kind, and per surface and command."""
    all_cases = cases()
    by_command, by_kind = counts(all_cases)
    print(f"{len(all_cases)} cases")
    print("per command:")
    for k, v in sorted(by_command.items()):
        print(f"  {k:<18} {v}")
    print("per input kind:")
    for k, v in sorted(by_kind.items()):
        print(f"  {k:<52} {v}")
    print(f"marked output side (xfail): {sum(1 for c in all_cases if c.output_side)}")
    print(f"marked known bug (xfail strict): {sum(1 for c in all_cases if c.known_bug)}")
    print(f"marked slow: {sum(1 for c in all_cases if c.slow)}")
    print(f"subprocess only: {sum(1 for c in all_cases if c.subprocess_only)}")
    surfaces = sorted({c.kind.split(":")[0] for c in all_cases})
    short = {"compare-fabrics": "compare", "validate": "valid."}
    print("input surface x command:")
    print(" " * 30 + "".join(f"{short.get(c, c):>9}" for c in COMMANDS) + "    total")
    for surface in surfaces:
        row = Counter(c.command for c in all_cases if c.kind.split(":")[0] == surface)
        print(
            f"{surface:<30}"
            + "".join(f"{row.get(c, 0):>9}" for c in COMMANDS)
            + f"{sum(row.values()):>9}"
        )


if __name__ == "__main__":
    main()

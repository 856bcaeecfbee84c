"""The hostile inputs themselves, before they are made cases: instance files no command may
accept, catalog files, design.json edits and raw design.json texts that must be refused,
``--set`` values, and deterministic random mutations of the example instances and of the real
designs (fixed seeds). ``command_cases`` runs them through the commands.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Callable
from typing import Any

from tests.hostile.cases_base import (
    INSTANCES,
    REPO,
    Content,
    DesignEdit,
    Designs,
    _design_json,
    _edit,
    drop_key,
    set_path,
    small_text,
    torus_text,
)


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

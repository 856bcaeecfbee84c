"""Hostile cases of issue 33's category: the routing a design carries, and the inputs that choose it."""

from __future__ import annotations

from tests.hostile.generator import INSTANCES, Case, _design_json, set_path


def _sets(*items: str) -> tuple[str, ...]:
    return tuple(a for i in items for a in ("--set", i))


def _ocs_instance(failed_switch: str) -> bytes:
    """The small OCS direct-connect instance of the family designs, with one switch failed."""
    return f"""name = "hostile-ocs-routing"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
[search]
families = ["ocs_direct"]
[verify]
failures = [{{ switches = ["{failed_switch}"] }}]
""".encode()


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    small = (INSTANCES / "small-256.toml").read_bytes()
    solve = ("solve", "instance.toml", "-o", "out", "--time-limit", "10", "-q")
    out: list[Case] = []
    for name, item, words in (
        ("ocs-routing-bogus", 'search.ocs_routing="ecmp"', ("search.ocs_routing", "wcmp")),
        ("ocs-hedge-one", "search.ocs_hedge=1", ("search.ocs_hedge",)),
        ("ocs-hedge-negative", "search.ocs_hedge=-0.1", ("search.ocs_hedge",)),
        ("ocs-hedge-nan", "search.ocs_hedge=nan", ("search.ocs_hedge",)),
        (
            "dragonfly-routing-bogus",
            'search.dragonfly_routing="adaptive"',
            ("search.dragonfly_routing", "ugal_g"),
        ),
        (
            "traffic-requirement-zero",
            'verify.traffic=[{kind="random_permutation", size_bytes=1048576, '
            "min_throughput_fraction=0}]",
            ("min_throughput_fraction",),
        ),
        (
            "traffic-requirement-above-one",
            'verify.traffic=[{kind="random_permutation", size_bytes=1048576, '
            "min_throughput_fraction=1.5}]",
            ("min_throughput_fraction",),
        ),
    ):
        out.append(
            Case(
                f"solve/round4/{name}",
                "solve",
                "routing inputs",
                solve + _sets(item),
                {"instance.toml": small},
                words=words,
                outputs=(),
            )
        )
    # Failures named on the merged OCS fabric: a spine or a device the design does not have.
    for name, switch, words in (
        ("spine-out-of-range", "spine99999", ("spine99999", "no such spine")),
        ("ocs-out-of-range", "ocs99999", ("ocs99999", "no such")),
    ):
        text = _ocs_instance(switch)
        out.append(
            Case(
                f"solve/round4/ocs-failure-{name}",
                "solve",
                "failure names on an OCS fabric",
                ("solve", "instance.toml", "-o", "out", "--time-limit", "20", "-q"),
                {"instance.toml": text},
                words=words,
                slow=True,  # plans and simulates a 256-GPU OCS fabric for real
            )
        )
    # The routing carried in design.json.
    for family, name, edit, words in (
        ("ocs_direct", "routing-bogus", set_path("routing", "ecmp"), ("routing",)),
        ("ocs_direct", "hedge-one", set_path("routing_hedge", 1.0), ("routing_hedge",)),
        ("ocs_direct", "hedge-string", set_path("routing_hedge", "x"), ("routing_hedge",)),
        ("dragonfly", "routing-bogus", set_path("wiring.routing", "adaptive"), ("routing",)),
        ("dragonfly", "arrangement-bogus", set_path("wiring.arrangement", "x"), ("arrangement",)),
    ):
        for command, args in (
            ("validate", ("validate", "design.json")),
            ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
        ):
            out.append(
                Case(
                    f"{command}/round4/design-{family}-{name}",
                    command,
                    f"design.json ({family}): routing",
                    args,
                    {"design.json": _design_json(edit, family)},
                    words=("design.json", *words),
                )
            )
    return out

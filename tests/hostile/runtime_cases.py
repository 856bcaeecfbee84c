"""Runtime cases: inputs the schema accepts that drive the solver, the simulator or the torus
planner to odd corners (one GPU, groups that stay inside a block, many Monte Carlo trials, OCS
failures, odd slices); each must end in an answer or a clear error.
"""

from __future__ import annotations

import re

from planner.cli.typer_app import EXIT_FAILS
from tests.hostile.cases_base import (
    BAD,
    INSTANCES,
    NONE_OR_BAD,
    REPO,
    Case,
    Content,
    _design_json,
    small_text,
    torus_text,
)


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

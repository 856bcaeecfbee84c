"""Hostile cases of issue 32's category: figures that must be finite and true: overflow, non-finite results, list items, strict numbers, memory, one-block compare."""

from __future__ import annotations

from tests.hostile.generator import (
    REAL_DESIGN,
    Case,
    Content,
    _instance_args,
    workload_text,
)

G, S, P = "workload.gpu.", "workload.search.", "workload.parallelism."
#: A GPU with memory, which ``[workload.search]`` needs.
MEMORY = {G + "memory_gib": "80"}

#: simulate --instance checks a workload against the design's GPU count only
#: (``planner.planning.check_workload_fits``, not this category's file): the placement check
#: (``planner.checks.check_workload_placement``) is still to be called there.
PLACEMENT_ON_SIMULATE = (
    "simulate --instance: planner.planning.check_workload_fits does not yet place the groups "
    "(check_workload_placement), so the simulator's 'verify: stages (64) does not divide 32' "
    "names no field"
)

#: (name, changes to the generator's workload instance, words the refusal holds).
REFUSED: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = [
    # A tiny GPU made the step time and the cost per token inf (exit 0).
    ("peak-flops-tiny", {G + "peak_flops": "1e-300"}, ("workload.gpu.peak_flops", "1000000000")),
    ("utilisation-tiny", {G + "utilisation": "1e-300"}, ("workload.gpu.utilisation", "0.001")),
    # Search items of 0 or below reached the search (ZeroDivisionError, an internal error).
    (
        "search-microbatch-zero",
        MEMORY | {S + "micro_batch_sequences": "[1, 0]"},
        ("workload.search.micro_batch_sequences.1", "greater than or equal to 1"),
    ),
    (
        "search-virtual-stages-negative",
        MEMORY | {S + "virtual_stages": "[-1]"},
        ("workload.search.virtual_stages.0", "greater than or equal to 1"),
    ),
    # true taken as a number.
    ("spray-entropies-true", {"verify.spray_entropies": "true"}, ("verify.spray_entropies",)),
    (
        "transport-acks-true",
        {"verify.transport.acks_per_packet": "true"},
        ("verify.transport.acks_per_packet", "not true or false"),
    ),
    ("peak-flops-true", {G + "peak_flops": "true"}, ("workload.gpu.peak_flops",)),
    # 64 pipeline stages on 32 nodes passed the GPU count and ended in a simulator error.
    (
        "pipeline-beyond-nodes",
        {P + "tensor": "1", P + "pipeline": "64", P + "data": "4", "workload.model.layers": "64"},
        ("workload.parallelism.pipeline", "32 nodes"),
    ),
    (
        "search-microbatch-true",
        MEMORY | {S + "micro_batch_sequences": "[true]"},
        ("workload.search.micro_batch_sequences.0", "not true or false"),
    ),
]


#: OCS direct-connect of one aggregation block (every GPU in one pod): nothing to join.
ONE_BLOCK = b"""name = "ocs-one-block"
[cluster]
gpus = 256
gpus_per_node = 8
nic_gbps = 400
nic_ports = [1]
[search]
families = ["ocs_direct"]
pin = { pods = 1 }
"""


def one_block_cases() -> list[Case]:
    """compare-fabrics compares the Clos alone; solve refuses naming the pods (both planned)."""
    files: dict[str, Content] = {"instance.toml": ONE_BLOCK}
    return [
        Case(
            "compare-fabrics/round3/ocs-one-block",
            "compare-fabrics",
            "round3: one block",
            _instance_args("compare-fabrics"),
            files,
            exit=frozenset({0}),
            slow=True,
        ),
        Case(
            "solve/round3/ocs-one-block",
            "solve",
            "round3: one block",
            _instance_args("solve"),
            files,
            words=("search.pin.pods", "one aggregation block"),
            slow=True,
        ),
    ]


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    out: list[Case] = one_block_cases()
    for name, changes, words in REFUSED:
        for command in ("solve", "simulate"):
            files: dict[str, Content] = {"instance.toml": workload_text(changes)}
            if command == "simulate":
                files["design.json"] = REAL_DESIGN
            # A schema error names the file; a check against the cluster names the field.
            checked = any(w.startswith("workload.parallelism") for w in words)
            out.append(
                Case(
                    f"{command}/round3/{name}",
                    command,
                    "round3: figures",
                    _instance_args(command),
                    files,
                    words=words if checked else ("instance.toml", *words),
                    known_bug=PLACEMENT_ON_SIMULATE if checked and command == "simulate" else "",
                )
            )
    return out

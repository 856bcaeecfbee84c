"""Hostile cases of issue 32's category: figures that must be finite and true: overflow, non-finite results, list items, strict numbers, memory, one-block compare."""

from __future__ import annotations

from planner.cli.typer_app import EXIT_FAILS
from tests.hostile.generator import (
    REAL_DESIGN,
    Case,
    Content,
    _design_json,
    _instance_args,
    set_path,
    small_text,
    workload_text,
)

G, S, P = "workload.gpu.", "workload.search.", "workload.parallelism."
#: A GPU with memory, which ``[workload.search]`` needs.
MEMORY = {G + "memory_gib": "80"}

#: (name, changes to the generator's workload instance, words the refusal holds).
REFUSED: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = [
    # A tiny GPU made the step time and the cost per token inf (exit 0).
    ("peak-flops-tiny", {G + "peak_flops": "1e-300"}, ("workload.gpu.peak_flops", "1000000000")),
    ("utilisation-tiny", {G + "utilisation": "1e-300"}, ("workload.gpu.utilisation", "0.001")),
    # A pacing of 1e-300 made a 4e299 s step (a few times smaller overflows).
    (
        "pacing-tiny",
        {"verify.transport.pacing_fraction": "1e-300"},
        ("verify.transport.pacing_fraction", "0.01"),
    ),
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


def memory_cases() -> list[Case]:
    """Hashed spraying with the most entropies under the 2 GiB limit: an answer, not MemoryError.

    Every flow's sub-flows (65,280 flows of 977 packets: 64 million) were built at once, beyond
    the memory budget (MemoryError after 13 s); they are now built a chunk at a time
    (``planner.sim.hashed_spray``), and the time limit cuts the simulation (exit 0 in 25 s).
    """
    text = small_text().rstrip("\n") + (
        "\n\n[verify]\nspray_entropies = 65536\n"
        'traffic = [{ kind = "uniform_all_to_all", size_bytes = 1e9 }]\n'
    )
    return [
        Case(
            "solve/round3/spray-entropies-65536",
            "solve",
            "round3: memory",
            ("solve", "instance.toml", "-o", "out", "--time-limit", "20", "-q"),
            {"instance.toml": text.encode()},
            exit=frozenset({0, 1, EXIT_FAILS}),
            slow=True,
            subprocess_only=True,
        )
    ]


def dragonfly_cases() -> list[Case]:
    """A dragonfly design.json naming a million global links per group pair (78 million links).

    It reached an array of one entry per global link in validate and simulate (MemoryError);
    the wiring's counts are now compared with the design's in closed form first.
    """
    edit = _design_json(set_path("wiring.global_links_per_pair", 1_000_000), "dragonfly")
    return [
        Case(
            f"{command}/round3/dragonfly-global-links-1e6",
            command,
            "round3: memory",
            args,
            {"design.json": edit},
            words=("design.json", "wiring", "global links"),
        )
        for command, args in (
            ("validate", ("validate", "design.json")),
            ("simulate", ("simulate", "design.json", "-o", "out", "-q")),
        )
    ]


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    out: list[Case] = one_block_cases() + memory_cases() + dragonfly_cases()
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
                )
            )
    return out

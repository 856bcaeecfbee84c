"""Hostile cases of issue 32's category: time limits that bound the whole command, and output folders with long names."""

from __future__ import annotations

from tests.hostile.generator import INSTANCES, Case

#: Exits of a run that ends with an answer: a design (meeting or failing its verification), or none.
ANSWER = frozenset({0, 1, 4})


def big_search_text() -> str:
    """A [workload.search] over tens of thousands of layouts (about 20 s of timing per search
    on an idle core): a mixture of experts on 4,096 GPUs, 16 microbatch sizes and 16
    interleavings, a GPU with room for nearly all of them."""
    text = (INSTANCES / "workload-gpt3-175b-search.toml").read_text(encoding="utf-8")
    edits = [
        ("gpus = 128\n", "gpus = 4096\n"),
        (
            'preset = "gpt3-175b"\n',
            "model = { parameters = 1e12, active_parameters = 1e11, layers = 256, "
            "hidden_size = 16384, attention_heads = 256, sequence_length_tokens = 4096, "
            "global_batch_sequences = 1048576, experts = 256, top_k = 2, moe_layers = 128 }\n",
        ),
        (
            "parallelism = { tensor = 8, pipeline = 4, data = 4, zero_stage = 1 }",
            "parallelism = { tensor = 8, pipeline = 16, data = 32, zero_stage = 1 }",
        ),
        ("memory_gib = 80 }", "memory_gib = 800 }"),
        ("micro_batch_sequences = [1, 2, 4, 8]", f"micro_batch_sequences = {list(range(1, 17))}"),
        ("virtual_stages = [1, 2, 4, 8]", f"virtual_stages = {list(range(1, 17))}"),
    ]
    for old, new in edits:
        assert old in text, old
        text = text.replace(old, new, 1)
    return text


def cases() -> list[Case]:
    """This category's cases (``tests.hostile.generator.cases`` adds them)."""
    small = (INSTANCES / "small-256.toml").read_bytes()
    return [
        Case(
            "solve/round3/output-folder-300-characters",
            "solve",
            "output folder",
            ("solve", "instance.toml", "-o", "o" * 300, "-q"),
            {"instance.toml": small},
            words=("too long", "300 bytes", "255"),
            outputs=(),
        ),
        Case(
            "solve/round3/output-folder-inner-name-too-long",
            "solve",
            "output folder",
            ("solve", "instance.toml", "-o", "out/" + "p" * 256 + "/report", "-q"),
            {"instance.toml": small},
            words=("too long", "256 bytes"),
            outputs=(),
        ),
        Case(
            "solve/round3/parallelism-search-tiny-time-limit",
            "solve",
            "time limit",
            ("solve", "instance.toml", "-o", "out", "--time-limit", "2", "-q"),
            {"instance.toml": big_search_text().encode()},
            exit=ANSWER,
            words=("time limit: the parallelism search",),
            slow=True,
        ),
    ]

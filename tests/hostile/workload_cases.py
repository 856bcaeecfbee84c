"""``[workload]`` cases: small-256 with a workload (``WORKLOAD``, ``MOE_MODEL``) whose fields are
taken to their extremes, multiplied beyond a simulated call, or split into parallelism that does
not fit, through solve, simulate --instance, sweep and compare-fabrics.
"""

from __future__ import annotations

import re

from planner.cli.typer_app import EXIT_FAILS
from tests.hostile.cases_base import (
    BAD,
    NONE_OR_BAD,
    REAL_DESIGN,
    Case,
    Content,
    _instance_args,
    small_text,
    sweep_args,
)

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

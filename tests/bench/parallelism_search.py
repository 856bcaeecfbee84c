"""Benchmark: the parallelism search against published layouts (not run in CI).

Run: ``uv run python tests/bench/parallelism_search.py [--setup llama|gpt3] [--repeat N]``.
Prints a Markdown table: for each fabric and each overlap fraction, the search's wall time (best
of N), the layouts it timed, and the chosen layout beside the published one, both timed by the
same analytic model. Setups:

* ``llama`` (default): Llama 3.1 405B on 16,384 H100s, non-blocking 400G, 2:1 and 7:1
  oversubscribed, and 800G; published Llama 3 Table 4: TP 8, PP 16, DP 128, sequence parallel,
  FSDP = ZeRO 2, interleaved v = 4, full recomputation (tests/workload/test_strong_scaling.py).
  The brief's target: well under 60 s.
* ``gpt3``: GPT-3 175B on 1,536 A100s (Narayanan et al. 2021, https://arxiv.org/abs/2104.04473,
  Table 1: TP 8, PP 16, DP 12, batch 1,536, activation recomputation), DGX A100 nodes: one
  200 Gb/s HDR NIC a GPU, NVLink 3 at 2,400 Gb/s a GPU each way (300 GB/s), A100 312 TFLOP/s
  bf16 (NVIDIA datasheet) at 50 % while computing (estimate; the paper reports 153 TFLOP/s a GPU
  over the whole step, 49 % of peak), 80 GB. ``gpt3-2021`` searches with the run's own toolbox:
  ZeRO 0, full recomputation, no interleaving.
"""

from __future__ import annotations

import argparse
import time

from planner.schema.workload import Workload
from planner.workload.analytic import bandwidths
from planner.workload.parallelism_search import choose_parallelism, search

#: Llama 3.1 405B on 16,384 H100 SXM (989 TFLOP/s bf16 at 40 %, 80 GB), Table 4's layout.
PUBLISHED = {
    "preset": "llama3.1-405b",
    "parallelism": {
        "tensor": 8,
        "pipeline": 16,
        "data": 128,
        "sequence_parallel": True,
        "zero_stage": 2,
        "virtual_stages": 4,
    },
    "recompute": "full",
    "gpu": {"peak_flops": 989e12, "utilisation": 0.4, "price_usd_per_hour": 2.0, "memory_gib": 80},
    "search": {},
}
#: (label, NIC Gb/s, oversubscription).
FABRICS = (
    ("400G 1:1", 400, 1.0),
    ("400G 2:1", 400, 2.0),
    ("400G 7:1", 400, 7.0),
    ("800G 1:1", 800, 1.0),
)
OVERLAPS = (0.5, 1.0)
#: GPT-3 175B on 1,536 A100s, Narayanan et al. 2021 Table 1's layout (module docstring).
GPT3 = {
    "preset": "gpt3-175b",
    "parallelism": {"tensor": 8, "pipeline": 16, "data": 12},
    "recompute": "full",
    "gpu": {"peak_flops": 312e12, "utilisation": 0.5, "price_usd_per_hour": 2.0, "memory_gib": 80},
    "search": {},
}
#: Each setup: the published workload, its fabrics (label, NIC Gb/s, oversubscription) and the
#: scale-up bandwidth per GPU (Gb/s each way).
SETUPS = {
    "llama": (PUBLISHED, FABRICS, 3600.0),
    "gpt3": (GPT3, (("200G 1:1", 200, 1.0),), 2400.0),
    # The same, searched with the 2021 run's toolbox: no sharded optimizer, full recomputation
    # only (selective recomputation and sequence parallelism came in 2022), no interleaving.
    "gpt3-2021": (
        GPT3 | {"search": {"zero_stages": [0], "recompute": ["full"], "virtual_stages": [1]}},
        (("200G 1:1", 200, 1.0),),
        2400.0,
    ),
}


def layout_text(row: dict[str, object]) -> str:
    """Megatron Table 1 terms: t, p, d, b, v, ZeRO, recompute."""
    return (
        f"t{row['tensor']} p{row['pipeline']} d{row['data']} b{row['micro_batch_sequences']} "
        f"v{row['virtual_stages']} z{row['zero_stage']} {row['recompute']}"
    )


def main() -> None:
    """Time the search on each fabric and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs per case (best is kept)")
    parser.add_argument("--setup", choices=sorted(SETUPS), default="llama")
    args = parser.parse_args()
    published, fabrics, scale_up_gbps = SETUPS[args.setup]
    print(
        "| fabric | overlap | search (s) | layouts timed | published: layout, step (s), "
        "TFLOP/s, MFU | chosen: layout, step (s), TFLOP/s, MFU |"
    )
    print("|---|---:|---:|---:|---|---|")
    for label, nic, ratio in fabrics:
        bw = bandwidths(8, scale_up_gbps, nic, oversubscription=ratio)
        for overlap in OVERLAPS:
            w = Workload.model_validate(published | {"overlap_fraction": overlap})
            best = float("inf")
            for _ in range(args.repeat):
                start = time.perf_counter()
                _, table = choose_parallelism(w, bw, node_gpus=8)
                best = min(best, time.perf_counter() - start)
            found = search(w, w.parallelism.gpus, bw, node_gpus=8)
            timed = 0 if found is None else found.timed
            given, chosen = table.to_dicts()
            cells = [
                f"{layout_text(r)}, {r['step_s']:.2f}, {r['tflops_per_gpu']:.0f}, {r['mfu']:.1%}"
                for r in (given, chosen)
            ]
            print(f"| {label} | {overlap:g} | {best:.3f} | {timed:,} | {cells[0]} | {cells[1]} |")


if __name__ == "__main__":
    main()

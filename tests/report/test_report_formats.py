"""How figures read in report.md, report.html and the pictures: units, numbers by kind, plurals.

One mapping for headings and axis labels (``column_label``), one formatter by kind of figure
(``figure_text``), one plural helper (``count_text``), one place for the workload assumed
(``workload_assumptions``). Before, the page said "capex (usd)", "2.77472e6", "1.00" beside "1",
byte counts as floats and "1 switches".
"""

from __future__ import annotations

from typing import Any

import pytest

from planner.api import load_instance
from planner.report.tables import workload_assumptions
from planner.report.text import column_label, column_texts, count_text, figure_text
from tests.conftest import REPO_ROOT


@pytest.mark.parametrize(
    ("column", "label"),
    [
        ("capex_usd", "capex (USD)"),
        ("power_kw", "power (kW)"),
        ("min_length_m", "min length (m)"),
        ("unit_power_w", "unit power (W)"),
        ("bisection_gbps", "bisection (Gb/s)"),
        ("max_latency_ns", "max latency (ns)"),
        ("time_s", "time (s)"),
        ("blast_radius_gpus", "blast radius (GPUs)"),
        ("tokens_per_s", "tokens/s"),
        ("scale_up_gbps_per_gpu", "scale up (Gb/s per GPU)"),
        ("usd_per_million_tokens", "USD per million tokens"),
        ("sim_fraction_ecmp", "sim fraction ECMP"),
        ("gpus", "GPUs"),
        ("tier", "tier"),
    ],
)
def test_a_column_reads_as_words_with_its_unit(column: str, label: str) -> None:
    assert column_label(column) == label


@pytest.mark.parametrize(
    ("column", "value", "text"),
    [
        # Money: dollars, no cents from $100 up or on whole dollars.
        ("capex_usd", 14_356_069.35, "$14,356,069"),
        ("unit_cost_usd", 80.0, "$80"),
        ("usd_per_million_tokens", 0.7009, "$0.70"),
        ("delta_tco_usd", -1234.5, "-$1,234"),
        # Byte counts in binary units, never a float of bytes.
        ("size_bytes", 33_096_774_193.55, "30.8 GiB"),
        ("bytes_per_gpu_per_iteration", 512.0, "512 B"),
        ("size_bytes", 469_762_048, "448 MiB"),
        # Fractions and ratios to three significant digits, the same in a whole column.
        ("sim_fraction_spray", 1.0, "1.00"),
        ("sim_fraction_spray", 0.9999999999, "1.00"),
        ("sim_fraction_ecmp", 1 / 3, "0.333"),
        ("optics_power_share", 0.2609, "0.261"),
        ("gap", 0.0, "0"),
        # Measured floats: three significant digits, thousands separated, never 2.77e6.
        ("time_s", 0.009102, "0.00910"),
        ("max_latency_ns", 2228.13, "2,228"),
        ("whatever", 2.77472e6, "2,774,720"),
        ("p50_fct_s", 5.24e-6, "0.00000524"),
        # Whole numbers as integers.
        ("count", 4096, "4,096"),
        ("switches", 96.0, "96"),
        # The rest.
        ("time_s", float("inf"), "never"),
        ("exact", True, "yes"),
        ("tier", "leaf", "leaf"),
        ("tier", None, ""),
    ],
)
def test_a_figure_reads_by_its_kind(column: str, value: Any, text: str) -> None:
    assert figure_text(column, value) == text


@pytest.mark.parametrize(
    ("n", "noun", "text"),
    [
        (1, "switch", "1 switch"),
        (2, "switch", "2 switches"),
        (1, "plane", "1 plane"),
        (4096, "GPU", "4,096 GPUs"),
        (2, "scale-up switch", "2 scale-up switches"),
        (0, "link", "0 links"),
        (3, "bus", "3 buses"),
    ],
)
def test_a_count_takes_the_right_plural(n: int, noun: str, text: str) -> None:
    assert count_text(n, noun) == text


@pytest.mark.parametrize(
    ("instance", "expected"),
    [
        (
            "workload-llama3.1-405b",
            {
                "workload model": "llama3.1-405b (preset): 405B parameters (dense)",
                "parallelism": "tp 8 x pp 16 x dp 2 = 256 GPUs; ep 1",
                "microbatch": "1 sequence; 1,024 microbatches per iteration",
                "GPU": "at 40 % of peak while computing (utilisation, not MFU",
                "GPU price": "$2.00 per GPU-hour, over 5 years",
            },
        ),
        (
            "oversubscribed-4k-priced",
            {
                "workload model": "own model ([workload.model]): 671B parameters (37B active",
                "parallelism": "dp 4,096 = 4,096 GPUs; ep 256",
            },
        ),
    ],
)
def test_the_workload_assumed_is_stated(instance: str, expected: dict[str, str]) -> None:
    pairs = dict(workload_assumptions(load_instance(REPO_ROOT / "instances" / f"{instance}.toml")))
    for what, text in expected.items():
        assert text in pairs[what]


def test_no_workload_states_none() -> None:
    assert workload_assumptions(load_instance(REPO_ROOT / "instances" / "h100-1k.toml")) == []


@pytest.mark.parametrize(
    ("column", "values", "texts"),
    [
        # A column with fractions writes its whole figures like them: never "2" beside "1.50".
        ("allowed_leaf", [2.0, 1.75, 1.5], ["2.00", "1.75", "1.50"]),
        ("sim_fraction_spray", [1.0, 0.937], ["1.00", "0.937"]),
        # A column of whole figures stays integers.
        ("switches", [96.0, 48.0, None], ["96", "48", ""]),
        ("capex_usd", [2_000_000.0, 80.5], ["$2,000,000", "$80.50"]),
    ],
)
def test_a_column_reads_one_way(column: str, values: list[Any], texts: list[str]) -> None:
    assert column_texts(column, values) == texts


# ---- report.md's tables: polars' own markdown formatting ----------------------------------
def test_a_markdown_table_lines_up_its_columns_and_keeps_every_cell_whole() -> None:
    """Each line as wide as the others (polars pads the cells), no cell cut, pipes escaped."""
    import polars as pl

    from planner.report.markdown import markdown_table

    long = "estimate: " + "a" * 120
    df = pl.DataFrame(
        {"model": ["sn5600", "a|b"], "source": [long, ""], "capex_usd": [1234.5, 80.0]}
    )
    lines = markdown_table(df).splitlines()
    assert len(lines) == 2 + df.height
    assert len({len(line) for line in lines}) == 1
    assert [c.strip() for c in lines[0].strip("|").split("|")] == ["model", "source", "capex (USD)"]
    assert set(lines[1]) <= {"|", "-", ":"}
    assert long in lines[2]
    assert "a\\|b" in lines[3]
    assert "$1,234" in lines[2]
    assert "null" not in "\n".join(lines)

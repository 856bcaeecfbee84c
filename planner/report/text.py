"""How figures read in every report: column labels with their units, numbers, money, plurals.

The one wording report.md, report.html, the pictures and a study's figures share
(``planner.report``, ``planner.report.html``, ``planner.report.pictures``, ``planner.study``),
below all of them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

#: The unit a column's name ends with (``capex_usd``), as a person writes it.
UNITS = {
    "usd": "USD",
    "kw": "kW",
    "w": "W",
    "gbps": "Gb/s",
    "ns": "ns",
    "ms": "ms",
    "s": "s",
    "m": "m",
    "db": "dB",
    "bytes": "bytes",
    "gib": "GiB",
    "gpus": "GPUs",
}
#: Words written in capitals (or otherwise) in labels.
WORDS = {
    "gpu": "GPU",
    "gpus": "GPUs",
    "tco": "TCO",
    "ocs": "OCS",
    "ecmp": "ECMP",
    "nic": "NIC",
    "afr": "AFR",
    "cpo": "CPO",
    "lpo": "LPO",
    "bom": "BOM",
    "p50": "p50",
    "p99": "p99",
    "fct": "FCT",
    "busbw": "bus bandwidth",
    "algbw": "algorithm bandwidth",
    "mfu": "MFU",
    "usd": "USD",
}
#: Columns read as fractions or ratios: three significant digits.
FRACTION_WORDS = ("fraction", "share", "utilisation", "gap", "ratio", "oversubscription", "afr")
#: Significant digits of a fraction, ratio or measured quantity.
SIGNIFICANT = 3
#: Money at or above this many dollars is shown without cents.
WHOLE_DOLLARS_FROM_USD = 100.0
#: Binary units of byte counts.
BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def column_label(name: str) -> str:
    """A column's name as a heading: words, capitals, its unit in brackets.

    ``capex_usd`` -> ``capex (USD)``, ``power_kw`` -> ``power (kW)``, ``min_length_m`` ->
    ``min length (m)``, ``gpus`` -> ``GPUs``. The one mapping every table heading and axis label
    goes through (``UNITS``, ``WORDS``).
    """
    words = name.split("_")
    unit = ""
    rate = next((i for i, w in enumerate(words[:-2]) if w in UNITS and words[i + 1] == "per"), None)
    if rate is not None:
        # ``scale_up_gbps_per_gpu``: a unit per something reads ``scale up (Gb/s per GPU)``.
        per = " ".join(WORDS.get(w, w) for w in words[rate + 2 :])
        head = " ".join(WORDS.get(w, w) for w in words[:rate])
        unit_text = f"{UNITS[words[rate]]} per {per}"
        return f"{head} ({unit_text})" if head else unit_text
    if len(words) > 1 and words[-1] in UNITS:
        unit = UNITS[words.pop()]
    if unit and len(words) > 1 and words[-1] == "per":
        # ``tokens_per_s``: a rate reads ``tokens/s``.
        return " ".join(WORDS.get(w, w) for w in words[:-1]) + f"/{unit}"
    text = " ".join(WORDS.get(w, w) for w in words)
    return f"{text} ({unit})" if unit else text


def _significant(x: float, digits: int = SIGNIFICANT) -> str:
    """``x`` to ``digits`` significant digits in plain notation (never ``2.77e6``)."""
    x = float(f"{x:.{digits}g}")  # round first: 0.99999 is 1.00, not 1.000
    if x == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(x)))
    decimals = max(digits - 1 - magnitude, 0)
    return f"{x:,.{min(decimals, 15)}f}"


def money_text(x: float) -> str:
    """``$1,234,567`` (no cents from $100 up, nor on whole dollars), ``$12.35``, ``-$40``."""
    sign = "-" if x < 0 else ""
    size = abs(x)
    if size >= WHOLE_DOLLARS_FROM_USD or size == int(size):
        return f"{sign}${size:,.0f}"
    return f"{sign}${size:,.2f}"


def bytes_text(n: float) -> str:
    """A byte count in binary units: ``512 B``, ``1.50 KiB``, ``30.8 GiB``."""
    size, unit = abs(n), 0
    while size >= 1024 and unit < len(BYTE_UNITS) - 1:
        size /= 1024
        unit += 1
    if unit == 0:
        return f"{n:,.0f} B"
    return f"{'-' if n < 0 else ''}{_significant(size)} {BYTE_UNITS[unit]}"


def column_texts(column: str, values: Sequence[Any]) -> list[str]:
    """A whole column's cells: whole numbers as integers only when every figure is one.

    So a column reads one way: ``2.00, 1.75, 1.50`` rather than ``2, 1.75, 1.50``.
    """
    fractional = any(isinstance(v, float) and math.isfinite(v) and v != int(v) for v in values)
    return [figure_text(column, v, fractional=fractional) for v in values]


def figure_text(column: str, value: Any, *, fractional: bool = False) -> str:
    """A table cell, by the kind of figure its column holds; the one number formatter.

    Money (``*_usd``) with ``$`` and no cents from $100 up; byte counts (``*bytes*``) in binary
    units; fractions and ratios (``FRACTION_WORDS``) and measured floats to three significant
    digits; whole numbers with thousands separators; never scientific notation. An infinite
    time (traffic a failure cut off) is ``never``. ``fractional``: the column holds fractions,
    so a whole float is written like them (``2.00``), not as an integer.
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if not isinstance(value, int | float):
        return str(value)
    x = float(value)
    if math.isnan(x):
        return "n/a"
    if math.isinf(x):
        return "never" if x > 0 else "-inf"
    words = column.split("_")
    if words[-1] == "usd" or "usd" in words:
        return money_text(x)
    if "bytes" in words:
        return bytes_text(x)
    if any(w in column for w in FRACTION_WORDS):
        return _significant(x)
    if isinstance(value, int) or (x == int(x) and abs(x) < 1e15 and not fractional):
        return f"{int(x):,}"
    if abs(x) >= 10 ** (SIGNIFICANT - 1):
        return f"{x:,.0f}"
    return _significant(x)


def count_text(n: int, singular: str, plural: str | None = None) -> str:
    """``1 switch``, ``2 switches``, ``1,024 GPUs``: a count with its noun, singular or plural.

    The plural is ``plural`` when given, else the noun with ``es`` after s, x, ch or sh and ``s``
    otherwise. The one helper report.md, report.html and the pictures count things with.
    """
    if n == 1:
        return f"1 {singular}"
    if plural is None:
        last = singular.rsplit(" ", 1)[-1]
        suffix = "es" if last.endswith(("s", "x", "ch", "sh")) else "s"
        plural = f"{singular}{suffix}"
    return f"{n:,} {plural}"

"""Output: safe names, rounded figures, writers of one file, and the formats a set holds.

The rules every written file follows are the package docstring (``planner.output``).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Callable, Collection, Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner.errors import InputError

if TYPE_CHECKING:
    import polars as pl


#: Significant digits of every float written to CSV or JSON.
SIGNIFICANT_DIGITS = 12
#: Longest file name :func:`safe_name` returns (file systems allow 255 bytes; room for suffixes).
MAX_NAME = 120
#: Characters a name taken from an input keeps; every other one becomes ``_``.
_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]")
#: Table formats (by file suffix) a set may hold.
TABLE_FORMATS = ("csv", "parquet")
#: Picture formats (by file suffix) a set may hold.
FIGURE_FORMATS = ("png", "svg")
#: Every format ``--formats`` chooses from; by default all of them are written.
OUTPUT_FORMATS = TABLE_FORMATS + FIGURE_FORMATS

#: Writes one file of a set at the path it is given.
Writer = Callable[[Path], object]


# ---- names ---------------------------------------------------------------------------------
def safe_name(name: str, *, fallback: str = "unnamed") -> str:
    """A single, harmless path component made from a name taken from an input.

    Keeps letters, digits and ``._+=-``; replaces every other character (path separators, NUL,
    control characters, spaces) by ``_``; strips leading dots (no ``..``, no hidden files); cuts
    to :data:`MAX_NAME` characters. An empty result becomes ``fallback``.
    """
    cleaned = _UNSAFE.sub("_", str(name)).lstrip(".")[:MAX_NAME]
    return cleaned or fallback


def child(folder: Path, name: str) -> Path:
    """``folder / name`` for a name that must be one component inside ``folder``."""
    if name != safe_name(name):
        raise ValueError(f"not a safe file name: {name!r}")
    path = folder / name
    if path.parent != folder:
        raise ValueError(f"{name!r} leaves {folder}")
    return path


# ---- figures -------------------------------------------------------------------------------
def rounded(df: pl.DataFrame, digits: int = SIGNIFICANT_DIGITS) -> pl.DataFrame:
    """The table with every float column rounded to ``digits`` significant digits."""
    floats = [name for name, dtype in df.schema.items() if dtype.is_float()]
    if not floats:
        return df
    import polars as pl  # loaded when a table is written, not with the command line's --help

    return df.with_columns(pl.col(name).round_sig_figs(digits) for name in floats)


def round_value(value: Any, digits: int = SIGNIFICANT_DIGITS) -> Any:
    """A float rounded to ``digits`` significant digits (non-finite to None), recursively."""
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{digits}g}")
    if isinstance(value, dict):
        return {k: round_value(v, digits) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [round_value(v, digits) for v in value]
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """JSON with rounded floats and ``null`` for infinities (strict JSON: no ``Infinity``)."""
    return json.dumps(round_value(value), allow_nan=False, default=str, **kwargs)


def table_writers(name: str, df: pl.DataFrame) -> dict[str, Writer]:
    """The CSV (rounded) and Parquet (exact) files of one table."""
    return {
        f"{name}.csv": lambda p: rounded(df).write_csv(p),
        f"{name}.parquet": lambda p: df.write_parquet(p),
    }


def text_writer(text: str) -> Writer:
    """A writer of UTF-8 text."""
    return lambda p: p.write_text(text, encoding="utf-8")


def bytes_writer(data: bytes) -> Writer:
    """A writer of bytes as they are."""
    return lambda p: p.write_bytes(data)


# ---- formats -------------------------------------------------------------------------------
#: The formats sets are written in when a call does not say (see :func:`output_formats`).
_FORMATS: ContextVar[frozenset[str]] = ContextVar(
    "fabric_planner_formats", default=frozenset(OUTPUT_FORMATS)
)


def parse_formats(text: str) -> frozenset[str]:
    """The formats of a ``--formats`` value: comma-separated, each one of :data:`OUTPUT_FORMATS`.

    Raises :class:`InputError` naming the unknown format and listing the allowed ones.
    """
    words = [w.strip().lower() for w in str(text).split(",")]
    chosen = [w for w in words if w]
    allowed = ", ".join(OUTPUT_FORMATS)
    if not chosen:
        raise InputError(f"--formats: expected one or more of {allowed}, separated by commas")
    unknown = [w for w in chosen if w not in OUTPUT_FORMATS]
    if unknown:
        raise InputError(
            f"--formats {unknown[0][:40]!r}: unknown format; expected one or more of {allowed}, "
            "separated by commas (e.g. --formats csv,png)"
        )
    return frozenset(chosen)


@contextlib.contextmanager
def output_formats(formats: Collection[str]) -> Iterator[None]:
    """Within the block, sets written without ``formats=`` hold only these formats."""
    token = _FORMATS.set(frozenset(formats))
    try:
        yield
    finally:
        _FORMATS.reset(token)


def kept_in_formats(name: str, formats: Collection[str]) -> bool:
    """Whether a file of a set is written under ``formats`` (files of other suffixes always are)."""
    suffix = name.rsplit(".", 1)[-1] if "." in name else ""
    return suffix not in OUTPUT_FORMATS or suffix in formats


def chosen_formats() -> frozenset[str]:
    """The formats sets are written in here, unless a call says (:func:`output_formats`)."""
    return _FORMATS.get()

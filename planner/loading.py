"""Reading instance and catalog files into validated models, with errors a user can act on."""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import stat
import tomllib
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from planner.defaults import DEFAULT_CATALOG as DEFAULT_CATALOG
from planner.errors import InputError
from planner.output import safe_name
from planner.schema.catalog import Catalog
from planner.schema.input_errors import key_line, validate_data
from planner.schema.instance import INSTANCE_NAME_PATTERN, Instance

#: Largest instance or catalog file read, in bytes (4 MiB; the shipped ones are a few kB). The
#: size is checked before reading, and at most one byte more than this is ever read.
MAX_TOML_BYTES = 4 * 2**20
#: Largest file read otherwise, such as a design.json (64 MiB: to_json writes about 50 bytes per
#: OCS circuit entry, so an OCS design of tens of thousands of GPUs runs to ten MB or more).
MAX_FILE_BYTES = 64 * 2**20
#: Deepest nesting of arrays and tables in an input file or a ``--set`` value; instances need 4.
MAX_NESTING = 32
#: Most digits in one number literal (a 64-bit integer has at most 19).
MAX_NUMBER_DIGITS = 40
#: Largest magnitude of an integer in an input (64-bit, what the solvers and numpy can hold).
MAX_INT = 2**63 - 1
#: Longest ``--set`` value, in characters.
MAX_OVERRIDE_CHARS = 65_536
#: Most dotted parts in a ``--set`` path (an instance is 4 levels deep).
MAX_OVERRIDE_PARTS = 8


def read_bytes(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of a regular file of at most ``max_bytes``, or an InputError naming the file.

    Devices (``/dev/zero``), FIFOs, sockets and folders are refused before anything is read, and
    so is a file larger than the cap; a file that grows while being read is cut at ``max_bytes +
    1`` bytes and refused too, so memory stays bounded whatever the path points at.
    """
    source = str(path)
    try:
        # Non-blocking, so that opening a FIFO with no writer returns instead of hanging.
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise InputError("file not found", source=source) from None
    except IsADirectoryError:
        raise InputError("is a folder, not a file", source=source) from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL in the path
        raise InputError(f"cannot open the file ({_reason(exc)})", source=source) from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError("is a folder, not a file", source=source)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(
                "is not a regular file (a device, FIFO or socket); give the path of a file",
                source=source,
            )
        if st.st_size > max_bytes:
            raise InputError(_too_large(st.st_size, max_bytes), source=source)
        chunks: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            chunk = os.read(fd, min(left, 2**20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    except OSError as exc:
        raise InputError(f"cannot read the file ({_reason(exc)})", source=source) from None
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise InputError(_too_large(len(data), max_bytes), source=source)
    return data


def _reason(exc: Exception) -> str:
    return exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)


def _too_large(size: int, cap: int) -> str:
    return f"the file is larger than the {cap // 2**20} MiB this command reads (at least {size:,} bytes)"


def decode_text(data: bytes, *, source: str | None = None) -> str:
    """UTF-8 text with LF or CRLF line ends and no NUL, or an InputError saying where it breaks."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise InputError(
            f"line {line}, column {column}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start}); save the file as UTF-8",
            source=source,
        ) from None
    if (at := text.find("\x00")) >= 0:
        raise InputError(
            f"line {_line_at(text, at)}: a NUL character; not a text file", source=source
        )
    if (m := _LONE_CR.search(text)) is not None:
        raise InputError(
            f"line {_line_at(text, m.start())}: a carriage return not followed by a line feed; "
            "end lines with LF or CRLF",
            source=source,
        )
    check_syntax_limits(text, source=source)
    return text


_LONE_CR = re.compile(r"\r(?!\n)")
#: Strings and comments (skipped), brackets (counted) and long digit runs (refused), in TOML and
#: JSON alike: a JSON file has no ' or # outside its strings.
_TOKENS = re.compile(
    r'"""[\s\S]*?"""|\'\'\'[\s\S]*?\'\'\'|"(?:[^"\\\n]|\\.)*"|\'[^\'\n]*\'|#[^\n]*|[\[\]{}]'
    + rf"|[0-9][0-9_]{{{MAX_NUMBER_DIGITS},}}"
)


def _line_at(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def check_syntax_limits(text: str, *, source: str | None = None) -> None:
    """Refuse nesting deeper than MAX_NESTING and numbers longer than MAX_NUMBER_DIGITS digits.

    Runs before the TOML or JSON parser, whose recursion and integer conversion would otherwise
    fail with a RecursionError or a ValueError and no line.
    """
    opening = text.count("[") + text.count("{")
    if opening <= MAX_NESTING and not re.search(rf"[0-9_]{{{MAX_NUMBER_DIGITS + 1},}}", text):
        return
    depth = 0
    for m in _TOKENS.finditer(text):
        token = m.group()
        if token in "[{":
            depth += 1
            if depth > MAX_NESTING:
                raise InputError(
                    f"line {_line_at(text, m.start())}: arrays or tables nested more than "
                    f"{MAX_NESTING} deep",
                    source=source,
                )
        elif token in "]}":
            depth = max(0, depth - 1)
        elif token[0].isdigit():
            raise InputError(
                f"line {_line_at(text, m.start())}: a number of more than {MAX_NUMBER_DIGITS} "
                f"digits ({token[:12]}...)",
                source=source,
            )


def read_text(path: Path, *, max_bytes: int = MAX_FILE_BYTES) -> str:
    """A file's text, or an InputError that names the file and what went wrong.

    Only a regular file of at most ``max_bytes`` is read (see ``read_bytes``), and it must be
    UTF-8 text within the syntax limits (see ``decode_text``).
    """
    return decode_text(read_bytes(Path(path), max_bytes=max_bytes), source=str(path))


def parse_toml(text: str, *, source: str | None = None) -> dict[str, Any]:
    """Parse TOML text already through ``decode_text``; InputError on a syntax error or limit."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", source=source) from None
    except (RecursionError, ValueError) as exc:  # limits decode_text did not foresee
        raise InputError(f"not valid TOML: {exc}", source=source) from None
    check_data_limits(data, text=text, source=source)
    return data


def check_data_limits(data: Any, *, text: str | None = None, source: str | None = None) -> None:
    """Refuse parsed data nested deeper than MAX_NESTING or holding integers beyond 64 bits.

    Dotted keys and table headers (``a.b.c... = 1``) nest without brackets, so the depth is
    checked again after parsing; iteratively, so that the check itself cannot recurse too deep.
    """
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(data, ())]
    while stack:
        node, loc = stack.pop()
        if len(loc) > MAX_NESTING:
            where = _where(text, loc)
            raise InputError(
                f"{where}{_dotted(loc[:4])}...: nested more than {MAX_NESTING} deep", source=source
            )
        if isinstance(node, dict):
            stack.extend((v, (*loc, str(k))) for k, v in node.items())
        elif isinstance(node, list):
            stack.extend((v, (*loc, i)) for i, v in enumerate(node))
        elif isinstance(node, int) and not isinstance(node, bool) and abs(node) > MAX_INT:
            raise InputError(
                f"{_where(text, loc)}{_dotted(loc)}: integer beyond the 64-bit range "
                f"(at most {MAX_INT:,} in magnitude)",
                source=source,
            )


def _dotted(loc: tuple[str | int, ...]) -> str:
    return ".".join(str(p) for p in loc) or "(top level)"


def _where(text: str | None, loc: tuple[str | int, ...]) -> str:
    if text is None:
        return ""
    line = key_line(text, loc)
    return "" if line is None else f"line {line}: "


def _read_toml(path: Path) -> tuple[dict[str, Any], str]:
    text = read_text(path, max_bytes=MAX_TOML_BYTES)
    return parse_toml(text, source=str(path)), text


def load_instance(path: str | Path, families: Sequence[str] | None = None) -> Instance:
    """Read and validate an instance file (TOML).

    ``families`` are the names of the registry's families (the reader above them hands them
    in): ``search.families`` and ``search.pin.family`` must be among them.
    """
    path = Path(path)
    data, text = _read_toml(path)
    context = None if families is None else {"families": tuple(families)}
    inst = validate_data(Instance, data, text=text, source=str(path), context=context)
    catalog = inst.search.catalog
    if catalog != DEFAULT_CATALOG and not Path(catalog).is_absolute():
        # A relative catalog path is read against the instance's folder, wherever it is run from.
        inst = inst.with_catalog(str(instance_dir(path) / catalog))
    if inst.life is not None and inst.life.installed is not None:
        installed = Path(inst.life.installed)
        if not installed.is_absolute():  # read against the instance's folder, as the catalog
            inst = inst.with_changes({"life.installed": str(instance_dir(path) / installed)})
    return inst


def load_catalog(
    name_or_path: str = DEFAULT_CATALOG, *, relative_to: Path | None = None
) -> Catalog:
    """The shipped catalog ('default') or a user's catalog file."""
    if name_or_path == DEFAULT_CATALOG:
        ref = resources.files("planner") / "catalog" / "default.toml"
        text = ref.read_text(encoding="utf-8")
        return validate_data(Catalog, tomllib.loads(text), text=text, source="default catalog")
    path = Path(name_or_path)
    if not path.is_absolute() and relative_to is not None:
        path = relative_to / path
    data, text = _read_toml(path)
    catalog = validate_data(Catalog, data, text=text, source=str(path))
    if catalog.reliability is None:
        catalog = catalog.model_copy(update={"reliability": load_catalog().reliability})
    return catalog


def parse_override(item: str) -> tuple[str, Any]:
    """Parse a ``path=value`` override; the value is read as TOML, else taken as a string.

    The value meets the limits of a file (nesting, number length, 64-bit integers) and is at
    most MAX_OVERRIDE_CHARS long; the path has at most MAX_OVERRIDE_PARTS non-empty parts.
    """
    if "=" not in item:
        raise InputError(
            f"--set {item[:80]!r}: expected path=value, for example cluster.gpus=65536"
        )
    path, raw = (s.strip() for s in item.split("=", 1))
    if not path:
        raise InputError(f"--set {item[:80]!r}: the field path is empty")
    where = f"--set {path[:80]}"
    parts = path.split(".")
    if len(parts) > MAX_OVERRIDE_PARTS or not all(p.strip() for p in parts):
        raise InputError(
            f"{where}: expected a dotted field path of at most {MAX_OVERRIDE_PARTS} names, "
            "for example verify.seed"
        )
    if len(raw) > MAX_OVERRIDE_CHARS:
        raise InputError(f"{where}: the value is longer than {MAX_OVERRIDE_CHARS:,} characters")
    if "\x00" in item or _LONE_CR.search(item):
        raise InputError(f"{where}: the value holds a NUL or a lone carriage return")
    if "\n" in raw:
        raise InputError(f"{where}: the value spans lines; give it on one line")
    check_syntax_limits(raw, source=where)
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    except (RecursionError, ValueError) as exc:  # limits check_syntax_limits did not foresee
        raise InputError(f"{where}: {exc}") from None
    if "#" in raw and not _holds_hash(value):
        # TOML read the text from '#' on as a comment: it would be dropped without a word.
        raise InputError(f"{where}: text after the value ({raw[raw.index('#') :][:40]!r})")
    check_data_limits(value, source=where)
    return path, value


def _holds_hash(value: Any) -> bool:
    """Whether a parsed value holds a '#' in a string (else a '#' in its text began a comment)."""
    if isinstance(value, str):
        return "#" in value
    if isinstance(value, list):
        return any(_holds_hash(v) for v in value)
    if isinstance(value, dict):
        return any(_holds_hash(k) or _holds_hash(v) for k, v in value.items())
    return False


# ---- names of changed instances (``--set`` and a study's scenarios) -------------------------
#: Longest shown value of a change in a derived name (longer ones are cut and hashed).
MAX_VALUE_CHARS = 24
#: Longest instance name the schema allows (``INSTANCE_NAME_PATTERN``).
MAX_INSTANCE_NAME = 100
#: Longest name ``derived_instance`` gives: a longer one is cut and ends with a hash of the changes.
MAX_DERIVED_NAME = 64
#: Name of the change set that changes nothing (a study's baseline).
BASELINE = "base"
_INSTANCE_NAME = re.compile(INSTANCE_NAME_PATTERN)
_NOT_IN_INSTANCE_NAME = re.compile(r"[^A-Za-z0-9._-]")


def short_labels(keys: Sequence[str]) -> dict[str, str]:
    """Each dotted key's shortest tail that no other key shares (``cluster.gpus`` -> ``gpus``)."""
    labels = {}
    for key in keys:
        parts = key.split(".")
        for n in range(1, len(parts) + 1):
            tail = ".".join(parts[-n:])
            if not any(other != key and other.endswith("." + tail) for other in keys) and not any(
                other == tail for other in keys if other != key
            ):
                break
        labels[key] = tail
    return labels


def value_text(value: Any) -> str:
    """A change's value as it shows in a derived name: short, no spaces, no brackets."""
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, float) and math.isfinite(value) and value == int(value):
        text = str(int(value)) if abs(value) < 1e15 else repr(value)
    elif isinstance(value, list | tuple):
        text = "-".join(value_text(v) for v in value) or "none"
    elif isinstance(value, dict):
        text = "-".join(f"{k}={value_text(v)}" for k, v in value.items()) or "none"
    else:
        text = str(value)
    if len(text) > MAX_VALUE_CHARS:
        tag = hashlib.sha256(text.encode()).hexdigest()[:6]
        text = f"{text[: MAX_VALUE_CHARS - 7]}~{tag}"
    return text


def scenario_name(changes: Mapping[str, Any], labels: Mapping[str, str]) -> str:
    """``gpus=8192+nic_gbps=800``: each change's label and value, made safe as a file name."""
    if not changes:
        return BASELINE
    return safe_name("+".join(f"{labels[k]}={value_text(v)}" for k, v in changes.items()))


def instance_name(base: str, scenario: str, key: str, limit: int = MAX_INSTANCE_NAME) -> str:
    """A changed instance's name: ``<base>.<scenario>`` in the characters a name may hold.

    ``=`` becomes ``-`` and ``+`` becomes ``.``; a name longer than ``limit`` is cut and ends
    with ``key``'s first characters (a hash of the changes), so it stays unique and stable.
    """
    tail = _NOT_IN_INSTANCE_NAME.sub("_", scenario.replace("=", "-").replace("+", "."))
    name = f"{base}.{tail}"
    if len(name) > limit:
        name = f"{name[: limit - 9]}-{key[:8]}"
    assert _INSTANCE_NAME.match(name), name
    return name


def changes_key(changes: Mapping[str, Any]) -> str:
    """A stable hash of a change set (the same changes, in any order, the same key)."""
    text = json.dumps(sorted(changes.items()), sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def derived_instance(inst: Instance, changes: Mapping[str, Any]) -> Instance:
    """``inst`` with ``--set`` changes applied, named after them, the changes recorded.

    The name is the one a study gives the same changes (``<base>.gpus-65536``: see
    ``planner.study.scenarios``), at most ``MAX_DERIVED_NAME`` characters (a longer one ends
    with a hash of the changes), so a changed plan never writes into the base's report folder.
    ``Instance.derived_from`` then holds the base's name and the changes, for the reports.
    """
    if not changes:
        return inst
    changed = inst.with_changes(dict(changes))
    label = scenario_name(changes, short_labels(list(changes)))
    name = instance_name(inst.name, label, changes_key(changes), MAX_DERIVED_NAME)
    out = changed.model_copy(update={"name": name})
    base, earlier = inst.derived_from or (inst.name, ())
    out._derived_from = (base, (*earlier, *changes.items()))
    return out


def changes_text(changes: Sequence[tuple[str, Any]]) -> str:
    """``cluster.gpus = 65536, search.switch_models = ["sn5600"]``: changes as a person reads them."""
    return ", ".join(f"{path} = {json.dumps(value, default=str)}" for path, value in changes)


def instance_dir(path: str | Path) -> Path:
    """Folder of an instance file, against which a relative catalog path is read."""
    return Path(path).resolve().parent

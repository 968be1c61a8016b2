"""A strict fast path for the flat task.toml files most releases ship.

tomllib costs ~150-200 us a file, two thirds of a first tasks read. Task files are
nearly always flat ``[table]`` headers with ``key = scalar`` lines, which a few regexes
read exactly. Any line outside that subset (multi-line strings or arrays, escapes,
dotted or quoted keys, dates, inline tables, duplicates...) returns None and the caller
uses tomllib, so results are always tomllib's. A property test checks the two agree.
"""

from __future__ import annotations

import re
from typing import Any

_COMMENT = r"(?:#[^\x00-\x08\x0a-\x1f\x7f]*)?"
_BASIC = r'"[^"\\\x00-\x08\x0a-\x1f\x7f]*"'
_LITERAL = r"'[^'\x00-\x08\x0a-\x1f\x7f]*'"
_INT = r"[+-]?(?:0|[1-9](?:_?[0-9])*)"
_FLOAT = _INT + r"(?:\.[0-9](?:_?[0-9])*(?:[eE][+-]?[0-9](?:_?[0-9])*)?|[eE][+-]?[0-9](?:_?[0-9])*)"
_SCALAR = rf"(?:{_BASIC}|{_LITERAL}|{_FLOAT}|{_INT}|true|false)"

_HEADER = re.compile(rf"\[[ \t]*([A-Za-z0-9_-]+)[ \t]*\][ \t]*{_COMMENT}")
_KEYVAL = re.compile(
    rf"([A-Za-z0-9_-]+)[ \t]*=[ \t]*"
    rf"(?:(?P<basic>{_BASIC})|(?P<literal>{_LITERAL})|(?P<float>{_FLOAT})|(?P<int>{_INT})|(?P<bool>true|false)"
    rf"|(?P<array>\[[ \t]*(?:{_SCALAR}[ \t]*(?:,[ \t]*{_SCALAR}[ \t]*)*,?[ \t]*)?\]))"
    rf"[ \t]*{_COMMENT}"
)
_BLANK = re.compile(rf"[ \t]*{_COMMENT}")


def _value(m: re.Match) -> Any:
    kind = m.lastgroup
    assert kind is not None  # _KEYVAL matched, so one of its named value groups did
    text = m.group(kind)
    if kind in ("basic", "literal"):
        return text[1:-1]
    if kind == "int":
        return int(text)
    if kind == "float":
        return float(text)
    if kind == "bool":
        return text == "true"
    return ...  # arrays are not read by us; a placeholder keeps the key present


def loads_flat(text: str) -> dict[str, Any] | None:
    """The document as dicts, or None when it is outside the flat subset."""
    doc: dict[str, Any] = {}
    table = doc
    lines = text.split("\n")
    last = len(lines) - 1
    for i, line in enumerate(lines):
        if line.endswith("\r") and i < last:
            line = line[:-1]  # CRLF; a CR not followed by LF is invalid and must reach tomllib
        if _BLANK.fullmatch(line):
            continue
        stripped = line.lstrip(" \t")
        m = _KEYVAL.fullmatch(stripped)
        if m is not None:
            key = m.group(1)
            if key in table:
                return None
            table[key] = _value(m)
            continue
        h = _HEADER.fullmatch(stripped)
        if h is None or h.group(1) in doc:
            return None
        table = doc[h.group(1)] = {}
    return doc

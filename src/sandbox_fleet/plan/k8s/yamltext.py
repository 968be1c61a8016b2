"""A small block-style YAML writer for manifests: mappings, sequences, strings, numbers, booleans.

Every string is written double-quoted in JSON syntax (valid YAML), so no value is ever read back
as another type ("on" as a boolean, "1e3" as a number). Keys are plain when they are simple.
"""

from __future__ import annotations

import json
import math
import re

_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.\-/]*")
# Characters YAML does not allow raw in a stream (C1 controls, BOM, non-characters, line separators):
# written as \uXXXX escapes. Astral characters stay raw (YAML does not join surrogate-pair escapes).
_NOT_PRINTABLE = re.compile("[\x7f-\x9f\u2028\u2029\ufeff\ufffe\uffff\ud800-\udfff]")


#: Plain words YAML 1.1 reads as booleans or null, in any case.
_RESERVED = frozenset({"true", "false", "null", "yes", "no", "on", "off", "y", "n"})


def quote(text: str) -> str:
    """A YAML double-quoted scalar: JSON string syntax, non-printable characters escaped."""
    return _NOT_PRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _scalar(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"cannot write a non-finite number to a manifest: {value!r}")
        text = repr(value)
        mantissa, e, exp = text.partition("e")
        # YAML 1.1 readers (PyYAML) need a dot for an exponent form to read as a float: 1.0e-05
        return f"{mantissa}.0e{exp}" if e and "." not in mantissa else text
    if isinstance(value, str):
        return quote(value)
    raise TypeError(f"unsupported manifest value {value!r}")


def _key(key: str) -> str:
    return key if _PLAIN_KEY.fullmatch(key) and key.lower() not in _RESERVED else quote(key)


def _lines(value: object, indent: int) -> list[str]:
    pad = " " * indent
    if isinstance(value, dict):
        if not value:
            return [pad + "{}"]
        out = []
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{_key(str(k))}:")
                out += _lines(v, indent + 2)
            else:
                out.append(f"{pad}{_key(str(k))}: {_inline_empty(v)}")
        return out
    if isinstance(value, list):
        if not value:
            return [pad + "[]"]
        out = []
        for item in value:
            if isinstance(item, (dict, list)) and item:
                inner = _lines(item, indent + 2)
                out.append(f"{pad}- {inner[0].lstrip()}")
                out += inner[1:]
            else:
                out.append(f"{pad}- {_inline_empty(item)}")
        return out
    return [pad + _scalar(value)]


def _inline_empty(v: object) -> str:
    if isinstance(v, dict):
        return "{}"
    if isinstance(v, list):
        return "[]"
    return _scalar(v)


def dump(doc: dict) -> str:
    """One YAML document (no leading ``---``), newline-terminated."""
    return "\n".join(_lines(doc, 0)) + "\n"

"""Readers for the report's inputs: summaries already parsed by their models.

The report parses every input into its stage's model (``contract.parse``) and reads the model's
JSON dump, so each key is present with its declared type or null. A null figure, or a map entry
the input does not have (a phase that was not recorded), reads as ``None``: "not measured",
which greys out one chart or check only.
"""

from __future__ import annotations

import math
from typing import Any


def get(data: Any, path: str) -> Any:
    """Value at a dotted ``path`` (``"concurrency.peak"``), or None if any step is missing."""
    node = data
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return None
        node = node[key]
    return node


def num(data: Any, path: str) -> float | None:
    """A finite number at ``path`` (bools are not numbers here), else None."""
    return as_num(get(data, path))


def as_num(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a usable number."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def mapping(data: Any, path: str) -> dict:
    """A dict at ``path``, or an empty dict when absent or not a dict."""
    value = get(data, path)
    return value if isinstance(value, dict) else {}


def flag(data: Any, path: str) -> bool | None:
    """A boolean at ``path``, or None."""
    value = get(data, path)
    return value if isinstance(value, bool) else None


def numbers(value: Any) -> list[float] | None:
    """A list of finite numbers, or None if ``value`` is not one (one bad entry spoils it)."""
    if not isinstance(value, list):
        return None
    out = [as_num(v) for v in value]
    return None if any(v is None for v in out) else out  # type: ignore[misc]


def turn_keyed(value: Any) -> list[tuple[int, float]]:
    """A ``{"11": 52474, ...}`` object as (turns, value) pairs sorted by turns; bad entries skipped."""
    if not isinstance(value, dict):
        return []
    pairs = []
    for key, v in value.items():
        try:
            turns = int(str(key))
        except ValueError:
            continue
        f = as_num(v)
        if f is not None:
            pairs.append((turns, f))
    return sorted(pairs)

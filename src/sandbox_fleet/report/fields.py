"""Value helpers for the report: figures read off the stage models, normalised for display.

The report reads each input through its stage's model (``m.concurrency.peak``); a block the input
does not carry is ``None`` and the consumer substitutes an empty block (every figure ``None``), so
"not measured" greys out one chart or check only. These helpers only normalise values already read.
"""

from __future__ import annotations

import math
from typing import Any


def as_num(value: Any) -> float | None:
    """``value`` as a finite float, or None when it is not a usable number (bools are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    f = float(value)
    return f if math.isfinite(f) else None


def numbers(value: Any) -> list[float] | None:
    """A list of finite numbers, or None if ``value`` is not one (one bad entry spoils it)."""
    if not isinstance(value, list):
        return None
    out = [as_num(v) for v in value]
    known = [v for v in out if v is not None]
    return known if len(known) == len(out) else None


def turn_keyed(value: Any) -> list[tuple[int, float]]:
    """A ``{"11": 52474, ...}`` map as (turns, value) pairs sorted by turns; bad entries skipped."""
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

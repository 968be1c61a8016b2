"""Parse ``--vary KEY=VALUES``: a comma list (``100,200,400``) or a range (``100:1000:100``).

Values are typed the way TOML would type them: integers, then floats, then
``true``/``false``, else strings. A range ``START:STOP:STEP`` includes STOP when the
steps land on it; it is integer when all three parts are, else computed in decimal
arithmetic so ``0.1:0.3:0.1`` gives exactly 0.1, 0.2, 0.3. The word ``unbounded`` is
kept as a string: on a fleet's ``cap`` it means "no cap" (see ``paths``).
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from sandbox_fleet.errors import InputError

Scalar = int | float | bool | str
MAX_RANGE = 100_000  # a typo such as 1:1e9:1 must not exhaust memory

_INT = re.compile(r"[+-]?\d+")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*(\.([A-Za-z_][A-Za-z0-9_-]*|\d+|\*))*")


def parse_scalar(text: str) -> Scalar:
    """One value, typed: int, float, bool, or the stripped string."""
    s = text.strip()
    if _INT.fullmatch(s):
        return int(s)
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low not in ("inf", "+inf", "-inf", "nan", "infinity", "+infinity", "-infinity"):
        try:
            return float(s)
        except ValueError:
            pass
    return s


def _parse_range(key: str, text: str) -> list[Scalar]:
    parts = text.split(":")
    if len(parts) != 3:
        raise InputError(f"`vary` {key}: range {text!r} must be START:STOP:STEP, e.g. 100:1000:100")
    try:
        start, stop, step = (Decimal(p.strip()) for p in parts)
    except InvalidOperation:
        raise InputError(f"`vary` {key}: range {text!r} needs three numbers START:STOP:STEP") from None
    if not all(x.is_finite() for x in (start, stop, step)):
        raise InputError(f"`vary` {key}: range {text!r} needs finite numbers")
    if step <= 0:
        raise InputError(f"`vary` {key}: range {text!r} needs a positive STEP")
    if stop < start:
        raise InputError(f"`vary` {key}: range {text!r} has STOP below START")
    n = int((stop - start) / step) + 1
    if n > MAX_RANGE:
        raise InputError(f"`vary` {key}: range {text!r} has {n:,} values (at most {MAX_RANGE:,})")
    integral = all(_INT.fullmatch(p.strip()) for p in parts)
    vals = [start + i * step for i in range(n)]
    return [int(v) for v in vals] if integral else [float(v) for v in vals]


def parse_vary(text: str) -> tuple[str, list[Scalar]]:
    """``"fleet.cap=100,200"`` -> ``("fleet.cap", [100, 200])``; ranges and lists may mix."""
    key, sep, rhs = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise InputError(f"`vary` {text!r}: expected KEY=VALUES, e.g. fleet.cap=100,200,400")
    if not _KEY.fullmatch(key):
        raise InputError(f"`vary` {text!r}: key {key!r} must be a dotted path such as fleet.cap or workloads.0.batch")
    values: list[Scalar] = []
    for item in rhs.split(","):
        if not item.strip():
            raise InputError(f"`vary` {key}: empty value in {rhs!r}")
        if ":" in item and not item.strip().startswith(("\"", "'")):
            values.extend(_parse_range(key, item.strip()))
        else:
            values.append(parse_scalar(item.strip().strip("\"'")))
    seen: set = set()
    for v in values:
        tag = (type(v).__name__, v)
        if tag in seen:
            raise InputError(f"`vary` {key}: value {v!r} given twice")
        seen.add(tag)
    return key, values

"""JSON sources: load a file or fail with one line naming it; collect rows into a table."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, TypeGuard

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import json_loads, read_text
from sandbox_fleet.telemetry.options import warn_once
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, Telemetry


def load_json(path: Path) -> Any:
    text = read_text(path, "JSON file")
    if not text.strip():
        raise InputError(f"{path}: empty file (expected JSON)")
    return json_loads(text, str(path))


#: No job runs more trials at once than this: a larger "cap" is a typo or garbage, not a cap.
MAX_CAP = 10_000_000


def plausible_cap(value: Any) -> TypeGuard[int]:
    """A configured concurrency cap: a whole number in [1, MAX_CAP] (JSON true is no number)."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 < value <= MAX_CAP


def whole_number(value: Any, key: str, bad: dict[str, int]) -> int | None:
    """A whole number (an int, or a finite float with no fraction, within int64), or None: for a
    missing value, and for anything else with one more bad cell counted for ``key``."""
    if value is None:
        return None
    ok = isinstance(value, int) or (isinstance(value, float) and math.isfinite(value) and value == int(value))
    if isinstance(value, bool) or not ok or abs(value) >= 2**63:
        bad[key] = bad.get(key, 0) + 1
        return None
    return int(value)


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` or None when any level is missing or null."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def raw_rows_table(rows: list[dict], columns: tuple[str, ...] | None = None,
                   bad: dict[str, int] | None = None) -> pa.Table:
    """Rows collected from JSON files as one table in canonical names.

    Times stay text (validation parses them and counts the ones it cannot); every other
    column takes its canonical type. ``columns`` limits the table to what the source reports.
    A cell of the wrong JSON type (a number where text belongs, text where a count belongs)
    becomes null and is counted per column in ``bad``: one odd cell never costs the file.
    """
    fields = [f for f in ROLLOUT_SCHEMA if columns is None or f.name in columns]
    arrays = {}
    for f in fields:
        kind = pa.string() if pa.types.is_timestamp(f.type) else f.type
        values = [r[f.name] for r in rows]
        try:
            arrays[f.name] = pa.array(values, type=kind)
        except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
            kept = [v if _fits(v, kind) else None for v in values]
            if bad is not None:
                bad[f.name] = bad.get(f.name, 0) + sum(v is not None and k is None for v, k in zip(values, kept))
            arrays[f.name] = pa.array(kept, type=kind)
    return pa.table(arrays)


def _fits(value: Any, kind: pa.DataType) -> bool:
    """Whether one JSON value converts to Arrow type ``kind`` as the whole column would have
    (asked of PyArrow itself, so the cells kept are exactly those a clean column keeps)."""
    if value is None:
        return True
    try:
        pa.array([value], type=kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError, TypeError, ValueError):
        return False
    return True


def warn_bad_cells(tel: Telemetry, where: Path, bad: dict[str, int]) -> None:
    """One warning per column that had cells of the wrong type (read as null)."""
    for column, n in sorted(bad.items()):
        if n:
            warn_once(tel, f"{where}: {n} '{column}' cell(s) have the wrong JSON type; read as null")

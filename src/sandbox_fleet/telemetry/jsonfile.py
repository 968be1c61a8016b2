"""JSON sources: load a file or fail with one line naming it; collect rows into a table."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA


def load_json(path: Path) -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError as exc:
        raise InputError(f"{path}: no such file") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{path}: cannot read ({exc.__class__.__name__})") from exc
    if not text.strip():
        raise InputError(f"{path}: empty file (expected JSON)")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno} ({exc.msg})") from exc


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` or None when any level is missing or null."""
    for key in keys:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(key)
    return obj


def raw_rows_table(rows: list[dict], columns: tuple[str, ...] | None = None) -> pa.Table:
    """Rows collected from JSON files as one table in canonical names.

    Times stay text (validation parses them and counts the ones it cannot); every other
    column takes its canonical type. ``columns`` limits the table to what the source reports.
    """
    fields = [f for f in ROLLOUT_SCHEMA if columns is None or f.name in columns]
    return pa.table({
        f.name: pa.array([r[f.name] for r in rows], type=pa.string() if pa.types.is_timestamp(f.type) else f.type)
        for f in fields
    })

"""Load a JSON file or fail with one line naming it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from sandbox_fleet.errors import InputError


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

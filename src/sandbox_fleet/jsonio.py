"""JSON output shared by every command: full precision, NaN as null, stable bytes."""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any


def to_jsonable(value: Any) -> Any:
    """Convert NumPy scalars/arrays and non-finite floats into plain JSON values."""
    np = sys.modules.get("numpy")
    if np is None:  # no NumPy loaded, so no NumPy values: spare every command its import
        return _plain(value)
    kind = type(value)
    # Exact built-in types first (most values of a summary): the same results as the checks
    # below, without a chain of isinstance calls per value.
    if kind is str or kind is int or kind is bool or value is None:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is list:
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return [to_jsonable(v) for v in value.tolist()]
    if isinstance(value, (np.bool_,)):
        return bool(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        f = float(value)
        return f if math.isfinite(f) else None
    return value


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def dumps(obj: Any) -> str:
    """Serialise ``obj`` deterministically (insertion order kept, NaN -> null)."""
    return json.dumps(to_jsonable(obj), indent=2, allow_nan=False, ensure_ascii=False) + "\n"


def write(obj: Any, path: str | Path) -> None:
    """Write ``obj`` as JSON to ``path`` atomically (temporary file, fsync, rename)."""
    from sandbox_fleet import atomic

    atomic.write_text(path, dumps(obj))

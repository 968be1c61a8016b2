"""Write a sweep's table as CSV, Parquet or JSON (chosen by the file's suffix), stable bytes.

CSV and JSON write a swept ``unbounded`` cap as the word; Parquet, whose columns are
typed, writes it as null in an otherwise numeric column.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from sandbox_fleet import atomic, jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.paths import UNBOUNDED

SUFFIXES = (".csv", ".parquet", ".json")


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v)  # shortest round-trip form: full precision, same bytes every time
    return str(v)


def to_csv(result: dict) -> str:
    rows = result["rows"]
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    cols = list(rows[0]) if rows else []
    w.writerow(cols)
    for r in rows:
        w.writerow([_cell(r[c]) for c in cols])
    return buf.getvalue()


def to_arrow(result: dict):
    import pyarrow as pa

    rows = result["rows"]
    cols = list(rows[0]) if rows else []
    arrays = {}
    for c in cols:
        vals = [r[c] for r in rows]
        nums = [v for v in vals if v is not None and v != UNBOUNDED]
        if UNBOUNDED in vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in nums):
            vals = [None if v == UNBOUNDED else v for v in vals]
        try:
            arrays[c] = pa.array(vals)
        except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed kinds, e.g. 1 and "x": keep them as text
            arrays[c] = pa.array([None if v is None else _cell(v) for v in vals], type=pa.string())
    return pa.table(arrays)


def write(result: dict, path: str | Path) -> Path:
    """Write ``result`` to ``path`` atomically; its suffix picks the format."""
    out = Path(path)
    suffix = out.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(f"-o {out}: expected a file ending in {', '.join(SUFFIXES)}")
    if suffix == ".json":
        jsonio.write(result, out)
    elif suffix == ".csv":
        atomic.write_text(out, to_csv(result))
    else:
        import pyarrow.parquet as pq

        with atomic.atomic_path(out) as tmp:
            pq.write_table(to_arrow(result), tmp, compression="zstd")
    return out

"""Cheap facts read straight off Arrow buffers, for checks that pass on nearly every batch.

Every batch of every source is checked for negative counts and implausible times; almost
always nothing is wrong. Arrow's null-aware min and max cost ~2-5 ms per million rows, a
NumPy reduction over the raw value slots a tenth of that. The slots of null rows hold
anything, so a raw bound is only ever used to say "nothing can be outside": a bound that
fails the check sends the caller to its exact, null-aware path.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

#: Types whose values are one little-endian int64 slot a row.
_INT64_BACKED = (pa.types.is_int64, pa.types.is_timestamp, pa.types.is_duration, pa.types.is_date64)


def all_false(n: int) -> pa.BooleanArray:
    """``n`` false booleans: one zeroed bitmap, no validity (``pa.array`` of a NumPy array
    would also import ``numpy.ma``, ~30 ms, the first time)."""
    bits = pa.py_buffer(bytes((n + 7) // 8))
    return pa.Array.from_buffers(pa.bool_(), n, [None, bits], null_count=0)


def value_slots(chunk: pa.Array, dtype="<i8") -> np.ndarray:
    """The fixed-width value buffer of one chunk as ``dtype``, its own rows only, zero-copy
    (a null row's slot holds whatever the buffer has)."""
    n = len(chunk)
    return np.frombuffer(chunk.buffers()[1], dtype=dtype, count=chunk.offset + n)[chunk.offset:]


def slot_bounds(col: pa.Array | pa.ChunkedArray) -> tuple[int, int] | None:
    """The least and greatest int64 value slot of ``col``, null rows' slots included: every
    valid value lies within them. None when ``col`` is empty, all null, or not int64-backed."""
    chunks = col.chunks if isinstance(col, pa.ChunkedArray) else [col]
    if not chunks or not any(f(col.type) for f in _INT64_BACKED):
        return None
    lows, highs = [], []
    for chunk in chunks:
        n = len(chunk)
        if n == 0 or chunk.null_count == n:
            continue
        values = value_slots(chunk)
        lows.append(int(values.min()))
        highs.append(int(values.max()))
    return (min(lows), max(highs)) if lows else None

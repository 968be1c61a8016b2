"""Row validation shared by every reader: convert times, reject bad rows by reason, conform.

Reasons (the keys of ``Telemetry.rejected``), checked in this order so each rejected
row is counted once: "missing id", "unparsable time", "mixed epoch units", "missing
start or finish", "implausible time", "finished before started", and, across all inputs,
"duplicate id" (first kept). A zero-length hold (finished == started) is allowed.
Cells other than the interval's are cleaned one by one (``cells``), never costing a row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.cells import clean_cells
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.record import (
    CODED,
    CODED_COLUMNS,
    PHASES,
    REQUIRED_ROLLOUT_COLUMNS,
    TS,
    Telemetry,
    conform_rollouts,
    is_text,
)
from sandbox_fleet.telemetry.times import to_utc

PHASE_TIME_COLUMNS = tuple(f"{p}_{e}" for p in PHASES for e in ("started_at", "finished_at"))

MISSING_ID = "missing id"
UNPARSABLE = "unparsable time"
MISSING_TIME = "missing start or finish"
BACKWARDS = "finished before started"
DUPLICATE = "duplicate id"
MIXED_UNITS = "mixed epoch units"
IMPLAUSIBLE = "implausible time"


def _blank_to_null(col: pa.ChunkedArray | pa.Array, coded: bool = False) -> pa.ChunkedArray | pa.Array:
    """Empty strings as null; any other column is returned as it came, never copied.

    The type is checked before anything else: combining chunks first cost a copy of
    every column of every batch (~1.2 s at 10M rows) for the few text columns that need it.
    ``coded``: a ``CODED`` column stays encoded (only its dictionary is looked at).
    """
    t = col.type
    if coded and t == CODED:
        return _blank_codes_to_null(col)
    if pa.types.is_dictionary(t):
        if not is_text(t.value_type):
            return col.cast(t.value_type)
        col = col.cast(t.value_type)
        t = col.type
    if not is_text(t):
        return col
    blank = pc.equal(col, "")
    if not pc.any(blank).as_py():
        return col
    return pc.if_else(blank, pa.scalar(None, t), col)


def _blank_codes_to_null(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """``_blank_to_null`` of a ``CODED`` column: rows whose code names "" get a null code."""
    if isinstance(col, pa.ChunkedArray):
        return pa.chunked_array([_blank_codes_to_null(c) for c in col.chunks], type=col.type)
    blank = pc.equal(col.dictionary, "")
    if not pc.any(blank).as_py():
        return col
    hit = pc.fill_null(pc.take(blank, col.indices), False)
    return pa.DictionaryArray.from_arrays(pc.if_else(hit, None, col.indices), col.dictionary)


def clean_batch(
    table: pa.Table, source: str, opts: ReadOptions, tel: Telemetry, state: dict
) -> pa.Table:
    """Canonical-named raw rows -> ROLLOUT_SCHEMA rows that passed the per-row checks.

    ``state`` persists across the batches of one source (e.g. the detected epoch unit).
    A row is rejected whole or kept with its id unchanged (cells of other columns may be nulled).
    """
    missing = [c for c in REQUIRED_ROLLOUT_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)} (a rollout needs id, started_at, finished_at; use `column_map` "
            "canonical=source)"
        )
    cols: dict[str, pa.Array] = {name: _blank_to_null(table.column(name), opts.coded and name in CODED_COLUMNS)
                                 for name in table.column_names}
    n = table.num_rows
    unparsable = mixed = pa.repeat(False, n)
    for name in ("started_at", "finished_at", *PHASE_TIME_COLUMNS):
        if name not in cols:
            continue
        times, bad, mismatch = to_utc(cols[name], name, source, opts, tel, state)
        cols[name] = times
        if name in ("started_at", "finished_at"):
            unparsable = pc.or_(unparsable, bad)
            mixed = pc.or_(mixed, mismatch)
        elif pc.any(pc.or_(bad, mismatch)).as_py():
            # A phase is optional detail: an unreadable one becomes null, the rollout stays.
            cols[name] = pc.if_else(pc.or_(bad, mismatch), None, times)
            warn_once(tel, f"{source}: some {name} values could not be read as times and were left null")
    if "has_exception" not in cols and "exception_type" in cols:
        # A source that names the error type but has no flag: a non-empty type is an exception.
        cols["has_exception"] = pc.is_valid(cols["exception_type"])
    ids, start, finish = cols["id"], cols["started_at"], cols["finished_at"]
    no_id = pc.is_null(ids)
    masks = [(MISSING_ID, no_id)]
    gone = no_id
    for reason, mask in ((UNPARSABLE, unparsable), (MIXED_UNITS, mixed),
                         (MISSING_TIME, pc.or_(pc.is_null(start), pc.is_null(finish))),
                         (IMPLAUSIBLE, _outside(start, finish, opts)),
                         (BACKWARDS, pc.fill_null(pc.less(finish, start), False))):
        mask = pc.and_not(mask, gone)
        masks.append((reason, mask))
        gone = pc.or_(gone, mask)
    for reason, mask in masks:
        tel.reject(reason, pc.sum(mask).as_py() or 0)  # a boolean sum counts the trues, no cast
    out = pa.table(cols)
    if pc.any(gone).as_py():
        out = out.filter(pc.fill_null(pc.invert(gone), False))  # what filter does with a null: drops the row
    out = clean_cells(out, source, tel, state)
    # conform_rollouts fills absent columns from shared null chunks (no per-row memory).
    return conform_rollouts(out, source, coded=opts.coded)


def _outside(start: pa.Array, finish: pa.Array, opts: ReadOptions) -> pa.Array:
    """Either end outside the plausible window (or, with --allow-any-time, past year 9999)."""
    lo_us, hi_us = opts.earliest_us, opts.latest_us
    # Two reductions settle the usual case (everything inside) without building a mask.
    bounds = [pc.min_max(c.cast(pa.int64())).as_py() for c in (start, finish)]
    if all(b["min"] is not None and (lo_us is None or b["min"] >= lo_us) and b["max"] < hi_us for b in bounds):
        return pa.repeat(False, len(start))
    hi = pa.scalar(hi_us, pa.int64()).cast(TS)
    out = pc.or_(pc.greater_equal(start, hi), pc.greater_equal(finish, hi))
    if lo_us is not None:
        lo = pa.scalar(lo_us, pa.int64()).cast(TS)
        out = pc.or_(out, pc.or_(pc.less(start, lo), pc.less(finish, lo)))
    return pc.fill_null(out, False)


_MUL = np.uint64(0x9E3779B97F4A7C15)  # odd 64-bit constants of the splitmix64 finaliser
_MIX1, _MIX2 = np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB)


#: _KEEP[k] keeps the low k bytes of a word.
_KEEP = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place: every input bit reaches every output bit."""
    h ^= h >> np.uint64(30)
    h *= _MIX1
    h ^= h >> np.uint64(27)
    h *= _MIX2
    h ^= h >> np.uint64(31)
    return h


def _chunk_hashes(chunk: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string of one chunk, in NumPy, eight bytes a pass over the data buffer.

    Each string is read as little-endian words from its own offset (bytes past its end
    masked off), so the pass count is the longest id's length / 8, not the row count.
    """
    n = len(chunk)
    if n == 0:
        return np.zeros(0, np.uint64)
    off_type = np.int64 if pa.types.is_large_string(chunk.type) else np.int32
    offsets = np.frombuffer(chunk.buffers()[1], dtype=off_type, count=chunk.offset + n + 1)[chunk.offset:]
    offsets = offsets.astype(np.int64)
    lengths = np.diff(offsets)
    data = chunk.buffers()[2]
    raw = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)
    lo, longest, shortest = int(offsets[0]), int(lengths.max()), int(lengths.min())
    if longest == shortest and longest > 0:
        return _fixed_width_hashes(raw, lo, n, longest)
    # Padding past the last string's end by its own length keeps every read in bounds.
    padded = np.zeros(int(offsets[-1]) - lo + longest + 8, dtype=np.uint8)
    padded[:padded.size - longest - 8] = raw[lo:lo + padded.size - longest - 8]
    # Every eight-byte window of the buffer as one unaligned little-endian word.
    words = np.ndarray((padded.size - 7,), dtype="<u8", buffer=padded, strides=(1,))
    h = lengths.astype(np.uint64) * _MUL
    at = offsets[:-1] - lo
    for k in range(0, longest, 8):
        # Only strings that reach this word take a step: a hash must not depend on how long
        # the other ids of its chunk are (an id repeated across chunks would hash apart).
        left = lengths - k
        rows = None if k < shortest else np.flatnonzero(left > 0)
        word = words[at + k] if rows is None else words[at[rows] + k]
        word &= _KEEP[np.minimum(left if rows is None else left[rows], 8)]  # bytes past the end: zero
        step = h if rows is None else h[rows]
        step ^= word
        step *= _MUL
        step ^= step >> np.uint64(32)
        if rows is not None:
            h[rows] = step
    return _mix(h)


def _fixed_width_hashes(raw: np.ndarray, lo: int, n: int, width: int) -> np.ndarray:
    """``_chunk_hashes`` of ``n`` strings of ``width`` bytes each, back to back from ``raw[lo]``
    (hex ids, uuids): word k of every string is one strided view, no gather of offsets and no
    copy of the buffer unless the last word would read past its end. The same words, masks and
    steps as the general pass, so the same hashes."""
    end = lo + n * width
    last = (width - 1) // 8 * 8  # the offset of each string's last word
    buf = raw if raw.size >= end - width + last + 8 else np.concatenate((raw[lo:end], np.zeros(8, np.uint8)))
    base = lo if buf is raw else 0
    h = np.full(n, width, dtype=np.uint64)
    h *= _MUL  # wraps, as the general pass's product does
    for k in range(0, width, 8):
        word = np.ndarray((n,), dtype="<u8", buffer=buf, offset=base + k, strides=(width,))
        h ^= word if width - k >= 8 else word & _KEEP[width - k]
        h *= _MUL
        h ^= h >> np.uint64(32)
    return _mix(h)


def _id_hashes(ids: pa.ChunkedArray) -> np.ndarray:
    # A hash per id in NumPy (8 bytes a row): an exact Arrow hash table would hold a copy of
    # every id (~700 MB at 10M rows), and DuckDB's hash() cost its import (~0.2 s) and a pass.
    parts = [_chunk_hashes(c if is_text(c.type) else c.cast(pa.large_string())) for c in ids.chunks]
    return parts[0] if len(parts) == 1 else np.concatenate(parts or [np.zeros(0, np.uint64)])


def drop_duplicates(table: pa.Table, tel: Telemetry) -> pa.Table:
    """Keep the first row of each id in input order; count the rest as "duplicate id".

    Rows whose 64-bit id hash is unique are certainly unique; only rows sharing a hash
    are compared exactly, so a hash collision never merges two different ids.
    """
    n = table.num_rows
    if n < 2:
        return table
    ids = table.column("id")
    hashes = _id_hashes(ids)
    # The hashes in input order are only needed when some repeat: a sorted copy finds them.
    ordered = np.sort(hashes)
    repeated = ordered[1:][ordered[1:] == ordered[:-1]]  # ascending, as ``ordered`` is
    # Each repeated hash once, read off the sorted run (np.unique would sort it again).
    shared = repeated[np.concatenate(([True], repeated[1:] != repeated[:-1]))] if repeated.size else repeated
    del ordered
    if shared.size == 0:
        return table
    rows = np.flatnonzero(np.isin(hashes, shared))  # input order
    codes = pc.dictionary_encode(ids.take(pa.array(rows))).combine_chunks().indices.to_numpy(zero_copy_only=False)
    _, first = np.unique(codes, return_index=True)
    later = np.ones(rows.size, dtype=bool)
    later[first] = False
    keep = np.ones(n, dtype=bool)
    keep[rows[later]] = False
    tel.reject(DUPLICATE, int(later.sum()))
    return table.filter(pa.array(keep))

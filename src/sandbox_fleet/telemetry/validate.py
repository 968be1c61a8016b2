"""Row validation shared by every reader: convert times, reject bad rows by reason, conform.

Reasons (the keys of ``Telemetry.rejected``), checked in this order so each rejected
row is counted once: "missing id", "unparsable time", "missing start or finish",
"finished before started", and, across all inputs, "duplicate id" (first kept).
A zero-length hold (finished == started) is allowed.
"""

from __future__ import annotations

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.record import (
    PHASES,
    REQUIRED_ROLLOUT_COLUMNS,
    ROLLOUT_SCHEMA,
    Telemetry,
    conform_rollouts,
)
from sandbox_fleet.telemetry.times import to_utc

PHASE_TIME_COLUMNS = tuple(f"{p}_{e}" for p in PHASES for e in ("started_at", "finished_at"))

MISSING_ID = "missing id"
UNPARSABLE = "unparsable time"
MISSING_TIME = "missing start or finish"
BACKWARDS = "finished before started"
DUPLICATE = "duplicate id"


def _blank_to_null(col: pa.ChunkedArray | pa.Array) -> pa.Array:
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        return arr
    blank = pc.equal(arr, "")
    if not pc.any(blank).as_py():
        return arr
    return pc.if_else(blank, pa.scalar(None, arr.type), arr)


def clean_batch(
    table: pa.Table, source: str, opts: ReadOptions, tel: Telemetry, state: dict
) -> pa.Table:
    """Canonical-named raw rows -> ROLLOUT_SCHEMA rows that passed the per-row checks.

    ``state`` persists across the batches of one source (e.g. the detected epoch unit).
    """
    missing = [c for c in REQUIRED_ROLLOUT_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(
            f"{source}: missing column(s) {', '.join(missing)} (a rollout needs id, started_at, finished_at; use --map canonical=source)"
        )
    cols: dict[str, pa.Array] = {name: _blank_to_null(table.column(name)) for name in table.column_names}
    n = table.num_rows
    unparsable = pa.array(np.zeros(n, dtype=bool))
    for name in ("started_at", "finished_at", *PHASE_TIME_COLUMNS):
        if name not in cols:
            continue
        times, bad = to_utc(cols[name], name, source, opts, tel, state)
        cols[name] = times
        if name in ("started_at", "finished_at"):
            unparsable = pc.or_(unparsable, bad)
        elif pc.any(bad).as_py():
            # A phase is optional detail: an unreadable one becomes null, the rollout stays.
            warn_once(tel, f"{source}: some {name} values could not be read as times and were left null")
    ids, start, finish = cols["id"], cols["started_at"], cols["finished_at"]
    no_id = pc.is_null(ids)
    bad_time = pc.and_not(unparsable, no_id)
    gone = pc.or_(no_id, bad_time)
    no_time = pc.and_not(pc.or_(pc.is_null(start), pc.is_null(finish)), gone)
    gone = pc.or_(gone, no_time)
    backwards = pc.and_not(pc.fill_null(pc.less(finish, start), False), gone)
    gone = pc.or_(gone, backwards)
    for reason, mask in ((MISSING_ID, no_id), (UNPARSABLE, bad_time), (MISSING_TIME, no_time), (BACKWARDS, backwards)):
        tel.reject(reason, pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)
    out = pa.table(cols)
    if pc.any(gone).as_py():
        out = out.filter(pc.invert(gone))
    out = _parse_text_cells(out, source, tel, state)
    # conform_rollouts fills absent columns from shared null chunks (no per-row memory).
    return conform_rollouts(out, source)


#: What a text cell must look like to become each canonical type (CSV and JSON hand us text).
_TEXT_FORMS = {
    pa.int64(): r"^\s*[+-]?\d+(\.0*)?\s*$",
    pa.float64(): r"^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$",
    pa.bool_(): r"^\s*(?i:true|false|t|f|yes|no|y|n|1|0)\s*$",
}


def _parse_text_cells(table: pa.Table, source: str, tel: Telemetry, state: dict) -> pa.Table:
    """Text columns bound for numbers or flags: a cell that does not parse becomes null.

    One bad cell must not cost the whole file (or its row: the hold is still good), so
    it is nulled and counted in a warning per column. A column where no cell parses is
    the wrong type altogether and stays an error (``conform_rollouts`` names it).
    """
    for fld in ROLLOUT_SCHEMA:
        pattern = _TEXT_FORMS.get(fld.type)
        if pattern is None or fld.name not in table.column_names:
            continue
        col = table.column(fld.name)
        if not (pa.types.is_string(col.type) or pa.types.is_large_string(col.type)):
            continue
        ok = pc.fill_null(pc.match_substring_regex(col, pattern), True)
        bad = int(len(col) - pc.sum(pc.cast(ok, pa.int64())).as_py())
        if bad == 0 or bad == len(col) - col.null_count:
            continue
        col = pc.if_else(ok, col, pa.scalar(None, col.type))
        if fld.type == pa.int64():
            col = pc.cast(pc.cast(col, pa.float64()), pa.int64())
        elif fld.type == pa.bool_():
            col = pc.match_substring_regex(col, r"^\s*(?i:true|t|yes|y|1)\s*$")
        table = table.set_column(table.column_names.index(fld.name), fld.name, col)
        counts = state.setdefault("bad_cells", {})
        before = counts.get(fld.name, 0)
        counts[fld.name] = before + bad
        old = f"{source}: {before:,} value(s) in column '{fld.name}' are not {fld.type}; read as null"
        if old in tel.warnings:
            tel.warnings.remove(old)
        tel.warnings.append(f"{source}: {before + bad:,} value(s) in column '{fld.name}' are not {fld.type}; read as null")
    return table


def _id_hashes(ids: pa.ChunkedArray) -> np.ndarray:
    # DuckDB hashes 10M strings in well under a second and 80 MB; an exact Arrow hash
    # table would hold a copy of every id (~700 MB at 10M rows).
    con = duckdb.connect()
    try:
        con.register("_ids", pa.table({"id": ids}))
        col = con.sql("SELECT hash(id) AS h FROM _ids").to_arrow_table().column(0)
    finally:
        con.close()
    return np.concatenate([c.to_numpy(zero_copy_only=False) for c in col.chunks]) if col.num_chunks else np.zeros(0, np.uint64)


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
    ordered = np.sort(hashes)
    shared = np.unique(ordered[1:][ordered[1:] == ordered[:-1]])
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

"""Turn any time column (ISO strings, epoch numbers, Arrow timestamps) into UTC microseconds.

Every converter returns the converted column and a mask of values that were present
but could not be read, so validation can count them as "unparsable time" instead of
confusing them with missing ones.
"""

from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry.options import ReadOptions, warn_once
from sandbox_fleet.telemetry.record import TS, Telemetry, is_text

#: Microseconds per unit.
_US_PER = {"s": 1_000_000, "ms": 1_000, "us": 1, "ns": 0.001}
_UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}

# An offset or Z right after a clock time; a bare date such as 2026-11-29 must not match.
_OFFSET_RE = r"\d:\d\d(:\d\d(\.\d*)?)?\s*([Zz]|[+-]\d\d(:?\d\d)?)$"

_local = threading.local()

#: 10000-01-01T00:00:00Z in epoch seconds: nothing at or past it is a time we can print.
YEAR_10000_S = 253_402_300_800
#: Cells past year 9999 are set to this instant, so the time window rejects them by reason.
BEYOND_US = YEAR_10000_S * 1_000_000


def _con():
    # One embedded connection per thread; creating one per column costs milliseconds.
    # Imported here: canonical timestamp columns never need it (~0.2 s of import).
    import duckdb

    con = getattr(_local, "con", None)
    if con is None:
        con = duckdb.connect()
        _local.con = con
    return con


#: (times, unparsable mask, unit-mismatch mask)
Converted = tuple[pa.Array, pa.Array, pa.Array]


def naive_warning(tz: str) -> str:
    return f"naive timestamps (no UTC offset) were taken as {tz}; set --assume-tz to change"


def detect_unit(values: pa.Array) -> str:
    """Guess the epoch unit from the median magnitude (seconds ~1.7e9 today, ns ~1.7e18)."""
    mags = pc.abs(pc.cast(values.drop_null(), pa.float64(), safe=False)).to_numpy(zero_copy_only=False)
    mags = mags[np.isfinite(mags)]
    if mags.size == 0:
        return "s"
    m = float(np.median(mags))
    if m < 1e11:
        return "s"
    if m < 1e14:
        return "ms"
    if m < 1e17:
        return "us"
    return "ns"


def _epoch(values: pa.Array, unit: str) -> tuple[pa.Array, pa.Array]:
    """Epoch numbers -> UTC microseconds; cells past year 9999 (either sign) become BEYOND_US.

    Those cells are not unparsable: the time window rejects them as implausible. Nothing
    here can overflow, whatever the magnitude.
    """
    present = pc.is_valid(values)
    limit = YEAR_10000_S * 1_000_000 / _US_PER[unit]  # in the column's unit
    if pa.types.is_integer(values.type) and not pa.types.is_uint64(values.type):
        ints = pc.cast(values, pa.int64())
        huge = pc.fill_null(pc.greater_equal(pc.abs_checked(pc.max_element_wise(ints, pa.scalar(-(2**63) + 1, pa.int64()))), pa.scalar(min(int(limit), 2**63 - 1), pa.int64())), False)
        if pc.any(huge).as_py():
            ints = pc.if_else(huge, 0, ints)
        if unit == "ns":
            us = pc.divide(ints, 1000)  # integer division truncates sub-microsecond digits
        else:
            us = pc.multiply(ints, int(_US_PER[unit]))
        if pc.any(huge).as_py():
            us = pc.if_else(huge, BEYOND_US, us)
        return pc.cast(us, TS), _no_bad(values)
    floats = pc.cast(values, pa.float64(), safe=False)
    finite = pc.fill_null(pc.is_finite(floats), False)
    huge = pc.and_(finite, pc.fill_null(pc.greater_equal(pc.abs(floats), limit), False))
    us = pc.round(pc.multiply(floats, float(_US_PER[unit])))
    us = pc.if_else(huge, float(BEYOND_US), us)
    us = pc.if_else(finite, us, None)
    bad = pc.and_(present, pc.invert(finite))
    return pc.cast(pc.cast(us, pa.int64()), TS), pc.fill_null(bad, False)


def unit_of(values: pa.Array) -> pa.Array:
    """Each cell's own epoch unit by magnitude (the thresholds of ``detect_unit``), as text."""
    mags = pc.abs(pc.cast(values, pa.float64(), safe=False))
    return pc.if_else(pc.less(mags, 1e11), "s", pc.if_else(pc.less(mags, 1e14), "ms",
                      pc.if_else(pc.less(mags, 1e17), "us", "ns")))


def _no_bad(values: pa.Array) -> pa.Array:
    return pa.repeat(False, len(values))


def _strings(values: pa.Array, name: str, source: str, opts: ReadOptions, tel: Telemetry, state: dict) -> Converted:
    con = _con()
    con.execute(f"SET TimeZone='{opts.assume_tz}'")
    tbl = pa.table({"x": values})
    con.register("_times", tbl)
    try:
        out = con.sql(
            f"""SELECT try_cast(x AS TIMESTAMPTZ) AS t,
                       x IS NOT NULL AND NOT regexp_matches(x, '{_OFFSET_RE}') AS naive,
                       try_cast(x AS DOUBLE) AS num
                FROM _times"""
        ).to_arrow_table()
    finally:
        con.unregister("_times")
    parsed = out.column("t").combine_chunks()
    num = out.column("num").combine_chunks()
    n_num = len(num) - num.null_count
    n_iso = len(parsed) - parsed.null_count
    # Digits are epoch numbers written as text (CSV read as strings, JSON quoted); a column
    # of mostly digits with a stray 'N/A' is still an epoch column, the stray cell unparsable.
    if n_num > n_iso:
        times, bad, mismatch = _numeric(num, name, source, opts, tel, state)
        return times, pc.or_(bad, pc.fill_null(pc.and_(pc.is_valid(values), pc.is_null(num)), False)), mismatch
    naive = pc.fill_null(pc.and_(out.column("naive"), pc.is_valid(parsed)), False)
    n_naive = int(pc.sum(pc.cast(naive, pa.int64())).as_py() or 0)
    if n_naive:
        warn_once(tel, naive_warning(opts.assume_tz))
        if n_naive < n_iso:  # naive cells beside offset ones: say how many took the zone
            counts = state.setdefault("mixed_naive", {})
            before = counts.get(name, 0)
            counts[name] = before + n_naive
            replace_warning(tel, f"{source}: {before:,} naive timestamp(s) in column '{name}' mixed with offset ones were taken as {opts.assume_tz}",
                            f"{source}: {before + n_naive:,} naive timestamp(s) in column '{name}' mixed with offset ones were taken as {opts.assume_tz}")
    bad = pc.and_(pc.is_valid(values), pc.is_null(parsed))
    return pc.cast(parsed, TS), pc.fill_null(bad, False), _no_bad(values)


def replace_warning(tel: Telemetry, old: str, new: str) -> None:
    """Swap a running-count warning for its updated text (counts grow batch by batch)."""
    if old in tel.warnings:
        tel.warnings[tel.warnings.index(old)] = new
    elif new not in tel.warnings:
        tel.warnings.append(new)


def _numeric(values: pa.Array, name: str, source: str, opts: ReadOptions, tel: Telemetry, state: dict) -> Converted:
    unit = opts.time_unit
    if unit is None:
        # Decide once per source so every batch of one file uses the same unit.
        unit = state.get("epoch_unit")
        if unit is None:
            unit = detect_unit(values)
            state["epoch_unit"] = unit
            warn_once(tel, f"{source}: numeric times taken as epoch {_UNIT_NAMES[unit]} (detected from magnitude; set --time-unit to override)")
        # A cell whose own magnitude says another unit is an outlier, rejected by reason.
        mismatch = pc.fill_null(pc.not_equal(unit_of(values), unit), False)
    else:
        mismatch = _no_bad(values)
    times, bad = _epoch(values, unit)
    return times, bad, mismatch


def to_utc(
    column: pa.Array | pa.ChunkedArray,
    name: str,
    source: str,
    opts: ReadOptions,
    tel: Telemetry,
    state: dict,
) -> Converted:
    """Convert one time column to ``timestamp[us, UTC]``; returns (times, unparsable, unit mismatch).

    The masks flag present cells that could not be read, and epoch cells whose magnitude
    names another unit than the column's detected one.

    Naive values (Arrow timestamps without a zone, ISO strings without an offset) are
    read in ``opts.assume_tz`` and trigger one warning for the whole load.
    """
    if column.type == TS:
        # Already canonical (a canonical Parquet file): nothing to convert, so nothing to copy.
        return column, _no_bad(column), _no_bad(column)
    values = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    t = values.type
    if pa.types.is_null(t):
        return pa.nulls(len(values), TS), _no_bad(values), _no_bad(values)
    if pa.types.is_dictionary(t):
        values = values.dictionary_decode()
        t = values.type
    if pa.types.is_timestamp(t):
        if t.tz is None:
            if values.null_count < len(values):
                warn_once(tel, naive_warning(opts.assume_tz))
            if opts.assume_tz != "UTC":
                values = pc.assume_timezone(values, opts.assume_tz, ambiguous="earliest", nonexistent="earliest")
        return pc.cast(values, TS, safe=False), _no_bad(values), _no_bad(values)
    if pa.types.is_date(t):
        return to_utc(pc.cast(values, pa.timestamp("us")), name, source, opts, tel, state)
    if is_text(t):
        return _strings(pc.cast(values, pa.string()), name, source, opts, tel, state)
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return _numeric(values, name, source, opts, tel, state)
    raise InputError(
        f"{source}: column '{name}' has type {t}, expected ISO-8601 strings, epoch numbers or timestamps"
    )

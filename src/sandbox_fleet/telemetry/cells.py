"""Cell-level cleaning of the non-time columns: a bad cell becomes null, never a lost file.

Counts (``int64``: tokens, turns, trajectory bytes) take integers, integral floats and
integral text; NaN, infinities, fractions, values beyond int64 and text that is not a
number become null, as do negative counts. Flags take true/false, t/f, yes/no, y/n, 1/0
in any case. Each nulled cell is counted in one running warning per column and cause.
A text column in which no present cell parses is the wrong type altogether: it is left
for ``conform_rollouts`` to refuse with an error naming it.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, Telemetry, is_text
from sandbox_fleet.telemetry.times import replace_warning

_INT_TEXT = r"^[+-]?\d+(\.0*)?$"
_FLOAT_TEXT = r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$|^(?i:nan|inf|-inf|\+inf|infinity|-infinity)$"
_BOOL_TEXT = r"^(?i:true|false|t|f|yes|no|y|n|1|0)$"
_TRUE_TEXT = r"^(?i:true|t|yes|y|1)$"
#: Just under 2**63: a float at or past it cannot be an int64.
_INT64_LIMIT = 9.2e18

COUNT_COLUMNS = tuple(f.name for f in ROLLOUT_SCHEMA if f.type == pa.int64())
FLAG_COLUMNS = tuple(f.name for f in ROLLOUT_SCHEMA if f.type == pa.bool_())
FLOAT_COLUMNS = tuple(f.name for f in ROLLOUT_SCHEMA if f.type == pa.float64())


def _n(mask) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def _count_text(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(int64 column, mask of present cells that were not a usable count)."""
    text = pc.utf8_trim_whitespace(pc.cast(col, pa.string()))
    ok = pc.fill_null(pc.match_substring_regex(text, _INT_TEXT), False)
    digits = pc.replace_substring_regex(pc.if_else(ok, text, None), r"\.0*$", "")
    ok = pc.and_(ok, pc.fill_null(pc.less(pc.abs(pc.cast(digits, pa.float64())), _INT64_LIMIT), False))
    out = pc.cast(pc.if_else(ok, digits, None), pa.int64())
    return out, pc.and_(pc.is_valid(col), pc.invert(ok))


def _count_numbers(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Any numeric column as int64; non-finite, fractional or out-of-range cells null."""
    if pa.types.is_integer(col.type) and not pa.types.is_uint64(col.type):
        return pc.cast(col, pa.int64()), _none(col)
    floats = pc.cast(col, pa.float64(), safe=False)
    finite = pc.fill_null(pc.is_finite(floats), True)
    ok = pc.and_(finite, pc.fill_null(pc.less(pc.abs(floats), _INT64_LIMIT), True))
    ok = pc.and_(ok, pc.fill_null(pc.equal(pc.floor(floats), floats), True))
    out = pc.cast(pc.if_else(ok, floats, None), pa.int64())
    return out, pc.and_(pc.is_valid(col), pc.invert(ok))


def _none(col: pa.Array) -> pa.Array:
    return pa.array(np.zeros(len(col), dtype=bool))


def _flags_text(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    text = pc.utf8_trim_whitespace(pc.cast(col, pa.string()))
    ok = pc.fill_null(pc.match_substring_regex(text, _BOOL_TEXT), True)
    out = pc.if_else(ok, pc.match_substring_regex(text, _TRUE_TEXT), None)
    return out, pc.invert(ok)


def _floats_text(col: pa.Array) -> tuple[pa.Array, pa.Array]:
    text = pc.utf8_trim_whitespace(pc.cast(col, pa.string()))
    ok = pc.fill_null(pc.match_substring_regex(text, _FLOAT_TEXT), True)
    out = pc.cast(pc.if_else(ok, text, None), pa.float64())
    return out, pc.invert(ok)


def _count_warning(tel: Telemetry, state: dict, source: str, key: str, n: int, text: str) -> None:
    """One running count per (column, cause) for a whole source, updated in place."""
    counts = state.setdefault("bad_cells", {})
    before = counts.get(key, 0)
    counts[key] = before + n
    replace_warning(tel, f"{source}: {before:,} {text}", f"{source}: {before + n:,} {text}")


def clean_cells(table: pa.Table, source: str, tel: Telemetry, state: dict) -> pa.Table:
    """Counts, flags and floats parsed cell by cell; columns already right pass untouched.

    A column already of its canonical type costs one min reduction (the negative-count check),
    never a copy: this runs on every batch of every source.
    """
    for name in table.column_names:
        col = table.column(name)
        t = col.type
        if name in COUNT_COLUMNS and t == pa.int64():
            low = pc.min(col).as_py()
            if low is None or low >= 0:
                continue
        elif name not in COUNT_COLUMNS and not (name in FLAG_COLUMNS + FLOAT_COLUMNS and is_text(t)):
            continue
        col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
        if name in COUNT_COLUMNS and t != pa.int64():
            if is_text(t):
                out, bad = _count_text(col)
            elif pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
                out, bad = _count_numbers(col)
            else:
                continue
        elif name in FLAG_COLUMNS:
            out, bad = _flags_text(col)
        elif name in FLOAT_COLUMNS:
            out, bad = _floats_text(col)
        else:
            out, bad = col, None
        if bad is not None:
            n_bad = _n(bad)
            if n_bad and n_bad == len(col) - col.null_count and is_text(t):
                continue  # no cell parses: the wrong type, refused by conform with its name
            if n_bad:
                target = ROLLOUT_SCHEMA.field(name).type
                _count_warning(tel, state, source, name, n_bad,
                               f"value(s) in column '{name}' are not {target}; read as null")
        if name in COUNT_COLUMNS:
            neg = pc.fill_null(pc.less(out, 0), False)
            n_neg = _n(neg)
            if n_neg:
                out = pc.if_else(neg, None, out)
                _count_warning(tel, state, source, name + "<0", n_neg,
                               f"negative value(s) in column '{name}' (a count); read as null")
        if out is not col:
            table = table.set_column(table.column_names.index(name), name, out)
    return table

"""telemetry.buffers: an all-false array like pa.array's, and raw slot bounds that always hold
every valid value (equal to the min and max when there are no nulls); a null row whose slot
holds a negative or an implausible value never makes a count or a time look bad."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.telemetry.buffers import all_false, slot_bounds
from sandbox_fleet.telemetry.cells import clean_cells
from sandbox_fleet.telemetry.options import make_options
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA, TS, Telemetry
from sandbox_fleet.telemetry.validate import _outside

I64 = st.integers(-(2**63), 2**63 - 1)


def test_all_false_equals_pyarrows():
    for n in (0, 1, 7, 8, 9, 64, 1000):
        got = all_false(n)
        assert got.equals(pa.array([False] * n, type=pa.bool_())) and got.null_count == 0 and len(got) == n


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.one_of(I64, st.none()), max_size=30), min_size=1, max_size=4),
       st.integers(0, 5), st.sampled_from([pa.int64(), TS]))
def test_slot_bounds_hold_every_valid_value(parts, cut, kind):
    chunks = [pa.array(p, type=pa.int64()).cast(kind) for p in parts]
    chunks = [c.slice(min(cut, len(c))) for c in chunks]  # offsets into the buffers
    col = pa.chunked_array(chunks, type=kind)
    valid = [v for c in chunks for v in c.cast(pa.int64()).to_pylist() if v is not None] if kind == TS else \
        [v for c in chunks for v in c.to_pylist() if v is not None]
    got = slot_bounds(col)
    if not valid:
        assert got is None or got[0] <= got[1]
        return
    assert got is not None and got[0] <= min(valid) and got[1] >= max(valid)
    if col.null_count == 0:
        assert got == (min(valid), max(valid))


def test_slot_bounds_refuse_other_types():
    assert slot_bounds(pa.array([1.5, 2.0])) is None
    assert slot_bounds(pa.array([1, 2], type=pa.int32())) is None
    assert slot_bounds(pa.chunked_array([], type=pa.int64())) is None


def _with_null_slot(values: list[int], null_at: int, type_: pa.DataType | None = None) -> pa.Array:
    """An int64-backed array whose row ``null_at`` is null but whose slot holds values[null_at]."""
    validity = np.ones(len(values), dtype=bool)
    validity[null_at] = False
    bits = pa.array(validity).buffers()[1]
    data = pa.py_buffer(np.array(values, dtype="<i8").tobytes())
    return pa.Array.from_buffers(type_ or pa.int64(), len(values), [bits, data], null_count=1)


def test_a_negative_slot_under_a_null_is_no_negative_count():
    tokens = _with_null_slot([5, -7, 3], null_at=1)
    assert slot_bounds(tokens) == (-7, 5)  # the raw bound sees it ...
    tel = Telemetry(rollouts=ROLLOUT_SCHEMA.empty_table())
    table = pa.table({"input_tokens": tokens})
    out = clean_cells(table, "f.parquet", tel, {})
    assert out.column("input_tokens").to_pylist() == [5, None, 3]  # ... the exact check does not
    assert tel.warnings == []


def test_an_implausible_slot_under_a_null_is_no_implausible_time():
    opts = make_options()
    start = _with_null_slot([1_700_000_000_000_000, -(2**62), 1_700_000_000_000_001], null_at=1, type_=TS)
    finish = pa.array([1_700_000_000_000_005] * 3, type=pa.int64()).cast(TS)
    assert _outside(start, finish, opts).to_pylist() == [False, False, False]
    late = pa.array([1_700_000_000_000_000, 2**62, 1], type=pa.int64()).cast(TS)  # valid and out of range
    assert _outside(late, finish, opts).to_pylist() == [False, True, True]

"""The grouped passes of ``stats``: ``group_partitioned`` (values grouped, each group partitioned at
the ranks a summary reads), ``sum_where`` and ``tasks_health``'s exception
counts, against brute-force truths: every group's values sorted on their own, exact sums."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.stats import group_partitioned, sum_where, summary

CODE_TYPES = (np.uint8, np.int16, np.int32, np.int64)


def brute(values: np.ndarray, groupings) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    parts = []
    for codes, n_groups in groupings:
        per = [np.sort(values[codes == g]) for g in range(n_groups)]
        offsets = np.cumsum([0] + [p.size for p in per])
        parts.append((np.concatenate(per) if per else values[:0], offsets))
    return np.sort(values), parts


@st.composite
def cases(draw):
    n = draw(st.integers(1, 400))
    n_groupings = draw(st.integers(0, 3))
    sizes = [draw(st.sampled_from([1, 2, 3, 7, 200, 300])) for _ in range(n_groupings)]
    code_bits = sum(max(g - 1, 0).bit_length() for g in sizes)
    value_bits = draw(st.integers(1, 62 - code_bits))
    lo = draw(st.integers(-(2**62), 2**62))
    values = np.array(draw(st.lists(st.integers(0, 2**value_bits - 1), min_size=n, max_size=n)), dtype=np.int64)
    values = values + np.int64(lo) if abs(lo) < 2**62 - 2**value_bits else values
    groupings = []
    for n_groups in sizes:
        dtype = draw(st.sampled_from([t for t in CODE_TYPES if np.iinfo(t).max >= n_groups - 1]))
        codes = np.array(draw(st.lists(st.integers(0, n_groups - 1), min_size=n, max_size=n)), dtype=dtype)
        groupings.append((codes, n_groups))
    return values, groupings


@settings(max_examples=250, deadline=None)
@given(cases(), st.sampled_from([np.int8, np.uint8, np.int16, np.int32, np.int64]))
def test_group_partitioned_reads_like_the_brute_force_sort(case, code_type):
    """``group_partitioned``: each group holds its own values, and every figure ``summary`` reads
    equals the one of the group sorted on its own (values up to 62 bits, negative ones too)."""
    values, groupings = case
    codes, n_groups = groupings[0] if groupings else (np.zeros(values.size, np.int64), 1)
    if n_groups - 1 > np.iinfo(code_type).max:
        return
    codes = codes.astype(code_type)
    _, [(want_values, want_offsets)] = brute(values, [(codes, n_groups)])
    got_values, got_offsets = group_partitioned(codes.copy(), values.copy(), n_groups)
    assert got_values.dtype == np.int64 and np.array_equal(got_offsets, want_offsets)
    for g in range(n_groups):
        got, want = got_values[got_offsets[g]:got_offsets[g + 1]], want_values[want_offsets[g]:want_offsets[g + 1]]
        assert np.array_equal(np.sort(got), want)
        assert summary(got) == summary(want)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(-(2**63), 2**63 - 1), st.booleans()), max_size=300),
       st.sampled_from([1, 2**20, 2**47, 2**62]))
def test_sum_where_is_the_exact_sum(rows, scale):
    """``stats.sum_where``: the exact sum of the selected values while it fits int64."""
    values = np.array([v // (2**63 // scale) if scale < 2**62 else v for v, _ in rows], dtype=np.int64)
    where = np.array([w for _, w in rows], dtype=bool)
    want = sum(int(v) for v, w in zip(values, where) if w)
    if -(2**63) <= want < 2**63:
        assert sum_where(values, where) == want


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.none(), st.sampled_from(["t-a", "t-b", "t-c", ""])),
                          st.one_of(st.none(), st.booleans())), min_size=1, max_size=200),
       st.booleans())
def test_exception_counts_equal_a_count_by_hand(rows, coded):
    """``tasks_health.exception_counts`` (three bincounts): rows, rows
    with a known flag and exceptions per key, the keyless rows last when there are any."""
    import pyarrow as pa

    from sandbox_fleet.measure.tasks_health import exception_counts

    keys = pa.chunked_array([pa.array([k for k, _ in rows], type=pa.string())])
    if coded:
        keys = pa.chunked_array([keys.chunk(0).dictionary_encode()])
    flags = pa.chunked_array([pa.array([f for _, f in rows], type=pa.bool_())])
    names = sorted({k for k, _ in rows if k is not None})
    _, ids, n, flagged, exc = exception_counts(keys, flags)
    got = {k: (int(a), int(b), int(c)) for k, a, b, c in zip(ids.to_pylist() + [None], n, flagged, exc)}
    want = {k: (sum(1 for kk, _ in rows if kk == k), sum(1 for kk, f in rows if kk == k and f is not None),
                sum(1 for kk, f in rows if kk == k and f)) for k in names + [None]}
    if not any(k is None for k, _ in rows):
        del want[None]
    assert sorted(got, key=str) == sorted(want, key=str) and got == want

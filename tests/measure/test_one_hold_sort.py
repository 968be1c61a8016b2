"""One packed sort of the holds for every grouping (``stats.groups_sorted``), and the hold histogram
of presorted holds, against per-grouping NumPy sorts and ``np.histogram`` as the oracle."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.columns import frame_from_table
from sandbox_fleet.measure.concurrency import MAX_SWEPT_GROUPS, grouped_sweeps, sweep
from sandbox_fleet.measure.holds import BLOCK, histogram
from sandbox_fleet.measure.stats import groups_sorted
from sandbox_fleet.telemetry.record import TS


def _by_numpy(codes: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    parts = [np.sort(values[codes == g]) for g in range(n_groups)]
    offsets = np.concatenate(([0], np.cumsum([p.size for p in parts])))
    return np.concatenate(parts), offsets


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(1, 9), st.integers(1, 3), st.integers(0, 2**40), st.integers(0, 2**31))
def test_every_grouping_equals_its_own_sort(n, n_a, n_b, span, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, span + 1, n) - span // 3  # negative values too, and many ties when span is small
    a = rng.integers(0, n_a, n).astype(np.int32)
    b = rng.integers(0, n_b, n)  # int64 codes
    got = groups_sorted(values, [(a, n_a), (b, n_b)])
    assert got is not None
    everything, parts = got
    assert np.array_equal(everything, np.sort(values))
    for (codes, n_groups), (sorted_values, offsets) in zip([(a, n_a), (b, n_b)], parts):
        want, want_offsets = _by_numpy(codes, values, n_groups)
        assert np.array_equal(sorted_values, want)
        assert np.array_equal(offsets, want_offsets)


def test_empty_groups_and_the_inputs_untouched():
    values = np.array([5, 3, 9, 3, 1], dtype=np.int64)
    codes = np.array([2, 2, 0, 2, 0], dtype=np.int32)
    kept = values.copy(), codes.copy()
    everything, [(grouped, offsets)] = groups_sorted(values, [(codes, 4)])
    assert everything.tolist() == [1, 3, 3, 5, 9]
    assert grouped.tolist() == [1, 9, 3, 3, 5]  # group 0: 1, 9; group 1: none; group 2: 3, 3, 5
    assert offsets.tolist() == [0, 2, 2, 5, 5]
    assert np.array_equal(values, kept[0]) and np.array_equal(codes, kept[1])


def test_a_key_that_does_not_fit_is_refused():
    values = np.array([0, 2**60], dtype=np.int64)
    assert groups_sorted(values, [(np.array([0, 1]), 2), (np.array([0, 3]), 4)]) is None
    assert groups_sorted(np.zeros(0, dtype=np.int64), [(np.zeros(0, dtype=np.int32), 1)]) is None


@pytest.mark.parametrize("seed", range(4))
def test_presorted_histogram_equals_numpys(seed):
    rng = np.random.default_rng(seed)
    n = BLOCK + 12_345 if seed == 0 else 5_000  # seed 0 crosses a block boundary
    us = np.clip(rng.lognormal(np.log(1.3e9), 1.5, n), 0, 3e10).astype(np.int64)
    us[rng.random(n) < 0.01] = 0  # zero-length holds are counted apart
    # Holds on the edges themselves (1 s, 10 s, ... and the bin edges 10**(k/10) s), where a
    # rounding difference would move a count.
    edges_us = np.round(10 ** (np.arange(0, 11) / 10 + 1) * 1e6).astype(np.int64)
    us[: edges_us.size] = edges_us
    order = np.sort(us)
    a, b = histogram(us), histogram(order, presorted=True)
    positive = us[us > 0] / 1e6
    want = np.histogram(positive, bins=a["edges_s"])[0]
    assert np.array_equal(a["counts"], want)
    assert np.array_equal(b["counts"], want)
    assert np.array_equal(a["edges_s"], b["edges_s"]) and a["zero"] == b["zero"] == int((us == 0).sum())


def test_presorted_histogram_all_zero_and_one_value():
    assert histogram(np.zeros(3, dtype=np.int64), presorted=True) == {"edges_s": [], "counts": [], "zero": 3}
    one = histogram(np.array([0, 2_000_000]), presorted=True)
    assert one["zero"] == 1 and int(np.sum(one["counts"])) == 1


def test_frame_sorts_model_and_job_holds_once_with_the_same_result():
    rng = np.random.default_rng(7)
    n = 3_000
    start = rng.integers(0, 10**9, n)
    hold = rng.integers(0, 10**8, n)
    models = np.array(["m-b", "m-a", None, "m-c"], dtype=object)[rng.integers(0, 4, n)]
    jobs = np.array(["j1", "j2", None], dtype=object)[rng.integers(0, 3, n)]
    table = pa.table({
        "started_at": pa.array(start, pa.int64()).cast(TS),
        "finished_at": pa.array(start + hold, pa.int64()).cast(TS),
        "model": pa.array(models.tolist(), pa.string()),
        "job": pa.array(jobs.tolist(), pa.string()),
    })
    fr = frame_from_table(table)
    for key, codes_of in (("job", fr.job), ("model", fr.model)):
        codes, names = codes_of.labelled()
        got = fr.grouped_holds(codes, len(names), key)
        want = _by_numpy(codes, fr.hold_us, len(names))
        assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(fr.take_sorted_holds(), np.sort(hold))
    assert fr.take_sorted_holds() is None  # handed over once


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.integers(1, 5), st.integers(0, 10**4), st.integers(0, 2**31), st.booleans())
def test_grouped_sweeps_equal_one_sweep_per_group(n, n_groups, span, seed, with_none):
    rng = np.random.default_rng(seed)
    start = rng.integers(0, span + 1, n) + 10**15  # epoch-sized times, ties when span is small
    finish = start + rng.integers(0, span // 2 + 1, n)
    codes = rng.integers(-1 if with_none else 0, n_groups, n)
    seen = {}
    overall = grouped_sweeps(start, finish, codes, n_groups, lambda g, sw, rows: seen.setdefault(g, (sw, rows)))
    want = sweep(start, finish)
    assert np.array_equal(overall.times, want.times) and np.array_equal(overall.level, want.level)
    assert overall.holds_us == want.holds_us
    for g in range(n_groups):
        rows = codes == g
        if not rows.any():
            assert g not in seen
            continue
        sw, count = seen[g]
        alone = sweep(start[rows], finish[rows])
        assert count == int(rows.sum())
        assert np.array_equal(sw.times, alone.times) and np.array_equal(sw.level, alone.level)
        assert sw.level.dtype == alone.level.dtype and sw.holds_us == alone.holds_us


def test_grouped_sweeps_decline_what_they_cannot_pack():
    start = np.array([0, 5], dtype=np.int64)
    far = np.array([2**61, 7], dtype=np.int64)
    assert grouped_sweeps(start, far, np.array([0, 1]), 2, lambda *a: None) is None
    many = MAX_SWEPT_GROUPS + 1
    assert grouped_sweeps(start, start + 1, np.array([0, 1]), many, lambda *a: None) is None

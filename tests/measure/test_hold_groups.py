"""The holds grouped and partitioned (``stats.group_partitioned``), the hold histogram and the grouped
sweeps, against per-group NumPy sorts, ``np.histogram`` and one sweep per group as the oracles."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.columns import frame_from_table
from sandbox_fleet.measure.concurrency import MAX_SWEPT_GROUPS, grouped_sweeps, sweep
from sandbox_fleet.measure.holds import BLOCK, histogram
from sandbox_fleet.measure.stats import group_partitioned, summary
from sandbox_fleet.telemetry.record import TS


def _reads_like_sorted(grouped: np.ndarray, offsets: np.ndarray, codes: np.ndarray, values: np.ndarray, n_groups: int) -> None:
    """Each group holds its own values, and every figure a summary reads off them (min, quantiles,
    mean, max) equals the figure of the group's values sorted by NumPy."""
    assert offsets.tolist() == np.concatenate(([0], np.cumsum([int((codes == g).sum()) for g in range(n_groups)]))).tolist()
    for g in range(n_groups):
        part, want = grouped[offsets[g]:offsets[g + 1]], np.sort(values[codes == g])
        assert np.array_equal(np.sort(part), want)
        assert summary(part) == summary(want)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 400), st.integers(1, 9), st.integers(0, 2**40), st.integers(0, 2**31), st.booleans())
def test_each_group_reads_like_its_own_sort(n, n_groups, span, seed, wide_codes):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, span + 1, n) - span // 3  # negative values too, and many ties when span is small
    codes = rng.integers(0, n_groups, n).astype(np.int64 if wide_codes else np.int32)
    kept = values.copy(), codes.copy()
    grouped, offsets = group_partitioned(codes, values, n_groups + 1)  # the last group empty
    _reads_like_sorted(grouped, offsets, codes, values, n_groups + 1)
    assert np.array_equal(values, kept[0]) and np.array_equal(codes, kept[1])


@pytest.mark.parametrize("seed", range(4))
def test_histogram_equals_numpys(seed):
    rng = np.random.default_rng(seed)
    n = BLOCK + 12_345 if seed == 0 else 5_000  # seed 0 crosses a block boundary
    us = np.clip(rng.lognormal(np.log(1.3e9), 1.5, n), 0, 3e10).astype(np.int64)
    us[rng.random(n) < 0.01] = 0  # zero-length holds are counted apart
    # Holds on the edges themselves (1 s, 10 s, ... and the bin edges 10**(k/10) s), where a
    # rounding difference would move a count; the largest hold on the last edge.
    edges_us = np.round(10 ** (np.arange(0, 11) / 10 + 1) * 1e6).astype(np.int64)
    us[: edges_us.size] = edges_us
    us[-1] = 10**11
    a = histogram(us)
    want = np.histogram(us[us > 0] / 1e6, bins=a["edges_s"])[0]
    assert np.array_equal(a["counts"], want)
    assert a["zero"] == int((us == 0).sum())


def test_histogram_all_zero_and_one_value():
    assert histogram(np.zeros(3, dtype=np.int64)) == {"edges_s": [], "counts": [], "zero": 3}
    one = histogram(np.array([0, 2_000_000]))
    assert one["zero"] == 1 and int(np.sum(one["counts"])) == 1


def test_frame_groups_model_and_job_holds_like_their_sorts():
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
        grouped, offsets = fr.grouped_holds(codes, len(names), key)
        _reads_like_sorted(grouped, offsets, codes, hold, len(names))


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

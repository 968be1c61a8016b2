"""Percentiles (NumPy's linear method), grouped sorting and bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.stats import group_sorted, quantile_counts, quantile_sorted, rate_ci, summary


def test_quantile_matches_numpy_linear_default():
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 10, 101, 1000):
        x = np.sort(rng.integers(0, 10**9, n))
        for q in (0.0, 0.1, 0.5, 0.9, 0.99, 1.0):
            assert quantile_sorted(x, q) == np.percentile(x, q * 100)


def test_quantile_hand_values():
    x = np.array([100, 200, 300, 400, 500, 600, 700, 800, 900, 1000])
    assert quantile_sorted(x, 0.5) == 550.0
    assert quantile_sorted(x, 0.9) == pytest.approx(910.0)  # pos 8.1
    assert quantile_sorted(x, 0.99) == pytest.approx(991.0)  # pos 8.91
    assert quantile_sorted(np.array([], dtype=np.int64), 0.5) is None


def test_summary_scales_and_flags_small_samples():
    s = summary(np.array([1_000_000, 2_000_000, 6_000_000]), 1e-6)
    assert s == {"rows": 3, "small_sample": True, "min": 1.0, "median": 2.0, "mean": 3.0,
                 "p90": pytest.approx(5.2), "p99": pytest.approx(5.92), "max": 6.0}
    assert summary(np.arange(100))["small_sample"] is False
    assert summary(np.arange(99))["small_sample"] is True


def test_group_sorted_matches_per_group_sort():
    rng = np.random.default_rng(2)
    codes = rng.integers(0, 5, 500)
    values = rng.integers(-1000, 10**12, 500)
    sorted_vals, offsets = group_sorted(codes, values, 6)  # group 5 is empty
    for g in range(6):
        assert sorted_vals[offsets[g]:offsets[g + 1]].tolist() == sorted(values[codes == g].tolist())


def test_group_sorted_in_blocks_leaves_inputs_alone(monkeypatch):
    from sandbox_fleet.measure import stats

    monkeypatch.setattr(stats, "_BLOCK", 7)  # many blocks over 500 rows
    rng = np.random.default_rng(4)
    codes = rng.integers(0, 3, 500).astype(np.int8)
    values = rng.integers(10**15, 10**15 + 10**9, 500)
    codes_before, values_before = codes.copy(), values.copy()
    sorted_vals, offsets = group_sorted(codes, values, 3)
    for g in range(3):
        assert sorted_vals[offsets[g]:offsets[g + 1]].tolist() == sorted(values[codes == g].tolist())
    assert np.array_equal(codes, codes_before) and np.array_equal(values, values_before)


def test_group_sorted_falls_back_when_values_are_wide():
    codes = np.array([1, 0, 1, 0])
    values = np.array([2**62, -(2**62), 5, 7])
    sorted_vals, offsets = group_sorted(codes, values, 2)
    assert sorted_vals.tolist() == [-(2**62), 7, 5, 2**62]
    assert offsets.tolist() == [0, 2, 4]


def test_rate_ci_is_seeded_and_brackets_the_rate():
    a = rate_ci(255, 1000, seed=0, name="pass_rate")
    assert a == rate_ci(255, 1000, seed=0, name="pass_rate")
    assert a != rate_ci(255, 1000, seed=1, name="pass_rate")
    lo, hi = a
    # Normal approximation: 0.255 +- 1.96 * sqrt(p(1-p)/n) = [0.228, 0.282].
    assert lo == pytest.approx(0.228, abs=0.006)
    assert hi == pytest.approx(0.282, abs=0.006)
    assert rate_ci(0, 0, seed=0, name="x") is None
    assert rate_ci(0, 10, seed=0, name="x") == [0.0, 0.0]


def test_quantile_counts_matches_percentile_of_the_repeats():
    rng = np.random.default_rng(4)
    values = np.arange(3, 40)
    counts = rng.integers(0, 6, values.size)
    expanded = np.repeat(values, counts)
    for q in (0.0, 0.25, 0.5, 0.9, 0.99, 1.0):
        assert quantile_counts(values, counts, q) == np.percentile(expanded, q * 100)
    assert quantile_counts(values, np.zeros_like(counts), 0.5) is None



# --- order statistics by partition (issue 12): what summary and quantile_sorted read ---

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sandbox_fleet.measure.stats import partitioned  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(st.lists(st.integers(0, 10**12), max_size=200), st.sampled_from([0.5, 0.9, 0.99, 0.0, 1.0]))
def test_partitioned_reads_like_sorted(values, q):
    arr = np.asarray(values, dtype=np.int64)
    ordered = np.sort(arr)
    part = partitioned(arr)
    assert summary(part) == summary(ordered)
    assert quantile_sorted(partitioned(arr, (q,)), q) == quantile_sorted(ordered, q)
    assert arr.tolist() == values  # the input is left alone

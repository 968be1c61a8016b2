"""Percentiles (NumPy's linear method), grouped sorting and bootstrap intervals."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.stats import quantile_counts, quantile_sorted, rate_ci, summary


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

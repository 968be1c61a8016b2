"""The steady-state analysis's in-order shortcuts (slices instead of masks, no sort of sorted times)
give, bit for bit, what the definitions give: masks, a stable sort, and per-bin sums added one by one
from 0.0 in Python (what ``np.bincount(weights=...)`` does), all written here."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.simulate import Exponential, Fleet, Poisson, run_workloads
from sandbox_fleet.simulate.engine.steady import BATCHES, _bin_counts, _busy_s, _by_time, _holds_by_start, _since, _upto


def brute_holds_by_start(s0, hold, a, b):
    """Mean hold of the starts in [a, b] and per-bin mean holds (bin k: edges[k] <= s < edges[k+1], the
    last bin also takes b), every bin's sum added left to right in Python floats from 0.0."""
    edges = np.linspace(a, b, BATCHES + 1).tolist()
    sums, counts = [0.0] * BATCHES, [0] * BATCHES
    picked = []
    for s, h in zip(s0.tolist(), hold.tolist()):
        if not (a <= s <= b):
            continue
        picked.append(h)
        k = max(j for j in range(BATCHES + 1) if edges[j] <= s)
        k = min(k, BATCHES - 1)
        sums[k] += h
        counts[k] += 1
    mean = float(np.asarray(picked).mean()) if picked else None  # NumPy's pairwise mean, as the summary's
    if min(counts) == 0:
        return mean, None
    return mean, [s / c for s, c in zip(sums, counts)]


def same(x, y) -> bool:
    return np.asarray(x, dtype=float).tobytes() == np.asarray(y, dtype=float).tobytes()


def check_holds(s0, hold, a, b):
    mean, means = _holds_by_start(s0, hold, a, b)
    want_mean, want_means = brute_holds_by_start(s0, hold, a, b)
    assert (mean is None) == (want_mean is None) and (mean is None or same(mean, want_mean))
    assert (means is None) == (want_means is None)
    if means is not None:
        assert same(means, want_means)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_holds_by_start_in_order_and_shuffled_match_the_definition(seed):
    rng = np.random.default_rng(seed)
    s0 = np.cumsum(rng.exponential(0.1, 5000))
    hold = rng.lognormal(0.0, 1.0, s0.size)
    a, b = float(s0[700]), float(s0[-300])
    check_holds(s0, hold, a, b)  # in order: the slice path
    perm = rng.permutation(s0.size)
    check_holds(s0[perm], hold[perm], a, b)  # out of order: the mask path
    check_holds(s0, hold, float(s0[0]) - 1.0, float(s0[-1]) + 1.0)  # every start in the window


def test_holds_by_start_ties_on_the_edges_zero_holds_and_empty_bins():
    a, b = 0.0, 20.0
    edges = np.linspace(a, b, BATCHES + 1)
    s0 = np.sort(np.concatenate((edges, edges, [-1.0, 25.0], np.linspace(0.5, 19.5, 40))))
    hold = np.zeros(s0.size)
    hold[::3] = 1.25
    check_holds(s0, hold, a, b)
    # a window past some starts and one bin with nothing in it: no per-bin interval
    gap = s0[(s0 < 5.0) | (s0 >= 6.0)]
    check_holds(gap, np.ones(gap.size), a, b)
    check_holds(s0, hold, 30.0, 40.0)  # no start in the window
    check_holds(np.zeros(0), np.zeros(0), a, b)


def test_holds_by_start_a_negative_zero_at_a_bin_head_is_added_as_bincount_adds():
    s0 = np.linspace(0.0, 19.99, 200)
    hold = np.full(s0.size, 0.5)
    hold[0] = -0.0  # 0.0 + -0.0 is +0.0, so the bin's running sum does not start at the value itself
    hold[1:10] = -0.0
    check_holds(s0, hold, 0.0, 20.0)


def test_busy_seconds_match_the_clipped_overlap_sum():
    rng = np.random.default_rng(5)
    s0 = rng.uniform(0.0, 100.0, 3000)
    s0[:5] = 10.0  # starts exactly at the window's start
    s1 = s0 + rng.exponential(3.0, s0.size)
    order = np.argsort(s0)
    assert np.all(np.diff(s0[order]) >= 0)
    for x0, x1 in ((s0, s1), (s0[order], s1[order])):  # out of order, and in order (the slice path)
        for a, b in ((10.0, 90.0), (0.0, 200.0), (50.0, 50.5), (-5.0, -1.0)):
            want = float((np.minimum(x1, b) - np.maximum(x0, a)).clip(min=0).sum())
            assert same(_busy_s(x0, x1, a, b), want)


def test_windows_over_sorted_times_are_the_masks():
    rng = np.random.default_rng(9)
    times = np.sort(np.round(rng.uniform(0.0, 10.0, 400), 1))  # many ties
    values = rng.normal(size=times.size)
    with_nan = np.concatenate((times, [np.nan, np.nan]))
    for t in (-1.0, 0.0, 3.3, 5.05, 10.0, 11.0, np.inf, np.nan):
        for arr in (times, with_nan):
            assert _upto(arr, t) == int(np.count_nonzero(arr <= t))
            assert np.array_equal(np.flatnonzero(arr >= t), np.arange(_since(arr, t), _since(arr, t)
                                                                       + int(np.count_nonzero(arr >= t))))
    for a, b in ((2.0, 7.5), (0.0, 10.0), (7.0, 2.0)):
        lo, hi = _since(times, a), _upto(times, b)
        assert np.array_equal(values[lo:hi], values[(times >= a) & (times <= b)])


def test_by_time_is_the_stable_sort():
    rng = np.random.default_rng(11)
    t = np.round(rng.uniform(0.0, 5.0, 300), 1)
    v = rng.normal(size=t.size)
    order = np.argsort(t, kind="stable")
    got_t, got_v = _by_time(t, v)
    assert same(got_t, t[order]) and same(got_v, v[order])
    srt = t[order]
    got_t, got_v = _by_time(srt, v)
    assert got_t is srt and got_v is v  # already in order: the arrays themselves
    nan = np.array([0.0, np.nan, 1.0, 0.5])
    got_t, got_v = _by_time(nan, np.arange(4.0))
    assert same(got_v, np.arange(4.0)[np.argsort(nan, kind="stable")])  # a NaN is sorted last, as before


def test_fifo_run_window_figures_from_the_definitions():
    """An M/M/c run's window figures (the slice path: starts and arrivals are in order) recomputed
    here from masks over the result's arrays."""
    res = run_workloads(Fleet(cap=4), [Poisson(rate_per_s=2.8, n=20_000, holds=Exponential(1.0))], seed=4)
    st = res.summary_model().steady_state
    assert st is not None
    a, b = st.warmup_s, st.window_end_s
    done_at = res.finish_s[res.state == 0]
    in_win = (done_at >= a) & (done_at <= b)
    assert st.completed == int(np.count_nonzero(in_win))
    per_batch = np.histogram(done_at[in_win], bins=BATCHES, range=(a, b))[0] * 3600.0 / ((b - a) / BATCHES)
    assert same(st.completed_per_hour, float(per_batch.mean()))
    busy = float((np.minimum(res.finish_s, b) - np.maximum(res.start_s, a)).clip(min=0).sum())
    assert same(st.concurrency_mean, busy / (b - a))
    mean, _ = brute_holds_by_start(res.start_s, res.finish_s - res.start_s, a, b)
    assert same(st.hold_s_mean, mean)


def test_bin_counts_are_numpys_histogram():
    rng = np.random.default_rng(13)
    x = np.concatenate((rng.uniform(-5.0, 105.0, 20_000), [np.nan, 0.0, 100.0]))
    for a, b in ((0.0, 100.0), (3.3, 7.7), (-1.0, 0.0)):
        edges = np.linspace(a, b, BATCHES + 1)
        want = np.histogram(x, bins=BATCHES, range=(a, b))[0]
        assert np.array_equal(_bin_counts(x, edges), want)
        ties = np.concatenate((edges, edges[::2]))  # values on the edges: left-closed bins, the last closed
        assert np.array_equal(_bin_counts(ties, edges), np.histogram(ties, bins=BATCHES, range=(a, b))[0])
    assert _bin_counts(np.array([0.0, 10.0, 20.0]), np.linspace(0.0, 20.0, 3)).tolist() == [1, 2]  # by hand
    with np.errstate(invalid="ignore"):
        edges = np.linspace(0.0, np.inf, BATCHES + 1)
    with pytest.raises(ValueError):
        _bin_counts(x, edges)  # as np.histogram refuses it

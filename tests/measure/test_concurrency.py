"""Sweep line, cap detection and the downsampled series, against hand counts and brute force."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_fleet.measure.concurrency import (
    cap_detected,
    cap_stats,
    concurrency_figures,
    overall_cap,
    series,
    sweep,
)
from summaries import measure_json

from .helpers import telemetry

S = 1_000_000  # us per second


def us(values):
    return np.array(values, dtype=np.int64) * S


def conc(starts, finishes, cap=None):
    return concurrency_figures(us(starts), us(finishes), cap)


def test_end_and_start_at_same_instant_do_not_overlap():
    # A [0,10) B [0,5) C [5,10) D [10,20) E [10,15): level 2 on [0,15), 1 on [15,20).
    c = conc([0, 0, 5, 10, 10], [10, 5, 10, 20, 15])
    assert c["peak"] == 2
    assert c["touches"] == 1
    assert c["time_at_peak_s"] == 15.0
    assert c["span_s"] == 20.0
    assert c["sandbox_s"] == 35.0
    assert c["mean"] == pytest.approx(35 / 20)
    assert c["duty"] == pytest.approx(35 / 20 / 2)
    assert c["peak_to_mean"] == pytest.approx(2 / 1.75)


def test_handover_at_a_tie_is_one_stretch_not_a_dip_or_spike():
    # Two sandboxes hand over to two others at t=2: level stays 2, never 0 or 4.
    sw = sweep(us([0, 0, 2, 2]), us([2, 2, 4, 4]))
    assert sw.times.tolist() == [0, 2 * S, 4 * S]
    assert sw.level.tolist() == [2, 2, 0]
    assert cap_stats(sw) == {"peak": 2, "touches": 1, "time_at_peak_s": 4.0}


def test_touches_count_separate_stretches_and_time_at_peak():
    # Peak 2 on [1,2) and on [5,6); [8,9) only reaches 1.
    c = conc([0, 1, 4, 5, 8], [2, 3, 6, 7, 9])
    assert (c["peak"], c["touches"], c["time_at_peak_s"]) == (2, 2, 2.0)


def test_zero_length_hold_never_counts():
    c = conc([0, 3], [10, 3])
    assert c["peak"] == 1
    assert c["sandbox_s"] == 10.0


def test_littles_law_matches_mean_hand_values():
    # 4 rollouts over a 40 s span, holds 10, 20, 30, 20 -> rate 0.1/s, mean hold 20 s -> 2.
    c = conc([0, 0, 10, 20], [10, 20, 40, 40])
    assert c["arrival_rate_per_s"] == pytest.approx(0.1)
    assert c["hold_mean_s"] == pytest.approx(20.0)
    assert c["mean_littles_law"] == pytest.approx(2.0)
    assert c["mean"] == pytest.approx(2.0)


def test_cap_rule():
    assert cap_detected(3000, 1, 3000) is True
    assert cap_detected(3000, 1, 3000, rows=3001) is True
    assert cap_detected(3000, 1, 3000, rows=3000) is False  # every rollout ran at once: none waited
    assert cap_detected(1, 1, 1, rows=1) is False  # a one-trial job at its cap of 1
    assert cap_detected(2999, 5000, 3000) is False  # a configured cap overrides the touch count
    assert cap_detected(7, 10, None) is True
    assert cap_detected(7, 9, None) is False


def test_cap_detected_by_touches_without_metadata():
    # Ten separate pairs of overlapping sandboxes: peak 2 reached on 10 stretches.
    starts = [x for k in range(10) for x in (10 * k, 10 * k + 1)]
    finishes = [x for k in range(10) for x in (10 * k + 3, 10 * k + 4)]
    c = conc(starts, finishes)
    assert (c["peak"], c["touches"], c["cap_detected"]) == (2, 10, True)
    c9 = conc(starts[:18], finishes[:18])
    assert (c9["touches"], c9["cap_detected"]) == (9, False)


def test_per_job_caps():
    # j1: configured cap 2, reached once. j2: no cap, peak 2 on 10 stretches. j3: no cap, 2 stretches.
    s1, f1 = [0, 0], [5, 5]
    s2 = [x for k in range(10) for x in (10 * k, 10 * k + 1)]
    f2 = [x for k in range(10) for x in (10 * k + 3, 10 * k + 4)]
    s3, f3 = [0, 1, 20, 21], [3, 4, 23, 24]
    t = telemetry(s1 + s2 + s3, f1 + f2 + f3, job=["j1"] * 2 + ["j2"] * 20 + ["j3"] * 4, caps={"j1": 2})
    out = measure_json(t)
    jobs = out["by_job"]
    assert list(jobs) == ["j1", "j2", "j3"]
    # j1 reaches its cap of 2 with its only 2 rollouts: nothing waited, so it does not bind (issue 38 item 8)
    assert (jobs["j1"]["peak"], jobs["j1"]["configured_cap"], jobs["j1"]["cap_detected"]) == (2, 2, False)
    assert (jobs["j2"]["touches"], jobs["j2"]["configured_cap"], jobs["j2"]["cap_detected"]) == (10, None, True)
    assert (jobs["j3"]["touches"], jobs["j3"]["cap_detected"]) == (2, False)
    assert jobs["j1"]["time_at_peak_s"] == 5.0
    assert jobs["j3"]["rows"] == 4
    # Jobs with different (or missing) caps: no single cap to compare the overall peak with.
    assert out["concurrency"]["configured_cap"] is None


def test_overall_cap_when_every_job_shares_one():
    codes = np.array([0, 0, 1])
    assert overall_cap(codes, ["a", "b"], {"a": 4, "b": 4}) == 4
    assert overall_cap(codes, ["a", "b"], {"a": 4, "b": 5}) is None
    assert overall_cap(codes, ["a", "b"], {"a": 4}) is None
    assert overall_cap(np.array([0, -1]), ["a"], {"a": 4}) is None


def _brute_level(starts, finishes, probe):
    return int(((starts <= probe) & (probe < finishes)).sum())


def _level_at(sw, probe):
    i = np.searchsorted(sw.times, probe, side="right") - 1
    return 0 if i < 0 else int(sw.level[i])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), min_size=1, max_size=40),
    st.lists(st.integers(-2, 55), min_size=1, max_size=30),
)
def test_sweep_equals_brute_force_counting(intervals, probes):
    starts = np.array([a for a, _ in intervals], dtype=np.int64)
    finishes = np.array([a + d for a, d in intervals], dtype=np.int64)
    sw = sweep(starts, finishes)  # also self-checks area == sum of holds
    # Probe every event time (where ties happen) and arbitrary instants.
    for p in [*probes, *starts.tolist(), *finishes.tolist()]:
        assert _level_at(sw, p) == _brute_level(starts, finishes, p)
    assert sw.area_us() == int((finishes - starts).sum())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 40), st.integers(0, 12)), min_size=2, max_size=40), st.randoms())
def test_sweep_with_starts_in_order_takes_the_merge_and_equals_brute_force(intervals, rnd):
    """Starts already in order (as the FIFO simulator's are) go through the sort-the-finishes-and-merge
    branch: the same times and levels as brute force and as the same intervals shuffled (full sort)."""
    intervals = sorted(intervals, key=lambda iv: iv[0])
    starts = np.array([a for a, _ in intervals], dtype=np.int64)
    finishes = np.array([a + d for a, d in intervals], dtype=np.int64)
    sw = sweep(starts, finishes)
    for p in [*starts.tolist(), *finishes.tolist(), -1, 60]:
        assert _level_at(sw, p) == _brute_level(starts, finishes, p)
    order = list(range(len(intervals)))
    rnd.shuffle(order)
    if not np.all(np.diff(starts[order]) >= 0):  # really out of order: the full sort
        other = sweep(starts[order], finishes[order])
        assert sw.times.tolist() == other.times.tolist() and sw.level.tolist() == other.level.tolist()


def test_series_downsampled_keeps_every_bucket_maximum():
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 10_000_000, 3000)
    finishes = starts + rng.integers(1, 50_000, 3000)
    # A one-microsecond spike that a point sample would miss.
    starts = np.append(starts, [5_000_000] * 40)
    finishes = np.append(finishes, [5_000_001] * 40)
    sw = sweep(starts, finishes)
    assert sw.times.size > 2000
    s = series(sw, max_points=2000)
    t_us = np.round(np.asarray(s["t_s"]) * S).astype(np.int64) + sw.times[0]
    level = np.asarray(s["level"])
    assert len(level) <= 2000
    assert level.max() == cap_stats(sw)["peak"]
    width = round(s["bucket_s"] * S)
    for k in range(len(level) - 1):
        lo, hi = t_us[k], t_us[k] + width
        # The max of the step function over [lo, hi) is at lo or at a start inside it.
        probes = np.concatenate(([lo], starts[(starts > lo) & (starts < hi)]))
        brute = max(_brute_level(starts, finishes, p) for p in probes)
        assert level[k] == brute
    assert level[-1] == 0


def test_series_small_input_is_exact_step_function():
    s = series(sweep(us([0, 0, 5]), us([10, 5, 10])))
    assert np.asarray(s["t_s"]).tolist() == [0.0, 10.0]
    assert np.asarray(s["level"]).tolist() == [2, 0]


def test_self_check_raises_on_a_broken_sweep(monkeypatch):
    from sandbox_fleet.measure import concurrency

    monkeypatch.setattr(concurrency, "_area", lambda times, level: 1)  # simulate an integration bug
    with pytest.raises(concurrency.SweepError):
        sweep(us([0, 2]), us([5, 3]))


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 30), st.integers(0, 8)), min_size=1, max_size=40),
    st.integers(1, 7),
)
def test_blockwise_compaction_equals_brute_force_at_any_block_size(intervals, block):
    # Small blocks put ties (one timestamp, several events) across block edges.
    from sandbox_fleet.measure import concurrency

    starts = np.array([a for a, _ in intervals], dtype=np.int64)
    finishes = np.array([a + d for a, d in intervals], dtype=np.int64)
    saved = concurrency.BLOCK
    concurrency.BLOCK = block
    try:
        sw = sweep(starts, finishes)
    finally:
        concurrency.BLOCK = saved
    events = np.unique(np.concatenate([starts, finishes]))
    assert sw.times.tolist() == events.tolist()  # one point per distinct event time
    assert [int(v) for v in sw.level] == [_brute_level(starts, finishes, p) for p in events]


def test_sum_of_holds_check_does_not_overflow_on_real_epoch_times():
    # 40,000 rollouts at 2026 epoch microseconds: summing raw start times would pass 2**63.
    rng = np.random.default_rng(3)
    starts = 1_780_000_000_000_000 + rng.integers(0, 10**12, 40_000) * 250
    finishes = starts + rng.integers(0, 10**10, 40_000)
    assert int(starts.astype(object).sum()) > 2**63
    sw = sweep(starts, finishes)
    assert sw.area_us() == int((finishes - starts).sum())


def test_summary_reports_the_sweep_self_check_with_both_sums():
    from tests.measure.helpers import telemetry

    from summaries import measure_json

    # Holds 10 + 5 + 7 = 22 s; the area under the level is the same 22 s.
    c = measure_json(telemetry([0, 5, 10], [10, 10, 17]))["concurrency"]
    assert c["self_check"] == {"ok": True, "area_s": 22.0, "sum_of_holds_s": 22.0}

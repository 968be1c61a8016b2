"""Step detection on synthetic synchronous-RL schedules with known batch size and period."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.steps import measure_steps

S = 1_000_000


def batch_schedule(steps=10, batch=64, period_s=600, jitter_s=0.0, seed=0):
    """Each step releases `batch` rollouts at k*period (+ jitter); holds 100..162 s and one 500 s straggler."""
    rng = np.random.default_rng(seed)
    holds = np.append(100 + np.arange(batch - 1), 500) * S
    starts, finishes = [], []
    for k in range(steps):
        jitter = np.round(rng.uniform(0, jitter_s, batch) * S).astype(np.int64)
        jitter[0] = 0  # the release itself
        st = k * period_s * S + jitter
        starts.append(st)
        finishes.append(st + holds)
    return np.concatenate(starts), np.concatenate(finishes)


def test_exact_batches():
    s, f = batch_schedule()
    out = measure_steps(s, f)
    assert out["detected"] is True
    assert out["steps"] == 10
    assert out["batch_size"] == 64
    assert out["step_period_s"] == 600.0
    assert out["release_spread_s"] == 0.0
    assert out["step_makespan_s"] == 500.0
    # Finishes 100..162 and 500: p90 at position 56.7 -> 156.7; the straggler holds 343.3 s more.
    assert out["straggler_tail_s"] == pytest.approx(500 - 156.7)


def test_jittered_release_still_detected():
    s, f = batch_schedule(steps=12, batch=50, period_s=900, jitter_s=5.0, seed=3)
    out = measure_steps(s, f)
    assert out["detected"] is True
    assert (out["steps"], out["batch_size"]) == (12, 50)
    assert out["step_period_s"] == 900.0  # first start of each step is the release
    assert out["release_spread_s"] <= 5.0


def test_steady_stream_has_no_steps():
    rng = np.random.default_rng(5)
    s = np.cumsum(rng.exponential(2.0, 5000) * S).astype(np.int64)
    out = measure_steps(s, s + 300 * S)
    assert out["detected"] is False
    assert out["batch_size"] is None and out["step_period_s"] is None and out["straggler_tail_s"] is None
    assert out["reason"]


def test_two_bursts_are_not_enough():
    s, f = batch_schedule(steps=2)
    out = measure_steps(s, f)
    assert out["detected"] is False and "bursts" in out["reason"]


def test_stream_with_outages_is_not_steps():
    # A 20,000 s steady stream, restarted every 25,000 s (two 5,000 s outages): 3 "bursts"
    # that each span 80% of their period.
    rng = np.random.default_rng(6)
    parts = [k * 25_000 * S + np.cumsum(rng.exponential(1.0, 20_000) * S).astype(np.int64) for k in range(3)]
    s = np.concatenate(parts)
    out = measure_steps(s, s + 60 * S)
    assert out["detected"] is False and "stream" in out["reason"]


def test_too_few_rows():
    out = measure_steps(np.arange(5), np.arange(5) + 1)
    assert out["detected"] is False

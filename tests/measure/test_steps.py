"""Step detection on synthetic synchronous-RL schedules with known batch size and period."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.steps import _ranked_breaks, measure_steps

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


# --- capped pools: part of a batch waits for a free slot ------------------------------------

def capped_runs(runs, cap, seed=0):
    """Synchronous runs sharing one FIFO pool of ``cap`` slots (an independent brute-force model).

    ``runs``: list of (batch, period_s, offset_s, steps). Every step releases ``batch`` rollouts
    at offset + k * period; each starts on the earliest free slot (never before its release)
    and holds 100..300 s. Returns per-run (starts, finishes) in us.
    """
    import heapq

    rng = np.random.default_rng(seed)
    arrivals = []  # (release us, run, hold us)
    for r, (batch, period_s, offset_s, steps) in enumerate(runs):
        for k in range(steps):
            release = (offset_s + k * period_s) * S
            for h in rng.integers(100, 301, batch):
                arrivals.append((release, r, int(h) * S))
    arrivals.sort(key=lambda a: (a[0], a[1]))  # FIFO: release order, runs in a fixed order
    slots = [0] * cap
    out = [([], []) for _ in runs]
    for release, r, hold in arrivals:
        start = max(release, heapq.heappop(slots))
        heapq.heappush(slots, start + hold)
        out[r][0].append(start)
        out[r][1].append(start + hold)
    return [(np.array(s, dtype=np.int64), np.array(f, dtype=np.int64)) for s, f in out]


def test_capped_batch_part_waits_for_slots():
    # 64 released into 48 free slots: 48 start at the release, 16 as slots free (spread ~100+ s).
    (s, f), = capped_runs([(64, 1800, 0, 8)], cap=48)
    assert np.count_nonzero(s == 0) == 48  # the schedule really is capped
    out = measure_steps(s, f)
    assert out["detected"] is True
    assert (out["steps"], out["batch_size"], out["burst_size"]) == (8, 64, 48)
    assert out["burst_share"] == 48 / 64
    assert out["step_period_s"] == 1800.0
    assert out["release_spread_s"] >= 100.0  # the queued ones started when the first holds ended


def test_batch_four_times_the_cap_is_still_steps():
    # 128 released into 32 slots: 4 waves, starts spread over most of the makespan; the old
    # "starts close together" rule rejected this, the opening burst (25%) accepts it.
    (s, f), = capped_runs([(128, 3000, 0, 6)], cap=32)
    out = measure_steps(s, f)
    assert out["detected"] is True
    assert (out["steps"], out["batch_size"], out["burst_size"], out["step_period_s"]) == (6, 128, 32, 3000.0)
    assert out["release_spread_s"] > 0.3 * out["step_makespan_s"]


def test_zero_gaps_next_to_queue_driven_gaps_pick_the_step_break():
    # Ties (gap 0) beside queue-driven gaps (seconds) make a ~1e6x jump inside steps; the
    # detector must move on to the next-biggest jump, between steps.
    (s, f), = capped_runs([(40, 2000, 0, 10)], cap=30, seed=4)
    assert _ranked_breaks(np.sort(np.diff(np.sort(s))), 5)[0][1] > 1e5  # that jump exists (the best break)
    out = measure_steps(s, f)
    assert out["detected"] is True and (out["steps"], out["batch_size"]) == (10, 40)


def test_two_runs_sharing_a_pool_are_found_per_model_and_marked_mixed():
    from summaries import measure_json

    from .helpers import telemetry

    (sa, fa), (sb, fb) = capped_runs([(40, 1000, 0, 12), (30, 1500, 300, 8)], cap=50, seed=2)
    starts = np.concatenate([sa, sb]) / S
    finishes = np.concatenate([fa, fb]) / S
    t = telemetry(starts.tolist(), finishes.tolist(), model=["a"] * sa.size + ["b"] * sb.size)
    out = measure_json(t)
    a, b = out["by_model"]["a"]["steps"], out["by_model"]["b"]["steps"]
    assert (a["detected"], a["steps"], a["batch_size"]) == (True, 12, 40)
    assert (b["detected"], b["steps"], b["batch_size"]) == (True, 8, 30)
    assert a["step_period_s"] == pytest.approx(1000, rel=0.05)
    assert b["step_period_s"] == pytest.approx(1500, rel=0.05)
    top = out["steps"]
    assert (top["mixed"], top["runs_by"], top["runs"], top["runs_with_steps"]) == (True, "model", 2, ["a", "b"])
    assert "by_model.<name>.steps" in top["note"]


def test_jobs_are_the_runs_when_there_are_several():
    from summaries import measure_json

    from .helpers import telemetry

    (sa, fa), (sb, fb) = capped_runs([(20, 1000, 0, 5), (20, 1000, 500, 5)], cap=100, seed=3)
    starts = (np.concatenate([sa, sb]) / S).tolist()
    finishes = (np.concatenate([fa, fb]) / S).tolist()
    t = telemetry(starts, finishes, model=["m"] * len(starts), job=["j1"] * sa.size + ["j2"] * sb.size)
    out = measure_json(t)
    assert out["steps"]["runs_by"] == "job" and out["steps"]["mixed"] is True
    for job in ("j1", "j2"):
        st = out["by_job"][job]["steps"]
        assert (st["detected"], st["steps"], st["batch_size"], st["step_period_s"]) == (True, 5, 20, 1000.0)
    # One model over both jobs: its starts interleave, so its steps are every 500 s.
    assert out["by_model"]["m"]["steps"]["step_period_s"] == 500.0


def test_one_run_is_not_a_mix():
    from summaries import measure_json

    from .helpers import telemetry

    s, f = batch_schedule(steps=5, batch=30)
    out = measure_json(telemetry((s / S).tolist(), (f / S).tolist(), model=["m"] * s.size))
    assert out["steps"]["mixed"] is False and out["steps"]["note"] is None
    assert out["steps"]["detected"] is True and out["by_model"]["m"]["steps"]["batch_size"] == 30


def test_models_sharing_every_batch_step_together_not_a_mix():
    from summaries import measure_json

    from .helpers import telemetry

    s, f = batch_schedule(steps=6, batch=40)
    models = np.random.default_rng(1).choice(["a", "b"], s.size).tolist()
    out = measure_json(telemetry((s / S).tolist(), (f / S).tolist(), model=models))
    top = out["steps"]
    assert (top["detected"], top["steps"], top["batch_size"]) == (True, 6, 40)
    assert top["mixed"] is False and "step together" in top["note"]
    assert out["by_model"]["a"]["steps"]["steps"] == 6

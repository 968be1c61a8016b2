"""RL-schedule intervals: list scheduling equals the simulator, replications pool, the interval holds every seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sandbox_fleet.plan import target as tgt
from sandbox_fleet.plan.interval import replicated_search
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.plan.target import HoldSampler, list_schedule_step_s, rl_schedule_target
from summaries import as_measure

from .conftest import PUBLISHED

SUMMARY = json.loads(PUBLISHED.read_text())


def test_list_scheduling_by_hand():
    # holds 5, 3, 4, 1 on 2 slots: 5 | 3 -> 3+4 = 7 | 5+1 = 6 -> makespan 7; on 1 slot 13; on 4 slots 5
    h = np.array([[5.0, 3.0, 4.0, 1.0]])
    assert [list_schedule_step_s(h, c) for c in (1, 2, 4)] == [13.0, 7.0, 5.0]


@pytest.mark.parametrize("cap", [7, 40, 128])
def test_list_scheduling_matches_the_simulator(cap):
    sim = tgt._simulator_step_time()
    fast = tgt._list_schedule_step_time()
    fig = Figures(as_measure(SUMMARY))
    holds = HoldSampler(fig.hold_quantiles, fig.hold_mean_s, fig.rows)
    assert fast(cap, 128, 60.0, holds, 3) == pytest.approx(sim(cap, 128, 60.0, holds, 3), rel=1e-12)


def test_replicated_search_against_brute_force():
    # step of replication j at cap c: 100 + (j + 1) x 1000 / c; limits 1% above the cap-64 step
    step = lambda c, j: 100.0 + (j + 1) * 1000.0 / c  # noqa: E731
    out = replicated_search(step, 64, 3, 0.01)
    pooled = lambda c: np.mean([step(c, j) for j in range(3)])  # noqa: E731
    assert out.concurrency == min(c for c in range(1, 65) if pooled(c) <= pooled(64) * 1.01)
    for j, ans in enumerate(out.per_replication):
        assert ans == min(c for c in range(1, 65) if step(c, j) <= step(64, j) * 1.01)
    assert out.interval == pytest.approx(list(np.percentile(out.per_replication, [5, 95])))


def test_the_interval_holds_every_seeds_answer_at_b512():
    runs = [rl_schedule_target(as_measure(SUMMARY), 512, 300.0, seed=s) for s in range(5)]
    answers = [r.concurrency for r in runs]
    for r in runs:
        lo, hi = r.interval
        assert all(lo <= a <= hi for a in answers), (r.interval, answers)
    assert (max(answers) - min(answers)) / min(answers) <= 0.05


# --- issue 22 item 6: the uncertainty of the chosen cap, apart from the spread of single runs ---


def test_cap_interval_is_the_bootstrap_percentile_by_brute_force():
    # replication j's step at cap c: 100 + a_j x 1000 / c with a_j spread, so single answers differ
    from sandbox_fleet.plan.interval import BOOTSTRAP, BOOTSTRAP_SEED

    a = np.random.default_rng(5).uniform(0.5, 2.0, 12)
    step = lambda c, j: 100.0 + a[j] * 1000.0 / c  # noqa: E731
    out = replicated_search(step, 64, 12, 0.01)
    # every resample searched alone over all caps (the resample counts are the fixed-seed draw)
    counts = np.random.default_rng(BOOTSTRAP_SEED).multinomial(12, [1 / 12] * 12, size=BOOTSTRAP)
    answers = []
    for w in counts:
        pooled = lambda c, w=w: np.dot(w, [step(c, j) for j in range(12)])  # noqa: E731
        answers.append(min(c for c in range(1, 65) if pooled(c) <= pooled(64) * 1.01))
    assert out.cap_interval == [float(q) for q in np.percentile(answers, [5, 95], method="inverted_cdf")]
    assert out.bootstrap == BOOTSTRAP
    # the single-run spread is the per-replication answers' own 5th-95th percentile
    singles = [min(c for c in range(1, 65) if step(c, j) <= step(64, j) * 1.01) for j in range(12)]
    assert out.per_replication == singles
    assert out.interval == [float(q) for q in np.percentile(singles, [5, 95])]
    low = int(np.floor(out.interval[0]))
    pooled = lambda c: np.mean([step(c, j) for j in range(12)])  # noqa: E731
    assert out.step_excess_at_interval_low == pytest.approx(pooled(low) / pooled(64) - 1, rel=1e-12)


def test_published_b128_cap_is_tighter_than_single_runs_and_their_low_end_is_outside_tolerance():
    # an own scan of the same draws prices the low end of the single-run spread
    from sandbox_fleet.plan.interval import rep_seed

    from .syncrl import mean_step_s

    fig = Figures(as_measure(SUMMARY))
    holds = HoldSampler(fig.hold_quantiles, fig.hold_mean_s, fig.rows)
    out = rl_schedule_target(as_measure(SUMMARY), 128, 300.0)
    seeds = [0] + [rep_seed(0, j) for j in range(1, out.replications)]
    draws = [holds.sample(np.random.default_rng(np.random.SeedSequence(s, spawn_key=(4, 1))), 128 * tgt.RL_STEPS)
             .reshape(tgt.RL_STEPS, 128) for s in seeds]
    pooled = lambda c: float(np.mean([mean_step_s(d, c, 300.0) for d in draws]))  # noqa: E731
    low = int(np.floor(out.interval[0]))
    assert out.step_excess_at_interval_low == pytest.approx(pooled(low) / pooled(128) - 1, rel=1e-9)
    assert out.step_excess_at_interval_low > out.tolerance  # the single-run low end is not an equally good cap
    lo, hi = out.cap_interval
    assert out.interval[0] <= lo <= hi <= out.interval[1]
    assert hi - lo < out.interval[1] - out.interval[0]
    assert "bootstrap resamples" in out.detail and "single 20-step runs alone" in out.detail

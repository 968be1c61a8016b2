"""RL-schedule intervals: list scheduling equals the simulator, replications pool, the interval holds every seed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sandbox_fleet.plan import target as tgt
from sandbox_fleet.plan.interval import list_schedule_step_s, replicated_search
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.plan.target import HoldSampler, rl_schedule_target

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
    fig = Figures(SUMMARY)
    holds = HoldSampler(fig.hold_quantiles, fig.hold_mean_s, fig.rows)
    assert fast(cap, 128, 60.0, holds, 3) == pytest.approx(sim(cap, 128, 60.0, holds, 3), rel=1e-12)


def test_replicated_search_against_brute_force():
    # step of replication j at cap c: 100 + (j + 1) x 1000 / c; limits 1% above the cap-64 step
    step = lambda c, j: 100.0 + (j + 1) * 1000.0 / c  # noqa: E731
    out = replicated_search(step, 64, 3, 0.01)
    pooled = lambda c: np.mean([step(c, j) for j in range(3)])  # noqa: E731
    assert out["concurrency"] == min(c for c in range(1, 65) if pooled(c) <= pooled(64) * 1.01)
    for j, ans in enumerate(out["per_replication"]):
        assert ans == min(c for c in range(1, 65) if step(c, j) <= step(64, j) * 1.01)
    assert out["interval"] == pytest.approx(list(np.percentile(out["per_replication"], [5, 95])))


def test_the_interval_holds_every_seeds_answer_at_b512():
    runs = [rl_schedule_target(SUMMARY, 512, 300.0, seed=s) for s in range(5)]
    answers = [r["concurrency"] for r in runs]
    for r in runs:
        lo, hi = r["interval"]
        assert all(lo <= a <= hi for a in answers), (r["interval"], answers)
    assert (max(answers) - min(answers)) / min(answers) <= 0.05

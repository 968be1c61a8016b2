"""Spot rework: the restart-from-scratch formula by hand and against the simulator at the same rate
(the expectation over a fitted distribution is in test_holdfit.py)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.plan.rework import rework_h
from sandbox_fleet.simulate.engine.entities import Fleet, RetryPolicy
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import Poisson


def _share(hold_s: np.ndarray, rate_h: float) -> float:
    return float(rework_h(hold_s / 3600.0, rate_h).sum() / (hold_s.sum() / 3600.0))


def test_rework_by_hand():
    # r = 0.5/h: a 1 h hold takes (e^0.5 - 1)/0.5 = 1.29744 h -> 0.29744 h extra; 3 h: (e^1.5 - 1)/0.5 - 3 = 3.96338
    assert rework_h(np.array([1.0, 3.0]), 0.5) == pytest.approx([2 * (math.e**0.5 - 1) - 1, 2 * (math.e**1.5 - 1) - 3])
    assert rework_h(np.array([2.0]), 0.0)[0] == 0.0
    # share over the two holds: (0.29744 + 3.96338) / 4 = 1.06521
    assert _share(np.array([3600.0, 10800.0]), 0.5) == pytest.approx((0.29744 + 3.96338) / 4, abs=1e-4)


def test_rework_matches_the_simulator_at_the_same_rate():
    # one sandbox per node, nodes back at once, every reclaimed rollout re-runs its own hold
    rng = np.random.default_rng(7)
    holds = rng.choice([1800.0, 3600.0, 7200.0], 6000)
    rate_h = 0.4
    shares = []
    for seed in range(4):  # one run's share has ~3% sampling noise; four average it down to ~1.5%
        wl = Poisson(rate_per_s=0.02, n=holds.size, holds=holds, retry=RetryPolicy(max_retries=10_000, on=("preemption",)))
        res = run_workloads(Fleet(cap=2000, slots_per_node=1, preempt_rate_per_node_s=rate_h / 3600, node_replace_s=0.0), [wl], seed)
        started = res.started
        assert res.preemptions > 1000
        assert np.all(res.start_s[started] == res.arrival_s[started])  # never queued: rework is the only extra time
        ran_h = float(np.sum(res.finish_s[started] - res.start_s[started])) / 3600
        shares.append(ran_h / (holds.sum() / 3600) - 1.0)
    assert np.mean(shares) == pytest.approx(_share(holds, rate_h), rel=0.05)

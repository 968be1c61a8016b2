"""Target concurrency: peak, number, Little's law, and the RL-schedule search."""

from __future__ import annotations

import heapq
import json
import math

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import Target
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.plan.target import HoldSampler, resolve_target, rl_schedule_target, search_probes
from summaries import as_measure

from .conftest import PUBLISHED

SUMMARY = json.loads(PUBLISHED.read_text())


def test_default_is_measured_peak_and_explicit_number():
    fig = Figures(as_measure(SUMMARY))
    # the published peak of 3,000 is a cap (reached 5,000 times) and the summary has no steps: the cap
    # is bought, with the lower bound cap + 1 beside it
    got = resolve_target(fig)
    assert (got.concurrency, got.source) == (3000, "measured-peak")
    assert got.concurrency == SUMMARY["concurrency"]["peak"]
    c = got.censored
    assert (c.cap, c.touches, c.demand, c.demand_is_lower_bound, c.chosen) == (3000, 5000, 3001, True, "cap")
    uncapped = {**SUMMARY, "concurrency": {**SUMMARY["concurrency"], "cap_detected": False}}
    assert resolve_target(Figures(as_measure(uncapped))) == Target(concurrency=3000, source="measured-peak", detail="the measured peak concurrency")
    assert resolve_target(fig, concurrency=700).concurrency == 700


def test_passing_per_hour_by_littles_law_at_the_measured_duty():
    # 100 passing/h x (687,957,914 / 3600 / 62,511 = 3.0571 sandbox-h per pass) = 305.7 busy on average;
    # at the measured duty 0.155864 the peak that carries it is 305.7 / 0.155864 = 1,961.4 -> 1,962
    t = resolve_target(Figures(as_measure(SUMMARY)), passing_per_hour=100)
    assert t.source == "passing-per-hour" and t.shape == "measured" and t.concurrency == 1962
    assert t.exact == pytest.approx(687_957_914 / 3600 / 62_511 * 100)
    assert t.duty == pytest.approx(t.exact / 1962)


@pytest.mark.parametrize("kw", [{"concurrency": 0}, {"concurrency": -3}, {"batch": 0}, {"passing_per_hour": -1.0}])
def test_non_positive_targets_are_input_errors(kw):
    with pytest.raises(InputError, match="must be a positive"):
        resolve_target(Figures(as_measure(SUMMARY)), **kw)


def test_two_targets_at_once_is_an_input_error():
    with pytest.raises(InputError, match="choose one target"):
        resolve_target(Figures(as_measure(SUMMARY)), concurrency=5, batch=10)


def fifo_step_time(cap: int, batch: int, train_s: float, holds: HoldSampler, seed: int) -> float:
    """Brute-force synchronous step: B holds on ``cap`` FIFO servers, mean makespan over 30 steps."""
    rng = np.random.default_rng(seed)
    total = 0.0
    for _ in range(30):
        free = [0.0] * cap
        end = 0.0
        for h in holds.sample(rng, batch):
            t = heapq.heappop(free)
            heapq.heappush(free, t + h)
            end = max(end, t + h)
        total += end + train_s
    return total / 30


def test_rl_schedule_search_finds_the_smallest_cap_within_tolerance():
    res = rl_schedule_target(as_measure(SUMMARY), 64, 100.0, tolerance=0.01, step_time=fifo_step_time, replications=1)
    assert res.method == "simulated" and res.source == "rl-schedule"
    cap = res.concurrency
    fig = Figures(as_measure(SUMMARY))
    holds = HoldSampler(fig.hold_quantiles, fig.hold_mean_s, fig.rows)  # the same fit the search uses
    base = fifo_step_time(64, 64, 100.0, holds, 0)
    assert fifo_step_time(cap, 64, 100.0, holds, 0) <= base * 1.01
    assert fifo_step_time(cap - 1, 64, 100.0, holds, 0) > base * 1.01
    assert 1 < cap < 64  # heavy-tailed holds: the longest rollout sets the step, so fewer slots suffice


def test_rl_schedule_with_the_simulator():
    """No fallback: the search always runs the simulator (plan -> simulate)."""
    res = rl_schedule_target(as_measure(SUMMARY), 64, 100.0)
    assert res.method == "simulated"
    assert 1 <= res.concurrency <= 64


def test_hold_fit_kinds():
    emp = HoldSampler({0.0: 1.0, 0.5: 10.0, 0.99: 50.0, 1.0: 100.0}, None, rows=10_000)
    assert emp.kind == "empirical"
    x = emp.sample(np.random.default_rng(0), 200_000)
    assert np.median(x) == pytest.approx(10.0, rel=0.02)
    assert np.quantile(x, 0.99) == pytest.approx(50.0, rel=0.03)
    assert x.min() >= 1.0 - 1e-9 and x.max() <= 100.0 + 1e-9
    # with a mean and no p90, a p90 knot is placed so the fit reproduces the mean
    cal = HoldSampler({0.0: 3.8, 0.5: 1332.0, 0.99: 8845.0, 1.0: 26571.0}, 2102.6, rows=327_189)
    y = cal.sample(np.random.default_rng(1), 400_000)
    assert y.mean() == pytest.approx(2102.6, rel=0.02) and np.median(y) == pytest.approx(1332.0, rel=0.02)
    logn = HoldSampler({0.5: 100.0, 0.99: 1000.0}, None)
    assert logn.kind == "lognormal" and logn.sigma == pytest.approx(math.log(10) / 2.3263478740408408)
    assert HoldSampler({}, 5.0).kind == "exponential"
    with pytest.raises(InputError, match="no hold times"):
        HoldSampler({}, None)


@pytest.mark.parametrize(("batch", "reps"), [(7, 1), (64, 3), (512, 4), (1000, 2)])
def test_the_search_bar_total_bounds_its_simulations(batch, reps):
    """The progress bar's total is known before the first probe and is never less than the probes run
    (counted here, the uncapped run included), for steep and flat step curves alike."""
    for knee in (1, batch // 3 or 1, batch):
        calls: list[tuple[int, int]] = []

        def step_time(cap, b, train_s, holds, seed, knee=knee, calls=calls):
            calls.append((cap, seed))
            return 100.0 + max(0, knee - cap) * 10.0 + (seed % 7) * 0.001 * max(0, knee - cap)

        res = rl_schedule_target(as_measure(SUMMARY), batch, 10.0, tolerance=0.0, step_time=step_time, replications=reps)
        assert res.concurrency == knee
        assert len(calls) <= search_probes(batch, reps), (batch, reps, knee, len(calls))




def test_the_fit_says_which_quantiles_are_knots_and_whether_the_invented_p90_reaches_the_mean():
    """Review finding: an unreachable mean was clipped silently and quantiles too close to the ends for
    few rows were listed as knots. Checked against a Monte Carlo of the fit and the normal quantiles."""
    import re
    from statistics import NormalDist

    import numpy as np

    from sandbox_fleet.plan.target import HoldSampler

    base = {0.0: 3.8, 0.5: 1332.0, 0.99: 8845.0, 1.0: 26571.0}
    # p99's normal score 2.326 lies beyond the max's at 30 rows, 1 - 1/60 -> 2.128: not a knot
    assert NormalDist().inv_cdf(0.99) > NormalDist().inv_cdf(1 - 1 / 60)
    few = HoldSampler(dict(base), 2102.63, 30)
    assert "0.99" not in few.spec.quantiles and "p99 not a knot" in few.spec.basis
    # a mean of 9,000 s is out of reach: even with p90 at p99 the fit's mean is far below it
    high = HoldSampler(dict(base), 9000.0, 327_189)
    draws = high.sample(np.random.default_rng(7), 400_000)
    stated = float(re.search(r"the fit's mean is ([\d,]+) s", high.spec.basis).group(1).replace(",", ""))
    assert draws.mean() < 9000.0 * 0.5
    assert stated == pytest.approx(draws.mean(), rel=0.02)
    assert "no p90 between the median and p99 gives the measured mean 9,000 s" in high.spec.basis
    # a reachable mean is still said to be matched
    assert "chosen so the fit's mean is the measured 2,103 s" in HoldSampler(dict(base), 2102.63, 327_189).spec.basis

"""The backtest's 95% prediction intervals cover B's figures 95% of the time (issue 38 item 6).

Over 200 small stationary histories (the conftest's scenario: two models, 10% exceptions, cap 30 at
~90% load; 200 rollouts, split in half), each figure's interval must hold the actual value in a
number of histories a binomial(200, 39/41) count reaches with probability above 0.001 on each side
(180..198; for p = 0.95, 179..198: P(X >= 199) = 200 x 0.05 x 0.95^199 + 0.95^200 = 0.0004). A history is independent of the next, so
the count is binomial when the intervals are calibrated. Before the smoothed bootstrap and the
order-statistic interval the counts were makespan 141, mean hold 175, mean concurrency 145,
p99 hold 144 (the interpolated 2.5-97.5% quantiles of 40 runs cover 90.4% of an exchangeable run,
and a plain bootstrap never draws past A's longest hold).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from tests.backtest.conftest import stationary_history

from sandbox_fleet.backtest.predict import actual_figures, coverage, interval_rank, predict, rows_of, step_of, summarise
from sandbox_fleet.backtest.split import split_table

HISTORIES, ROLLOUTS, SEEDS = 200, 200, 40
FIGURES = ("makespan_s", "hold_mean_s", "mean_concurrency", "hold_p99_s")


def binomial_bounds(n: int, p: float, tail: float) -> tuple[int, int]:
    """The smallest and largest counts k with P(X <= k) > tail and P(X >= k) > tail, X ~ Bin(n, p) (exact sums)."""
    pmf = [math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)]
    lo = next(k for k in range(n + 1) if sum(pmf[: k + 1]) > tail)
    hi = next(k for k in range(n, -1, -1) if sum(pmf[k:]) > tail)
    return lo, hi


def test_binomial_bounds_by_hand():
    assert binomial_bounds(200, 0.95, 0.001) == (179, 198)
    assert 200 * 0.05 * 0.95**199 + 0.95**200 < 0.001 < 200 * 0.05 * 0.95**199 + 0.95**200 + 19900 * 0.05**2 * 0.95**198
    assert binomial_bounds(4, 0.5, 0.07) == (1, 3)  # P(X = 0) = P(X = 4) = 1/16 = 0.0625


def test_the_interval_rank_covers_an_exchangeable_run():
    # (n + 1 - 2k) / (n + 1): 40 runs -> k = 1, 39/41; 79 runs -> k = 2, 76/80; 10 runs -> the range, 9/11
    assert (interval_rank(40), coverage(40)) == (1, 39 / 41)
    assert (interval_rank(79), coverage(79)) == (2, 76 / 80)
    assert (interval_rank(10), coverage(10)) == (1, 9 / 11)
    # and by brute force: the rank of one more draw among n + 1 exchangeable draws is uniform
    rng = np.random.default_rng(0)
    x = rng.standard_normal((20000, 41))
    srt = np.sort(x[:, :40], axis=1)
    inside = (srt[:, 0] <= x[:, 40]) & (x[:, 40] <= srt[:, 39])
    assert inside.mean() == pytest.approx(39 / 41, abs=0.005)


@pytest.fixture(scope="module")
def counts() -> dict[str, int]:
    hits = dict.fromkeys(FIGURES, 0)
    for h in range(HISTORIES):
        sp = split_table(stationary_history(seed=1000 + h, n=ROLLOUTS), split_at=0.5)
        a, b = rows_of(sp.a), rows_of(sp.b)
        steps = step_of(b)
        grid = np.array([0], dtype=np.int64)
        runs, _ = predict(a, b, steps, h, SEEDS, grid)
        out = summarise(actual_figures(b, steps), runs)
        for name in FIGURES:
            hits[name] += bool(out[name]["within_interval"])
    return hits


@pytest.mark.parametrize("name", FIGURES)
def test_intervals_cover_95_percent_of_histories(counts, name):
    lo, hi = binomial_bounds(HISTORIES, coverage(SEEDS), 0.001)
    assert lo <= counts[name] <= hi, f"{name}: {counts[name]}/{HISTORIES} inside, expected {lo}..{hi}"

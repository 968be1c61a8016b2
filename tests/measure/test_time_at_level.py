"""concurrency.time_at_level against a second-by-second count of the intervals (independent of the sweep)."""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.concurrency import level_grid, sweep, time_at_level

S = 1_000_000


def _brute_share_at_or_above(starts: list[int], finishes: list[int], level: int) -> float:
    """Whole seconds of [first start, last finish) where at least ``level`` intervals run, over the span."""
    t0, t1 = min(starts), max(finishes)
    busy = sum(1 for t in range(t0, t1) if sum(1 for a, b in zip(starts, finishes) if a <= t < b) >= level)
    return busy / (t1 - t0)


def test_hand_case():
    # [0,10) and [5,20): level 1 on [0,5), 2 on [5,10), 1 on [10,20); then a gap and [30,40).
    tal = time_at_level(sweep(np.array([0, 5, 30]) * S, np.array([10, 20, 40]) * S))
    assert tal["levels"] == [1, 2]
    assert tal["share_at_or_above"] == [30 / 40, 5 / 40]


def test_random_intervals_match_a_second_by_second_count():
    rng = np.random.default_rng(7)
    starts = rng.integers(0, 400, 120)
    finishes = starts + rng.integers(1, 90, 120)
    tal = time_at_level(sweep(starts * S, finishes * S))
    assert tal["levels"] == list(range(1, len(tal["levels"]) + 1))  # peak below 256: every level
    for level, share in zip(tal["levels"], tal["share_at_or_above"]):
        assert abs(share - _brute_share_at_or_above(list(starts), list(finishes), level)) < 1e-12


def test_grid_above_256_levels_keeps_level_one_and_the_peak():
    grid = level_grid(400)
    assert grid[0] == 1 and grid[-1] == 400 and len(grid) == 257
    assert grid[1:] == sorted({-(-i * 400 // 256) for i in range(1, 257)})
    assert level_grid(3) == [1, 2, 3]

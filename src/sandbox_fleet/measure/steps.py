"""Synchronous RL steps: bursts of starts, each a batch released at once.

Heuristic (documented for users, robust to jitter and to admission behind a cap):
1. Sort the start times and take the gaps between consecutive starts.
2. Find the natural break in those gaps: sorted largest first, the place where one gap
   is largest relative to the next (the biggest jump on a log scale). Only the largest
   half of the gaps may be step boundaries, so a burst holds two starts on average.
3. Accept the break as step structure only if that jump is at least ``MIN_JUMP`` x
   (a decade: within-step gaps are seconds, between-step gaps minutes), it yields at least
   ``MIN_STEPS`` bursts, the median burst holds >= 2 starts, and the median time over which
   a burst's starts are released is at most ``MAX_SPREAD_SHARE`` of the median step period
   (so two outages in a steady stream are not mistaken for steps).
Otherwise every estimate is null and ``reason`` says which test failed.

Estimates (medians over steps): ``batch_size`` (starts per burst), ``step_period_s``
(first start to the next burst's first start), ``step_makespan_s`` (first start to the
last finish of the step's rollouts) and ``straggler_tail_s``: last finish minus the
``TAIL_QUANTILE`` finish, i.e. how long the last 10% of a step's rollouts hold it open.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.stats import US, group_sorted, quantile_sorted

MIN_STARTS = 20
MIN_STEPS = 3
MIN_JUMP = 10.0
MAX_SPREAD_SHARE = 0.5
TAIL_QUANTILE = 0.9

_NULLS = ("steps", "batch_size", "batch_size_min", "batch_size_max", "step_period_s",
          "release_spread_s", "step_makespan_s", "straggler_tail_s", "gap_threshold_s", "break_ratio")


def _none(rows: int, reason: str, **extra) -> dict:
    return {"detected": False, "reason": reason, "rows": rows, **dict.fromkeys(_NULLS), **extra}


def find_break(gaps: np.ndarray) -> tuple[int, float, int] | None:
    """(number of boundaries k, jump ratio, threshold gap in us) for gaps between sorted
    starts, or None if there are too few."""
    desc = np.sort(gaps)[::-1]
    np.maximum(desc, 1, out=desc)  # ties count as 1 us so ratios stay finite
    kmax = desc.size // 2
    if kmax < 1:
        return None
    jumps = desc[:kmax] / desc[1:kmax + 1]
    k = int(np.argmax(jumps)) + 1
    return k, float(jumps[k - 1]), int(desc[k])


def measure_steps(start_us: np.ndarray, finish_us: np.ndarray) -> dict:
    n = int(start_us.size)
    if n < MIN_STARTS:
        return _none(n, f"fewer than {MIN_STARTS} rollouts")
    s = np.sort(start_us)
    gaps = np.diff(s)
    found = find_break(gaps)
    if found is None:
        return _none(n, "too few starts to compare gaps")
    k, jump, threshold = found
    if jump < MIN_JUMP:
        return _none(n, f"no break of {MIN_JUMP:g}x between start gaps (best {jump:.3g}x)")
    if k + 1 < MIN_STEPS:
        return _none(n, f"only {k + 1} bursts of starts (need {MIN_STEPS})")
    boundary = gaps > max(threshold, 1)  # find_break counts ties as 1 us
    del gaps
    firsts = np.concatenate(([0], np.flatnonzero(boundary) + 1))
    lasts = np.append(firsts[1:] - 1, n - 1)
    sizes = lasts - firsts + 1
    spread = s[lasts] - s[firsts]
    period = np.diff(s[firsts])
    med_period = float(np.median(period))
    med_spread = float(np.median(spread))
    if float(np.median(sizes)) < 2:
        return _none(n, "bursts hold a single start")
    if med_spread > MAX_SPREAD_SHARE * med_period:
        return _none(n, f"starts spread over {med_spread / med_period:.0%} of the period: a stream, not batches")

    # Each row belongs to the last burst whose first start is at or before its own start.
    first_us = s[firsts]
    label = np.searchsorted(first_us, start_us, side="right") - 1
    rel_finish = finish_us - first_us[label]
    fin_sorted, offsets = group_sorted(label, rel_finish, firsts.size)
    tails, makespans = [], []
    for g in range(firsts.size):
        part = fin_sorted[offsets[g]:offsets[g + 1]]
        makespans.append(float(part[-1]))
        tails.append(float(part[-1]) - quantile_sorted(part, TAIL_QUANTILE))
    return {
        "detected": True,
        "reason": None,
        "rows": n,
        "steps": int(firsts.size),
        "batch_size": float(np.median(sizes)),
        "batch_size_min": int(sizes.min()),
        "batch_size_max": int(sizes.max()),
        "step_period_s": med_period / US,
        "release_spread_s": med_spread / US,
        "step_makespan_s": float(np.median(makespans)) / US,
        "straggler_tail_s": float(np.median(tails)) / US,
        "gap_threshold_s": threshold / US,
        "break_ratio": jump,
    }

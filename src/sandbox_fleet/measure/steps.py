"""Synchronous RL steps: each step releases a batch of rollouts at once, then waits.

Heuristic for one run's starts (documented for users in docs/measure.md):
1. Sort the start times and take the gaps between consecutive starts.
2. Find the natural break in those gaps: sorted largest first, the place where one gap
   is largest relative to the next (the biggest jump on a log scale). Only the largest
   half of the gaps may be step boundaries, so a step holds two starts on average.
3. Accept the break as step structure only if that jump is at least ``MIN_JUMP`` x
   (a decade: starts inside a step are seconds apart, steps are minutes or hours apart),
   it yields at least ``MIN_STEPS`` steps, the median step holds >= 2 starts, and the
   steps *open with a burst*: in the median step at least ``MIN_BURST_SHARE`` of its
   starts come within ``BURST_WINDOW`` x the median period of its first start.
Otherwise every estimate is null and ``reason`` says which test failed.

Why a burst test and not "all starts close together": behind a concurrency cap a batch of
B released into F free slots starts F sandboxes at once and the other B - F one by one as
slots free, so a step's starts may spread over most of its makespan. The opening burst is
still there (F starts at one instant), while a steady stream with pauses has none: its
first 2% of a period holds about 2% of its starts. A batch more than ~10x the free slots
therefore reads as a stream; the per-step ``burst_size`` shows how much started at once.

Several runs sharing one pool interleave their starts, which hides each run's steps, so
``measure_grouped_steps`` detects them per run (per job, and per model) and
``overall_steps`` marks the top level as a mix of runs.

Estimates (medians over steps): ``batch_size`` (starts per step, the queued ones
included), ``burst_size`` (starts in the opening burst), ``step_period_s`` (first start to
the next step's first start), ``release_spread_s`` (first to last start of a step),
``step_makespan_s`` (first start to the last finish of the step's rollouts) and
``straggler_tail_s``: last finish minus the ``TAIL_QUANTILE`` finish, i.e. how long the
last 10% of a step's rollouts hold it open.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.stats import US, group_sorted, quantile_sorted

MIN_STARTS = 20
MIN_STEPS = 3
MIN_JUMP = 10.0
BURST_WINDOW = 0.02
MIN_BURST_SHARE = 0.1
TAIL_QUANTILE = 0.9
#: Breaks tried, biggest jump first, before giving up.
MAX_CANDIDATES = 5

_NULLS = ("steps", "batch_size", "batch_size_min", "batch_size_max", "burst_size", "burst_share",
          "step_period_s", "release_spread_s", "step_makespan_s", "straggler_tail_s", "gap_threshold_s",
          "break_ratio")


def _none(rows: int, reason: str, **extra) -> dict:
    return {"detected": False, "reason": reason, "rows": rows, **dict.fromkeys(_NULLS), **extra}


def candidate_breaks(asc: np.ndarray, limit: int = MAX_CANDIDATES,
                     min_jump: float = MIN_JUMP) -> list[tuple[int, float, int]]:
    """Up to ``limit`` breaks (k, jump, threshold us) between gaps sorted ascending, biggest
    jump first, each at least ``min_jump``. Ties count as 1 us so ratios stay finite."""
    kmax = asc.size // 2
    if kmax < 1:
        return []
    # Largest first: desc[i] = asc[-1 - i]; only the largest half may be step boundaries.
    desc = np.maximum(asc[asc.size - kmax - 1:][::-1], 1)
    jumps = desc[:kmax] / desc[1:kmax + 1]
    order = np.argsort(-jumps, kind="stable")[:limit]
    return [(int(i) + 1, float(jumps[i]), int(desc[i + 1])) for i in order if jumps[i] >= min_jump]


def measure_steps(start_us: np.ndarray, finish_us: np.ndarray) -> dict:
    """Step structure of one run's rollouts (times in int64 microseconds)."""
    n = int(start_us.size)
    if n < MIN_STARTS:
        return _none(n, f"fewer than {MIN_STARTS} rollouts")
    s = np.sort(start_us)
    gaps = np.diff(s)
    gaps.sort()  # only the sorted gaps are needed; the boundaries are re-read from s
    if gaps.size < 2:
        return _none(n, "too few starts to compare gaps")
    best = candidate_breaks(gaps, limit=1, min_jump=0.0)
    found = candidate_breaks(gaps)
    del gaps
    if not found:
        jump = best[0][1] if best else 1.0
        return _none(n, f"no break of {MIN_JUMP:g}x between start gaps (best {jump:.3g}x)")
    # The biggest jump is not always the step boundary: behind a cap, same-instant starts
    # (gap 0) next to queue-driven ones make a huge jump inside the steps. Take the
    # biggest jump whose split passes every test.
    first_reason = None
    for k, jump, threshold in found:
        split = _split(s, k, threshold)
        if isinstance(split, str):
            first_reason = first_reason or split
            continue
        firsts, sizes, burst, share, spread, med_period = split
        makespans, tails = _step_finishes(start_us, finish_us, s[firsts])
        return {
            "detected": True,
            "reason": None,
            "rows": n,
            "steps": int(firsts.size),
            "batch_size": float(np.median(sizes)),
            "batch_size_min": int(sizes.min()),
            "batch_size_max": int(sizes.max()),
            "burst_size": float(np.median(burst)),
            "burst_share": float(np.median(share)),
            "step_period_s": med_period / US,
            "release_spread_s": float(np.median(spread)) / US,
            "step_makespan_s": float(np.median(makespans)) / US,
            "straggler_tail_s": float(np.median(tails)) / US,
            "gap_threshold_s": threshold / US,
            "break_ratio": jump,
        }
    return _none(n, first_reason)


def _split(s: np.ndarray, k: int, threshold: int):
    """Steps from sorted starts cut at gaps > threshold, or the reason they are not steps."""
    if k + 1 < MIN_STEPS:
        return f"only {k + 1} bursts of starts (need {MIN_STEPS})"
    boundary = np.flatnonzero(np.diff(s) > max(threshold, 1))  # ties count as 1 us
    firsts = np.concatenate(([0], boundary + 1))
    lasts = np.append(firsts[1:] - 1, s.size - 1)
    sizes = lasts - firsts + 1
    if float(np.median(sizes)) < 2:
        return "bursts hold a single start"
    first_us = s[firsts]
    med_period = float(np.median(np.diff(first_us)))
    burst = np.searchsorted(s, first_us + BURST_WINDOW * med_period, side="right") - firsts
    share = burst / sizes
    if float(np.median(share)) < MIN_BURST_SHARE:
        return (f"steps do not open with a burst (median {np.median(share):.1%} of a step's starts in its "
                f"first {BURST_WINDOW:.0%} of the period, need {MIN_BURST_SHARE:.0%}): a stream, not batches")
    return firsts, sizes, burst, share, s[lasts] - first_us, med_period


def _step_finishes(start_us: np.ndarray, finish_us: np.ndarray, first_us: np.ndarray) -> tuple[list, list]:
    """Per step: makespan (last finish after the first start) and straggler tail, in us."""
    # Each row belongs to the last step whose first start is at or before its own start.
    label = np.searchsorted(first_us, start_us, side="right") - 1
    rel_finish = first_us[label]
    np.subtract(finish_us, rel_finish, out=rel_finish)
    fin_sorted, offsets = group_sorted(label, rel_finish, first_us.size)
    del label, rel_finish
    tails, makespans = [], []
    for g in range(first_us.size):
        part = fin_sorted[offsets[g]:offsets[g + 1]]
        makespans.append(float(part[-1]))
        tails.append(float(part[-1]) - quantile_sorted(part, TAIL_QUANTILE))
    return makespans, tails


def group_rows(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ordered by group (stable) and the bounds of each group in that order.

    Rows with a negative code (no group) come first and belong to no group.
    """
    # The narrowest dtype that holds the codes lets NumPy's stable sort use radix sort.
    small = codes.astype(np.min_scalar_type(-max(n_groups, 1)), copy=False)
    order = np.argsort(small, kind="stable")
    bounds = np.searchsorted(small[order], np.arange(n_groups + 1))
    return order, bounds


def measure_grouped_steps(start_us: np.ndarray, finish_us: np.ndarray, rows: tuple[np.ndarray, np.ndarray],
                          names: list[str]) -> dict[str, dict]:
    """``measure_steps`` for each group (``rows`` from ``group_rows``) that has rows."""
    order, bounds = rows
    out = {}
    for i, name in enumerate(names):
        idx = order[bounds[i]:bounds[i + 1]]
        if idx.size:
            out[name] = measure_steps(start_us[idx], finish_us[idx])
    return out


def overall_steps(overall: dict, runs: dict[str, dict], runs_by: str | None) -> dict:
    """The top-level ``steps``: detection over all starts, plus whether runs mix.

    ``runs`` are the per-run results (``runs_by`` names the grouping: "job" or "model").
    Runs *in lockstep* (the overall starts show steps, and every run with steps has as many
    as the whole) are one step structure whose batches hold rollouts of each run, and the
    overall figures describe it. Otherwise two or more runs interleave their starts, the
    overall figures describe no single run, ``mixed`` is true and ``note`` points to the
    per-run ones.
    """
    out = dict(overall)
    found = sorted(name for name, r in runs.items() if r["detected"])
    lockstep = bool(overall["detected"] and found and all(runs[n]["steps"] == overall["steps"] for n in found))
    out["runs_by"] = runs_by
    out["runs"] = len(runs)
    out["runs_with_steps"] = found
    out["mixed"] = len(runs) >= 2 and not lockstep
    out["note"] = None
    if out["mixed"]:
        out["note"] = (f"the starts come from {len(runs)} runs (by {runs_by}) that interleave; "
                       f"{len(found)} show synchronous steps: see by_{runs_by}.<name>.steps for each run's "
                       "batch size and period (the figures here are over all starts together)")
    elif len(runs) >= 2:
        out["note"] = (f"the {len(runs)} runs (by {runs_by}) step together: each step's batch holds rollouts "
                       "of every one, so the figures here are the fleet's steps")
    return out

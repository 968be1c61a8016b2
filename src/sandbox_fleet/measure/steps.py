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
4. A step is a batch *run together*: in the median step at least ``MIN_TOGETHER`` of its starts
   come before any of its rollouts finishes (``opening_concurrency``). A serial run (one rollout
   at a time) in sittings hours apart has the gaps and the bursts of the tests above, but each
   rollout ends before the next starts: those are sittings, not synchronous RL steps.
5. Last, each step must have *drained* before the next opens: a synchronous step waits for
   its rollouts, so when step g + 1 releases, (almost) none of step g's still run. A queue
   refilled as slots free (an eval under ``max_samples``) looks like steps when its holds are
   alike (k slots finish close together and k starts follow), but every start there replaces
   one finish while the other k - 1 still run. ``carryover_share`` is the median over steps of
   the share of a step's rollouts still running when the next step's first start comes; at
   ``MAX_CARRYOVER`` or more it is a queue, not steps.
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

from sandbox_fleet.measure.stats import US, group_offsets, group_spans, packed_sort, partitioned, quantile_nonempty

#: Rows per pass where a pass would otherwise build a row-sized temporary.
_BLOCK = 1 << 20

MIN_STARTS = 20
MIN_STEPS = 3
MIN_JUMP = 10.0
BURST_WINDOW = 0.02
MIN_BURST_SHARE = 0.1
TAIL_QUANTILE = 0.9
#: A median share of a step's rollouts still running at the next release at or above this is a
#: refilled queue (k slots: (k - 1) / k of them run on), not batches that drain.
MAX_CARRYOVER = 0.5
#: A step's opening must hold at least this many rollouts running together (started before the
#: step's first finish), in the median step: one at a time is a serial run, not a released batch.
MIN_TOGETHER = 2
#: Breaks tried, biggest jump first, before giving up.
MAX_CANDIDATES = 5

_NULLS = ("steps", "batch_size", "batch_size_min", "batch_size_max", "burst_size", "burst_share",
          "step_period_s", "release_spread_s", "step_makespan_s", "straggler_tail_s", "gap_threshold_s",
          "break_ratio", "carryover_share", "opening_concurrency")


def _none(rows: int, reason: str, **extra) -> dict:
    return {"detected": False, "reason": reason, "rows": rows, **dict.fromkeys(_NULLS), **extra}


def _ranked_breaks(asc: np.ndarray, limit: int, total: int | None = None) -> list[tuple[int, float, int]]:
    """The ``limit`` biggest jumps (k, jump, threshold us), biggest first, ties by position:
    the first ``limit`` of one stable sort of the jumps descending, found without sorting
    them all (a partition picks the candidates, and only those are sorted).

    ``asc`` holds the largest ``total // 2 + 1`` (or more) of ``total`` gaps, ascending.
    """
    kmax = (asc.size if total is None else total) // 2
    if kmax < 1 or limit < 1:
        return []
    # Largest first: desc[i] = asc[-1 - i]; only the largest half may be step boundaries.
    desc = np.maximum(asc[asc.size - kmax - 1:][::-1], 1)
    neg = -(desc[:kmax] / desc[1:kmax + 1])
    if neg.size > limit:
        kth = np.partition(neg, limit - 1)[limit - 1]
        cand = np.flatnonzero(neg <= kth)  # ascending positions: a stable sort keeps ties in order
        order = cand[np.argsort(neg[cand], kind="stable")[:limit]]
    else:
        order = np.argsort(neg, kind="stable")
    return [(int(i) + 1, float(-neg[i]), int(desc[i + 1])) for i in order]


def _sorted_top_gaps(s: np.ndarray) -> np.ndarray:
    """The gaps between consecutive sorted starts ``s`` that ``_ranked_breaks`` reads (the
    largest ``size // 2 + 1``), ascending: a partition then a sort of that half, not of all."""
    gaps = np.diff(s)
    keep = gaps.size // 2 + 1
    if keep < gaps.size:
        gaps.partition(gaps.size - keep)
        gaps = gaps[gaps.size - keep:]
    gaps.sort()
    return gaps


def measure_steps(start_us: np.ndarray, finish_us: np.ndarray, *, starts_sorted: np.ndarray | None = None) -> dict:
    """Step structure of one run's rollouts (times in int64 microseconds).

    ``starts_sorted`` is ``np.sort(start_us)`` when the caller already has it (one sort of all
    starts serves the overall and every per-run pass, see ``measure_grouped_steps``).
    """
    n = int(start_us.size)
    if n < MIN_STARTS:
        return _none(n, f"fewer than {MIN_STARTS} rollouts")
    s = np.sort(start_us) if starts_sorted is None else starts_sorted
    gaps = _sorted_top_gaps(s)  # only the sorted gaps are needed; the boundaries are re-read from s
    ranked = _ranked_breaks(gaps, MAX_CANDIDATES, total=n - 1)
    del gaps
    # One ranking serves both: the best jump of all (for the reason) and those >= MIN_JUMP.
    found = [c for c in ranked if c[1] >= MIN_JUMP]
    if not found:
        jump = ranked[0][1] if ranked else 1.0
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
        together = float(np.median(opening_concurrency(s, firsts, sizes, start_us, finish_us)))
        if together < MIN_TOGETHER:
            first_reason = first_reason or (
                f"one rollout at a time: in the median step {together:.0f} of its starts come before its first "
                f"finish (need {MIN_TOGETHER}: a step releases a batch that runs together); the breaks are "
                "sittings of a serial run, not synchronous RL steps")
            continue
        makespans, tails, carried = _step_finishes(start_us, finish_us, s[firsts])
        carryover = float(np.median(carried / sizes[:-1]))
        if carryover >= MAX_CARRYOVER:
            first_reason = first_reason or (
                f"a refilled queue, not steps: when a step opens, a median {carryover:.0%} of the previous "
                f"one's rollouts still run (need under {MAX_CARRYOVER:.0%}: a batch drains before the next)")
            continue
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
            "carryover_share": carryover,
            "opening_concurrency": together,
        }
    # found is not empty and each candidate that did not return left its reason
    assert first_reason is not None
    return _none(n, first_reason)


def step_opens(s: np.ndarray, threshold: int) -> np.ndarray:
    """Positions in the sorted starts ``s`` where a step opens: after a gap over ``threshold`` us."""
    boundary = np.flatnonzero(np.diff(s) > max(threshold, 1))  # ties count as 1 us
    return np.concatenate(([0], boundary + 1))


def step_labels(start_us: np.ndarray, threshold_us: int) -> tuple[np.ndarray, np.ndarray]:
    """Per rollout (input order, at least one), its step: the last one opening at or before its start
    (steps cut at gaps over ``threshold_us``, ``step_opens``; tied starts share one); and each step's
    first start (us)."""
    s = np.sort(start_us)
    first_us = s[step_opens(s, threshold_us)]
    return np.searchsorted(first_us, start_us, side="right") - 1, first_us


def step_releases(start_us: np.ndarray, gap_threshold_s: float) -> np.ndarray:
    """Per rollout (input order), the first start of its step (us): the steps ``measure_steps`` found,
    cut at its ``gap_threshold_s``."""
    label, first_us = step_labels(start_us, round(gap_threshold_s * US))
    return first_us[label]


def _split(s: np.ndarray, k: int, threshold: int):
    """Steps from sorted starts cut at gaps > threshold, or the reason they are not steps."""
    if k + 1 < MIN_STEPS:
        return f"only {k + 1} bursts of starts (need {MIN_STEPS})"
    firsts = step_opens(s, threshold)
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


def opening_concurrency(s: np.ndarray, firsts: np.ndarray, sizes: np.ndarray, start_us: np.ndarray,
                        finish_us: np.ndarray) -> np.ndarray:
    """Per step, how many of its starts come before the first finish of its rollouts: all of them
    run together just before that finish (a lower bound of the step's concurrency; 1 when the
    step's rollouts ran one after another). ``s``: the sorted starts, ``firsts``/``sizes``: the steps."""
    first_us = s[firsts]
    first_finish = np.full(first_us.size, np.iinfo(np.int64).max, dtype=np.int64)
    for i in range(0, start_us.size, _BLOCK):  # blockwise: no row-sized label array at once
        label = np.searchsorted(first_us, start_us[i:i + _BLOCK], side="right") - 1
        np.minimum.at(first_finish, label, finish_us[i:i + _BLOCK])
    before = np.searchsorted(s, first_finish, side="left") - firsts
    return np.clip(before, 1, sizes)


def _step_finishes(start_us: np.ndarray, finish_us: np.ndarray, first_us: np.ndarray) -> tuple[list, list, np.ndarray]:
    """Per step: makespan (last finish after the first start) and straggler tail, in us; and
    for each step but the last, how many of its rollouts still run when the next one opens.

    A row belongs to the last step opening at or before its start. The rows are grouped by step
    with one radix argsort of the step labels (small integers), and each step's tail is read off a
    partition at its two ranks (``stats.partitioned``): no sort of the finishes."""
    n_steps = first_us.size
    label = (np.searchsorted(first_us, start_us, side="right") - 1).astype(np.min_scalar_type(n_steps))
    order = np.argsort(label, kind="stable")
    rel = finish_us[order]
    rel -= first_us[label[order]]
    offsets = group_offsets(np.bincount(label, minlength=n_steps))
    del order, label
    tails, makespans = [], []
    carried = np.zeros(max(n_steps - 1, 0), dtype=np.int64)
    for g in range(n_steps):
        part = partitioned(rel[offsets[g]:offsets[g + 1]], (TAIL_QUANTILE,))
        makespans.append(float(part[-1]))
        tails.append(float(part[-1]) - quantile_nonempty(part, TAIL_QUANTILE))
        if g + 1 < n_steps:  # finishes are relative to this step's first start
            carried[g] = np.count_nonzero(part > first_us[g + 1] - first_us[g])
    return makespans, tails, carried


def group_rows(codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Row indices ordered by group (stable) and the bounds of each group in that order.

    Rows with a negative code (no group) come first and belong to no group.
    """
    # The narrowest dtype that holds the codes lets NumPy's stable sort use radix sort.
    small = codes.astype(np.min_scalar_type(-max(n_groups, 1)), copy=False)
    order = np.argsort(small, kind="stable")
    bounds = np.searchsorted(small[order], np.arange(n_groups + 1))
    return order, bounds


def sorted_starts(start_us: np.ndarray, groupings: list[np.ndarray]) -> tuple[np.ndarray, list[np.ndarray | None]]:
    """All starts sorted, and for each grouping (codes >= 0, or -1 for no group) its codes
    plus one in that sorted order (0 = no group), or None when they do not fit.

    One sort serves every step pass: the group codes ride in the low bits of the sorted key,
    so the starts of group g, sorted, are the sorted starts whose code is g + 1 (a stable
    partition of the one sort, ``group_starts``). When the codes do not fit beside the
    times, the partition is None and each group's starts are sorted alone.
    """
    n = start_us.size
    if n == 0:
        return start_us.copy(), [None for _ in groupings]
    widths = [max(int(c.max(initial=-1)) + 1, 0).bit_length() for c in groupings]  # code + 1 >= 0
    packed = packed_sort(start_us, list(zip(groupings, widths)), base=1)
    if packed is None:
        return np.sort(start_us), [None for _ in groupings]
    key, parts = packed
    return key, [np.zeros(n, dtype=np.uint8) if p is None else p for p in parts]


#: Up to this many groups, each group's starts are picked by a mask; past it one stable
#: argsort partitions them all (a pass per group would cost more).
_MASK_GROUPS = 32


def group_starts(s_all: np.ndarray, part: np.ndarray, n_groups: int):
    """Each group's starts, sorted, from ``sorted_starts``: one array per group 0..n_groups-1."""
    if n_groups <= _MASK_GROUPS:
        for g in range(n_groups):
            yield s_all[part == g + 1]
        return
    order = np.argsort(part, kind="stable")
    bounds = np.searchsorted(part[order], np.arange(1, n_groups + 2))
    grouped = s_all[order]
    del order
    for g in range(n_groups):
        yield grouped[bounds[g]:bounds[g + 1]]


def measure_grouped_steps(start_us: np.ndarray, finish_us: np.ndarray, rows: tuple[np.ndarray, np.ndarray],
                          names: list[str], starts: tuple[np.ndarray, np.ndarray | None] | None = None) -> dict[str, dict]:
    """``measure_steps`` for each group (``rows`` from ``group_rows``) that has rows.

    ``starts`` is ``(sorted starts, this grouping's partition)`` from ``sorted_starts``: each
    group's sorted starts are then read from the one sort rather than sorted again.
    """
    order, bounds = rows
    ready = group_starts(starts[0], starts[1], len(names)) if starts is not None and starts[1] is not None else None
    out = {}
    for i, name in enumerate(names):
        idx = order[bounds[i]:bounds[i + 1]]
        s = next(ready) if ready is not None else None
        if idx.size:
            out[name] = measure_steps(start_us[idx], finish_us[idx], starts_sorted=s)
        del s
    return out


def runs_overlap(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, n_groups: int) -> bool | None:
    """Whether two or more runs (rows coded 0..n_groups-1; negative: no run) were ever running at
    once, each run running from its first start to its last finish; None with fewer than two runs."""
    first, last = group_spans(start_us, finish_us, codes, n_groups)
    present = first <= last
    return spans_overlap(first[present], last[present])


def spans_overlap(first: np.ndarray, last: np.ndarray) -> bool | None:
    """Whether any two of the spans [first, last) overlap; None with fewer than two."""
    if first.size < 2:
        return None
    order = np.argsort(first, kind="stable")
    f, l_ = first[order], last[order]
    # sorted by first start, a run overlaps an earlier one when it starts before the latest finish so far
    return bool((f[1:] < np.maximum.accumulate(l_)[:-1]).any())


def overall_steps(overall: dict, runs: dict[str, dict], runs_by: str | None, overlap: bool | None = None) -> dict:
    """The top-level ``steps``: detection over all starts, plus whether runs mix.

    ``runs`` are the per-run results (``runs_by`` names the grouping: "job" or "model").
    Runs *in lockstep* (the overall starts show steps, and every run with steps has as many
    as the whole) are one step structure whose batches hold rollouts of each run, and the
    overall figures describe it. Otherwise two or more runs interleave their starts, the
    overall figures describe no single run, ``mixed`` is true and ``note`` points to the
    per-run ones. Runs that never overlap in time (``overlap`` false: sittings one after another)
    do not interleave: ``mixed`` is false and ``note`` says they ran in turn.
    """
    out = dict(overall)
    found = sorted(name for name, r in runs.items() if r["detected"])
    lockstep = bool(overall["detected"] and found and all(runs[n]["steps"] == overall["steps"] for n in found))
    out["runs_by"] = runs_by
    out["runs"] = len(runs)
    out["runs_with_steps"] = found
    out["runs_overlap"] = overlap if len(runs) >= 2 else None
    out["mixed"] = len(runs) >= 2 and not lockstep and overlap is not False
    out["note"] = None
    if len(runs) >= 2 and overlap is False:
        out["note"] = (f"the {len(runs)} runs (by {runs_by}) ran one after another and never overlap in time; "
                       f"{len(found)} show synchronous steps: see by_{runs_by}.<name>.steps for each run's own")
    elif out["mixed"]:
        out["note"] = (f"the starts come from {len(runs)} runs (by {runs_by}) that interleave; "
                       f"{len(found)} show synchronous steps: see by_{runs_by}.<name>.steps for each run's "
                       "batch size and period (the figures here are over all starts together)")
    elif len(runs) >= 2:
        out["note"] = (f"the {len(runs)} runs (by {runs_by}) step together: each step's batch holds rollouts "
                       "of every one, so the figures here are the fleet's steps")
    return out

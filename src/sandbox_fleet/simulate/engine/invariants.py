"""Named invariants checked after every run (cheap, vectorised).

- ``one_terminal_state``: every arriving rollout ends in exactly one terminal state,
  on its last attempt, and every earlier attempt was retried.
- ``clock_monotonic``: the loop never popped an event earlier than the clock.
- ``no_start_before_arrival``: an attempt starts at or after it entered the queue,
  and finishes at or after it started.
- ``cap_respected``: no pool ever runs more sandboxes than its cap.
- ``littles_law``: the loop's running integrals of sandboxes in use and rollouts
  waiting equal the sums of holds and waits (L = lambda W, exactly, on the run).
- ``pool_littles_law`` (inference pool): the replicas' integrals of calls in the pool
  equal the sum of the calls' times in the pool.
- ``rl_staleness``: batch ``j`` of an RL workload is released only after trainer step
  ``j - staleness - 1`` ended.
- ``quota_respected`` (priority pools): no workload holds more than ``nominal + borrow_limit``.
- ``ceiling_respected`` (timeout-ceiling pools): no hold passes its rollout's timeout.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.concurrency import to_us
from sandbox_fleet.simulate.engine.entities import DROPPED, RETRIED
from sandbox_fleet.simulate.engine.policies import POLICIES


class InvariantError(AssertionError):
    """A simulation broke one of the named invariants: a bug in the engine."""


def check_invariants(res, n_expected: int) -> None:
    res.derived()  # (re)builds the derived arrays first: the cache below lives next to them
    res._derived["micros"] = []  # res.micros caches while the checks run
    try:
        _check(res, n_expected)
    finally:
        res._derived.pop("micros", None)


def _check(res, n_expected: int) -> None:
    def fail(name: str, detail: str) -> None:
        raise InvariantError(f"invariant {name} violated: {detail}")

    # one_terminal_state
    if np.any((res.state < 0) | (res.state > RETRIED)):
        fail("one_terminal_state", "an attempt was still running when the run ended")
    d = res.derived()
    term = d["term"]  # codes 0..3 (<= DROPPED, so != RETRIED) are the terminal states
    if not _each_once(res.rollout if term.all() else res.rollout[term], n_expected):
        counts = np.bincount(res.rollout if term.all() else res.rollout[term], minlength=n_expected)
        bad = np.flatnonzero(counts != 1)
        r = int(bad[0]) if bad.size else -1
        fail("one_terminal_state", f"rollout {r} has {counts[r] if r >= 0 else '?'} terminal attempts")
    last = np.ones(res.rollout.size, dtype=bool)
    last[:-1] = res.rollout[1:] != res.rollout[:-1]
    if np.any(term != last):
        fail("one_terminal_state", "a terminal attempt is not its rollout's last")

    if not res.clock_monotonic:
        fail("clock_monotonic", "an event was processed before the current time")

    started, s0, s1 = d["started"], d["s0"], d["s1"]
    if np.any(s0 < (res.arrival_s if s0.size == started.size else res.arrival_s[started])):
        fail("no_start_before_arrival", "an attempt started before it arrived")
    if np.any(s1 < s0):
        fail("no_start_before_arrival", "an attempt finished before it started")
    if not np.array_equal(res.state == DROPPED, ~started):
        fail("one_terminal_state", "dropped attempts must be exactly those that never started")

    for p, fleet in enumerate(res.fleets):
        if fleet.cap is not None and res.concurrency_stats(p)["peak"] > fleet.cap:
            fail("cap_respected", f"pool {p} ran {res.concurrency_stats(p)['peak']} sandboxes over a cap of {fleet.cap}")
    _check_policies(res, fail)

    # Little's law on the run: the time-integral of sandboxes in use and of rollouts
    # waiting, accumulated by the event loop, must equal the sums of holds and of
    # waits. The fifo path has no running integral; there the integral of rollouts in
    # the system (first arrival to terminal end) is their sojourns summed on whole microseconds.
    holds = float(np.sum(d["hold"]))
    waits = float(np.sum(d["waits"]))
    rounding = 0.0
    checks: tuple[tuple[str, float, float], ...]
    if res.area_busy is not None:
        assert res.area_wait is not None  # the general loop integrates both or neither
        checks = (("busy", res.area_busy, holds), ("waiting", res.area_wait, waits))
    else:
        sojourn_end, sojourn_start = d["sojourn_end"], d["sojourn_start"]
        checks = (("in_system", integral(sojourn_start, sojourn_end, res.micros), holds + waits),)
        rounding = 1e-6 * sojourn_end.size  # the sweep line runs on whole microseconds
    # Each time carries a float error of one ulp of its magnitude, so late clocks (far
    # from run.epoch) round more than a microsecond per interval.
    horizon = _abs_max(res.finish_s)
    rounding += 4 * np.finfo(float).eps * horizon * max(1, res.finish_s.size)
    for name, area, direct in checks:
        if abs(area - direct) > 1e-9 * max(1.0, abs(direct)) + 1e-6 + rounding:
            fail("littles_law", f"time-integral of {name} {area!r} != sum over rollouts {direct!r}")

    sr = res.inference
    if sr is not None:
        area, direct = float(sr.area_sys.sum()), float(sr.sojourn_s.sum()) + float(sr.withdrawn_s.sum())
        if abs(area - direct) > 1e-9 * max(1.0, abs(direct)) + 1e-6:
            fail("pool_littles_law", f"time-integral of calls in the pool {area!r} != sum of times in pool {direct!r}")

    for w, st in res.steps.items():
        k = res.workloads[w].staleness
        rel, tend = st["release_s"], st["train_end_s"]
        for j in range(k + 1, rel.size):
            if not rel[j] >= tend[j - k - 1]:
                fail("rl_staleness", f"workload {w} batch {j} released before trainer step {j - k - 1} ended")
    _dynamic_rounds(res, fail)


def _dynamic_rounds(res, fail) -> None:
    """Dynamic sampling, from the rows alone: a round's rollouts arrive together, the first round at its
    step's release and each later one when the round before has ended (its last terminal row), and the
    step trains only after its last round has ended."""
    offsets = np.cumsum([0] + [wl.count for wl in res.workloads])
    for w, wl in enumerate(res.workloads):
        dr = getattr(wl, "groups_drawn", None)
        if getattr(wl, "dynamic", None) is None or dr is None:
            continue
        term = res.terminal
        end = np.full(wl.count, np.nan)
        rows = term & (res.rollout >= offsets[w]) & (res.rollout < offsets[w + 1])
        end[res.rollout[rows] - offsets[w]] = res.finish_s[rows]
        arrival = res.rollout_arrival_s[offsets[w] : offsets[w + 1]]
        st, lo = res.steps[w], 0
        for j, step in enumerate(dr.rounds):
            prev_end = None
            for n in step:
                hi = lo + n * dr.group_size
                a = arrival[lo:hi]
                if a.min() != a.max():
                    fail("dynamic_rounds", f"workload {w} step {j}: a round's rollouts arrived at different times")
                if prev_end is None and a[0] != st["release_s"][j]:
                    fail("dynamic_rounds", f"workload {w} step {j}: its first round arrived {a[0]!r}, not at the release")
                if prev_end is not None and a[0] != prev_end:
                    fail("dynamic_rounds", f"workload {w} step {j}: a round arrived {a[0]!r}, not when the round "
                                           f"before ended ({prev_end!r})")
                prev_end = float(end[lo:hi].max())
                lo = hi
            if not st["train_start_s"][j] >= prev_end:
                fail("dynamic_rounds", f"workload {w} step {j} trained before its last round ended")


def integral(start: np.ndarray, end: np.ndarray, micros=to_us) -> float:
    """Area under the count of open intervals (seconds) on measure's whole-microsecond grid.

    That area is exactly the integer sum of the intervals' lengths in microseconds (measure's
    sweep line checks itself against the same sum), so it is summed directly: no sort, no BLAS,
    and still independent of sum(end - start) in floats.
    """
    if start.size == 0:
        return 0.0
    length_us = micros(end) - micros(start)  # micros: to_us, or a result's cached to_us
    if np.any(length_us < 0):
        raise InvariantError("invariant littles_law violated: a rollout left the system before it arrived")
    return int(length_us.sum(dtype=np.int64)) / 1e6


def _each_once(ids: np.ndarray, n: int) -> bool:
    """Whether ``ids`` holds each of 0..n-1 exactly once: ``bincount(ids, minlength=n) == 1``
    everywhere, decided without an n-sized count array when they are in order (as rows are)."""
    if ids.size != n:
        return False
    if n == 0:
        return True
    if ids[0] == 0 and ids[-1] == n - 1 and bool(np.all(ids[1:] > ids[:-1])):
        return True  # n strictly increasing integers from 0 to n - 1 are 0..n-1
    counts = np.bincount(ids, minlength=n) if ids.min() >= 0 else None
    return counts is not None and counts.size == n and bool(np.all(counts == 1))


def _abs_max(x: np.ndarray) -> float:
    """``nanmax(abs(x), initial=0.0)`` without an ``abs`` copy: the largest magnitude is the
    largest value or minus the smallest (NaN ignored)."""
    if x.size == 0:
        return 0.0
    return float(max(np.fmax.reduce(x, initial=0.0), -np.fmin.reduce(x, initial=0.0)))


def _check_policies(res, fail) -> None:
    """``quota_respected`` and ``ceiling_respected`` on the pools whose admission policy sets them."""
    from sandbox_fleet.simulate.engine.metrics import concurrency

    started = res.derived()["started"]
    for w, wl in enumerate(res.workloads):
        pl = res.fleets[wl.pool]
        if pl.admission not in POLICIES:
            continue  # neither check applies: no per-row work for a pool without these policies
        sel = started & (res.workload == w)
        if pl.admission == "priority" and wl.nominal is not None and wl.borrow_limit is not None:
            limit = wl.nominal + wl.borrow_limit
            peak = concurrency(res.start_s[sel], res.finish_s[sel])["peak"] if sel.any() else 0
            if peak > limit:
                fail("quota_respected", f"workload {wl.name} held {peak} slots over its quota of {limit}")
        timeout_s = wl.resolved_episode().agent_timeout_s
        if pl.admission == "timeout-ceiling" and timeout_s is not None and sel.any():
            t = timeout_s[res.index[sel]] if isinstance(timeout_s, np.ndarray) else timeout_s
            hold = res.finish_s[sel] - res.start_s[sel]
            # finish - start carries one rounding of the start's magnitude
            if np.any(hold > t + 4 * np.finfo(float).eps * np.abs(res.finish_s[sel])):
                fail("ceiling_respected", f"workload {wl.name} held a sandbox past its timeout ceiling")

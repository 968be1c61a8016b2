"""The first-come-first-served recursion: FIFO pools without start caps, preemption or queue timeouts.

Under first-come-first-served, an attempt starts at ``max(its arrival, the earliest
time a slot is free)`` and that slot is next free at ``finish + provision_delay``
(the Kiefer-Wolfowitz recursion for the G/G/c queue). Processing queue entries in
time order therefore places every attempt with one ``heapreplace`` on a heap of
``cap`` slot-free times, with no finish events at all. Entries that depend on the
run (RL batch releases, retries) go on a small heap in time order: each lies at or
after the finish that caused it. Same model and tie rule as ``loop.py`` (heap
entries before open arrivals at equal times); tests check the two agree.

The rule is written once per form: ``placer`` places one attempt (retries, and open
arrivals on several pools or an unbounded one), ``place_stream`` a sorted stream at once (a
released batch; the open arrivals between two heap entries on one capped pool). One copy
stays inline, for one capped pool with retries, where the per-arrival call cost 8-24%. A run that is one pass of the recursion (one capped pool, open arrivals only,
nothing retries) goes to ``run_one_pass`` on NumPy arrays, with ``place_stream`` or its C
twin (``_fifo_speedups.c``, which mirrors it; ``executors.py`` picks one, tests check the
same bits). The RL trainer's rules are ``trainer.RLState``'s, shared with the event loop.
"""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Callable
from heapq import heappop, heappush, heapreplace

import numpy as np

from sandbox_fleet.simulate.engine.entities import RETRIED
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.trainer import rl_states
from sandbox_fleet.simulate.engine.workloads import RL

RELEASE, RETRY = 0, 1
#: The columns of the retry attempts' rows (beside ``finish_s``), as lists appended to in run order.
RETRY_COLUMNS = ("rollout", "attempt", "arrival_s", "start_s", "state", "phase", "build_s", "agent_s", "verify_s")
INF = math.inf


def placer(free: list[float] | None, provision_s: float) -> Callable[[float, float], float]:
    """The recursion's step on one pool, one attempt per call: ``place(t, hold_s)`` is the start
    of an attempt entering the queue at ``t`` (entries in time order), ``max(t, the earliest
    time a slot is free)``; that slot is next free ``hold_s + provision_s`` after the start.
    ``free``: the heap of the pool's slot-free times (updated in place), ``None`` for an
    unbounded pool, which starts every attempt when it enters."""
    if free is None:
        return _at_entry

    def place(t: float, hold_s: float) -> float:
        f0 = free[0]
        s = f0 if f0 > t else t
        heapreplace(free, s + hold_s + provision_s)
        return s

    return place


def _at_entry(t: float, hold_s: float) -> float:
    return t


def place_stream(free: list[float], arr_t: list[float], hold: list[float], provision_s: float) -> list[float]:
    """Start times of attempts arriving at ``arr_t`` (sorted) holding ``hold`` on one pool
    whose slots are next free at the times in the heap ``free`` (updated in place)."""
    starts: list[float] = []
    put = starts.append
    if provision_s:
        for t, h in zip(arr_t, hold):
            f0 = free[0]
            s = f0 if f0 > t else t
            heapreplace(free, s + h + provision_s)
            put(s)
    else:  # s + h + 0.0 is s + h: one addition fewer
        for t, h in zip(arr_t, hold):
            f0 = free[0]
            s = f0 if f0 > t else t
            heapreplace(free, s + h)
            put(s)
    return starts


def one_pass(prep: Prepared) -> bool:
    """Whether the whole run is one pass of ``place_stream``: one capped pool, open arrivals
    only (no RL releases on the run's heap), and no first attempt that can retry."""
    return (len(prep.pools) == 1 and prep.pools[0].cap is not None and not prep.any_retry
            and prep.arr_t_np.size > 0 and all(wl.kind != RL for wl in prep.workloads))


def run_one_pass(prep: Prepared, compiled=None) -> ExecutorOutput:
    """``run_fifo`` for a ``one_pass`` run, on NumPy arrays: with ``compiled`` (the C twin of
    ``place_stream``, ``executors.compiled_place_stream``) or else the pure recursion."""
    N, cap, provision_s = prep.n, prep.pools[0].cap, prep.pools[0].provision_delay_s
    assert cap is not None  # one_pass: a single bounded pool
    order = None if prep.arr_in_order else np.asarray(prep.arr_ids, dtype=np.int64)
    if compiled is not None:
        start = np.empty(N) if order is None else np.full(N, math.nan)
        compiled(np.zeros(cap), np.ascontiguousarray(prep.arr_t_np), np.ascontiguousarray(prep.hold_np),
                 provision_s, start, order)
    elif order is None:
        start = np.array(place_stream([0.0] * cap, prep.arr_t, prep.hold, provision_s), dtype=float)
    else:
        start = np.full(N, math.nan)
        start[order] = place_stream([0.0] * cap, prep.arr_t, prep.hold_np[order].tolist(), provision_s)
    if order is None:  # the run's own arrivals (every workload's ``arrivals`` gives a fresh array)
        arrival = prep.arr_t_np
    else:
        arrival = np.full(N, math.nan)
        arrival[order] = prep.arr_t_np
    extra: dict[str, list] = {k: [] for k in (*RETRY_COLUMNS, "finish_s")}
    return ExecutorOutput(first=_first_rows(prep, arrival, start, prep.plan.copy()), extra=extra)


def _first_rows(prep: Prepared, arrival: np.ndarray, start: np.ndarray, state: np.ndarray) -> dict:
    return {
        "arrival_s": arrival,
        "start_s": start,
        "finish_s": start + prep.hold_np,
        "state": state,
        "phase": prep.phase,
        "build_s": prep.build,
        "agent_s": prep.agent,
        "verify_s": prep.verify,
    }


def run_fifo(prep: Prepared, on_progress=None) -> ExecutorOutput:
    """The recursion over open arrivals merged with a heap of RL releases and retries."""
    N = prep.n
    r_pool, r_work, rl_driven = prep.r_pool, prep.r_work, prep.rl_driven
    hold, may_retry = prep.hold, prep.may_retry
    a_enq = [math.nan] * N
    a_start = [math.nan] * N
    retried_first: list[int] = []
    # Extra rows: retry attempts.
    x: dict[str, list] = {k: [] for k in (*RETRY_COLUMNS, "hold")}  # "hold" becomes "finish_s" at the end
    x_roll, x_try, x_enq, x_start = x["rollout"], x["attempt"], x["arrival_s"], x["start_s"]
    x_state, x_phase, x_hold = x["state"], x["phase"], x["hold"]

    slots = [[0.0] * pl.cap if pl.cap is not None else None for pl in prep.pools]  # per pool: slot-free heap
    prov = [pl.provision_delay_s for pl in prep.pools]
    place_in = [placer(hp, pv) for hp, pv in zip(slots, prov)]
    # One capped pool and nothing can retry: the open arrivals before the next heap entry are one
    # sorted stream on one heap, placed by ``place_stream`` at once (no per-arrival call). With
    # retries, arrivals go one at a time: a retry may come before the next arrival (streams cut
    # at each arrival that may retry cost more than they save when retries are common).
    stream_heap = slots[0] if len(slots) == 1 and not prep.any_retry else None
    stream_prov = prov[0]
    # One capped pool with retries: ``placer``'s step inline (the per-arrival call cost this path
    # 8-24% of its loop time in benchmarks; a test compares it with the event loop).
    retry_heap = slots[0] if len(slots) == 1 and prep.any_retry else None
    heap: list = []
    seq = 0

    r_batch = [0] * N
    rl = rl_states(prep.workloads, prep.offsets, r_batch)
    for w, st in rl.items():
        heappush(heap, (st.start_s, seq, RELEASE, (w, 0)))
        seq += 1

    def finish_rl(r: int, t: float) -> None:
        """Rollout ``r`` ended at ``t``: settle its batch and any trainer steps now due."""
        nonlocal seq
        st = rl[r_work[r]]
        if not st.rollout_ended(r_batch[r], t):
            return
        # Train every step whose batch is complete, in order (batches may end out of order).
        while st.can_train():
            t1 = st.start_step()
            st.end_train(t1)
            heappush(heap, (t1, seq, RELEASE, (st.w, st.version)))
            seq += 1

    def retry(r: int, attempt: int, t: float) -> None:
        """The attempt ended at ``t`` in a retryable error: queue a fresh one then."""
        nonlocal seq
        b, a, v, h, s_, ph = prep.retry_attempt(r, attempt)
        k = len(x_roll)
        for lst, val in ((x_roll, r), (x_try, attempt), (x_enq, t), (x_start, math.nan), (x_state, s_),
                         (x_phase, ph), (x["build_s"], b), (x["agent_s"], a), (x["verify_s"], v), (x_hold, h)):
            lst.append(val)
        heappush(heap, (t, seq, RETRY, (r, k)))
        seq += 1

    arr_t, arr_r = prep.arr_t, prep.arr_r
    na, ai = len(arr_t), 0
    last_t = -INF
    clock_ok = True
    placed = 0  # RL rollouts placed (for progress)
    progress_every = 1 << 16
    next_progress = progress_every
    while True:
        top = heap[0][0] if heap else INF
        # Open arrivals strictly before the next heap entry (heap entries first at equal times).
        if stream_heap is not None:
            aj = bisect_left(arr_t, top, ai, na)
            if ai < aj:
                if arr_t[ai] < last_t:
                    clock_ok = False
                last_t = arr_t[aj - 1]
                ids = arr_r[ai:aj]
                starts = place_stream(stream_heap, arr_t[ai:aj], [hold[r] for r in ids], stream_prov)
                for r, s in zip(ids, starts):
                    a_start[r] = s
                ai = aj
        elif retry_heap is not None:
            while ai < na:
                t = arr_t[ai]
                if t >= top:
                    break
                if t < last_t:
                    clock_ok = False
                last_t = t
                r = arr_r[ai]
                ai += 1
                f0 = retry_heap[0]
                s = a_start[r] = f0 if f0 > t else t
                heapreplace(retry_heap, s + hold[r] + stream_prov)
                if may_retry[r]:
                    retried_first.append(r)
                    retry(r, 1, s + hold[r])
                    top = heap[0][0]
        else:
            while ai < na:
                t = arr_t[ai]
                if t >= top:
                    break
                if t < last_t:
                    clock_ok = False
                last_t = t
                r = arr_r[ai]
                ai += 1
                s = a_start[r] = place_in[r_pool[r]](t, hold[r])
                if may_retry[r]:
                    retried_first.append(r)
                    retry(r, 1, s + hold[r])
                    top = heap[0][0]
        if not heap:
            if ai >= na:
                break
            continue
        t, _, kind, item = heappop(heap)
        if t < last_t:
            clock_ok = False
        last_t = t
        if kind == RELEASE:
            w, version = item
            p = prep.workloads[w].pool
            for rng_ in rl[w].take_releasable(t, version):
                n_r = len(rng_)
                placed += n_r
                # A released batch enters at t together: one stream of equal times.
                lo, hi = rng_.start, rng_.stop
                hs = hold[lo:hi]
                starts = [t] * n_r if slots[p] is None else place_stream(slots[p], [t] * n_r, hs, prov[p])
                a_start[lo:hi] = starts
                a_enq[lo:hi] = [t] * n_r
                for r, s, h in zip(rng_, starts, hs):
                    if may_retry[r]:
                        retried_first.append(r)
                        retry(r, 1, s + h)
                    else:
                        finish_rl(r, s + h)
        else:
            r, k = item
            s = x_start[k] = place_in[r_pool[r]](t, x_hold[k])
            fin = s + x_hold[k]
            if prep.retryable(r, x_state[k], x_phase[k], x_try[k]):
                x_state[k] = RETRIED
                retry(r, x_try[k] + 1, fin)
            elif rl_driven[r_work[r]]:
                finish_rl(r, fin)
        if on_progress is not None and ai + placed >= next_progress:
            next_progress = ai + placed + progress_every
            on_progress(ai + placed, N)

    start = np.array(a_start, dtype=float)
    arrival = np.array(a_enq, dtype=float)
    if na:
        arrival[ids_index(prep.arr_ids)] = prep.arr_t_np  # open arrivals: their given times
    state = prep.plan.copy()
    state[np.asarray(retried_first, dtype=np.int64)] = RETRIED
    first = _first_rows(prep, arrival, start, state)
    x["finish_s"] = [s + h for s, h in zip(x_start, x_hold)]
    del x["hold"]
    return ExecutorOutput(first=first, extra=x, rl=rl, clock_monotonic=clock_ok)

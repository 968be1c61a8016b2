"""The first-come-first-served recursion: FIFO pools without start caps, preemption or queue timeouts.

Under first-come-first-served, an attempt starts at ``max(its arrival, the earliest
time a slot is free)`` and that slot is next free at ``finish + provision_delay``
(the Kiefer-Wolfowitz recursion for the G/G/c queue). Processing queue entries in
time order therefore places every attempt with one ``heapreplace`` on a heap of
``cap`` slot-free times, with no finish events at all. Retries, which depend on the
run, go on a small heap in time order: each lies at or after the finish that caused it.
Same model and tie rule as the event loop (the oracle in ``tests/``; heap entries before
open arrivals at equal times); tests check the two agree. It places open arrivals only:
RL batches wait on the trainer, whose rules are the admission kernel's (``trainer.py``
says where), and ``executors.fifo_refusal`` sends every RL run there.

The rule is written once, ``place_stream``: one source that numba compiles (on NumPy
arrays, ``fast/fifo_compiled.py``, when the run is large enough to pay numba's load) and that
otherwise runs as plain Python (on lists: small runs, no numba, ``NUMBA_DISABLE_JIT=1`` or
``SANDBOX_FLEET_PURE_PYTHON=1``), with the same bits either way. Every form calls it: a
whole run that is one pass of the recursion (``run_one_pass``), the open arrivals between
two heap entries, and one attempt at a time (``_Placer.one``: retries, and arrivals on
several pools).
"""

from __future__ import annotations

import math
from bisect import bisect_left
from heapq import heappop, heappush
from typing import Any

import numpy as np

from sandbox_fleet.simulate.engine.entities import RETRIED
from sandbox_fleet.simulate.engine.limits_rules import bucket_take, new_state, warm_take
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits

#: The columns of the retry attempts' rows (beside ``finish_s``), as lists appended to in run order.
RETRY_COLUMNS = ("rollout", "attempt", "arrival_s", "start_s", "state", "phase", "build_s", "agent_s", "verify_s")
INF = math.inf


def place_stream(free, arr_t, ids, i, j, hold, provision_s, start, stop):
    """Place the attempts entering one pool's queue at ``arr_t[i:j]`` (sorted): attempt ``k`` is
    rollout ``r = ids[k]`` (``k`` itself when ``ids`` is None), holds ``hold[r]``, and starts at
    ``max(arr_t[k], the earliest time a slot is free)``, written to ``start[r]``; that slot is
    next free at ``start + hold[r] (+ provision_s)``. ``free``: the pool's slot-free times as a
    heap (updated in place, element for element as ``heapq.heapreplace`` leaves it). Stops right
    after an attempt whose ``stop[r]`` is true (``stop`` None: none does); returns the index after
    the last attempt placed.

    Lists or NumPy arrays: numba compiles it for arrays (``fast.fifo_compiled``), plain Python
    runs it on either, with the same bits (no fused multiply-add; the same comparisons)."""
    c = len(free)
    limit = c >> 1
    while i < j:
        t = arr_t[i]
        if ids is None:
            r = i
        else:
            r = ids[i]
        i += 1
        f0 = free[0]
        s = f0 if f0 > t else t
        v = s + hold[r]
        if provision_s != 0.0:  # Python's truthiness: -0.0 adds nothing, NaN does
            v = v + provision_s
        # heapreplace(free, v) as CPython's heapq does it: the smaller child rises until the hole
        # is a leaf (ties: the right child), then v sifts down from there.
        pos = 0
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < c and not free[child] < free[child + 1]:
                child += 1
            free[pos] = free[child]
            pos = child
        while pos > 0:
            parent = (pos - 1) >> 1
            up = free[parent]
            if not v < up:
                break
            free[pos] = up
            pos = parent
        free[pos] = v
        start[r] = s
        if stop is not None:
            if stop[r]:
                break
    return i


def place_limited(free, gate, arr_t, ids, i, j, hold, provision_s, start, wait, warm, bucket, pool,
                  creates_per_s, burst, cold_start_s, pool_size, refill_per_s, one_t, one_h, one_s):
    """``place_stream`` with a provider's limits (``limits_rules``) in front of every attempt of
    ``arr_t[i:j]``: its slot comes at ``s = max(arrival, earliest free slot)`` (``free`` empty: an
    unbounded pool, ``s`` = arrival), then it claims its sandbox (``claim``: warm, or the bucket,
    the starting cap and the cold start). ``wait[r]``: ready - ``s`` (the build takes it); the slot is held
    ``wait + hold`` (+ ``provision_s``). ``warm[r]``: claimed warm. ``one_*``: one-cell buffers.
    Returns ``j``. Compiled as it is by ``fast.fifo_compiled.limited``."""
    while i < j:
        t = arr_t[i]
        if ids is None:
            r = i
        else:
            r = ids[i]
        i += 1
        s = t
        if len(free) > 0:
            if free[0] > t:
                s = free[0]
        w, is_warm = claim(s, gate, bucket, pool, creates_per_s, burst, cold_start_s, pool_size, refill_per_s,
                           one_t, one_h, one_s)
        if len(free) > 0:
            one_t[0] = t
            one_h[0] = w + hold[r]
            place_stream(free, one_t, None, 0, 1, one_h, provision_s, one_s, None)
        start[r] = s
        wait[r] = w
        warm[r] = is_warm
    return i


def claim(s, gate, bucket, pool, creates_per_s, burst, cold_start_s, pool_size, refill_per_s, one_t, one_h, one_s):
    """An attempt that took its slot at ``s`` claims a sandbox (``limits_rules``, in docs/providers.md's
    order): from the warm pool (``pool_size`` > 0) when one is ready, else created cold: the bucket
    (``creates_per_s`` > 0), a starting slot (``gate`` non-empty: the starting-at-once cap,
    ``place_stream`` on its heap with the cold start as the hold), then the cold start. Returns
    (the wait from ``s`` to the sandbox ready, claimed warm). The one sequencing of the limits: the
    FIFO executor (``place_limited``) and the admission kernel (``_admit_kernel.place``) call it."""
    if pool_size > 0:
        if warm_take(pool, s, refill_per_s, pool_size):
            return 0.0, True
    c = s
    if creates_per_s > 0.0:
        c = bucket_take(bucket, s, creates_per_s, burst)
    if len(gate) > 0:
        one_t[0] = c
        one_h[0] = cold_start_s
        place_stream(gate, one_t, None, 0, 1, one_h, 0.0, one_s, None)
        c = one_s[0]
    return (c - s) + cold_start_s, False


class _Limited:
    """One pool's provider limits as ``place_limited`` reads them, with the run's state (the bucket,
    the warm pool, the starting slots, each attempt's wait and warm flag); ``place`` has
    ``place_stream``'s signature."""

    def __init__(self, lim: SandboxLimits, n: int, arrays: bool) -> None:
        self.compiled = None
        if arrays:
            from sandbox_fleet.simulate.engine.fast import fifo_compiled

            self.compiled = fifo_compiled.limited()
        self.fn = self.compiled if self.compiled is not None else place_limited
        self.lim = lim
        self.wait: Any = np.zeros(n) if arrays else [0.0] * n
        self.warm: Any = np.zeros(n, dtype=np.bool_) if arrays else [False] * n
        self.bucket: Any = new_state(float(lim.burst))
        self.pool: Any = new_state(float(lim.warm_pool_size))
        self.gate: Any = np.zeros(lim.max_starting or 0) if arrays else [0.0] * (lim.max_starting or 0)
        self.bufs: Any = tuple(np.zeros(1) if arrays else [0.0] for _ in range(3))
        self.empty: Any = np.zeros(0) if arrays else []

    def figures(self) -> dict[str, np.ndarray]:
        """Per rollout: claimed warm, and the wait from its slot to its sandbox ready."""
        return {"warm": np.asarray(self.warm, dtype=bool), "ready_wait_s": np.asarray(self.wait, dtype=float)}

    def place(self, free, arr_t, ids, i, j, hold, provision_s, start, stop):
        lim = self.lim
        return self.fn(self.empty if free is None else free, self.gate, arr_t, ids, i, j, hold, provision_s, start,
                       self.wait, self.warm, self.bucket, self.pool, float(lim.creates_per_s or 0.0),
                       float(lim.burst), float(lim.cold_start_s), float(lim.warm_pool_size),
                       float(lim.warm_pool_refill_per_s or 0.0), *self.bufs)


def limited(prep: Prepared) -> SandboxLimits | None:
    """The pool's limits when they move attempts in time (one pool: ``executors.Fifo.why_not`` held)."""
    lim = prep.pools[0].limits
    return lim if lim is not None and lim.places else None


def limited_any(pools) -> bool:
    """Whether some pool's limits move attempts in time (``SandboxLimits.places``)."""
    return any(pl.limits is not None and pl.limits.places for pl in pools)


def limits_refusal(pools, inference) -> str | None:
    """Why a pool's limits that move attempts in time (a bucket, a starting cap, a cold start, a warm
    pool: ``SandboxLimits.places``) cannot be simulated (``None``: they can, or there are none). The FIFO
    executor places them on one FIFO pool without retries (``place_limited``), the admission kernel
    everywhere else (``_admit_kernel.place``), but not beside an inference pool."""
    if not limited_any(pools) or inference is None:
        return None
    return ("a creation bucket, starting cap, cold start or warm pool ([fleet.limits]) is simulated by the FIFO "
            "executor and the admission kernel, not beside an inference pool; here an inference pool serves the "
            "model calls")


class _Placer:
    """The rule as this run calls it: numba's build on arrays, or plain Python on lists
    (``fast.fifo_compiled.compiled`` decides), and one-attempt calls through small buffers."""

    def __init__(self, prep: Prepared) -> None:
        from sandbox_fleet.simulate.engine.fast import fifo_compiled

        compiled = fifo_compiled.compiled(prep)
        self.arrays = compiled is not None
        self.place = compiled if compiled is not None else place_stream
        lim = limited(prep)
        self.limits = None if lim is None else _Limited(lim, prep.n, self.arrays)
        if self.limits is not None:
            self.place = self.limits.place
        self.hold = np.ascontiguousarray(prep.hold_np, dtype=float) if self.arrays else prep.hold
        self._t: Any = np.zeros(1) if self.arrays else [0.0]  # one attempt's arrival, hold, start
        self._h: Any = np.zeros(1) if self.arrays else [0.0]
        self._s: Any = np.zeros(1) if self.arrays else [0.0]

    def heap(self, cap: int | None):
        """A pool's slot-free heap (all free at 0), ``None`` for an unbounded pool."""
        if cap is None:
            return None
        return np.zeros(cap) if self.arrays else [0.0] * cap

    def seq(self, values: np.ndarray):
        """A float or int column as the rule reads it."""
        return np.ascontiguousarray(values) if self.arrays else values.tolist()

    def one(self, free, provision_s: float, t: float, hold_s: float) -> float:
        """The start of one attempt entering at ``t`` holding ``hold_s`` (``free`` None: an
        unbounded pool, which starts it when it enters)."""
        if free is None:
            return t
        self._t[0], self._h[0] = t, hold_s
        self.place(free, self._t, None, 0, 1, self._h, provision_s, self._s, None)
        return float(self._s[0])


def batch_makespans(holds: np.ndarray, cap: int) -> np.ndarray:
    """Each row's makespan: a batch (the row's holds, in order) entering ``cap`` free slots together
    at 0 and placed by the rule, as a released RL batch takes a FIFO pool's slots (no builds, no
    provisioning): the largest start + hold. The plan's RL-step search runs on it."""
    from sandbox_fleet.simulate.engine.fast import fifo_compiled

    rows, n = holds.shape
    out = np.zeros(rows)
    if n == 0:
        return out
    place = fifo_compiled.compiled_for(fifo_compiled.placements(holds.size, cap))
    if place is not None:
        at_zero, start = np.zeros(n), np.empty(n)
        for k in range(rows):
            row = np.ascontiguousarray(holds[k], dtype=float)
            place(np.zeros(cap), at_zero, None, 0, n, row, 0.0, start, None)
            out[k] = np.max(start + row)
    else:
        at_zero_l, start_l = [0.0] * n, [0.0] * n
        for k, row_l in enumerate(holds.tolist()):
            place_stream([0.0] * cap, at_zero_l, None, 0, n, row_l, 0.0, start_l, None)
            out[k] = max([s + h for s, h in zip(start_l, row_l)])
    return out


def one_pass(prep: Prepared) -> bool:
    """Whether the whole run is one pass of ``place_stream``: one capped pool and no first attempt
    that can retry (the FIFO executor places open arrivals only)."""
    return len(prep.pools) == 1 and prep.pools[0].cap is not None and not prep.any_retry and prep.arr_t_np.size > 0


def run_one_pass(prep: Prepared) -> ExecutorOutput:
    """``run_fifo`` for a ``one_pass`` run: every open arrival in one call of ``place_stream``."""
    N, cap, provision_s = prep.n, prep.pools[0].cap, float(prep.pools[0].provision_delay_s)
    assert cap is not None  # one_pass: a single bounded pool
    pl = _Placer(prep)
    if prep.arr_in_order:
        ids = None
    else:
        ids = pl.seq(np.asarray(prep.arr_ids, dtype=np.int64)) if pl.arrays else prep.arr_r
    if pl.arrays:
        start = np.empty(N) if ids is None else np.full(N, math.nan)
        pl.place(pl.heap(cap), np.ascontiguousarray(prep.arr_t_np, dtype=float), ids, 0, N, pl.hold,
                 provision_s, start, None)
    else:
        starts = [math.nan] * N
        pl.place(pl.heap(cap), prep.arr_t, ids, 0, N, pl.hold, provision_s, starts, None)
        start = np.array(starts, dtype=float)
    if prep.arr_in_order:  # the run's own arrivals (every workload's ``arrivals`` gives a fresh array)
        arrival = prep.arr_t_np
    else:
        arrival = np.full(N, math.nan)
        arrival[ids_index(prep.arr_ids)] = prep.arr_t_np
    extra: dict[str, list] = {k: [] for k in (*RETRY_COLUMNS, "finish_s")}
    return ExecutorOutput(first=_first_rows(prep, arrival, start, prep.plan.copy(), pl.limits), extra=extra,
                          limits=None if pl.limits is None else pl.limits.figures())


def _first_rows(prep: Prepared, arrival: np.ndarray, start: np.ndarray, state: np.ndarray,
                limits: _Limited | None = None) -> dict:
    hold, build = prep.hold_np, prep.build
    if limits is not None:  # the creation's wait and cold start are in the build, and in the hold
        wait = np.asarray(limits.wait, dtype=float)
        hold, build = wait + hold, wait + build
    return {
        "arrival_s": arrival,
        "start_s": start,
        "finish_s": start + hold,
        "state": state,
        "phase": prep.phase,
        "build_s": build,
        "agent_s": prep.agent,
        "verify_s": prep.verify,
    }


def run_fifo(prep: Prepared, on_progress=None) -> ExecutorOutput:
    """The recursion over open arrivals merged with a heap of retries."""
    N = prep.n
    r_pool = prep.r_pool
    hold, may_retry = prep.hold, prep.may_retry
    pl = _Placer(prep)
    place, one = pl.place, pl.one
    a_start: Any = np.full(N, math.nan) if pl.arrays else [math.nan] * N  # written by the rule
    retried_first: list[int] = []
    # Extra rows: retry attempts.
    x: dict[str, list] = {k: [] for k in (*RETRY_COLUMNS, "hold")}  # "hold" becomes "finish_s" at the end
    x_roll, x_try, x_enq, x_start = x["rollout"], x["attempt"], x["arrival_s"], x["start_s"]
    x_state, x_phase, x_hold = x["state"], x["phase"], x["hold"]

    slots = [pl.heap(p.cap) for p in prep.pools]  # per pool: slot-free heap (None: unbounded)
    if pl.limits is not None and slots[0] is None:  # one pool (Fifo.why_not): its limits place every attempt
        slots[0] = pl.limits.empty
    prov = [float(p.provision_delay_s) for p in prep.pools]
    # One capped pool: the open arrivals before the next retry are one sorted stream, placed by
    # one call of the rule; with retries the call stops after each arrival that may retry (its
    # retry may come before the next arrival). Several pools, or an unbounded one: one at a time.
    stream_heap = slots[0] if len(slots) == 1 else None
    stream_prov = prov[0]
    stop = (pl.seq(prep.may_retry_np) if pl.arrays else may_retry) if prep.any_retry else None
    heap: list = []  # retries: (when queued, push order, rollout, its row of ``x``)
    seq = 0

    def retry(r: int, attempt: int, t: float) -> None:
        """The attempt ended at ``t`` in a retryable error: queue a fresh one then."""
        nonlocal seq
        b, a, v, h, s_, ph = prep.retry_attempt(r, attempt)
        k = len(x_roll)
        for lst, val in ((x_roll, r), (x_try, attempt), (x_enq, t), (x_start, math.nan), (x_state, s_),
                         (x_phase, ph), (x["build_s"], b), (x["agent_s"], a), (x["verify_s"], v), (x_hold, h)):
            lst.append(val)
        heappush(heap, (t, seq, r, k))
        seq += 1

    arr_t, arr_r = prep.arr_t, prep.arr_r
    if stream_heap is not None:  # the stream as the rule reads it
        k_arr_t = pl.seq(prep.arr_t_np)
        k_arr_r = pl.seq(np.asarray(prep.arr_ids, dtype=np.int64)) if pl.arrays else arr_r
    na, ai = len(arr_t), 0
    last_t = -INF
    clock_ok = True
    progress_every = 1 << 16
    next_progress = progress_every
    while True:
        top = heap[0][0] if heap else INF
        # Open arrivals strictly before the next retry (retries first at equal times).
        if stream_heap is not None:
            aj = bisect_left(arr_t, top, ai, na)
            while ai < aj:
                if arr_t[ai] < last_t:
                    clock_ok = False
                ai = place(stream_heap, k_arr_t, k_arr_r, ai, aj, pl.hold, stream_prov, a_start, stop)
                last_t = arr_t[ai - 1]
                r = arr_r[ai - 1]
                if may_retry[r]:  # the call stopped after it: its retry may come before the next arrival
                    retried_first.append(r)
                    retry(r, 1, float(a_start[r]) + hold[r])
                    top = heap[0][0]
                    aj = bisect_left(arr_t, top, ai, aj)
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
                p = r_pool[r]
                s = one(slots[p], prov[p], t, hold[r])
                a_start[r] = s
                if may_retry[r]:
                    retried_first.append(r)
                    retry(r, 1, s + hold[r])
                    top = heap[0][0]
        if not heap:
            if ai >= na:
                break
            continue
        t, _, r, k = heappop(heap)
        if t < last_t:
            clock_ok = False
        last_t = t
        p = r_pool[r]
        s = x_start[k] = one(slots[p], prov[p], t, x_hold[k])
        if prep.retryable(r, x_state[k], x_phase[k], x_try[k]):
            x_state[k] = RETRIED
            retry(r, x_try[k] + 1, s + x_hold[k])
        if on_progress is not None and ai >= next_progress:
            next_progress = ai + progress_every
            on_progress(ai, N)

    start = np.array(a_start, dtype=float)
    arrival = np.full(N, math.nan)
    if na:
        arrival[ids_index(prep.arr_ids)] = prep.arr_t_np  # open arrivals: their given times
    state = prep.plan.copy()
    state[np.asarray(retried_first, dtype=np.int64)] = RETRIED
    first = _first_rows(prep, arrival, start, state, pl.limits)
    x["finish_s"] = [s + h for s, h in zip(x_start, x_hold)]
    del x["hold"]
    return ExecutorOutput(first=first, extra=x, clock_monotonic=clock_ok,
                          limits=None if pl.limits is None else pl.limits.figures())

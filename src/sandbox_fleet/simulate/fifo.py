"""Fast path for FIFO pools without start caps, preemption or queue timeouts.

Under first-come-first-served, an attempt starts at ``max(its arrival, the earliest
time a slot is free)`` and that slot is next free at ``finish + provision_delay``
(the Kiefer-Wolfowitz recursion for the G/G/c queue). Processing queue entries in
time order therefore places every attempt with one ``heapreplace`` on a heap of
``cap`` slot-free times, with no finish events at all. Entries that depend on the
run (RL batch releases, retries) go on a small heap in time order: each lies at or
after the finish that caused it. Same model and tie rule as ``loop.py`` (heap
entries before open arrivals at equal times); tests check the two agree.

A run that is one pass of the recursion (one capped pool, open arrivals only, nothing
retries) goes to ``run_one_pass`` on NumPy arrays, and there to the C twin of
``place_stream`` (``_fifo_speedups.c``) when it was built at install; ``place_stream``
stays the reference, and tests check the two give the same bits.
"""

from __future__ import annotations

import math
from heapq import heappop, heappush, heapreplace

import numpy as np

from sandbox_fleet.simulate.entities import RETRIED, Fleet
from sandbox_fleet.simulate.prepare import Prepared, ids_index
from sandbox_fleet.simulate.trainer import RLState
from sandbox_fleet.simulate.workloads import CLOSED, RL, AsyncRL

RELEASE, RETRY = 0, 1
#: The columns of the retry attempts' rows (beside ``finish_s``), as lists appended to in run order.
RETRY_COLUMNS = ("rollout", "attempt", "arrival_s", "start_s", "state", "phase", "build_s", "agent_s", "verify_s")
INF = math.inf


def pool_eligible(pl: Fleet) -> bool:
    """Whether the first-come-first-served recursion can run this pool."""
    return pool_refusal(pl) is None


def pool_refusal(pl: Fleet) -> str | None:
    """Why the first-come-first-served recursion cannot run this pool, in one line (``None``: it can)."""
    if pl.admission != "fifo":
        return f"pool {pl.name} admits by {pl.admission!r}, not first come first served"
    for what, has in (("a start_cap", pl.start_cap is not None), ("preemption", pl.preempt_rate_per_node_s > 0),
                      ("a queue_timeout_s", pl.queue_timeout_s is not None)):
        if has:
            return f"pool {pl.name} has {what}"
    return None


def eligible(prep: Prepared) -> bool:
    """Also needs fixed holds (no inference pool) and no closed population (its
    arrivals wait on finishes, which this path never materialises as events)."""
    return refusal(prep) is None


def refusal(prep: Prepared) -> str | None:
    """Why this path cannot run ``prep``, in one line (``None``: it can)."""
    if prep.inference is not None:
        return "the scenario has an inference pool"
    if any(wl.kind == CLOSED for wl in prep.workloads):
        return "the scenario has a closed population"
    return next((why for why in map(pool_refusal, prep.pools) if why is not None), None)


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


def compiled_place_stream():
    """The C twin of ``place_stream`` (``_fifo_speedups``), or ``None`` when it was not built
    at install (no compiler) or ``SANDBOX_FLEET_PURE_PYTHON`` is set."""
    from sandbox_fleet.simulate.fast import pure_python_forced

    if pure_python_forced():
        return None
    try:
        from sandbox_fleet.simulate._fifo_speedups import place_stream as compiled
    except ImportError:
        return None
    return compiled


def one_pass(prep: Prepared) -> bool:
    """Whether the whole run is one pass of ``place_stream``: one capped pool, open arrivals
    only (no RL releases on the run's heap), and no first attempt that can retry."""
    return (len(prep.pools) == 1 and prep.pools[0].cap is not None and not prep.any_retry
            and prep.arr_t_np.size > 0 and all(wl.kind != RL for wl in prep.workloads))


def run_one_pass(prep: Prepared) -> dict:
    """``run_fifo`` for a ``one_pass`` run, on NumPy arrays (the C recursion when built)."""
    N, cap, provision_s = prep.n, prep.pools[0].cap, prep.pools[0].provision_delay_s
    assert cap is not None  # one_pass: a single bounded pool
    order = None if prep.arr_in_order else np.asarray(prep.arr_ids, dtype=np.int64)
    compiled = compiled_place_stream()
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
    return {"first": _first_rows(prep, arrival, start, prep.plan.copy()), "extra": extra, "rl": {}, "preemptions": 0,
            "area_busy": None, "area_wait": None, "clock_monotonic": True}


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


def run_fifo(prep: Prepared, on_progress=None) -> dict:
    if one_pass(prep):
        return run_one_pass(prep)
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

    slots = [[0.0] * pl.cap if pl.cap is not None else None for pl in prep.pools]
    prov = [pl.provision_delay_s for pl in prep.pools]
    heap: list = []
    seq = 0

    rl: dict[int, RLState] = {}
    r_batch = [0] * N
    for w, wl in enumerate(prep.workloads):
        if wl.kind != RL:
            continue
        assert isinstance(wl, AsyncRL)  # the RL kind is AsyncRL's (SyncRL is one)
        st = RLState(w, wl.batch_sizes, wl.staleness, wl.train_s, int(prep.offsets[w]))
        st.batch_end_s = [-INF] * len(st.sizes)  # running max until the batch completes
        rl[w] = st
        for j, (s0, sz) in enumerate(zip(st.starts, st.sizes)):
            lo = st.base + s0
            r_batch[lo : lo + sz] = [j] * sz
        heappush(heap, (float(wl.start_s), seq, RELEASE, (w, 0)))
        seq += 1

    def finish_rl(r: int, t: float) -> None:
        """Rollout ``r`` ended at ``t``: settle its batch and any trainer steps now due."""
        nonlocal seq
        st = rl[r_work[r]]
        j = r_batch[r]
        if t > st.batch_end_s[j]:
            st.batch_end_s[j] = t
        st.rem[j] -= 1
        if st.rem[j]:
            return
        # Train every step whose batch is complete, in order (batches may end out of order).
        while st.next_train < st.next_release and st.rem[st.next_train] == 0:
            k = st.next_train
            prev = st.train_end_s[k - 1] if k else -INF
            t1 = st.begin_train(max(st.batch_end_s[k], prev))
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
    # One capped pool (the common case): the hot loop below needs no per-rollout pool lookup.
    single = slots[0] if len(slots) == 1 and slots[0] is not None else None
    pv0 = prov[0]
    any_retry = prep.any_retry  # nothing can retry: the hot loop skips the bookkeeping
    while True:
        top = heap[0][0] if heap else INF
        if single is not None and not any_retry:
            # The hot path: open arrivals strictly before the next heap entry, none can retry.
            while ai < na:
                t = arr_t[ai]
                if t >= top:
                    break
                if t < last_t:
                    clock_ok = False
                last_t = t
                r = arr_r[ai]
                ai += 1
                f0 = single[0]
                s = f0 if f0 > t else t
                heapreplace(single, s + hold[r] + pv0)
                a_start[r] = s
        elif single is not None:
            # The same with retry bookkeeping.
            while ai < na:
                t = arr_t[ai]
                if t >= top:
                    break
                if t < last_t:
                    clock_ok = False
                last_t = t
                r = arr_r[ai]
                ai += 1
                f0 = single[0]
                s = f0 if f0 > t else t
                heapreplace(single, s + hold[r] + pv0)
                a_start[r] = s
                if may_retry[r]:
                    retried_first.append(r)
                    retry(r, 1, s + hold[r])
                    top = heap[0][0]
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
            hp = slots[p]
            if hp is None:
                s = t
            else:
                f0 = hp[0]
                s = f0 if f0 > t else t
                heapreplace(hp, s + hold[r] + prov[p])
            a_start[r] = s
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
            st = rl[w]
            for rng_ in st.take_releasable(t, version):
                placed += len(rng_)
                p = prep.workloads[w].pool
                hp = slots[p]
                pv = prov[p]
                for r in rng_:
                    if hp is None:
                        s = t
                    else:
                        f0 = hp[0]
                        s = f0 if f0 > t else t
                        heapreplace(hp, s + hold[r] + pv)
                    a_enq[r] = t
                    a_start[r] = s
                    if may_retry[r]:
                        retried_first.append(r)
                        retry(r, 1, s + hold[r])
                    else:
                        finish_rl(r, s + hold[r])
        else:
            r, k = item
            p = r_pool[r]
            hp = slots[p]
            if hp is None:
                s = t
            else:
                f0 = hp[0]
                s = f0 if f0 > t else t
                heapreplace(hp, s + x_hold[k] + prov[p])
            x_start[k] = s
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
    for st in rl.values():
        # Batches that never completed cannot exist here (FIFO serves everyone).
        st.batch_end_s = [b if b > -INF else math.nan for b in st.batch_end_s]
    return {"first": first, "extra": x, "rl": rl, "preemptions": 0, "area_busy": None, "area_wait": None,
            "clock_monotonic": clock_ok}

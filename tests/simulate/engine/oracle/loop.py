"""The general event loop, the admission kernel's oracle (issue 36: it runs in no production path).
Every run the FIFO recursion does not place runs on the admission kernel (``fast/admit_loop``, with or
without an inference pool), whose oracle is this loop (with the pure policies, ``policy_queues``, and
``pool.py`` beside it for the replicas).

``loop_state.LoopState`` holds the state (flat lists, slot states) and one handler
per event kind; ``run_events`` pops events in time order and calls them. The loop
also integrates sandboxes-in-use and rollouts-waiting over time, which the
invariants compare with the sums of holds and waits (Little's law on the run).
The counters ``busy``, ``waiting`` and ``done`` live in locals and are handed to the state around
each handler. Open arrivals come from their sorted stream, merged with the heap (never pushed).
"""

from __future__ import annotations

from heapq import heappop

import numpy as np
from tests.simulate.engine.oracle.loop_state import LoopState

from sandbox_fleet.simulate.engine import events as ev
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput

PROGRESS_EVERY = 1 << 16
FIRST_AS_DRAWN = {"phase": "phase", "build_s": "build", "agent_s": "agent", "verify_s": "verify"}


def run_events(prep: Prepared, on_progress=None, *, audit=None, progress_every: int = PROGRESS_EVERY,
               policy_queues=None) -> ExecutorOutput:
    """Run the general loop; ``audit(state)`` (tests) is called with ``on_progress``;
    ``policy_queues`` (tests: the admission kernel's oracle) makes a policy pool's queues."""
    st = LoopState(prep, policy_queues)
    st.schedule_start()
    N = st.n
    handlers = st.handlers()
    driver = st.driver
    if driver is not None:
        handlers[ev.POOL] = driver.pool.event
        handlers[ev.TURN] = st.on_turn
        handlers[ev.AGENT_CUT] = st.on_agent_cut
    pool_event = driver.pool.event if driver is not None else None

    heap = st.heap
    POOL = ev.POOL
    on_arrival = st.on_arrival

    arr_t, arr_r = prep.arr_t, prep.arr_r
    na, ai = len(arr_t), 0
    INF = float("inf")
    next_arr = arr_t[0] if na else INF
    now = 0.0
    n_events = 0
    area_busy = area_wait = 0.0
    clock_ok = True
    report = on_progress is not None or audit is not None
    next_progress = progress_every if report else -1
    # The counters live in locals here; st holds them (and the clock) whenever a handler runs.
    busy = waiting = done = 0
    while done < N or st.training:
        # A two-way merge: the sorted arrival stream goes first unless the heap's next event
        # is due no later (on a tie the heap event runs first, as it always has).
        if heap and heap[0][0] <= next_arr:
            t, _, kind, x = heappop(heap)
            if t < now:
                clock_ok = False
            dt = t - now
            area_busy += busy * dt
            if waiting:  # adding 0 * dt would leave it as it is
                area_wait += waiting * dt
            now = t
            n_events += 1
            if kind == POOL:  # the inference pool's own events (replica ends): no counter changes
                assert pool_event is not None  # only the inference pool pushes POOL events
                pool_event(t, x)
            else:  # the other handlers, with the counters handed over and back
                st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                handlers[kind](x)
                if st.ended_early:
                    st.end_episodes()
                busy, waiting, done = st.busy, st.waiting, st.done
            # Progress (and the tests' audit) every so many heap events: every rollout has one.
            if n_events == next_progress:
                st.busy, st.waiting, st.done = busy, waiting, done
                next_progress += progress_every
                if audit is not None:
                    audit(st)
                if on_progress is not None:
                    on_progress(done, N)
        elif ai < na:  # an open arrival, from the sorted stream (never pushed)
            t = next_arr
            x = arr_r[ai]
            ai += 1
            next_arr = arr_t[ai] if ai < na else INF
            if t < now:
                clock_ok = False
            dt = t - now
            area_busy += busy * dt
            if waiting:
                area_wait += waiting * dt
            now = t
            st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
            on_arrival(x)
            if st.ended_early:
                st.end_episodes()
            busy, waiting, done = st.busy, st.waiting, st.done
        else:
            break

    if driver is not None:
        driver.pool.close(now)
    cols = {"arrival_s": st.a_enq, "start_s": st.a_start, "finish_s": st.a_fin, "state": st.a_state, "phase": st.a_phase,
            "build_s": st.a_build, "agent_s": st.a_agent, "verify_s": st.a_verify}
    # Only preemption (spot or priority), queue timeouts and the inference pool rewrite a first attempt's phases.
    rewritten = st.phases_kept and (driver is not None or any(
        pl.preempt_rate_per_node_s > 0 or pl.preempt or pl.queue_timeout_s is not None
        or any(n.reclaim_per_node_h > 0 for n in pl.node_pools or ()) for pl in st.pools))
    first = {}
    for k, v in cols.items():
        if not rewritten and k in FIRST_AS_DRAWN:
            first[k] = getattr(prep, FIRST_AS_DRAWN[k])
        elif k == "arrival_s" and na == N:
            first[k] = np.empty(N)  # every rollout is an open arrival: filled just below
        else:  # the first N rows (retries follow them), without slicing a copy first
            first[k] = np.fromiter(v, dtype=np.int8 if k in ("state", "phase") else float, count=N)
    if na:
        first["arrival_s"][ids_index(prep.arr_ids)] = prep.arr_t_np  # open arrivals queue when they arrive
    extra = {k: v[N:] if v is not None else [] for k, v in cols.items()}
    extra["rollout"] = st.a_roll[N:]
    extra["attempt"] = st.a_try[N:]
    st.busy, st.waiting, st.done = busy, waiting, done
    if audit is not None:
        audit(st)
    served = None
    if driver is not None:
        from tests.simulate.engine.oracle.driver import served_run

        served = served_run(driver, prep)
    return ExecutorOutput(first=first, extra=extra, rl=st.rl, preemptions=st.preemptions, area_busy=area_busy,
                          area_wait=area_wait, clock_monotonic=clock_ok, served=served)

"""The general event loop: admission policies, start caps, preemption, queue timeouts.

``loop_state.LoopState`` holds the state (flat lists, slot states) and one handler
per event kind; ``run_events`` pops events in time order and calls them. The loop
also integrates sandboxes-in-use and rollouts-waiting over time, which the
invariants compare with the sums of holds and waits (Little's law on the run).

The two events of almost every rollout, an open arrival and an attempt's end, are
handled inline for *counted* pools (see ``loop_state``) without a start cap or queue
timeout with a plain queue (no ``policies.py`` policy), when no
inference pool runs: an arrival that finds the queue empty and a slot free starts at once,
one that finds no slot free joins the queue, and an ending attempt that cannot retry hands
its slot straight to the next queued rollout. That is exactly what ``enqueue`` + ``dispatch``
and ``end_attempt`` do there (``LoopState.dispatch`` / ``place`` are the general form; a test
runs every scenario kind both ways); everything else goes to the handlers. The inline copy
stays because it pays: the handlers alone take 1.5-2.6x the CPU time (M/M/c, a closed
population, synchronous RL). The counters ``busy``,
``waiting`` and ``done`` live in locals and are handed to the state around each handler.
Open arrivals come from their sorted stream, merged with the heap (never pushed).
"""

from __future__ import annotations

from heapq import heappop, heappush

import numpy as np

from sandbox_fleet.simulate.engine import events as ev
from sandbox_fleet.simulate.engine.entities import EXCEPTION
from sandbox_fleet.simulate.engine.loop_state import RUNNING, LoopState
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput

PROGRESS_EVERY = 1 << 16
FIRST_AS_DRAWN = {"phase": "phase", "build_s": "build", "agent_s": "agent", "verify_s": "verify"}


def inline_pools(st: LoopState) -> list[bool]:
    """Per pool: whether the loop handles its arrivals and attempt ends inline (counted
    pools with a plain queue, without a start cap or queue timeout, and no inference pool)."""
    if st.driver is not None:
        return [False] * len(st.pools)
    return [c and pl.start_cap is None and pl.queue_timeout_s is None and pol is None
            for pl, c, pol in zip(st.pools, st.counted, st.policies)]


def run_events(prep: Prepared, on_progress=None, *, audit=None, progress_every: int = PROGRESS_EVERY) -> ExecutorOutput:
    """Run the general loop; ``audit(state)`` (tests) is called with ``on_progress``."""
    st = LoopState(prep)
    st.schedule_start()
    N = st.n
    handlers = st.handlers()
    driver = st.driver
    if driver is not None:
        handlers[ev.POOL] = driver.pool.event
        handlers[ev.TURN] = lambda r: driver.call(r, st.now)
    pool_event = driver.pool.event if driver is not None else None

    # Bound once: the inline paths below touch only these.
    heap, seq = st.heap, st.seq
    a_roll, a_start, a_fin, a_state, a_plan, a_hold = st.a_roll, st.a_start, st.a_fin, st.a_state, st.a_plan, st.a_hold
    r_pool, r_work, r_queued, r_row = st.r_pool, st.r_work, st.r_queued, st.r_row
    queues, nfree = st.queues, st.nfree
    inline = inline_pools(st)
    retry_any = any(m > 0 for m in prep.max_retries)  # else no attempt ends in a retry
    hooked = [w in st.pop_next or w in st.rl for w in range(len(prep.workloads))]  # terminal() has work to do
    any_hooked = any(hooked)
    FINISH, POOL = ev.FINISH, ev.POOL
    terminal, on_finish, on_arrival = st.terminal, st.on_finish, st.on_arrival

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
            if kind == FINISH:
                r = a_roll[x]
                p = r_pool[r]
                if inline[p] and not (retry_any and a_plan[x] == EXCEPTION):
                    # end_attempt: the attempt ends in its planned state (no retry, never stale) ...
                    busy -= 1
                    a_fin[x] = t
                    a_state[x] = a_plan[x]
                    if any_hooked and hooked[r_work[r]]:
                        st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                        terminal(r)
                        busy, waiting, done = st.busy, st.waiting, st.done
                    else:
                        done += 1
                    # ... then free_slot + dispatch: the slot goes to the first queued rollout, else back
                    q = queues[p]
                    if q:  # no queue timeout here, so every entry still waits
                        r = q.popleft()
                        r_queued[r] = False
                        waiting -= 1
                        row = r_row[r]
                        a_start[row] = t
                        a_state[row] = RUNNING
                        busy += 1
                        heappush(heap, (t + a_hold[row], next(seq), FINISH, row))
                    else:
                        nfree[p] += 1
                else:
                    st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                    on_finish(x)
                    busy, waiting, done = st.busy, st.waiting, st.done
            elif kind == POOL:  # the inference pool's own events (replica ends): no counter changes
                assert pool_event is not None  # only the inference pool pushes POOL events
                pool_event(t, x)
            else:  # the other handlers, with the counters handed over and back
                st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                handlers[kind](x)
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
            p = r_pool[x]
            if inline[p]:
                if not nfree[p]:
                    # enqueue; dispatch then stops at once (no free slot). A counted pool
                    # without timeouts reads neither the epoch nor a_enq of an open arrival
                    # (set from the arrival stream after the loop).
                    queues[p].append(x)
                    r_queued[x] = True
                    waiting += 1
                elif not queues[p]:
                    # enqueue + dispatch with nobody waiting and a slot free: start now
                    nfree[p] -= 1
                    a_start[x] = t
                    a_state[x] = RUNNING
                    busy += 1
                    heappush(heap, (t + a_hold[x], next(seq), FINISH, x))
                else:
                    st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                    on_arrival(x)
                    busy, waiting, done = st.busy, st.waiting, st.done
            else:
                st.now, st.busy, st.waiting, st.done = t, busy, waiting, done
                on_arrival(x)
                busy, waiting, done = st.busy, st.waiting, st.done
        else:
            break

    if driver is not None:
        driver.pool.close(now)
    cols = {"arrival_s": st.a_enq, "start_s": a_start, "finish_s": a_fin, "state": a_state, "phase": st.a_phase,
            "build_s": st.a_build, "agent_s": st.a_agent, "verify_s": st.a_verify}
    # Only preemption (spot or priority), queue timeouts and the inference pool rewrite a first attempt's phases.
    rewritten = st.phases_kept and (driver is not None or any(
        pl.preempt_rate_per_node_s > 0 or pl.preempt or pl.queue_timeout_s is not None for pl in st.pools))
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
    extra["rollout"] = a_roll[N:]
    extra["attempt"] = st.a_try[N:]
    st.busy, st.waiting, st.done = busy, waiting, done
    if audit is not None:
        audit(st)
    served = None
    if driver is not None:
        from sandbox_fleet.simulate.engine.inference.figures import served_run

        served = served_run(driver, prep)
    return ExecutorOutput(first=first, extra=extra, rl=st.rl, preemptions=st.preemptions, area_busy=area_busy,
                          area_wait=area_wait, clock_monotonic=clock_ok, served=served)

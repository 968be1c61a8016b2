"""The general event loop: admission policies, start caps, preemption, queue timeouts.

State lives in flat Python lists. Row ``r`` of the attempt lists is rollout ``r``'s
first attempt (pre-drawn); retries and drops after a retry append rows. The loop
also integrates sandboxes-in-use and rollouts-waiting over time, which the
invariants compare with the sums of holds and waits (Little's law on the run).
"""

from __future__ import annotations

import math
from heapq import heappop, heappush

import numpy as np

from sandbox_fleet.simulate import events as ev
from sandbox_fleet.simulate.admission import make_queue
from sandbox_fleet.simulate.entities import BUILD, DROPPED, EXCEPTION, PREEMPTION, RETRIED
from sandbox_fleet.simulate.prepare import PREEMPTIONS, Prepared, stream
from sandbox_fleet.simulate.trainer import RLState
from sandbox_fleet.simulate.workloads import CLOSED, RL

PENDING, RUNNING = -2, -1
S_FREE, S_BUSY, S_PROV, S_DOWN = 0, 1, 2, 3


def run_events(prep: Prepared, on_progress=None) -> dict:
    N = prep.n
    pools = prep.pools
    P = len(pools)
    r_pool, r_work = prep.r_pool, prep.r_work

    # Attempt rows; row r is rollout r's first attempt.
    a_roll = list(range(N))
    a_enq = [math.nan] * N
    a_start = [math.nan] * N
    a_fin = [math.nan] * N
    a_state = [PENDING] * N
    a_phase = prep.phase.tolist()
    a_build, a_agent, a_verify = prep.build.tolist(), prep.agent.tolist(), prep.verify.tolist()
    a_hold = list(prep.hold)
    a_plan = prep.plan.tolist()
    a_slot = [-1] * N
    a_try = [0] * N
    r_row = list(range(N))
    r_arrival = [math.nan] * N
    r_epoch = [0] * N
    r_queued = [False] * N

    queues = [make_queue(pl.admission, prep.timeout_of) for pl in pools]
    slot_base, free, nslots = [], [], 0
    for pl in pools:
        slot_base.append(nslots)
        size = pl.cap or 0
        free.append(list(range(nslots + size - 1, nslots - 1, -1)))  # lowest id on top
        nslots += size
    slot_pool = [p for p, pl in enumerate(pools) for _ in range(pl.cap or 0)]
    unbounded = [pl.cap is None for pl in pools]
    slot_state = [S_FREE] * nslots
    slot_row = [-1] * nslots
    in_list = [True] * nslots
    prov = [pl.provision_delay_s for pl in pools]
    start_cap = [pl.start_cap for pl in pools]
    building = [0] * P
    qtimeout = [pl.queue_timeout_s for pl in pools]
    nodes = [(-(-pl.cap // pl.slots_per_node) if pl.cap else 0) for pl in pools]
    node_down = [[False] * k for k in nodes]
    preempt_rng = [stream(prep.seed, PREEMPTIONS, p) for p in range(P)]

    heap: list = []
    seq = 0
    now = 0.0
    busy = waiting = done = n_events = preemptions = 0
    training = 0  # trainers mid-step: the run ends after the last step trains
    area_busy = area_wait = 0.0
    last_t = 0.0
    clock_ok = True

    rl: dict[int, RLState] = {}
    r_batch = [0] * N
    for w, wl in enumerate(prep.workloads):
        if wl.kind != RL:
            continue
        st = RLState(w, wl.batch, wl.staleness, wl.train_s, int(prep.offsets[w]))
        rl[w] = st
        for j, (s0, sz) in enumerate(zip(st.starts, st.sizes)):
            lo = st.base + s0
            r_batch[lo : lo + sz] = [j] * sz
        heappush(heap, (float(wl.start_s), seq, ev.RELEASE, w))
        seq += 1
    # Closed populations: the next rollout id to start, per workload.
    pop_next: dict[int, int] = {}
    for w, wl in enumerate(prep.workloads):
        if wl.kind == CLOSED:
            pop_next[w] = int(prep.offsets[w])
            heappush(heap, (float(wl.start_s), seq, ev.RELEASE, w))
            seq += 1

    driver = None
    if prep.inference is not None:
        from sandbox_fleet.simulate.inference.driver import Driver

        def push(t: float, kind: int, payload) -> None:
            nonlocal seq
            heappush(heap, (t, seq, kind, payload))
            seq += 1

        driver = Driver(prep.inference, prep.turn_draws, push, ev.TURN, ev.POOL, ev.FINISH,
                        a_start, a_build, a_agent, a_verify)

    arr_t, arr_r = prep.arr_t, prep.arr_r
    na, ai = len(arr_t), 0

    for p, pl in enumerate(pools):
        if pl.preempt_rate_per_node_s > 0:
            heappush(heap, (float(preempt_rng[p].exponential(1.0 / (pl.preempt_rate_per_node_s * nodes[p]))), seq, ev.PREEMPT, p))
            seq += 1

    def enqueue(r: int, row: int) -> None:
        nonlocal waiting, seq
        p = r_pool[r]
        a_enq[row] = now
        queues[p].append(r)
        r_queued[r] = True
        r_epoch[r] += 1
        waiting += 1
        if qtimeout[p] is not None:
            heappush(heap, (now + qtimeout[p], seq, ev.DROP, (r, r_epoch[r])))
            seq += 1

    def dispatch(p: int) -> None:
        nonlocal waiting, busy, seq
        q = queues[p]
        fl = free[p]
        sc = start_cap[p]
        ub = unbounded[p]
        while q:
            if sc is not None and building[p] >= sc:
                return
            slot = -1
            if not ub:
                while fl:
                    s = fl.pop()
                    in_list[s] = False
                    if slot_state[s] == S_FREE:
                        slot = s
                        break
                if slot < 0:
                    return
            r = q.popleft()
            if not r_queued[r]:  # dropped while waiting: lazy removal
                if slot >= 0:
                    fl.append(slot)
                    in_list[slot] = True
                continue
            r_queued[r] = False
            waiting -= 1
            row = r_row[r]
            a_start[row] = now
            a_state[row] = RUNNING
            a_slot[row] = slot
            busy += 1
            b = a_build[row]
            if sc is not None:
                # Pushed before the finish so a zero-length episode frees its start slot first.
                building[p] += 1
                heappush(heap, (now + b, seq, ev.BUILD_DONE, row))
                seq += 1
            if driver is not None and a_phase[row] != BUILD:
                heappush(heap, (now + b, seq, ev.TURN, row))  # the hold unfolds turn by turn
            else:
                heappush(heap, (now + a_hold[row], seq, ev.FINISH, row))
            seq += 1
            if slot >= 0:
                slot_state[slot] = S_BUSY
                slot_row[slot] = row

    def free_slot(p: int, slot: int) -> None:
        nonlocal seq
        if slot < 0:
            return
        slot_row[slot] = -1
        if prov[p] > 0:
            slot_state[slot] = S_PROV
            heappush(heap, (now + prov[p], seq, ev.SLOT_READY, slot))
            seq += 1
        else:
            slot_state[slot] = S_FREE
            if not in_list[slot]:
                free[p].append(slot)
                in_list[slot] = True

    def terminal(r: int) -> None:
        nonlocal done, seq
        done += 1
        w = r_work[r]
        if w in pop_next:
            release_next(w)
            return
        st = rl.get(w)
        if st is None:
            return
        j = r_batch[r]
        st.rem[j] -= 1
        if st.rem[j] == 0:
            st.batch_end_s[j] = now
            maybe_train(st)

    def maybe_train(st: RLState) -> None:
        nonlocal seq, training
        if st.can_train():
            training += 1
            heappush(heap, (st.begin_train(now), seq, ev.TRAIN_DONE, st.w))
            seq += 1

    def release(st: RLState) -> None:
        p = prep.workloads[st.w].pool
        rels = st.take_releasable(now)
        for rng_ in rels:
            for r in rng_:
                r_arrival[r] = now
                enqueue(r, r)
        if rels:
            dispatch(p)

    def release_next(w: int) -> None:
        """A closed population: the next rollout, if any, enters now."""
        r = pop_next[w]
        if r < prep.offsets[w + 1]:
            pop_next[w] = r + 1
            r_arrival[r] = now
            enqueue(r, r)

    def end_attempt(row: int, state: int, phase: int) -> None:
        """Close a running attempt now; retry its rollout or end it."""
        nonlocal busy
        r = a_roll[row]
        p = r_pool[r]
        busy -= 1
        a_fin[row] = now
        a_phase[row] = phase
        if prep.retryable(r, state, phase, a_try[row]):
            a_state[row] = RETRIED
            b, a, v, h, s, ph = prep.retry_attempt(r, a_try[row] + 1)
            new = len(a_roll)
            for lst, val in ((a_roll, r), (a_enq, math.nan), (a_start, math.nan), (a_fin, math.nan),
                             (a_state, PENDING), (a_phase, ph), (a_build, b), (a_agent, a), (a_verify, v),
                             (a_hold, h), (a_plan, s), (a_slot, -1), (a_try, a_try[row] + 1)):
                lst.append(val)
            r_row[r] = new
            enqueue(r, new)
        else:
            a_state[row] = state
            terminal(r)
        free_slot(p, a_slot[row])
        dispatch(p)

    def drop(r: int) -> None:
        """The rollout waited past the queue timeout: it ends without a sandbox."""
        nonlocal waiting
        r_queued[r] = False
        waiting -= 1
        row = r_row[r]
        a_fin[row] = now
        a_state[row] = DROPPED
        a_plan[row] = DROPPED
        a_phase[row] = 0
        a_build[row] = a_agent[row] = a_verify[row] = 0.0
        terminal(r)

    def preempt(p: int) -> None:
        nonlocal seq, preemptions
        pl = pools[p]
        rng = preempt_rng[p]
        node = int(rng.integers(nodes[p]))
        if not node_down[p][node]:
            preemptions += 1
            node_down[p][node] = True
            lo = slot_base[p] + node * pl.slots_per_node
            hi = min(lo + pl.slots_per_node, slot_base[p] + pl.cap)
            for s in range(lo, hi):
                row = slot_row[s]
                slot_state[s] = S_DOWN
                slot_row[s] = -1
                if row >= 0 and a_state[row] == RUNNING:
                    elapsed = now - a_start[row]
                    b, a = a_build[row], a_agent[row]
                    if elapsed < b:
                        if start_cap[p] is not None:
                            building[p] -= 1
                        a_build[row], a_agent[row], a_verify[row] = elapsed, 0.0, 0.0
                    elif elapsed < b + a:
                        a_agent[row], a_verify[row] = elapsed - b, 0.0
                    else:
                        a_verify[row] = elapsed - b - a
                    a_slot[row] = -1
                    end_attempt(row, EXCEPTION, PREEMPTION)
            heappush(heap, (now + pl.node_replace_s, seq, ev.NODE_BACK, (p, node)))
            seq += 1
        if done < N:
            heappush(heap, (now + float(rng.exponential(1.0 / (pl.preempt_rate_per_node_s * nodes[p]))), seq, ev.PREEMPT, p))
            seq += 1

    POOL, TURN = ev.POOL, ev.TURN
    pool_event = driver.pool.event if driver is not None else None
    turn = driver.call if driver is not None else None
    progress_every = 1 << 16
    next_progress = progress_every
    while done < N or training:
        if heap and (ai >= na or heap[0][0] <= arr_t[ai]):
            t, _, kind, x = heappop(heap)
        elif ai < na:
            t, kind, x = arr_t[ai], -1, arr_r[ai]
            ai += 1
        else:
            break
        if t < now:
            clock_ok = False
        dt = t - last_t
        area_busy += busy * dt
        area_wait += waiting * dt
        last_t = now = t
        n_events += 1
        if kind == POOL:  # the inference pool's kinds first: most events of a pool-served run
            pool_event(t, x)
        elif kind == TURN:
            turn(x, t)
        elif kind == ev.FINISH:
            if a_state[x] == RUNNING:
                end_attempt(x, a_plan[x], a_phase[x])
        elif kind == -1:
            r_arrival[x] = t
            enqueue(x, x)
            dispatch(r_pool[x])
        elif kind == ev.SLOT_READY:
            if slot_state[x] == S_PROV:
                slot_state[x] = S_FREE
                p = slot_pool[x]
                if not in_list[x]:
                    free[p].append(x)
                    in_list[x] = True
                dispatch(p)
        elif kind == ev.BUILD_DONE:
            if a_state[x] == RUNNING:
                p = r_pool[a_roll[x]]
                building[p] -= 1
                dispatch(p)
        elif kind == ev.RELEASE:
            if x in pop_next:
                # a population above count starts every rollout at once (and never loops on a huge one)
                for _ in range(min(prep.workloads[x].population, prep.workloads[x].count)):
                    release_next(x)
                dispatch(prep.workloads[x].pool)
            else:
                release(rl[x])
        elif kind == ev.TRAIN_DONE:
            st = rl[x]
            training -= 1
            st.end_train(t)
            release(st)
            maybe_train(st)
        elif kind == ev.PREEMPT:
            preempt(x)
        elif kind == ev.NODE_BACK:
            p, node = x
            node_down[p][node] = False
            pl = pools[p]
            lo = slot_base[p] + node * pl.slots_per_node
            hi = min(lo + pl.slots_per_node, slot_base[p] + pl.cap)
            for s in range(hi - 1, lo - 1, -1):  # lowest slot ends on top
                slot_state[s] = S_FREE
                if not in_list[s]:
                    free[p].append(s)
                    in_list[s] = True
            dispatch(p)
        elif kind == ev.DROP:
            r, epoch = x
            if r_queued[r] and r_epoch[r] == epoch:
                drop(r)
                if r_work[r] in pop_next:  # its successor entered the queue
                    dispatch(r_pool[r])
        if on_progress is not None and n_events >= next_progress:
            next_progress += progress_every
            on_progress(done, N)

    if driver is not None:
        driver.pool.close(now)
    cols = {"arrival_s": a_enq, "start_s": a_start, "finish_s": a_fin, "state": a_state, "phase": a_phase,
            "build_s": a_build, "agent_s": a_agent, "verify_s": a_verify}
    first = {k: np.array(v[:N], dtype=np.int8 if k in ("state", "phase") else float) for k, v in cols.items()}
    extra = {k: v[N:] for k, v in cols.items()}
    extra["rollout"] = a_roll[N:]
    extra["attempt"] = a_try[N:]
    return {"first": first, "extra": extra, "rl": rl, "preemptions": preemptions, "area_busy": area_busy,
            "area_wait": area_wait, "clock_monotonic": clock_ok, "inference": driver}

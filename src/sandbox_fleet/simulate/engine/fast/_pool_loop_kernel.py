"""``loop.run_events`` + ``inference.driver`` + ``inference.pool`` + ``inference.cache`` over flat
arrays, for the subset ``pool_loop.supported`` accepts: one source, compiled by numba
(``cache=True``, into ``_jit.cache_dir()``) or run as plain Python (``_jit``'s shim without
numba, or ``NUMBA_DISABLE_JIT=1``), the same bits either way. ``run``'s arguments are declared
once, in ``Args``.

It is the same algorithm written over flat arrays, operation for operation, so that
the floating-point results and the event order are the same bits as the pure path:

- the event list is a binary heap keyed by ``(time, seq)`` (``seq`` unique, so the pop
  order is the same as ``heapq``'s on ``(time, seq, kind, payload)`` tuples); stale pool
  events stay in it and are counted and integrated over, as in the pure loop;
- each replica's decode-finish marks are a heap keyed by ``(v_finish, seq)``;
- FIFO queues (admission per fleet pool, seat waiting and prefill lines per replica) are
  linked lists through per-rollout ``next`` arrays (a rollout is in at most one of each);
- each cache tier (GPU, host) of each replica is a doubly linked LRU list through
  per-key arrays (key = rollout under sticky routing, replica x rollout under
  least-loaded, where a rollout's stale prefix may sit in several replicas); storing a
  key already present updates its size in place without moving it, as ``OrderedDict``
  item assignment does.

Scalars live in the ``si`` (int) and ``sf`` (float) arrays so that a run can stop after
a number of events (progress callbacks, heap growth) and resume exactly where it was.

Why ``run`` holds the pool's event and submit handlers inline rather than in helpers taking
grouped tuples of arrays: that split was measured at twice the CPU time (every call copies
and reference-counts the tuples' arrays), even with ``inline="always"``. Its sections
mirror the pure code: ``Pool.event`` then ``Driver.done`` (POOL), ``Driver.call`` +
``Pool.submit`` (TURN), ``end_attempt`` (FINISH). Likewise ``run`` takes ``Args``'s fields as
separate parameters (``run(*args)``), not the tuple: a body reading ``args.field`` measured
1.6x the kernel's CPU time (numba counts a reference for every field read).
"""

from __future__ import annotations

import inspect
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from sandbox_fleet.simulate.engine.fast import _jit, event_heap
from sandbox_fleet.simulate.engine.fast._jit import jitable, njit

# Array kinds of ``Args`` (C-ordered; ``_2``: two-dimensional)
I64 = npt.NDArray[np.int64]
I64_2 = npt.NDArray[np.int64]
I32 = npt.NDArray[np.int32]
F64 = npt.NDArray[np.float64]
F64_2 = npt.NDArray[np.float64]
B1 = npt.NDArray[np.bool_]

# Event kinds (the values of ``simulate.engine.events``) and the open-arrival pseudo kind.
FINISH, SLOT_READY, RELEASE, TRAIN_DONE, TURN, POOL, ARRIVAL = 0, 1, 3, 4, 8, 9, -1
RUNNING = -1
BUILD = 1  # entities.BUILD: a build-phase exception (the hold has no turns)
K_OPEN, K_RL, K_CLOSED = 0, 1, 2

# si: int scalars
SEQ, HN, PSEQ, BUSY, WAITING, DONE, NEV, TRAINING, AI, CLOCK_OK, IN_T, CACHED_T, DEC_T, NWAIT, NTTFT, NSOJ = range(16)
N_SI = 16
# sf: float scalars
NOW, LAST_T, AREA_BUSY, AREA_WAIT = range(4)
N_SF = 4
# replica int columns (ri[i, c])
R_N, R_VER, PF_H, PF_T, PF_L, WT_H, WT_T, WT_L, R_LIVE, R_LOAD, DN, G_H, G_T, H_H, H_T = range(15)
N_RI = 15
# replica float columns (rf[i, c])
R_V, R_T, P_END, A_N, A_BUSY, A_SYS, G_USED, H_USED, EVICTED = range(9)
N_RF = 9
# RL workload int columns (wi[w, c]) and per-workload config
W_KIND, W_POOL, W_NEXT, W_HI, W_POP, B_LO, B_N, VERSION, NEXT_REL, NEXT_TRAIN, TRAINING_W, STALENESS = range(12)
N_WI = 12

# status returned by ``run``
ST_DONE, ST_PAUSE, ST_GROW = 0, 1, 2


# The event heap: one implementation for both kernels (``event_heap``); ``_less`` also orders the
# replicas' decode heaps below
_less = jitable(event_heap.less, inline=True)
hpush = njit(cache=True)(event_heap.push)
hpop = njit(cache=True)(event_heap.pop)


@njit(cache=True)
def dpush(dv, ds, dr, ri, i, v, seq, r):
    n = ri[i, DN]
    ri[i, DN] = n + 1
    while n > 0:
        parent = (n - 1) >> 1
        if _less(v, seq, dv[i, parent], ds[i, parent]):
            dv[i, n] = dv[i, parent]
            ds[i, n] = ds[i, parent]
            dr[i, n] = dr[i, parent]
            n = parent
        else:
            break
    dv[i, n] = v
    ds[i, n] = seq
    dr[i, n] = r


@njit(cache=True)
def dpop(dv, ds, dr, ri, i):
    n = ri[i, DN] - 1
    ri[i, DN] = n
    if n == 0:
        return
    v, s, r = dv[i, n], ds[i, n], dr[i, n]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and _less(dv[i, c + 1], ds[i, c + 1], dv[i, c], ds[i, c]):
            c += 1
        if _less(dv[i, c], ds[i, c], v, s):
            dv[i, pos] = dv[i, c]
            ds[i, pos] = ds[i, c]
            dr[i, pos] = dr[i, c]
            pos = c
        else:
            break
    dv[i, pos] = v
    ds[i, pos] = s
    dr[i, pos] = r


# --- LRU tiers: doubly linked lists through per-key arrays; head = least recently used --


@njit(cache=True)
def lru_remove(prev, nxt, inn, ri, i, hcol, tcol, k):
    p, q = prev[k], nxt[k]
    if p >= 0:
        nxt[p] = q
    else:
        ri[i, hcol] = q
    if q >= 0:
        prev[q] = p
    else:
        ri[i, tcol] = p
    inn[k] = False


@njit(cache=True)
def lru_append(prev, nxt, inn, ri, i, hcol, tcol, k):
    t = ri[i, tcol]
    prev[k] = t
    nxt[k] = -1
    if t >= 0:
        nxt[t] = k
    else:
        ri[i, hcol] = k
    ri[i, tcol] = k
    inn[k] = True


@njit(cache=True)
def cache_take(ri, rf, gp, gn, gs, gin, hp, hn, hs, hin, i, k):
    if gin[k]:
        rf[i, G_USED] -= gs[k]
        lru_remove(gp, gn, gin, ri, i, G_H, G_T, k)
        return True
    if hin[k]:
        rf[i, H_USED] -= hs[k]
        lru_remove(hp, hn, hin, ri, i, H_H, H_T, k)
        return True
    return False


@njit(cache=True)
def cache_put(ri, rf, gp, gn, gs, gin, hp, hn, hs, hin, i, k, nbytes, cap, unlimited, host_cap, stride):
    if not unlimited and cap == 0.0:
        return
    if gin[k]:
        gs[k] = nbytes  # OrderedDict assignment to a present key: new value, same position
    else:
        gs[k] = nbytes
        lru_append(gp, gn, gin, ri, i, G_H, G_T, k)
    rf[i, G_USED] += nbytes
    if unlimited:
        return
    while rf[i, G_USED] > cap and ri[i, G_H] >= 0:
        e = ri[i, G_H]
        size = gs[e]
        lru_remove(gp, gn, gin, ri, i, G_H, G_T, e)
        rf[i, G_USED] -= size
        rf[i, EVICTED] += size
        if host_cap > 0:
            if hin[e]:
                hs[e] = size
            else:
                hs[e] = size
                lru_append(hp, hn, hin, ri, i, H_H, H_T, e)
            rf[i, H_USED] += size
    while rf[i, H_USED] > host_cap and ri[i, H_H] >= 0:
        e = ri[i, H_H]
        size = hs[e]
        lru_remove(hp, hn, hin, ri, i, H_H, H_T, e)
        rf[i, H_USED] -= size


# --- the fleet side -------------------------------------------------------------------


@njit(cache=True)
def dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold, served):
    """FIFO admission of pool ``p``: waiting rollouts take free slots (lowest first)."""
    while fq[p, 0] >= 0:
        if not unb[p]:
            if free_n[p] == 0:
                return
            free_n[p] -= 1
        r = fq[p, 0]
        q = fnext[r]
        fq[p, 0] = q
        if q < 0:
            fq[p, 1] = -1
        si[WAITING] -= 1
        a_start[r] = now
        a_state[r] = RUNNING
        si[BUSY] += 1
        if served and a_phase[r] != BUILD:
            hpush(ht, hi, si, now + a_build[r], TURN, r, 0)
        else:
            hpush(ht, hi, si, now + a_hold[r], FINISH, r, 0)


@njit(cache=True)
def enqueue(r, p, now, si, fq, fnext, a_enq):
    a_enq[r] = now
    fnext[r] = -1
    t = fq[p, 1]
    if t >= 0:
        fnext[t] = r
    else:
        fq[p, 0] = r
    fq[p, 1] = r
    si[WAITING] += 1


@njit(cache=True)
def rl_release(w, now, si, wi, b_start, b_size, release_s, fq, fnext, a_enq):
    """Release every batch of RL workload ``w`` eligible now; whether any was."""
    any_ = False
    p = wi[w, W_POOL]
    lo = wi[w, B_LO]
    steps = wi[w, B_N]
    while wi[w, NEXT_REL] < steps and wi[w, NEXT_REL] <= wi[w, VERSION] + wi[w, STALENESS]:
        j = wi[w, NEXT_REL]
        wi[w, NEXT_REL] = j + 1
        release_s[lo + j] = now
        s0 = b_start[lo + j]
        for r in range(s0, s0 + b_size[lo + j]):
            enqueue(r, p, now, si, fq, fnext, a_enq)
        any_ = True
    return any_


@njit(cache=True)
def maybe_train(w, now, si, ht, hi, wi, b_rem, train_start_s, train_s):
    j = wi[w, NEXT_TRAIN]
    if wi[w, TRAINING_W] == 0 and j < wi[w, NEXT_REL] and b_rem[wi[w, B_LO] + j] == 0:
        si[TRAINING] += 1
        wi[w, TRAINING_W] = 1
        train_start_s[wi[w, B_LO] + j] = now
        hpush(ht, hi, si, now + train_s[w], TRAIN_DONE, w, 0)


# --- the pool side ----------------------------------------------------------------------


@njit(cache=True)
def advance(ri, rf, i, now, b):
    dt = now - rf[i, R_T]
    if dt <= 0:
        return
    n = ri[i, R_N]
    busy = n + ri[i, PF_L]
    if busy:
        if n and not ri[i, PF_L]:
            rf[i, R_V] += dt / (n + b)
        rf[i, A_N] += busy * dt
        rf[i, A_BUSY] += dt
        rf[i, A_SYS] += (busy + ri[i, WT_L]) * dt
    rf[i, R_T] = now


@njit(cache=True)
def seat(ri, rf, i, r, now, si, qnext, req_arr, req_pre, req_dec, wait_s, ttft_s, dv, ds, dr):
    """``r``'s call takes a seat: into the prefill line, or straight to decoding."""
    wait_s[si[NWAIT]] = now - req_arr[r]
    si[NWAIT] += 1
    if ri[i, PF_L] or req_pre[r] > 0:
        if not ri[i, PF_L]:
            rf[i, P_END] = now + req_pre[r]
        qnext[r] = -1
        t = ri[i, PF_T]
        if t >= 0:
            qnext[t] = r
        else:
            ri[i, PF_H] = r
        ri[i, PF_T] = r
        ri[i, PF_L] += 1
    else:
        ttft_s[si[NTTFT]] = now - req_arr[r]
        si[NTTFT] += 1
        ri[i, R_N] += 1
        dpush(dv, ds, dr, ri, i, rf[i, R_V] + req_dec[r], si[PSEQ], r)
        si[PSEQ] += 1


@njit(cache=True)
def _argmin(counts, col):
    best = 0
    low = counts[0, col]
    for i in range(1, counts.shape[0]):
        c = counts[i, col]
        if c < low:
            best = i
            low = c
    return best


class Args(NamedTuple):
    """``run``'s arguments, declared once, with their types: ``pool_loop`` builds them by name and
    calls ``run(*args)``; ``run``'s compiled signature is made from these annotations
    (``signature()``) and its parameter names are checked against these fields when the module
    loads. So no argument can be passed in the wrong place, and one of the wrong type is refused
    (numba finds no matching signature) instead of compiling a second copy. Arrays are C-ordered
    (``_2``: two-dimensional)."""

    si: I64  # int scalars (the ``SI`` indices above)
    sf: F64  # float scalars
    ht: F64  # event heap: times
    hi: I64_2  # event heap: seq, kind, payload, version
    ev_limit: int  # events after which ``run`` pauses
    N: int  # rollouts
    arr_t: F64  # open arrivals, sorted: times
    arr_r: I64  # open arrivals: rollouts
    # per rollout
    a_enq: F64
    a_start: F64
    a_fin: F64
    a_state: I64
    a_phase: I64
    a_build: F64
    a_agent: F64
    a_verify: F64
    a_hold: F64
    a_plan: I64  # the terminal state drawn up front
    r_work: I64  # workload of each rollout
    r_pool: I64  # fleet pool of each rollout
    r_batch: I64  # RL batch within its workload
    fnext: I64  # next in its fleet pool's admission line
    # fleet pools
    fq: I64_2  # admission line head, tail
    free_n: I64
    unb: B1  # unbounded
    prov: F64  # provisioning delay
    # workloads (RL batches flat across RL workloads)
    wi: I64_2  # the ``W_*`` columns
    train_s: F64
    b_start: I64
    b_size: I64
    b_rem: I64
    release_s: F64
    batch_end_s: F64
    train_start_s: F64
    train_end_s: F64
    # driver: each rollout's turns
    served: bool  # rollouts hold model calls (always, for this kernel)
    off: I64  # first turn of each rollout in the flat turn arrays
    nt: I64  # turns
    new: I64  # new prompt tokens per turn
    dec: I64  # decode tokens per turn
    cmd: F64  # command seconds after each turn
    cur: I64  # the turn each rollout is at
    ctx: I64  # its context tokens so far
    # pool
    ri: I64_2  # the replicas' int columns (``R_N`` ...)
    rf: F64_2  # their float columns (``R_V`` ...)
    dv: F64_2  # decode-finish heap per replica: virtual finish
    ds: I64_2  # ... seq
    dr: I64_2  # ... rollout
    qnext: I64  # next in a replica's line (seat wait or prefill)
    assign: I64  # sticky routing: each rollout's replica
    req_arr: F64  # the current call: arrival
    req_ctx: I64  # context after it
    req_pre: F64  # prefill seconds
    req_dec: F64  # decode work
    req_last: B1  # the rollout's last call
    r_in: I64  # tokens per rollout: input
    r_cached: I64
    r_out: I64
    wait_s: F64  # per call, in the order recorded
    ttft_s: F64
    sojourn_s: F64
    sticky: bool
    b: float  # iteration base, in units of one sequence's decode
    inv_p: float  # seconds per prefill token
    inv_d: float  # seconds per decode token
    seats: int  # max_num_seqs
    kvb: float  # KV bytes per token
    caching: bool
    cap_bytes: float  # GPU cache tier per replica
    cap_unlimited: bool
    host_cap: float  # host cache tier per replica
    stride: int  # least-loaded cache keys: replica * stride + rollout
    # LRU tiers (key = rollout, or replica x rollout): GPU prev, next, size, present; then host
    gp: I32
    gn: I32
    gs: F64
    gin: B1
    hp: I32
    hn: I32
    hs: F64
    hin: B1
    margin: int  # pushes one event can make, at most


# What each annotation of ``Args`` is compiled as.
NUMBA_TYPES = {"I64": ("int64", 1), "I64_2": ("int64", 2), "I32": ("int32", 1), "F64": ("float64", 1),
               "F64_2": ("float64", 2), "B1": ("boolean", 1), "int": ("int64", 0), "float": ("float64", 0),
               "bool": ("boolean", 0)}


def signature():
    """``run``'s numba signature, from ``Args``'s annotations."""
    from numba import types

    fields = []
    for name in Args._fields:
        ann = Args.__annotations__[name]  # a string, or NamedTuple's ForwardRef of one
        scalar, ndim = NUMBA_TYPES[str(getattr(ann, "__forward_arg__", ann))]
        t = getattr(types, scalar)
        fields.append(types.Array(t, ndim, "C") if ndim else t)
    return types.int64(*fields)


def run(si, sf, ht, hi, ev_limit, N, arr_t, arr_r,  # Args's fields in order (checked below): see Args
        a_enq, a_start, a_fin, a_state, a_phase, a_build, a_agent, a_verify, a_hold, a_plan,
        r_work, r_pool, r_batch, fnext, fq, free_n, unb, prov,
        wi, train_s, b_start, b_size, b_rem, release_s, batch_end_s, train_start_s, train_end_s,
        served, off, nt, new, dec, cmd, cur, ctx,
        ri, rf, dv, ds, dr, qnext, assign, req_arr, req_ctx, req_pre, req_dec, req_last,
        r_in, r_cached, r_out, wait_s, ttft_s, sojourn_s,
        sticky, b, inv_p, inv_d, seats, kvb, caching, cap_bytes, cap_unlimited, host_cap, stride,
        gp, gn, gs, gin, hp, hn, hs, hin, margin):
    """Process events until the run ends (``ST_DONE``), ``ev_limit`` events have run
    (``ST_PAUSE``) or the event heap may not hold the next event's pushes (``ST_GROW``)."""
    na = arr_t.size
    cap_heap = ht.size
    while si[DONE] < N or si[TRAINING]:
        if si[NEV] >= ev_limit:
            return ST_PAUSE
        if si[HN] + margin > cap_heap:
            return ST_GROW
        ai = si[AI]
        if si[HN] > 0 and (ai >= na or ht[0] <= arr_t[ai]):
            t = ht[0]
            kind = hi[0, 1]
            x = hi[0, 2]
            xv = hi[0, 3]
            hpop(ht, hi, si)
        elif ai < na:
            t = arr_t[ai]
            kind = ARRIVAL
            x = arr_r[ai]
            xv = 0
            si[AI] = ai + 1
        else:
            break
        now = sf[NOW]
        if t < now:
            si[CLOCK_OK] = 0
        dt = t - sf[LAST_T]
        sf[AREA_BUSY] += si[BUSY] * dt
        sf[AREA_WAIT] += si[WAITING] * dt
        sf[LAST_T] = t
        sf[NOW] = t
        now = t
        si[NEV] += 1
        if kind == POOL:
            i = x
            if xv != ri[i, R_VER]:
                continue
            dt = now - rf[i, R_T]
            if dt > 0:
                n = ri[i, R_N]
                busy = n + ri[i, PF_L]
                if busy:
                    if n and not ri[i, PF_L]:
                        rf[i, R_V] += dt / (n + b)
                    rf[i, A_N] += busy * dt
                    rf[i, A_BUSY] += dt
                    rf[i, A_SYS] += (busy + ri[i, WT_L]) * dt
                rf[i, R_T] = now
            if ri[i, PF_L]:
                r = ri[i, PF_H]
                q = qnext[r]
                ri[i, PF_H] = q
                if q < 0:
                    ri[i, PF_T] = -1
                ri[i, PF_L] -= 1
                ttft_s[si[NTTFT]] = now - req_arr[r]
                si[NTTFT] += 1
                ri[i, R_N] += 1
                dpush(dv, ds, dr, ri, i, rf[i, R_V] + req_dec[r], si[PSEQ], r)
                si[PSEQ] += 1
                if ri[i, PF_L]:
                    rf[i, P_END] = now + req_pre[ri[i, PF_H]]
            elif rf[i, R_V] < dv[i, 0]:
                rf[i, R_V] = dv[i, 0]
            v = rf[i, R_V]
            # finished calls, in heap order (their continuations run after the reschedule)
            f0 = 0
            fh = -1
            ft = -1
            while ri[i, DN] > 0 and dv[i, 0] <= v:
                r = dr[i, 0]
                dpop(dv, ds, dr, ri, i)
                ri[i, R_N] -= 1
                ri[i, R_LOAD] -= 1
                sojourn_s[si[NSOJ]] = now - req_arr[r]
                si[NSOJ] += 1
                if caching:
                    k = r if sticky else i * stride + r
                    cache_put(ri, rf, gp, gn, gs, gin, hp, hn, hs, hin, i, k, req_ctx[r] * kvb,
                              cap_bytes, cap_unlimited, host_cap, stride)
                if req_last[r] and sticky:
                    ri[i, R_LIVE] -= 1
                # chain the finished rollouts through qnext (they are in no replica line now)
                if f0 == 0:
                    fh = r
                else:
                    qnext[ft] = r
                ft = r
                qnext[r] = -1
                f0 += 1
            while ri[i, WT_L] and ri[i, R_N] + ri[i, PF_L] < seats:
                r = ri[i, WT_H]
                q = qnext[r]
                ri[i, WT_H] = q
                if q < 0:
                    ri[i, WT_T] = -1
                ri[i, WT_L] -= 1
                seat(ri, rf, i, r, now, si, qnext, req_arr, req_pre, req_dec, wait_s, ttft_s, dv, ds, dr)
            ver = ri[i, R_VER] + 1
            ri[i, R_VER] = ver
            if ri[i, PF_L]:
                hpush(ht, hi, si, rf[i, P_END], POOL, i, ver)
            elif ri[i, DN] > 0:
                hpush(ht, hi, si, now + (dv[i, 0] - v) * (ri[i, R_N] + b), POOL, i, ver)
            # the driver continues each finished rollout (Driver.done)
            r = fh if f0 else -1
            for _ in range(f0):
                nr = qnext[r]
                k = cur[r]
                j = off[r] + k
                ctx[r] += new[j] + dec[j]
                cur[r] = k + 1
                end = now + cmd[j]
                if k + 1 < nt[r]:
                    hpush(ht, hi, si, end, TURN, r, 0)
                else:
                    a_agent[r] = end - a_start[r] - a_build[r]
                    hpush(ht, hi, si, end + a_verify[r], FINISH, r, 0)
                r = nr
        elif kind == TURN:
            r = x
            k = cur[r]
            j = off[r] + k
            c = ctx[r]
            nw = new[j]
            d = dec[j]
            last = k == nt[r] - 1
            if sticky:
                i = assign[r]
                if i < 0:
                    i = _argmin(ri, R_LIVE)
                    assign[r] = i
                    ri[i, R_LIVE] += 1
            else:
                i = _argmin(ri, R_LOAD)
            cached = 0
            if c and caching:
                kk = r if sticky else i * stride + r
                if cache_take(ri, rf, gp, gn, gs, gin, hp, hn, hs, hin, i, kk):
                    cached = c
            si[IN_T] += c + nw
            si[CACHED_T] += cached
            si[DEC_T] += d
            r_in[r] += c + nw
            r_cached[r] += cached
            r_out[r] += d
            req_arr[r] = now
            req_ctx[r] = c + nw + d
            req_pre[r] = (c + nw - cached) * inv_p
            req_dec[r] = d * inv_d
            req_last[r] = last
            advance(ri, rf, i, now, b)
            ri[i, R_LOAD] += 1
            if ri[i, R_N] + ri[i, PF_L] >= seats:
                qnext[r] = -1
                tl = ri[i, WT_T]
                if tl >= 0:
                    qnext[tl] = r
                else:
                    ri[i, WT_H] = r
                ri[i, WT_T] = r
                ri[i, WT_L] += 1
            elif ri[i, PF_L]:
                seat(ri, rf, i, r, now, si, qnext, req_arr, req_pre, req_dec, wait_s, ttft_s, dv, ds, dr)
            else:
                seat(ri, rf, i, r, now, si, qnext, req_arr, req_pre, req_dec, wait_s, ttft_s, dv, ds, dr)
                ver = ri[i, R_VER] + 1
                ri[i, R_VER] = ver
                if ri[i, PF_L]:
                    hpush(ht, hi, si, rf[i, P_END], POOL, i, ver)
                elif ri[i, DN] > 0:
                    hpush(ht, hi, si, now + (dv[i, 0] - rf[i, R_V]) * (ri[i, R_N] + b), POOL, i, ver)
        elif kind == FINISH:
            r = x
            if a_state[r] == RUNNING:
                p = r_pool[r]
                si[BUSY] -= 1
                a_fin[r] = now
                a_state[r] = a_plan[r]
                # terminal
                si[DONE] += 1
                w = r_work[r]
                if wi[w, W_KIND] == K_CLOSED:
                    nx = wi[w, W_NEXT]
                    if nx < wi[w, W_HI]:
                        wi[w, W_NEXT] = nx + 1
                        enqueue(nx, wi[w, W_POOL], now, si, fq, fnext, a_enq)
                elif wi[w, W_KIND] == K_RL:
                    j = wi[w, B_LO] + r_batch[r]
                    b_rem[j] -= 1
                    if b_rem[j] == 0:
                        batch_end_s[j] = now
                        maybe_train(w, now, si, ht, hi, wi, b_rem, train_start_s, train_s)
                # free the slot
                if not unb[p]:
                    if prov[p] > 0:
                        hpush(ht, hi, si, now + prov[p], SLOT_READY, p, 0)
                    else:
                        free_n[p] += 1
                dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold,
                         served)
        elif kind == ARRIVAL:
            p = r_pool[x]
            enqueue(x, p, now, si, fq, fnext, a_enq)
            dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold, served)
        elif kind == SLOT_READY:
            p = x
            free_n[p] += 1
            dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold, served)
        elif kind == RELEASE:
            w = x
            p = wi[w, W_POOL]
            if wi[w, W_KIND] == K_CLOSED:
                for _ in range(wi[w, W_POP]):
                    nx = wi[w, W_NEXT]
                    if nx < wi[w, W_HI]:
                        wi[w, W_NEXT] = nx + 1
                        enqueue(nx, p, now, si, fq, fnext, a_enq)
                dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold,
                         served)
            else:
                if rl_release(w, now, si, wi, b_start, b_size, release_s, fq, fnext, a_enq):
                    dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase,
                             a_hold, served)
        elif kind == TRAIN_DONE:
            w = x
            p = wi[w, W_POOL]
            si[TRAINING] -= 1
            train_end_s[wi[w, B_LO] + wi[w, NEXT_TRAIN]] = now
            wi[w, TRAINING_W] = 0
            wi[w, VERSION] += 1
            wi[w, NEXT_TRAIN] += 1
            if rl_release(w, now, si, wi, b_start, b_size, release_s, fq, fnext, a_enq):
                dispatch(p, now, si, ht, hi, fq, fnext, free_n, unb, a_start, a_state, a_build, a_phase, a_hold,
                         served)
            maybe_train(w, now, si, ht, hi, wi, b_rem, train_start_s, train_s)
    # close: integrate every replica's clock to the end of the run
    for i in range(ri.shape[0]):
        advance(ri, rf, i, sf[NOW], b)
    return ST_DONE


if tuple(inspect.signature(run).parameters) != Args._fields:  # the one declaration is Args
    raise ImportError("_pool_loop_kernel.run's parameters are not Args's fields in order")
if _jit.COMPILED:
    run = njit(signature(), cache=True)(run)

"""The inference replica's service and clock over named arrays: the one production home of the
rules the oracle's ``pool.py`` (``tests/simulate/engine/oracle/``, with ``driver.py``, ``cache.py``) writes as
objects. The admission kernel calls them on its model-call events (``TURN``: a rollout's turn
sends its call, ``POOL``: a replica's next prefill end or decode finish).

Plain Python with no numba import: the admission kernel registers every function here with
``_jit.jitable`` (so numba compiles them into it; the file is in ``_jit.CALLEES``), and its
plain-Python twin calls them as written. The same operations in the same order as the pure pool,
so the floating-point results and the event order are the same bits:

- each replica's decode-finish marks are a heap keyed by ``(v_finish, seq)`` (``dv``, ``dq``), sifted by
  ``event_heap.up`` / ``down`` on the replica's row;
- the seat-waiting and prefill lines of a replica are linked lists through ``xi[:, X_QNEXT]``
  (``event_heap.link_tail``; a rollout has one call at a time, so it is in at most one line, and
  ``X_REP`` / ``X_AT`` say where its call is);
- each cache tier (GPU, host) of each replica is a doubly linked LRU list through per-key rows
  of ``cl`` / ``cs`` / ``cin`` (key = rollout under sticky routing, replica x rollout under
  least-loaded); storing a key already present updates its size in place without moving it, as
  ``OrderedDict`` item assignment does.

Arrays (``admit_loop.initial_state`` builds them): ``ii`` int scalars (``I_*``), ``fl`` float
scalars (``F_*``), ``vi`` / ``vf`` per replica (``V_*``), ``dv`` / ``dq`` per replica's decode heap,
``xi`` / ``xf`` per rollout (``X_*``), ``ti`` / ``tf`` per turn (``T_*``), ``cl`` / ``cs`` /
``cin`` per cache key.

An attempt that ends before its episode does (a node preemption, an eviction) or is retried ends its
episode here too (``end_episode``, which the kernel calls after the event): its call in flight is
withdrawn (``withdraw``), its conversation forgotten, and its next attempt starts from turn 0.

An agent timeout or an agent-phase exception cuts the loop (``agent_cut``, on an ``AGENT_CUT`` event the
kernel's ``place`` schedules at the agent phase's start plus the drawn cut, ``episode.draw_attempts``):
if the loop still runs then, its agent phase ends there and its episode ends as above; a timeout goes
on to its verifier (the slot engine's ``agent > agent_timeout_s``), an exception ends the attempt.
"""

from __future__ import annotations

from sandbox_fleet.simulate.engine.fast import event_heap

FINISH, TURN, POOL = 0, 8, 9  # ``simulate.engine.events``' kinds
AGENT_CUT = 36
COMPLETED, EXCEPTION, TIMEOUT = 0, 1, 2  # ``entities``' states and the agent phase's code
AGENT = 2

# ii: int scalars (counters, then the configuration)
(I_PSEQ, I_IN_T, I_CACHED_T, I_DEC_T, I_NWAIT, I_NTTFT, I_NSOJ, I_STICKY, I_SEATS, I_CACHING, I_UNLIMITED,
 I_STRIDE, I_FH, I_FN) = range(14)
N_II = 14  # I_FH, I_FN: the rollouts whose call a POOL event finished (chain head through X_QNEXT, count)
I_NWD, I_NSUB = 14, 15  # calls withdrawn (``withdraw``: records in tf[:, T_WD]), calls submitted
N_II = 16
# fl: float scalars (the configuration)
F_B, F_INV_P, F_INV_D, F_KVB, F_CAP, F_HOST_CAP = range(6)
N_FL = 6  # F_B: iteration base in one sequence's decode times; F_CAP, F_HOST_CAP: cache tiers' bytes
# vi[i, c]: replica int columns: prefill line (head, tail, length), seat line (head, tail, length), rollouts
# routed there with a call to come (sticky), calls in service or waiting, decode heap size, LRU heads/tails
(V_N, V_VER, V_PF_H, V_PF_T, V_PF_L, V_WT_H, V_WT_T, V_WT_L, V_LIVE, V_LOAD, V_DN, V_G_H, V_G_T, V_H_H,
 V_H_T) = range(15)
N_VI = 15
# vf[i, c]: replica float columns: decode virtual time, its real time, the prefill head's end, the areas
# (sequences in service, busy time, calls in the replica), cache tiers' bytes used, bytes evicted
V_V, V_T, V_P_END, V_A_N, V_A_BUSY, V_A_SYS, V_G_USED, V_H_USED, V_EVICTED = range(9)
N_VF = 9
# xi[r, c]: rollout int columns: first turn, turns, current turn, context tokens, next in a replica line,
# sticky replica, the current call's context after it and whether it is the last, tokens in / cached / out,
# the attempt row that sent the call
X_OFF, X_NT, X_CUR, X_CTX, X_QNEXT, X_ASSIGN, X_RCTX, X_LAST, X_IN, X_CACHED, X_OUT, X_ROW = range(12)
N_XI = 12
X_REP, X_AT, X_CCACHED = 12, 13, 14  # its call in flight: replica, where it is there (``AT_*``), cached tokens
N_XI = 15
AT_NONE, AT_WAIT, AT_PF, AT_DEC = range(4)  # no call in flight; waiting for a seat; in the prefill line; decoding
# xf[r, c]: the current call's arrival, prefill seconds, decode work
X_ARR, X_PRE, X_DEC = range(3)
N_XF = 3
X_AEND = 3  # ... when its attempt's agent phase ended (its last command), once its last call has ended
N_XF = 4
T_NEW, T_DEC = range(2)  # ti[j, c]: turn j's new prompt tokens, decode tokens
N_TI = 2
T_CMD, T_WAIT, T_TTFT, T_SOJ = range(4)  # tf[j, c]: turn j's command seconds; per call in record order: waits
N_TF = 4
T_WD = 4  # ... and per withdrawn call, in withdrawal order: its time in the pool
N_TF = 5
C_GP, C_GN, C_HP, C_HN = range(4)  # cl[k, c]: LRU links (GPU prev, next; host prev, next)
C_G, C_H = range(2)  # cs[k, c] sizes, cin[k, c] presence, per tier


# --- a replica's decode heap: (virtual finish, seq) -> rollout, sifted by ``event_heap`` on the replica's row ---
def dpush(dv, dq, vi, i, v, seq, r):
    n = vi[i, V_DN]
    vi[i, V_DN] = n + 1
    h, q = dv[i], dq[i]
    n = event_heap.up(h, q, n, v, seq)
    h[n] = v
    q[n, 0] = seq
    q[n, 1] = r


def dremove(dv, dq, vi, i, k):
    """Take entry ``k`` out of replica ``i``'s decode heap (``k = 0``: its head): the last entry fills
    the hole, sifted down, else up."""
    n = vi[i, V_DN] - 1
    vi[i, V_DN] = n
    if k == n:
        return
    h, q = dv[i], dq[i]
    v, s, r = h[n], q[n, 0], q[n, 1]
    pos = event_heap.down(h, q, k, n, v, s)
    if pos == k:
        pos = event_heap.up(h, q, k, v, s)
    h[pos] = v
    q[pos, 0] = s
    q[pos, 1] = r


def dpop(dv, dq, vi, i):
    dremove(dv, dq, vi, i, 0)


# --- the prefix cache: two LRU tiers per replica (the oracle's ``cache.PrefixCache``) -------------
def lru_remove(cl, cin, vi, i, tier, k):
    p, q = cl[k, 2 * tier], cl[k, 2 * tier + 1]
    if p >= 0:
        cl[p, 2 * tier + 1] = q
    else:
        vi[i, V_G_H + 2 * tier] = q
    if q >= 0:
        cl[q, 2 * tier] = p
    else:
        vi[i, V_G_T + 2 * tier] = p
    cin[k, tier] = False


def lru_append(cl, cin, vi, i, tier, k):
    t = vi[i, V_G_T + 2 * tier]
    cl[k, 2 * tier] = t
    cl[k, 2 * tier + 1] = -1
    if t >= 0:
        cl[t, 2 * tier + 1] = k
    else:
        vi[i, V_G_H + 2 * tier] = k
    vi[i, V_G_T + 2 * tier] = k
    cin[k, tier] = True


def cache_take(cl, cs, cin, vi, vf, i, k):
    """Remove key ``k``'s prefix for service; whether it was cached (either tier)."""
    if cin[k, C_G]:
        vf[i, V_G_USED] -= cs[k, C_G]
        lru_remove(cl, cin, vi, i, C_G, k)
        return True
    if cin[k, C_H]:
        vf[i, V_H_USED] -= cs[k, C_H]
        lru_remove(cl, cin, vi, i, C_H, k)
        return True
    return False


def cache_put(cl, cs, cin, fl, ii, vi, vf, i, k, nbytes):
    """Store key ``k``'s prefix as most recently used, then evict to fit (GPU to host, host out)."""
    unlimited = ii[I_UNLIMITED] != 0
    cap = fl[F_CAP]
    host_cap = fl[F_HOST_CAP]
    if not unlimited and cap == 0.0:
        return
    cs[k, C_G] = nbytes  # OrderedDict assignment to a present key: new value, same position
    if not cin[k, C_G]:
        lru_append(cl, cin, vi, i, C_G, k)
    vf[i, V_G_USED] += nbytes
    if unlimited:
        return
    while vf[i, V_G_USED] > cap and vi[i, V_G_H] >= 0:
        e = vi[i, V_G_H]
        size = cs[e, C_G]
        lru_remove(cl, cin, vi, i, C_G, e)
        vf[i, V_G_USED] -= size
        vf[i, V_EVICTED] += size
        if host_cap > 0:
            cs[e, C_H] = size
            if not cin[e, C_H]:
                lru_append(cl, cin, vi, i, C_H, e)
            vf[i, V_H_USED] += size
    while vf[i, V_H_USED] > host_cap and vi[i, V_H_H] >= 0:
        e = vi[i, V_H_H]
        size = cs[e, C_H]
        lru_remove(cl, cin, vi, i, C_H, e)
        vf[i, V_H_USED] -= size


# --- the replica's clock and seats ---------------------------------------------------------------
def advance(vi, vf, i, now, b):
    """Integrate replica ``i`` to ``now``: its decode clock (frozen while a prompt is prefilled) and
    its areas."""
    dt = now - vf[i, V_T]
    if dt <= 0:
        return
    n = vi[i, V_N]
    busy = n + vi[i, V_PF_L]
    if busy:
        if n and not vi[i, V_PF_L]:
            vf[i, V_V] += dt / (n + b)
        vf[i, V_A_N] += busy * dt
        vf[i, V_A_BUSY] += dt
        vf[i, V_A_SYS] += (busy + vi[i, V_WT_L]) * dt
    vf[i, V_T] = now


def seat(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now):
    """``r``'s call takes a seat: into the prefill line, or straight to decoding."""
    tf[ii[I_NWAIT], T_WAIT] = now - xf[r, X_ARR]
    ii[I_NWAIT] += 1
    if vi[i, V_PF_L] or xf[r, X_PRE] > 0:
        if not vi[i, V_PF_L]:
            vf[i, V_P_END] = now + xf[r, X_PRE]
        event_heap.link_tail(vi, i, V_PF_H, V_PF_T, xi, X_QNEXT, r)
        vi[i, V_PF_L] += 1
        xi[r, X_AT] = AT_PF
    else:
        decode(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now)


def decode(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now):
    """``r``'s call has its first token now (no prefill, or its prefill ended): it decodes."""
    tf[ii[I_NTTFT], T_TTFT] = now - xf[r, X_ARR]
    ii[I_NTTFT] += 1
    vi[i, V_N] += 1
    dpush(dv, dq, vi, i, vf[i, V_V] + xf[r, X_DEC], ii[I_PSEQ], r)
    ii[I_PSEQ] += 1
    xi[r, X_AT] = AT_DEC


def seat_waiting(dq, dv, ii, tf, vi, vf, xf, xi, i, now):
    """Seats freed on replica ``i``: the calls waiting for one take them, first come first served."""
    while vi[i, V_WT_L] and vi[i, V_N] + vi[i, V_PF_L] < ii[I_SEATS]:
        r = event_heap.link_pop(vi, i, V_WT_H, V_WT_T, xi, X_QNEXT)
        vi[i, V_WT_L] -= 1
        seat(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now)


def fewest(vi, col):
    """The replica with the fewest ``col`` (the first on a tie: ``routing.fewest``)."""
    best = 0
    low = vi[0, col]
    for i in range(1, vi.shape[0]):
        c = vi[i, col]
        if c < low:
            best = i
            low = c
    return best


def reschedule(hi, ht, si, dv, fl, vi, vf, i, now):
    """Replica ``i``'s batch changed: its next event (prefill end, else earliest finish) goes on the
    event heap under a new version (earlier ones are stale)."""
    ver = vi[i, V_VER] + 1
    vi[i, V_VER] = ver
    if vi[i, V_PF_L]:
        event_heap.push(ht, hi, si, vf[i, V_P_END], POOL, i, ver)
    elif vi[i, V_DN] > 0:
        event_heap.push(ht, hi, si, now + (dv[i, 0] - vf[i, V_V]) * (vi[i, V_N] + fl[F_B]), POOL, i, ver)


# --- events ----------------------------------------------------------------------------------
def submit(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, r, row, now):
    """Attempt ``row`` of rollout ``r`` sends its current turn's model call (``Driver.call`` +
    ``Pool.submit``): routed, its cached prefix taken, seated or left waiting for a seat."""
    k = xi[r, X_CUR]
    j = xi[r, X_OFF] + k
    c = xi[r, X_CTX]
    nw = ti[j, T_NEW]
    d = ti[j, T_DEC]
    xi[r, X_ROW] = row
    ii[I_NSUB] += 1
    if ii[I_STICKY]:
        i = xi[r, X_ASSIGN]
        if i < 0:
            i = fewest(vi, V_LIVE)
            xi[r, X_ASSIGN] = i
            vi[i, V_LIVE] += 1
    else:
        i = fewest(vi, V_LOAD)
    cached = 0
    if c and ii[I_CACHING]:
        kk = r if ii[I_STICKY] else i * ii[I_STRIDE] + r
        if cache_take(cl, cs, cin, vi, vf, i, kk):
            cached = c
    ii[I_IN_T] += c + nw
    ii[I_CACHED_T] += cached
    ii[I_DEC_T] += d
    xi[r, X_CCACHED] = cached
    xi[r, X_IN] += c + nw
    xi[r, X_CACHED] += cached
    xi[r, X_OUT] += d
    xf[r, X_ARR] = now
    xi[r, X_RCTX] = c + nw + d
    xf[r, X_PRE] = (c + nw - cached) * fl[F_INV_P]
    xf[r, X_DEC] = d * fl[F_INV_D]
    xi[r, X_LAST] = 1 if k == xi[r, X_NT] - 1 else 0
    advance(vi, vf, i, now, fl[F_B])
    vi[i, V_LOAD] += 1
    xi[r, X_REP] = i
    if vi[i, V_N] + vi[i, V_PF_L] >= ii[I_SEATS]:  # waits for a seat: the replica's next event is unchanged
        event_heap.link_tail(vi, i, V_WT_H, V_WT_T, xi, X_QNEXT, r)
        vi[i, V_WT_L] += 1
        xi[r, X_AT] = AT_WAIT
    elif vi[i, V_PF_L]:  # behind the prompt in prefill: next event unchanged
        seat(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now)
    else:
        seat(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now)
        reschedule(hi, ht, si, dv, fl, vi, vf, i, now)


def pool_event(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, vi, vf, xf, xi, i, ver, now):
    """Replica ``i``'s scheduled event (unless its batch changed since, ``ver``): the head's prefill
    ends, or the earliest decoding calls end (``Pool.event``). The rollouts whose call ended are
    chained through ``X_QNEXT`` from ``ii[I_FH]``, ``ii[I_FN]`` of them; ``continue_calls`` runs
    them after the reschedule, as the pool's ``on_done`` calls."""
    ii[I_FN] = 0
    if ver != vi[i, V_VER]:
        return
    advance(vi, vf, i, now, fl[F_B])
    if vi[i, V_PF_L]:
        r = event_heap.link_pop(vi, i, V_PF_H, V_PF_T, xi, X_QNEXT)
        vi[i, V_PF_L] -= 1
        decode(dq, dv, ii, tf, vi, vf, xf, xi, i, r, now)
        if vi[i, V_PF_L]:
            vf[i, V_P_END] = now + xf[vi[i, V_PF_H], X_PRE]
    elif vf[i, V_V] < dv[i, 0]:
        vf[i, V_V] = dv[i, 0]  # rounding: the event was scheduled for exactly this virtual time
    v = vf[i, V_V]
    f0 = 0
    ft = -1
    while vi[i, V_DN] > 0 and dv[i, 0] <= v:
        r = dq[i, 0, 1]
        dpop(dv, dq, vi, i)
        vi[i, V_N] -= 1
        vi[i, V_LOAD] -= 1
        tf[ii[I_NSOJ], T_SOJ] = now - xf[r, X_ARR]
        ii[I_NSOJ] += 1
        if ii[I_CACHING]:
            k = r if ii[I_STICKY] else i * ii[I_STRIDE] + r
            cache_put(cl, cs, cin, fl, ii, vi, vf, i, k, xi[r, X_RCTX] * fl[F_KVB])
        if xi[r, X_LAST] and ii[I_STICKY]:
            vi[i, V_LIVE] -= 1
        if f0 == 0:  # chain the finished rollouts (they are in no replica line now)
            ii[I_FH] = r
        else:
            xi[ft, X_QNEXT] = r
        ft = r
        xi[r, X_QNEXT] = -1
        xi[r, X_AT] = AT_NONE
        f0 += 1
    seat_waiting(dq, dv, ii, tf, vi, vf, xf, xi, i, now)
    reschedule(hi, ht, si, dv, fl, vi, vf, i, now)
    ii[I_FN] = f0


def continue_calls(af, hi, ht, si, ii, tf, ti, xi, xf, now, c_start, c_build, c_agent, c_verify):
    """Each rollout whose call ended (``pool_event``'s chain) goes on (``Driver.done``): its next turn
    after the turn's command, or, after its last, its verifier then its finish. ``c_*``: the columns
    of ``af`` (the caller's attempt rows) with the attempt's start, build, agent and verify seconds."""
    r = ii[I_FH]
    for _ in range(ii[I_FN]):
        nr = xi[r, X_QNEXT]
        k = xi[r, X_CUR]
        j = xi[r, X_OFF] + k
        xi[r, X_CTX] += ti[j, T_NEW] + ti[j, T_DEC]
        xi[r, X_CUR] = k + 1
        end = now + tf[j, T_CMD]
        row = xi[r, X_ROW]
        if k + 1 < xi[r, X_NT]:
            event_heap.push(ht, hi, si, end, TURN, row, 0)
        else:
            af[row, c_agent] = end - af[row, c_start] - af[row, c_build]
            xf[r, X_AEND] = end
            event_heap.push(ht, hi, si, end + af[row, c_verify], FINISH, row, 0)
        r = nr
    ii[I_FN] = 0


def withdraw(hi, ht, si, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, r, now):
    """Rollout ``r``'s call in flight, if it has one, leaves its replica now (its attempt ended before
    the call did): out of the seat line, the prefill line (the head's prefill stops; the next prompt's
    starts now) or the decode set (the others' shares grow from now); its time in the pool is recorded
    (``T_WD``), its tokens leave the token counts (which count the calls served: ``work_s`` stays a
    lower bound of the busy time), the seats it frees are taken, and the replica's next event is
    scheduled again. The prefix it took out of the cache for service stays out (``end_episode``)."""
    at = xi[r, X_AT]
    if at == AT_NONE:
        return
    i = xi[r, X_REP]
    advance(vi, vf, i, now, fl[F_B])
    if at == AT_WAIT:
        event_heap.link_remove(vi, i, V_WT_H, V_WT_T, xi, X_QNEXT, r)
        vi[i, V_WT_L] -= 1
    elif at == AT_PF:
        head = vi[i, V_PF_H] == r
        event_heap.link_remove(vi, i, V_PF_H, V_PF_T, xi, X_QNEXT, r)
        vi[i, V_PF_L] -= 1
        if head and vi[i, V_PF_L]:
            vf[i, V_P_END] = now + xf[vi[i, V_PF_H], X_PRE]
    else:
        k = 0
        while dq[i, k, 1] != r:
            k += 1
        dremove(dv, dq, vi, i, k)
        vi[i, V_N] -= 1
    vi[i, V_LOAD] -= 1
    xi[r, X_AT] = AT_NONE
    j = xi[r, X_OFF] + xi[r, X_CUR]
    inp = xi[r, X_CTX] + ti[j, T_NEW]
    ii[I_IN_T] -= inp
    ii[I_CACHED_T] -= xi[r, X_CCACHED]
    ii[I_DEC_T] -= ti[j, T_DEC]
    xi[r, X_IN] -= inp
    xi[r, X_CACHED] -= xi[r, X_CCACHED]
    xi[r, X_OUT] -= ti[j, T_DEC]
    tf[ii[I_NWD], T_WD] = now - xf[r, X_ARR]
    ii[I_NWD] += 1
    seat_waiting(dq, dv, ii, tf, vi, vf, xf, xi, i, now)
    reschedule(hi, ht, si, dv, fl, vi, vf, i, now)


def end_episode(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, r, now):
    """Rollout ``r``'s attempt ended before its episode did (a node preemption, an eviction) or is
    retried: its call in flight is withdrawn (``withdraw``), its conversation is forgotten (the
    prefixes its calls left in the cache, in either tier; its sticky replica, which counts it live
    no longer), and its next attempt starts the episode over: turn 0, no context, the same drawn
    turns (the same task re-run, as ``Prepared.retry_attempt`` re-runs its durations)."""
    withdraw(hi, ht, si, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, r, now)
    if ii[I_STICKY]:
        i = xi[r, X_ASSIGN]
        if i >= 0:
            if xi[r, X_CUR] < xi[r, X_NT]:  # its last call never ended
                vi[i, V_LIVE] -= 1
            if ii[I_CACHING]:
                cache_take(cl, cs, cin, vi, vf, i, r)
            xi[r, X_ASSIGN] = -1
    elif ii[I_CACHING]:
        for i in range(vi.shape[0]):
            cache_take(cl, cs, cin, vi, vf, i, i * ii[I_STRIDE] + r)
    xi[r, X_CUR] = 0
    xi[r, X_CTX] = 0


def agent_cut(af, ai, hi, ht, si, r_timeout, xf, xi, row, now, c_roll, c_plan, c_phase, c_agent, c_verify, c_cut):
    """Attempt ``row``'s agent phase reaches its drawn cut now (``af[row, c_cut]`` seconds from its start:
    the agent timeout, or the time to an agent-phase exception when it falls first). If its loop still
    runs (a turn's call or command is not over, the last command included), the agent phase ends now,
    as the slot engine's ``agent > agent_timeout_s`` and ``at < agent`` cut a drawn one: a cut before the
    timeout is an exception (the attempt ends now, no verifier: returns ``FINISH`` for the caller to end
    it as one); else it is a timeout (its verifier runs from now, then it ends as a timeout unless the
    verifier's own draw failed it; returns ``AGENT_CUT``). The caller ends its episode at the replicas
    after the event (its call in flight withdrawn). Returns -1 when the loop ended first (nothing happens)."""
    r = ai[row, c_roll]
    if xi[r, X_CUR] == xi[r, X_NT] and now >= xf[r, X_AEND]:
        return -1
    cut = af[row, c_cut]
    af[row, c_agent] = cut
    if cut < r_timeout[r]:
        ai[row, c_plan] = EXCEPTION
        ai[row, c_phase] = AGENT
        af[row, c_verify] = 0.0
        return FINISH
    if ai[row, c_plan] == COMPLETED:
        ai[row, c_plan] = TIMEOUT
    event_heap.push(ht, hi, si, now + af[row, c_verify], FINISH, row, 0)
    return AGENT_CUT


def close(fl, vi, vf, now):
    """Integrate every replica's clock to the end of the run."""
    for i in range(vi.shape[0]):
        advance(vi, vf, i, now, fl[F_B])

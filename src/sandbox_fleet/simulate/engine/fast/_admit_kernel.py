"""The admission kernel: the pure event loop (the oracle in ``tests/simulate/engine/oracle/``) over
flat arrays: one source, compiled by numba (``cache=True``, into
``_jit.cache_dir()``) or run as plain Python (``NUMBA_DISABLE_JIT=1``, or ``_jit``'s shim without
numba), the same bits either way and the same bits as the pure loop (tests compare them).

What it runs: every admission policy registered in ``policy_registry`` (first come first served,
shortest-timeout-first, ``priority`` with quotas and preemption, ``timeout-ceiling``), start caps,
queue timeouts, provisioning delays, retries (and a priority pool's evictions, which re-run their
rollout) and node preemption, on open, closed and RL workloads; with an inference pool, an attempt's
hold unfolds turn by turn (``TURN``: its model call goes to a replica, ``POOL``: a replica's next end,
both handled by ``_inference_rules``, the one home of the replica's service and clock).
``admit_loop.refusal`` names what it does not run.

A preemptible pool tracks its slots (``sl``: free, busy, provisioning, down; a free stack with the
lowest id on top, removed from lazily), because which slot an attempt holds decides which attempts
a failing node takes down; the other capped pools only count their free slots. A plain queue (FIFO,
shortest-timeout-first) takes a slot only while it has entries, dropped ones included, and gives it
back for a dropped front entry, as ``LoopState.dispatch`` does: the free stack's order follows.

State is one ``State`` NamedTuple of arrays (scalars in ``si``/``sf``, per pool ``pi``/``pf``, per
workload ``wi``/``wf``, per rollout ``r_*``, per attempt row ``a_*``), so a run can pause (progress,
growing its heap or its attempt rows) and resume where it stopped.

A policy is its hooks, registered once (``policy_registry``): ``rank`` (the head's sort key before
its queue order), ``admits`` (may the head start), ``victim`` (whom ``make_room`` evicts when no slot
is free), ``started`` and ``ended`` (a slot taken or given back), reached through a dispatch generated
from the registry (``policy_rank`` ...; the built-ins' hooks are this file's ``priority_*``,
``ceiling_*`` and ``victim``). Each pool keeps one first-come-first-served
list per workload, linked through ``r_qn``; a rollout that left its list (dropped) stays in it
until it surfaces at the head (lazy removal, as the pure loop's ``WorkloadQueues``).

Why the retry draw calls Python (``objmode``): a retry's attempt is drawn from its own stream
(``Prepared.retry_attempt``: seed, workload, rollout, attempt), the one place that rule lives;
it is rare (evictions and retries), so the call's microseconds do not matter.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from sandbox_fleet.simulate.engine import fifo, limits_rules, policy_registry
from sandbox_fleet.simulate.engine.fast import _inference_rules as inference
from sandbox_fleet.simulate.engine.fast import _node_rules, event_heap
from sandbox_fleet.simulate.engine.fast._jit import borrow, jitable, njit, objmode

I64 = npt.NDArray[np.int64]  # 1-d or 2-d, C order
F64 = npt.NDArray[np.float64]

# Event kinds (``simulate.engine.events``) and the open-arrival pseudo kind.
FINISH, SLOT_READY, BUILD_DONE, RELEASE, TRAIN_DONE, PREEMPT, NODE_BACK, DROP, ARRIVAL = 0, 1, 2, 3, 4, 5, 6, 7, -1
PENDING, RUNNING = -2, -1
COMPLETED, EXCEPTION, TIMEOUT, DROPPED, RETRIED = 0, 1, 2, 3, 4  # entities' attempt states
PREEMPTION = 4  # entities.PREEMPTION (phase)
K_OPEN, K_RL, K_CLOSED = 0, 1, 2

# Admission policies' codes (``policy_registry``: the one registration of each name); the plain
# queues the kernel keeps itself, FIFO and SHORTEST (shortest-timeout-first), go by theirs.
FIFO, PRIORITY, CEILING, SHORTEST = 0, 1, 2, 3

# si: int scalars
(SEQ, HN, BUSY, WAITING, DONE, NEV, TRAINING, AI, CLOCK_OK, ROWS, EVICTIONS, QSEQ, EV_LIMIT, HEAP_MARGIN,
 ROW_MARGIN, PREEMPTIONS) = range(16)
N_SI = 16  # EV_LIMIT: heap events after which ``run`` pauses; the MARGINs: pushes / rows one event may add
SERVED = 16  # an inference pool serves the model calls: an attempt's hold unfolds turn by turn (``inference``)
N_SI = 17
ENDED_EARLY = 17  # a served attempt ended early or was retried in the event running: ``end_episodes`` runs after it
N_SI = 18
# sf: float scalars
NOW, AREA_BUSY, AREA_WAIT = range(3)
N_SF = 3
# pi[p, c]: pool int columns (-1: none)
P_POLICY, P_CAP, P_FREE, P_PROVN, P_START_CAP, P_BUILDING, P_ACTIVE, P_EVICTS, P_HAS_TIMEOUT, P_W0, P_NW = range(11)
# ... a preemptible pool tracks its slots (``sl``): its first slot, free-stack size, slots per node;
# a shortest-timeout-first pool keeps a heap in ``qh[P_Q0:]`` of P_QN rollouts
P_TRACKED, P_SLOT0, P_FTOP, P_SPN, P_Q0, P_QN, P_QLEN = range(11, 18)
# ... a pool with ``[fleet.limits]`` that place attempts: its starting slots are ``lg[P_G0:P_G0 + P_GN]``
P_LIMITED, P_G0, P_GN = range(18, 21)
N_PI = 21  # P_QLEN: a plain queue's entries (FIFO, shortest-timeout-first), dropped ones included
P_EE_H, P_EE_T = 21, 22  # ... the rollouts whose served attempt ended early in the event running (a list through R_EEN)
N_PI = 23
# pf[p, c]: pool float columns
PF_PROV, PF_TIMEOUT, PF_REPLACE = range(3)
# ... ``[fleet.limits]``: creation rate (0: none), burst, cold start, warm pool size and refill rate, and
# the bucket's and the warm pool's state (two cells each, ``limits_rules.TOKENS``, ``AT``)
PF_RATE, PF_BURST, PF_COLD, PF_SIZE, PF_REFILL, PF_BUCKET, PF_WARM = 3, 4, 5, 6, 7, 8, 10
N_PF = 12
# wi[w, c]: workload int columns
(W_KIND, W_POOL, W_NEXT, W_HI, W_POP, B_LO, B_N, VERSION, NEXT_REL, NEXT_TRAIN, TRAINING_W, STALENESS,
 W_PRIO, W_NOMINAL, W_LIMIT, W_QH, W_QT, W_USED, W_TOP, W_NCEIL, W_MAX_RETRIES, W_RETRY_ON) = range(22)
W_R0 = 22  # dynamic sampling: the bi/bf row of the workload's first round (-1: batches, not rounds)
N_WI = 23
# wf[w, c]: workload float columns
WF_TRAIN_S, WF_START_S = range(2)
WF_CEIL_CAP = 2  # a timeout-ceiling pool: the sandboxes of this workload's request the pool holds (-1: unbounded)
N_WF = 3
# wf[u, N_WF + v]: the sandboxes of workload v's request one of u's takes room for (a timeout-ceiling's count;
# 1 on a slot pool and between equal requests, ``node_fleet.ceiling_units``)
# ai[row, c], af[row, c]: attempt columns; ri[r, c]: rollout columns; bi, bf: RL batch columns
A_ROLL, A_TRY, A_STATE, A_PHASE, A_PLAN, A_BELOW, A_SLOT, A_WARM = range(8)  # A_BELOW: started before it on its workload
N_AI = 8  # A_SLOT: the tracked slot it holds (-1: none, or a pool that only counts its free slots); A_WARM: claimed warm
A_ENQ, A_START, A_FIN, A_BUILD, A_AGENT, A_VERIFY, A_HOLD, A_WAIT = range(8)
N_AF = 8  # A_WAIT: from its slot to its sandbox ready ([fleet.limits]; in A_BUILD and A_HOLD)
A_CUT = 8  # a served attempt's agent phase: where it is cut, from its start (inf: never; ``inference.agent_cut``)
N_AF = 9
R_WORK, R_POOL, R_BATCH, R_ROW, R_QN, R_QSEQ, R_QUEUED, R_EPOCH, R_EVICTED = range(9)  # R_QN: next in its queue
N_RI = 9
R_EE, R_EEN = 9, 10  # on its pool's list of attempts ended early (``mark_ended_early``), the next there
N_RI = 11
BI_START, BI_SIZE, BI_REM = range(3)
# Dynamic sampling (``trainer.Layout``'s rounds): a workload's rounds are bi/bf rows after every batch
# (BI_START/SIZE/REM the round's rollouts, BF_BATCH_END its end, BI_STEP its step); a step's row holds
# its rounds' rows [BI_R0, BI_RN) and the next round to release once the one before ends (-1: none).
BI_STEP, BI_R0, BI_RN, BI_PEND = range(3, 7)
N_BI = 7
BF_RELEASE, BF_BATCH_END, BF_TRAIN_START, BF_TRAIN_END = range(4)
N_BF = 4

# sl[s, c]: tracked slots (preemptible pools; the oracle's ``loop_state`` slot states); SL_STACK is not the slot's
# but the pool's free stack (lowest id on top), stored in its slots' rows
SL_STATE, SL_ROW, SL_INLIST, SL_STACK = range(4)
N_SL = 4
S_FREE, S_BUSY, S_PROV, S_DOWN = 0, 1, 2, 3

ST_DONE, ST_PAUSE, ST_GROW = 0, 1, 2

# The inference pool's events (``simulate.engine.events``) and the build phase (``entities.BUILD``: an
# exception there ends the hold before any turn)
TURN, POOL, AGENT_CUT = inference.TURN, inference.POOL, inference.AGENT_CUT
BUILD_PHASE = 1
# Pools made of nodes (``Fleet.node_pools``): a waiting attempt whose node is still joining starts at
# ``NODE_JOIN`` (payload: its row; version: its pool). n_pk[p, c]: the pool's node pools (first, how many:
# 0 for a slot pool); n_ki[k, c] / n_kf[k, c]: per node pool; n_pf[p, c]: per pool, its first start and
# last end (the base nodes' billed span)
NODE_JOIN, NODE_RECLAIM = 16, 17  # NODE_RECLAIM: payload the node's slot, version its node id
NK_0, NK_N = range(2)
KI_MIN, KI_MAX, KI_ALIVE, KI_PEAK, KI_LAUNCHED, KI_PLACED, KI_WAITED, KI_RECLAIMS, KI_LOST, KI_POOL = range(10)
N_KI = 10  # KI_POOL: the pool it belongs to
KF_PROV, KF_DOWN, KF_NODE_S, KF_WAIT_S, KF_WAIT_MAX, KF_RATE = range(6)
N_KF = 6  # KF_RATE: reclaims per node-second (Poisson per node)
NP_T0, NP_LAST = range(2)
N_NP = 2
# A reclaim trace's row (``Fleet.reclaim_trace``: ``n_tt`` time, ``n_tk`` node pool, ``n_tu`` the uniform
# draw of the node it takes): payload its index. A node's billed span (``n_span``, by node id: launch,
# release, node pool) is written when it is released (swept or reclaimed); ``node_fleet`` closes the rest.
NODE_TRACE = 37
SPAN_LAUNCH, SPAN_RELEASE, SPAN_POOL = range(3)
# ``[images]`` on pools made of nodes: g_ri[r, c] per rollout (its image; its first attempt's build hit 1,
# missed 0, never started -1; the node id it built on; the order it built in; the missing draw's planned
# state and phase); g_f: the cache's figures before each image's MB; g_lru[s, c]: a node slot's cache
G_IMG, G_HIT, G_NODE, G_SEQ, G_PLAN, G_PHASE = range(6)
N_G = 6
GF_MB, GF_PIN, GF_SEQ, GF_SIZE0 = range(4)
GL_LEN, GL_OWN, GL_IMG0 = range(3)
NK_IMAGES = 2  # n_pk: the pool's builds go through its nodes' image caches (``node_image`` at each first start)
N_NK = 3

# ``[fleet.limits]``: the one sequencing (``fifo.claim``) and its rules, callable from compiled code
for _rule in (limits_rules.bucket_take, limits_rules.warm_take, fifo.place_stream):
    jitable(_rule)
claim = jitable(fifo.claim)
# the inference replica's rules (``_inference_rules``) and the heap's and lists' (``event_heap``), callable from
# compiled code
for _h in (event_heap.move, event_heap.up, event_heap.down, event_heap.link_tail, event_heap.link_pop):
    jitable(_h, inline=True)
for _h in (event_heap.push, event_heap.link_remove):
    jitable(_h)
for _fn in (inference.dpush, inference.dremove, inference.dpop, inference.lru_remove, inference.lru_append,
            inference.cache_take, inference.cache_put, inference.advance, inference.seat, inference.decode,
            inference.seat_waiting,
            inference.fewest, inference.reschedule, inference.submit, inference.pool_event, inference.continue_calls,
            inference.close):
    jitable(_fn, inline=True)
for _rare in (inference.withdraw, inference.end_episode, inference.agent_cut):  # rare: called, not inlined
    jitable(_rare)
# the node placement rule, written once (``_node_rules``; the node replay calls it too)
node_close = jitable(_node_rules.close)
node_set_free = jitable(_node_rules.set_free)
node_unlist = jitable(_node_rules.unlist)
node_best_fit = jitable(_node_rules.best_fit)
node_holds = jitable(_node_rules.holds)
node_open = jitable(_node_rules.open_node)  # a launched node's row and lists (the node replay's too)
node_left = jitable(_node_rules.leave, inline=True)  # a sandbox leaves its node (the node replay's too)
node_trace_pick = jitable(_node_rules.trace_pick)  # the node a reclaim trace's row takes (the node replay's too)
node_cache_touch = jitable(_node_rules.cache_touch)
node_take = jitable(_node_rules.take, inline=True)  # a sandbox takes its room on a node (the node replay's too)
node_free_slot = jitable(_node_rules.free_slot)  # a launch's slot (the node replay's too)
node_sweep_rule = jitable(_node_rules.sweep)  # the release sweep before a launch (the node replay's too)

# The retry draw (``Prepared.retry_attempt``) of the run in progress; ``admit_loop.run`` sets it.
RETRY_DRAW: list = [None]


def draw_retry(r: int, k: int) -> tuple[float, float, float, float, int, int]:
    return RETRY_DRAW[0](r, k)


# Each pool's node preemptions (``prepare.NodeReclaims``) of the run in progress; ``admit_loop.run`` sets it.
RECLAIMS: list = [None]


def draw_node(p: int) -> int:
    return RECLAIMS[0][p].node()


def draw_gap(p: int) -> float:
    return RECLAIMS[0][p].gap_s()


def draw_node_life(p: int, rate_per_s: float) -> float:
    return RECLAIMS[0][p].node_life_s(rate_per_s)


class State(NamedTuple):
    """Everything the kernel reads and writes (``admit_loop.initial_state`` builds it). Few fields,
    each a 2-d array of one dtype: a numba call passes every field's array struct, so 45 separate
    arrays cost ~0.5 us per call (measured), 22 well under that; the inference pool's 13 follow (``run``
    is called once per pause and borrows them all, so they cost no call of a helper)."""

    si: I64  # int scalars (``SI``: SEQ ...)
    sf: F64  # float scalars (NOW ...)
    ht: F64  # event heap: times
    hi: I64  # event heap (2-d): seq, kind, payload, version
    arr_t: F64  # open arrivals, sorted: times
    arr_r: I64  # ... rollouts
    pi: I64  # per pool (2-d, ``P_*``)
    pf: F64  # per pool (2-d, ``PF_*``)
    pw: I64  # the workloads of each pool, pool by pool (``pi[p, P_W0]``, ``pi[p, P_NW]``)
    wi: I64  # per workload (2-d, ``W_*``)
    wf: F64  # per workload (2-d, ``WF_*``)
    ceil: F64  # per workload (2-d): running attempts' ceilings, sorted (timeout-ceiling pools)
    bi: I64  # RL batches, flat across RL workloads (2-d, ``BI_*``)
    bf: F64  # ... (2-d, ``BF_*``): when each was released, ended, trained
    ri: I64  # per rollout (2-d, ``R_*``)
    r_timeout: F64  # per rollout: its agent timeout (inf: none)
    ai: I64  # per attempt row (2-d, ``A_*`` int columns); first attempts are rows 0..N-1, retries append
    af: F64  # per attempt row (2-d, ``A_*`` float columns)
    tmp: I64  # scratch per workload (2-d): next live entry, slots held (make_room's walk)
    sl: I64  # per tracked slot (2-d, ``SL_*``): preemptible pools, pool by pool (``pi[p, P_SLOT0]``)
    qh: I64  # shortest-timeout-first pools' heaps of waiting rollouts, pool by pool (``pi[p, P_Q0]``)
    lg: F64  # ``[fleet.limits]``: three one-cell buffers, then each limited pool's starting slots (``pi[p, P_G0]``)
    # the inference pool (``_inference_rules``' arrays; empty without one)
    ii: I64  # int scalars (``inference.I_*``)
    fl: F64  # float scalars (``inference.F_*``)
    vi: I64  # per replica (2-d, ``inference.V_*``)
    vf: F64  # per replica (2-d)
    dv: F64  # per replica (2-d): its decode heap's virtual finishes
    dq: I64  # per replica (3-d): its decode heap's seq, rollout
    xi: I64  # per rollout (2-d, ``inference.X_*``)
    xf: F64  # per rollout (2-d)
    ti: I64  # per turn (2-d, ``inference.T_*``)
    tf: F64  # per turn (2-d); per call in record order: waits, times to first token, sojourns
    cl: npt.NDArray[np.int32]  # per cache key (2-d): LRU links
    cs: F64  # per cache key (2-d): sizes per tier
    cin: npt.NDArray[np.bool_]  # per cache key (2-d): present per tier
    # pools made of nodes (``_node_rules``' layout; node slots are rows, node pools ``k``)
    n_pk: I64  # per pool (2-d, ``NK_*``): its node pools
    n_pf: F64  # per pool (2-d, ``NP_*``)
    n_req: F64  # per workload (2-d): its request, cpu / memory MB / disk MB
    n_ki: I64  # per node pool (2-d, ``KI_*``)
    n_kf: F64  # per node pool (2-d, ``KF_*``)
    n_cap: F64  # per node pool (2-d): allocatable cpu / memory MB / disk MB
    n_lim: F64  # ... with float slack (a request fits up to it)
    n_inv: F64  # ... (2-d): 1 / cpu, 1 / memory (the MostAllocated score)
    n_thr: F64  # per node pool: the free cpu under which a node holds no request
    n_pmax: F64  # per node pool: never below its open nodes' largest free cpu
    n_spread: I64  # per node pool: 1 spread, 0 pack
    n_plist: I64  # per node pool (2-d): its live node slots
    n_plen: I64
    n_olist: I64  # per node pool (2-d): its open node slots
    n_ofree: F64  # ... and their free cpu
    n_olen: I64
    n_pool: I64  # per node slot: its node pool (-1: free)
    n_used: F64  # per node slot (2-d): cpu / memory MB / disk MB requested by the attempts on it
    n_count: I64  # per node slot: attempts on it
    n_id: I64  # per node slot: its node id (launch order: ties go to the oldest)
    n_pos: I64  # per node slot: position in its pool's live list
    n_opos: I64  # ... in its open list (-1: not open)
    n_perm: I64  # per node slot: a base node (``min_nodes``: up over the pool's whole run)
    n_launch: F64  # per node slot: launched
    n_ready: F64  # ... joins (launch + provision_s)
    n_release: F64  # ... released (inf while it holds an attempt, or a base node)
    n_last: F64  # ... the last end of an attempt that left it
    n_ctr: I64  # the next node id
    n_head: I64  # per node slot: its first attempt's rollout (-1: none), a list a reclaim walks
    n_nxt: I64  # per rollout: the next rollout on its node (-1: none)
    n_prv: I64  # ... the previous
    n_tt: F64  # per reclaim trace row (time order): its time
    n_tk: I64  # ... its node pool
    n_tu: F64  # ... the uniform draw of the node it takes (of those up then, in live-list order)
    n_tmiss: I64  # per node pool: trace rows that found no node of it up
    n_span: F64  # per node id (2-d, ``SPAN_*``): its billed span, written at its release (grown, ``ST_GROW``)
    # ``[images]`` on pools made of nodes (``images.NodeImages``; no rows without): each node's cache
    g_ri: I64  # per rollout (2-d, ``G_*``): its image, its first attempt's outcome, the missing draw's state
    g_mf: F64  # per rollout (2-d): its first attempt drawn missing its image: build, agent, verify, hold
    g_f: F64  # ``GF_*``: cache MB per node, images pre-pulled, the next build's order; then each image's MB
    g_lru: I64  # per node slot (2-d): images cached, the node id whose cache it is, then its images, least
    g_mb: F64  # ...   recently used first (``_node_rules.cache_touch``); per node slot: MB cached


# The event heap: one implementation for both kernels (``event_heap``), inlined here (the hot path)
jitable(event_heap.less, inline=True)
push = njit(cache=True, inline="always")(event_heap.push)
pop = njit(cache=True, inline="always")(event_heap.pop)


# --- sorted ceilings (timeout-ceiling) ------------------------------------------------------
@njit(cache=True, inline="always")
def _bisect_right(ceil, w, n, x):
    """``bisect.bisect_right`` on workload ``w``'s first ``n`` ceilings (2-d indexing: a row view
    would count a reference)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi) >> 1
        if x < ceil[w, mid]:
            hi = mid
        else:
            lo = mid + 1
    return lo


@njit(cache=True)
def _insort(ceil, wi, w, x):
    n = wi[w, W_NCEIL]
    i = _bisect_right(ceil, w, n, x)
    for j in range(n, i, -1):
        ceil[w, j] = ceil[w, j - 1]
    ceil[w, i] = x
    wi[w, W_NCEIL] = n + 1


@njit(cache=True)
def _remove(ceil, wi, w, x):
    n = wi[w, W_NCEIL]
    i = _bisect_right(ceil, w, n, x) - 1
    assert i >= 0 and ceil[w, i] == x  # an ending attempt's ceiling was recorded
    for j in range(i, n - 1):
        ceil[w, j] = ceil[w, j + 1]
    wi[w, W_NCEIL] = n - 1


# --- the trainer ----------------------------------------------------------------------------
@njit(cache=True)
def next_release(bf, bi, wf, wi, v, now):
    """When RL workload ``v``'s next batch goes out at the earliest, and its size (-1: none left)."""
    j = wi[v, NEXT_REL]
    if j >= wi[v, B_N]:
        return 0.0, -1
    size = bi[wi[v, B_LO] + j, BI_SIZE]
    if j == 0:
        return max(wf[v, WF_START_S], now), size
    if wi[v, TRAINING_W] and wi[v, NEXT_TRAIN] + 1 + wi[v, STALENESS] >= j:
        return bf[wi[v, B_LO] + wi[v, NEXT_TRAIN], BF_TRAIN_START] + wf[v, WF_TRAIN_S], size
    return now + wf[v, WF_TRAIN_S], size


@njit(cache=True, inline="always")
def maybe_train(bf, bi, hi, ht, si, wf, wi, w, now):
    j = wi[w, NEXT_TRAIN]
    if wi[w, TRAINING_W] == 0 and j < wi[w, NEXT_REL] and bi[wi[w, B_LO] + j, BI_REM] == 0:
        si[TRAINING] += 1
        wi[w, TRAINING_W] = 1
        bf[wi[w, B_LO] + j, BF_TRAIN_START] = now
        push(ht, hi, si, now + wf[w, WF_TRAIN_S], TRAIN_DONE, w, 0)


@njit(cache=True)
def release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now):
    """Release every batch of RL workload ``w`` eligible now (the oracle's ``RLState.take_releasable``);
    the pool to dispatch next (-1: none was)."""
    any_ = False
    lo = wi[w, B_LO]
    if wi[w, W_R0] >= 0:  # dynamic sampling: each step's next round whose round before has ended, oldest step first
        for j in range(lo + wi[w, NEXT_TRAIN], lo + wi[w, NEXT_REL]):
            k = bi[j, BI_PEND]
            if k >= 0 and bi[k - 1, BI_REM] == 0 and bf[k - 1, BF_BATCH_END] <= now:
                bi[j, BI_PEND] = k + 1 if k + 1 < bi[j, BI_RN] else -1
                for r in range(bi[k, BI_START], bi[k, BI_START] + bi[k, BI_SIZE]):
                    enqueue(af, hi, ht, pf, pi, ri, si, wi, r, r, now)
                any_ = True
    while wi[w, NEXT_REL] < wi[w, B_N] and wi[w, NEXT_REL] <= wi[w, VERSION] + wi[w, STALENESS]:
        j = wi[w, NEXT_REL]
        wi[w, NEXT_REL] = j + 1
        bf[lo + j, BF_RELEASE] = now
        s0 = bi[lo + j, BI_START]
        n = bi[lo + j, BI_SIZE]
        if wi[w, W_R0] >= 0:  # its first round
            k = bi[lo + j, BI_R0]
            s0, n = bi[k, BI_START], bi[k, BI_SIZE]
            bi[lo + j, BI_PEND] = k + 1 if k + 1 < bi[lo + j, BI_RN] else -1
        for r in range(s0, s0 + n):
            enqueue(af, hi, ht, pf, pi, ri, si, wi, r, r, now)
        any_ = True
    return wi[w, W_POOL] if any_ else -1


# --- queues and slots -----------------------------------------------------------------------
@njit(cache=True, inline="always")
def enqueue(af, hi, ht, pf, pi, ri, si, wi, r, row, now):
    w = ri[r, R_WORK]
    p = ri[r, R_POOL]
    af[row, A_ENQ] = now
    si[QSEQ] += 1  # queue order: one counter for every list
    ri[r, R_QSEQ] = si[QSEQ]
    event_heap.link_tail(wi, w, W_QH, W_QT, ri, R_QN, r)
    ri[r, R_QUEUED] = 1
    pi[p, P_QLEN] += 1
    ri[r, R_EPOCH] += 1
    si[WAITING] += 1
    if pi[p, P_HAS_TIMEOUT]:
        push(ht, hi, si, now + pf[p, PF_TIMEOUT], DROP, r, ri[r, R_EPOCH])


@njit(cache=True, inline="always")
def live(ri, r):
    """The first rollout at or after ``r`` in its list that still waits (-1: none)."""
    while r >= 0 and not ri[r, R_QUEUED]:
        r = ri[r, R_QN]
    return r


# --- shortest-timeout-first: a heap of waiting rollouts per pool (``admission.KeyedQueue``) ---
@njit(cache=True, inline="always")
def _qless(pi, ri, r_timeout, p, a, b):
    """Rollout ``a`` before ``b`` in keyed pool ``p``: the smaller key (its policy's ``key`` hook;
    shortest-timeout-first: the agent timeout), then the earlier queue entry."""
    policy = pi[p, P_POLICY]
    ta, tb = policy_key(policy, ri, r_timeout, a), policy_key(policy, ri, r_timeout, b)
    return ta < tb or (ta == tb and ri[a, R_QSEQ] < ri[b, R_QSEQ])


@njit(cache=True, inline="always")
def shortest_key(ri, r_timeout, r):
    """shortest-timeout-first's order: the agent timeout (``policies.py`` registers it)."""
    return r_timeout[r]


@njit(cache=True)
def qpush(pi, qh, r_timeout, ri, p, r):
    base, n = pi[p, P_Q0], pi[p, P_QN]
    pi[p, P_QN] = n + 1
    while n > 0:
        parent = (n - 1) >> 1
        q = qh[base + parent]
        if not _qless(pi, ri, r_timeout, p, r, q):
            break
        qh[base + n] = q
        n = parent
    qh[base + n] = r


@njit(cache=True)
def qpop(pi, qh, r_timeout, ri, p):
    """Remove pool ``p``'s heap head."""
    base, n = pi[p, P_Q0], pi[p, P_QN] - 1
    pi[p, P_QN] = n
    if n == 0:
        return
    r = qh[base + n]
    pos = 0
    while True:
        c = 2 * pos + 1
        if c >= n:
            break
        if c + 1 < n and _qless(pi, ri, r_timeout, p, qh[base + c + 1], qh[base + c]):
            c += 1
        if not _qless(pi, ri, r_timeout, p, qh[base + c], r):
            break
        qh[base + pos] = qh[base + c]
        pos = c
    qh[base + pos] = r


@njit(cache=True, inline="always")
def _unlink(ri, wi, w):
    """Workload ``w``'s list head leaves the list."""
    q = ri[wi[w, W_QH], R_QN]
    wi[w, W_QH] = q
    if q < 0:
        wi[w, W_QT] = -1


@njit(cache=True, inline="always")
def pop_front(pi, pw, qh, r_timeout, ri, wi, p):
    """Take the front entry of plain-queue pool ``p`` (``P_QLEN`` > 0), dropped or not, as
    ``LoopState.dispatch``'s ``popleft``: FIFO the earliest entry of every workload's list;
    shortest-timeout-first the head of the pool's heap, into which the lists move first (the heap's
    keys, timeout then queue order, give ``KeyedQueue``'s order whatever the moves' order)."""
    pi[p, P_QLEN] -= 1
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    if policy_queue(pi[p, P_POLICY]) == LISTS:
        bw = -1
        for i in range(nw):
            w = pw[w0 + i]
            h = wi[w, W_QH]
            if h >= 0 and (bw < 0 or ri[h, R_QSEQ] < ri[wi[bw, W_QH], R_QSEQ]):
                bw = w
        r = wi[bw, W_QH]
        _unlink(ri, wi, bw)
        return r
    return _pop_shortest(pi, pw, qh, r_timeout, ri, wi, p)


@njit(cache=True)
def _pop_shortest(pi, pw, qh, r_timeout, ri, wi, p):
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    for i in range(nw):
        w = pw[w0 + i]
        r = wi[w, W_QH]
        while r >= 0:
            qpush(pi, qh, r_timeout, ri, p, r)
            r = ri[r, R_QN]
        wi[w, W_QH] = -1
        wi[w, W_QT] = -1
    r = qh[pi[p, P_Q0]]
    qpop(pi, qh, r_timeout, ri, p)
    return r


# --- tracked slots (preemptible pools: which slot an attempt holds decides what a node takes down) ---
@njit(cache=True, inline="always")
def take_slot(pi, sl, p):
    """A free slot of tracked pool ``p``, taken off its free stack (-1: none); ``LoopState.take_slot``."""
    base = pi[p, P_SLOT0]
    while pi[p, P_FTOP] > 0:
        pi[p, P_FTOP] -= 1
        s = sl[base + pi[p, P_FTOP], SL_STACK]
        sl[s, SL_INLIST] = 0
        if sl[s, SL_STATE] == S_FREE:
            return s
    return -1


@njit(cache=True, inline="always")
def untake_slot(pi, sl, p, s):
    sl[pi[p, P_SLOT0] + pi[p, P_FTOP], SL_STACK] = s
    pi[p, P_FTOP] += 1
    sl[s, SL_INLIST] = 1


@njit(cache=True, inline="always")
def give_back(pi, sl, p, slot):
    """A slot taken but not used goes back (``LoopState.untake_slot``)."""
    if slot >= 0:
        untake_slot(pi, sl, p, slot)
    elif pi[p, P_CAP] >= 0:
        pi[p, P_FREE] += 1


@njit(cache=True)
def relist(pi, sl, p, s):
    """Slot ``s`` of pool ``p`` is free now: back on the free stack (once)."""
    sl[s, SL_STATE] = S_FREE
    if not sl[s, SL_INLIST]:
        untake_slot(pi, sl, p, s)


@njit(cache=True)
def free_slot(hi, ht, pf, pi, si, sl, p, s, now):
    """An attempt gave slot ``s`` back (-1: its node took it down first): free, or provisioning."""
    if s < 0:
        return
    sl[s, SL_ROW] = -1
    if pf[p, PF_PROV] > 0:
        sl[s, SL_STATE] = S_PROV
        pi[p, P_PROVN] += 1
        push(ht, hi, si, now + pf[p, PF_PROV], SLOT_READY, p, s)
    else:
        relist(pi, sl, p, s)


# --- the admission policies' hooks (``policy_registry``; ``policies.py`` registers these) -----
@njit(cache=True, inline="always")
def priority_rank(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now):
    """Within the nominal quota first, then the higher class (``policies.PriorityQueues.rank``)."""
    return (1 if used >= wi[w, W_NOMINAL] else 0), -wi[w, W_PRIO]


@njit(cache=True, inline="always")
def priority_admits(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now):
    return used < wi[w, W_LIMIT]


@njit(cache=True, inline="always")
def priority_started(ai, ceil, r_timeout, wi, w, row, now):
    """Keep the workload's running attempts as a stack (the latest started is evicted first)."""
    if wi[w, W_TOP] != -2:  # -2: the pool never evicts
        ai[row, A_BELOW] = wi[w, W_TOP]
        wi[w, W_TOP] = row


@njit(cache=True, inline="always")
def ceiling_rank(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now):
    """Released RL batches first (``policies.CeilingQueues.rank``)."""
    return (0 if wi[w, W_KIND] == K_RL else 1), 0


@njit(cache=True, inline="always")
def ceiling_started(ai, ceil, r_timeout, wi, w, row, now):
    _insort(ceil, wi, w, now + r_timeout[ai[row, A_ROLL]])


@njit(cache=True, inline="always")
def ceiling_ended(af, ai, ceil, r_timeout, wi, w, row):
    _remove(ceil, wi, w, af[row, A_START] + r_timeout[ai[row, A_ROLL]])


@njit(cache=True)
def ceiling_admits(bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, used, now):
    """A rollout whose ceiling passes an RL workload's next release starts only if the slots left
    at that release still hold the released batch (``policies.CeilingQueues.admits``). Counted in
    sandboxes of the RL workload's request: the pool holds ``wf[v, WF_CEIL_CAP]`` of them, and each running
    rollout of workload ``u`` takes room for ``wf[u, N_WF + v]`` (1 on a slot pool; on a pool made of
    nodes with mixed requests, ``node_fleet.ceiling_units``)."""
    ceiling = now + r_timeout[r]
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    for i in range(nw):
        v = pw[w0 + i]
        if v == w or wi[v, W_KIND] != K_RL:
            continue
        t_rel, batch = next_release(bf, bi, wf, wi, v, now)
        if batch < 0 or ceiling <= t_rel:
            continue
        cap = wf[v, WF_CEIL_CAP]
        past = 0.0
        for k in range(nw):
            u = pw[w0 + k]
            if u != v:
                n = wi[u, W_NCEIL]
                past += wf[u, N_WF + v] * (n - _bisect_right(ceil, u, n, t_rel))
        if cap >= 0 and past + wf[w, N_WF + v] > cap - batch:
            return False
    return True


@njit(cache=True, inline="always")
def started(ai, ceil, r_timeout, wi, policy, w, row, now):
    wi[w, W_USED] += 1
    policy_started(policy, ai, ceil, r_timeout, wi, w, row, now)


@njit(cache=True, inline="always")
def ended(af, ai, ceil, r_timeout, wi, policy, w, row):
    wi[w, W_USED] -= 1
    policy_ended(policy, af, ai, ceil, r_timeout, wi, w, row)


@njit(cache=True, inline="always")
def best(bf, bi, ceil, pi, pw, r_timeout, ri, tmp, wf, wi, p, now):
    """The waiting rollout pool ``p`` starts first given each workload's next live entry ``tmp[0, w]``
    and slots held ``tmp[1, w]``: (workload, rollout), (-1, -1) when the policy admits none."""
    policy = pi[p, P_POLICY]
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    bw, br = -1, -1
    b1, b2, b3 = 0, 0, 0
    for i in range(nw):
        w = pw[w0 + i]
        r = tmp[0, w]
        if r < 0 or not policy_admits(policy, bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, tmp[1, w], now):
            continue
        k1, k2 = policy_rank(policy, bf, bi, ceil, pi, pw, r_timeout, ri, wf, wi, p, w, r, tmp[1, w], now)
        k3 = ri[r, R_QSEQ]
        if bw < 0 or k1 < b1 or (k1 == b1 and (k2 < b2 or (k2 == b2 and k3 < b3))):
            bw, br, b1, b2, b3 = w, r, k1, k2, k3
    return bw, br


@njit(cache=True, inline="always")
def place(af, ai, hi, ht, lg, pf, pi, si, sl, p, row, slot, now):
    """Start attempt ``row`` now in pool ``p`` on ``slot`` (-1: a pool that only counts its free
    slots) (``LoopState.place``); in a pool with ``[fleet.limits]`` it claims its sandbox first
    (``fifo.claim``: warm, or the bucket, the starting cap and the cold start), and the wait for it
    goes into its build and hold (the slot is held through it)."""
    if pi[p, P_LIMITED]:
        g0 = pi[p, P_G0]
        w, warm = claim(now, lg[g0 : g0 + pi[p, P_GN]], pf[p, PF_BUCKET : PF_BUCKET + 2], pf[p, PF_WARM : PF_WARM + 2],
                        pf[p, PF_RATE], pf[p, PF_BURST], pf[p, PF_COLD], pf[p, PF_SIZE], pf[p, PF_REFILL],
                        lg[0:1], lg[1:2], lg[2:3])
        af[row, A_WAIT] = w
        ai[row, A_WARM] = warm
        af[row, A_BUILD] = w + af[row, A_BUILD]
        af[row, A_HOLD] = w + af[row, A_HOLD]
    af[row, A_START] = now
    ai[row, A_STATE] = RUNNING
    ai[row, A_SLOT] = slot
    if slot >= 0:
        sl[slot, SL_STATE] = S_BUSY
        sl[slot, SL_ROW] = row
    si[BUSY] += 1
    if pi[p, P_START_CAP] >= 0:
        pi[p, P_BUILDING] += 1
        push(ht, hi, si, now + af[row, A_BUILD], BUILD_DONE, row, 0)
    if si[SERVED] and ai[row, A_PHASE] != BUILD_PHASE:  # the hold unfolds turn by turn (``inference``)
        af[row, A_CUT] = af[row, A_AGENT]  # drawn: where a timeout or exception cuts the agent phase
        af[row, A_AGENT] = np.inf  # its agent phase runs until its last call's command ends (``cut_short``)
        push(ht, hi, si, now + af[row, A_BUILD], TURN, row, 0)
        if af[row, A_CUT] < np.inf:
            push(ht, hi, si, (now + af[row, A_BUILD]) + af[row, A_CUT], AGENT_CUT, row, 0)
    else:
        push(ht, hi, si, now + af[row, A_HOLD], FINISH, row, 0)


@njit(cache=True, inline="always")
def heads(pi, pw, ri, tmp, wi, p):
    """Each workload of policy pool ``p``: its list's live head into ``tmp[0, w]`` (dead entries dropped
    for good) and its slots held into ``tmp[1, w]``, what ``best`` reads (slot and node dispatch)."""
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    for i in range(nw):
        w = pw[w0 + i]
        h = live(ri, wi[w, W_QH])
        wi[w, W_QH] = h
        if h < 0:
            wi[w, W_QT] = -1
        tmp[0, w] = h
        tmp[1, w] = wi[w, W_USED]


@njit(cache=True, inline="always")
def dispatch_inline(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
    """Start waiting rollouts of pool ``p`` while slots (and start-cap room) last, the policy
    choosing which (``policies.WorkloadQueues.dispatch``)."""
    if pi[p, P_ACTIVE]:
        return
    pi[p, P_ACTIVE] = 1
    policy = pi[p, P_POLICY]
    while True:
        if pi[p, P_START_CAP] >= 0 and pi[p, P_BUILDING] >= pi[p, P_START_CAP]:
            break
        plain = policy_queue(policy) != CHOOSES
        if plain and pi[p, P_QLEN] == 0:  # ``LoopState.dispatch``'s ``while q``: dropped entries count
            break
        got = True
        slot = -1
        if pi[p, P_CAP] >= 0:
            if pi[p, P_TRACKED]:
                slot = take_slot(pi, sl, p)
                got = slot >= 0
            elif pi[p, P_FREE] > 0:
                pi[p, P_FREE] -= 1
            else:
                got = False
        if plain:  # the queue's front leaves it; a dropped one gives the slot back
            if not got:
                break
            r = pop_front(pi, pw, qh, r_timeout, ri, wi, p)
            if not ri[r, R_QUEUED]:
                give_back(pi, sl, p, slot)
                continue
            w = ri[r, R_WORK]
        else:
            heads(pi, pw, ri, tmp, wi, p)
            w, r = -1, -1
            if got or pi[p, P_EVICTS]:
                w, r = best(bf, bi, ceil, pi, pw, r_timeout, ri, tmp, wf, wi, p, now)
            if w < 0:
                if got:
                    give_back(pi, sl, p, slot)
                break
            if not got:
                if make_room(af, ai, bf, bi, ceil, hi, ht, pf, pi, pw, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
                    continue
                break
            _unlink(ri, wi, w)
        ri[r, R_QUEUED] = 0
        si[WAITING] -= 1
        row = ri[r, R_ROW]
        started(ai, ceil, r_timeout, wi, policy, w, row, now)
        place(af, ai, hi, ht, lg, pf, pi, si, sl, p, row, slot, now)
    pi[p, P_ACTIVE] = 0


@njit(cache=True)
def dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
    """``dispatch_inline`` as a call (its rare call sites)."""
    dispatch_inline(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now)


@njit(cache=True)
def latest(ai, wi, w):
    """Workload ``w``'s most recently started attempt still running (-1: none)."""
    row = wi[w, W_TOP]
    while row >= 0 and ai[row, A_STATE] != RUNNING:
        row = ai[row, A_BELOW]
    wi[w, W_TOP] = row
    return row


@njit(cache=True)
def victim(af, ai, pi, pw, wi, p, w, used_w):
    """The attempt a rollout of ``w`` holding ``used_w`` slots may evict (-1: none)."""
    reclaim = used_w < wi[w, W_NOMINAL]
    best_row = -1
    k1, k2, k3 = 0, 0.0, 0
    w0, nw = pi[p, P_W0], pi[p, P_NW]
    for i in range(nw):
        v = pw[w0 + i]
        if v == w or wi[v, W_USED] <= wi[v, W_NOMINAL]:
            continue  # only a borrowing workload loses slots
        if not (wi[v, W_PRIO] < wi[w, W_PRIO] or reclaim):
            continue
        row = latest(ai, wi, v)
        if row < 0:
            continue
        c1, c2, c3 = wi[v, W_PRIO], -af[row, A_START], -row
        if best_row < 0 or c1 < k1 or (c1 == k1 and (c2 < k2 or (c2 == k2 and c3 < k3))):
            best_row, k1, k2, k3 = row, c1, c2, c3
    return best_row


@njit(cache=True)
def make_room(af, ai, bf, bi, ceil, hi, ht, pf, pi, pw, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
    """No slot is free: evict for the first waiting rollout that slots on their way will not reach
    (``policies.PriorityQueues.make_room``); whether it did."""
    return evict_for(af, ai, bf, bi, ceil, hi, ht, pf, pi, pw, r_timeout, ri, si, sl, tmp, wf, wi, p, now) >= 0


@njit(cache=True)
def evict_for(af, ai, bf, bi, ceil, hi, ht, pf, pi, pw, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
    """``make_room``'s rule: the attempt evicted (ended, its rollout re-queued) for the first waiting
    rollout that room on its way will not reach (-1: none); a pool made of nodes takes the evicted
    attempt's request off its node (``node_leave``) with the row."""
    if not pi[p, P_EVICTS]:  # set for a policy whose ``evicts(pool)`` says so
        return -1
    covered = pi[p, P_PROVN]
    while True:
        w, r = best(bf, bi, ceil, pi, pw, r_timeout, ri, tmp, wf, wi, p, now)
        if w < 0:
            return -1
        if covered:
            covered -= 1
            tmp[1, w] += 1
            tmp[0, w] = live(ri, ri[r, R_QN])
            continue
        row = policy_victim(pi[p, P_POLICY], af, ai, pi, pw, wi, p, w, tmp[1, w])
        if row < 0:
            return -1
        si[EVICTIONS] += 1
        ri[ai[row, A_ROLL], R_EVICTED] += 1
        cut_short(af, ai, pi, ri, row, now)
        end_attempt(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, row, EXCEPTION, PREEMPTION, True, now)
        return row


# The registered policies' hooks (the built-ins' above: ``priority_*``, ``ceiling_*``, ``victim``),
# one dispatch per hook on the pool's policy code, generated from the registry after every hook of
# this file is defined (``policy_registry.dispatchers``; ``POLICY_KEY`` is in the cache directory's key).
POLICY_KEY = policy_registry.fingerprint()
(policy_rank, policy_admits, policy_started, policy_ended, policy_victim, policy_key,
 policy_queue) = policy_registry.dispatchers(globals(), njit)
CHOOSES, LISTS = policy_registry.CHOOSES, policy_registry.LISTS  # ``policy_queue``'s kinds


# --- attempts ending ------------------------------------------------------------------------
@njit(cache=True)
def cut_short(af, ai, pi, ri, row, now):
    """Running attempt ``row`` stops now: its phases end where it is (``LoopState.cut_short``)."""
    elapsed = now - af[row, A_START]
    b, a = af[row, A_BUILD], af[row, A_AGENT]
    if elapsed < b:
        p = ri[ai[row, A_ROLL], R_POOL]
        if pi[p, P_START_CAP] >= 0:
            pi[p, P_BUILDING] -= 1
        af[row, A_BUILD] = elapsed
        af[row, A_AGENT] = 0.0
        af[row, A_VERIFY] = 0.0
    elif elapsed < b + a:
        af[row, A_AGENT] = elapsed - b
        af[row, A_VERIFY] = 0.0
    else:
        af[row, A_VERIFY] = elapsed - b - a


@njit(cache=True, inline="always")
def terminal(af, bf, bi, hi, ht, pf, pi, ri, si, wf, wi, r, now):
    """Rollout ``r`` ended: count it, start a closed population's next, settle an RL batch (with
    dynamic sampling: its round, releasing the step's next round). The pool to dispatch before the
    ending attempt's slot is freed (-1: none), as ``LoopState.terminal`` releases a round."""
    si[DONE] += 1
    out = -1
    w = ri[r, R_WORK]
    if wi[w, W_KIND] == K_CLOSED:
        nx = wi[w, W_NEXT]
        if nx < wi[w, W_HI]:
            wi[w, W_NEXT] = nx + 1
            enqueue(af, hi, ht, pf, pi, ri, si, wi, nx, nx, now)
    elif wi[w, W_KIND] == K_RL and wi[w, W_R0] >= 0:
        k = wi[w, W_R0] + ri[r, R_BATCH]
        j = wi[w, B_LO] + bi[k, BI_STEP]
        bf[k, BF_BATCH_END] = now
        bf[j, BF_BATCH_END] = now
        bi[k, BI_REM] -= 1
        bi[j, BI_REM] -= 1
        if bi[k, BI_REM] == 0:
            out = release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now)
            maybe_train(bf, bi, hi, ht, si, wf, wi, w, now)
    elif wi[w, W_KIND] == K_RL:
        j = wi[w, B_LO] + ri[r, R_BATCH]
        bi[j, BI_REM] -= 1
        if bi[j, BI_REM] == 0:
            bf[j, BF_BATCH_END] = now
            maybe_train(bf, bi, hi, ht, si, wf, wi, w, now)
    return out


@njit(cache=True)
def append_retry(af, ai, hi, ht, pf, pi, ri, si, wi, r, k, now):
    """A new attempt row for rollout ``r`` (its attempt ``k``), queued now."""
    with objmode(b="float64", a="float64", v="float64", h="float64", s="int64", ph="int64"):
        b, a, v, h, s, ph = draw_retry(r, k)
    row = si[ROWS]
    si[ROWS] = row + 1
    ai[row, A_ROLL] = r
    ai[row, A_TRY] = k
    af[row, A_ENQ] = np.nan
    af[row, A_START] = np.nan
    af[row, A_FIN] = np.nan
    ai[row, A_STATE] = PENDING
    ai[row, A_PHASE] = ph
    af[row, A_BUILD] = b
    af[row, A_AGENT] = a
    af[row, A_VERIFY] = v
    af[row, A_HOLD] = h
    ai[row, A_PLAN] = s
    ai[row, A_BELOW] = -1
    ai[row, A_SLOT] = -1
    ai[row, A_WARM] = 0
    af[row, A_WAIT] = 0.0
    ri[r, R_ROW] = row
    enqueue(af, hi, ht, pf, pi, ri, si, wi, r, row, now)


@njit(cache=True, inline="always")
def end_attempt(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, row, state, phase, requeue, now):
    """Close a running attempt now; retry its rollout (always when ``requeue``) or end it, and free
    its slot. The caller dispatches the pool next (``LoopState.end_attempt`` does it inside: here
    an eviction's call would find the pool's dispatch active, and a cached numba function must not
    recurse). A round of dynamic sampling released by the rollout's end is the exception: its pool
    (returned, -1: none) is dispatched by the caller before ``free_attempt_slot`` frees the slot."""
    r = ai[row, A_ROLL]
    p = ri[r, R_POOL]
    w = ri[r, R_WORK]
    si[BUSY] -= 1
    af[row, A_FIN] = now
    ai[row, A_PHASE] = phase
    ended(af, ai, ceil, r_timeout, wi, pi[p, P_POLICY], w, row)
    tries = ai[row, A_TRY] - ri[r, R_EVICTED]
    retry = (state == EXCEPTION and (wi[w, W_RETRY_ON] >> phase) & 1 == 1 and tries < wi[w, W_MAX_RETRIES])
    rp = -1
    if si[SERVED] and (requeue or retry or phase == PREEMPTION):  # (PREEMPTION: a hold cut short)
        mark_ended_early(pi, ri, si, p, r)
    if requeue or retry:
        ai[row, A_STATE] = RETRIED
        append_retry(af, ai, hi, ht, pf, pi, ri, si, wi, r, ai[row, A_TRY] + 1, now)
    else:
        ai[row, A_STATE] = state
        rp = terminal(af, bf, bi, hi, ht, pf, pi, ri, si, wf, wi, r, now)
    if rp < 0:
        free_attempt_slot(ai, hi, ht, pf, pi, si, sl, p, row, now)
    return rp


@njit(cache=True)
def mark_ended_early(pi, ri, si, p, r):
    """Rollout ``r``'s served attempt ended early or is retried: on pool ``p``'s list (once) for
    ``end_episodes``, which ``run`` calls after the event (where the inference pool's arrays are)."""
    if not ri[r, R_EE]:
        ri[r, R_EE] = 1
        event_heap.link_tail(pi, p, P_EE_H, P_EE_T, ri, R_EEN, r)
        si[ENDED_EARLY] = 1


@njit(cache=True)
def end_episodes(pi, ri, si, hi, ht, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, now):
    """Each rollout whose served attempt the event just handled ended early or retried, pool by pool
    in the order they ended: its call withdrawn, its episode started over (``inference.end_episode``)."""
    si[ENDED_EARLY] = 0
    for p in range(pi.shape[0]):
        r = pi[p, P_EE_H]
        while r >= 0:
            ri[r, R_EE] = 0
            inference.end_episode(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, r, now)
            r = ri[r, R_EEN]
        pi[p, P_EE_H] = -1
        pi[p, P_EE_T] = -1


@njit(cache=True, inline="always")
def free_attempt_slot(ai, hi, ht, pf, pi, si, sl, p, row, now):
    """The ended attempt ``row`` of pool ``p`` gives its slot back."""
    if pi[p, P_TRACKED]:  # free the slot
        free_slot(hi, ht, pf, pi, si, sl, p, ai[row, A_SLOT], now)
    elif pi[p, P_CAP] >= 0:
        if pf[p, PF_PROV] > 0:
            pi[p, P_PROVN] += 1
            push(ht, hi, si, now + pf[p, PF_PROV], SLOT_READY, p, -1)
        else:
            pi[p, P_FREE] += 1


@njit(cache=True)
def on_drop(af, ai, bf, bi, hi, ht, pf, pi, ri, si, wf, wi, r, epoch, now):
    """The rollout waited past the queue timeout: it ends without a sandbox. The pool to dispatch
    (-1: none)."""
    if not (ri[r, R_QUEUED] and ri[r, R_EPOCH] == epoch):
        return -1
    ri[r, R_QUEUED] = 0
    si[WAITING] -= 1
    row = ri[r, R_ROW]
    af[row, A_FIN] = now
    ai[row, A_STATE] = DROPPED
    ai[row, A_PLAN] = DROPPED
    ai[row, A_PHASE] = 0
    af[row, A_BUILD] = 0.0
    af[row, A_AGENT] = 0.0
    af[row, A_VERIFY] = 0.0
    rp = terminal(af, bf, bi, hi, ht, pf, pi, ri, si, wf, wi, r, now)
    if rp >= 0:  # a round of dynamic sampling was released
        return rp
    w = ri[r, R_WORK]
    if wi[w, W_KIND] == K_CLOSED:  # its successor entered the queue
        return ri[r, R_POOL]
    return -1


@njit(cache=True)
def on_release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now):
    """A closed population starts, or RL batches are released: the pool to dispatch (-1: none)."""
    if wi[w, W_KIND] == K_CLOSED:
        for _ in range(wi[w, W_POP]):
            nx = wi[w, W_NEXT]
            if nx < wi[w, W_HI]:
                wi[w, W_NEXT] = nx + 1
                enqueue(af, hi, ht, pf, pi, ri, si, wi, nx, nx, now)
        return wi[w, W_POOL]
    return release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now)


@njit(cache=True, inline="always")
def train_done(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now):
    """RL workload ``w``'s training step ends now: its next version, and the batches that lets out
    (``release``; the pool to dispatch, -1: none). Its caller dispatches them, then ``maybe_train``: the
    released batch starts before the next training is pushed (slot pools and pools made of nodes alike)."""
    si[TRAINING] -= 1
    bf[wi[w, B_LO] + wi[w, NEXT_TRAIN], BF_TRAIN_END] = now
    wi[w, TRAINING_W] = 0
    wi[w, VERSION] += 1
    wi[w, NEXT_TRAIN] += 1
    return release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now)


@njit(cache=True)
def on_train_done(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, w, now):
    p = train_done(af, bf, bi, hi, ht, pf, pi, ri, si, wi, w, now)
    if p >= 0:
        # before the next step is pushed (the event order at equal times)
        dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now)
    maybe_train(bf, bi, hi, ht, si, wf, wi, w, now)


@njit(cache=True)
def on_preempt(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now):
    """A node of pool ``p`` fails: its running attempts end as preempted exceptions, each followed
    by the pool's dispatch, as ``LoopState.on_preempt`` (a later slot of the node may take a retry
    before the node's turn reaches it)."""
    with objmode(node="int64"):
        node = draw_node(p)
    lo = pi[p, P_SLOT0] + node * pi[p, P_SPN]
    top = min(lo + pi[p, P_SPN], pi[p, P_SLOT0] + pi[p, P_CAP])
    if sl[lo, SL_STATE] != S_DOWN:  # the node is up (a node's slots go down and come back together)
        si[PREEMPTIONS] += 1
        for s in range(lo, top):
            row = sl[s, SL_ROW]
            if sl[s, SL_STATE] == S_PROV:  # its SLOT_READY will find it down
                pi[p, P_PROVN] -= 1
            sl[s, SL_STATE] = S_DOWN
            sl[s, SL_ROW] = -1
            if row >= 0 and ai[row, A_STATE] == RUNNING:
                cut_short(af, ai, pi, ri, row, now)
                ai[row, A_SLOT] = -1
                rp = end_attempt(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, row, EXCEPTION, PREEMPTION, False, now)
                if rp >= 0:
                    dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, rp, now)
                    free_attempt_slot(ai, hi, ht, pf, pi, si, sl, p, row, now)
                dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now)
        push(ht, hi, si, now + pf[p, PF_REPLACE], NODE_BACK, p, node)
    if si[DONE] < ri.shape[0]:
        with objmode(gap="float64"):
            gap = draw_gap(p)
        push(ht, hi, si, now + gap, PREEMPT, p, 0)


@njit(cache=True)
def on_node_back(pi, sl, p, node):
    """The node's replacement joined: its slots are free, the lowest on top."""
    lo = pi[p, P_SLOT0] + node * pi[p, P_SPN]
    top = min(lo + pi[p, P_SPN], pi[p, P_SLOT0] + pi[p, P_CAP])
    for s in range(top - 1, lo - 1, -1):
        relist(pi, sl, p, s)


# --- pools made of nodes (``Fleet.node_pools``) ---------------------------------------------------
# A node pool's rollouts take room on a node chosen by ``_node_rules.best_fit``; when none fits, a
# node launches (below max) and the attempt starts when it joins (``NODE_JOIN``), else the rollout the
# pool's policy picked waits for room (it blocks those behind it) or, an evicting policy, evicts for it.
# ``dispatch_inline`` never runs for such a pool (its ``P_ACTIVE`` stays set): ``run`` calls
# ``node_dispatch``, which picks through the same hooks (``pop_front``, ``heads`` + ``best``, ``evict_for``).
@njit(cache=True)
def node_launch(k, t, ready_s, perm, n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen,
                n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head,
                ht, hi, si, n_span):
    """A node of node pool ``k`` launched at ``t``, joining at ``ready_s``, in the lowest free slot; its
    reclaim drawn when the pool has a reclaim rate (``prepare.NodeReclaims.node_life_s``: memoryless, one
    draw a node, from launch)."""
    s = node_free_slot(n_pool, n_pool.size)  # one is free: at most max_nodes of each pool hold one (gone ones swept first)
    node_open(k, s, n_ctr[0], t, ready_s, 1 if perm else 0, n_cap, n_thr, n_pool, n_pos, n_plist, n_plen, n_id, n_used,
              n_count, n_last, n_launch, n_ready, n_release, n_perm, n_opos, n_head, n_olist, n_ofree, n_olen, n_pmax)
    n_span[n_id[s], SPAN_LAUNCH] = t  # its billed span's launch and pool (its release: when it goes)
    n_span[n_id[s], SPAN_POOL] = k
    n_ctr[0] += 1
    n_ki[k, KI_ALIVE] += 1
    if n_ki[k, KI_ALIVE] > n_ki[k, KI_PEAK]:
        n_ki[k, KI_PEAK] = n_ki[k, KI_ALIVE]
    if n_kf[k, KF_RATE] > 0:
        p = n_ki[k, KI_POOL]
        rate = n_kf[k, KF_RATE]
        with objmode(life="float64"):
            life = draw_node_life(p, rate)
        push(ht, hi, si, t + life, NODE_RECLAIM, s, n_id[s])
    return s


@njit(cache=True, inline="always")
def node_span(n_span, nid, launch, release, k):
    """Node ``nid`` of node pool ``k`` was billed from ``launch`` to ``release`` (the stranded series)."""
    n_span[nid, SPAN_LAUNCH] = launch
    n_span[nid, SPAN_RELEASE] = release
    n_span[nid, SPAN_POOL] = k


@njit(cache=True)
def node_sweep(k0, k1, t, n_ki, n_kf, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_pos, n_opos, n_launch,
               n_release, n_id, n_span):
    """Release the nodes of pools ``k0 <= k < k1`` gone before ``t`` (``_node_rules.sweep``: billed launch to
    release), so that the live counts are exact before a launch."""
    node_sweep_rule(k0, k1, t, n_plist, n_plen, n_release, n_launch, n_id, n_pool, n_pos, n_olist, n_ofree, n_olen,
                    n_opos, n_kf[:, KF_NODE_S], n_ki[:, KI_ALIVE], n_span)


@njit(cache=True)
def node_image(af, ai, row, s, nid, g_ri, g_mf, g_f, g_lru, g_mb):
    """First attempt ``row`` starts now on node ``nid`` (slot ``s``) of a pool with ``[images]``: its build
    finds its image on the node or pulls it (``_node_rules.cache_touch``, the node's LRU); on a miss the
    attempt is the one drawn missing (``images.NodeImages``). Retries build warm (the first pulled it)."""
    r = ai[row, A_ROLL]
    if ai[row, A_TRY] != 0:
        return
    if g_lru[s, GL_OWN] != nid:  # a new node in this slot: its cache starts cold (a released node's is gone)
        g_lru[s, GL_OWN] = nid
        g_lru[s, GL_LEN] = 0
        g_mb[s] = 0.0
    hit = node_cache_touch(g_lru[:, GL_IMG0:], g_lru[:, GL_LEN], g_mb, s, g_ri[r, G_IMG], g_f[GF_SIZE0:], g_f[GF_MB],
                           int(g_f[GF_PIN]))
    g_ri[r, G_HIT] = 1 if hit else 0
    g_ri[r, G_NODE] = nid
    g_ri[r, G_SEQ] = int(g_f[GF_SEQ])
    g_f[GF_SEQ] += 1.0
    if not hit:
        af[row, A_BUILD] = g_mf[r, 0]
        af[row, A_AGENT] = g_mf[r, 1]
        af[row, A_VERIFY] = g_mf[r, 2]
        af[row, A_HOLD] = g_mf[r, 3]
        ai[row, A_PLAN] = g_ri[r, G_PLAN]
        ai[row, A_PHASE] = g_ri[r, G_PHASE]


@njit(cache=True)
def node_launch_for(k0, k1, c, m, d, now, n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax, n_spread, n_plist, n_plen, n_olist,
             n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last,
             n_ctr, n_head, ht, hi, si, n_span):
    """No live node fits a request (cpu ``c``, memory ``m``, disk ``d``; ``_node_rules.best_fit`` found
    none): the node slot of a node launched for it in the first of node pools ``k0 <= k < k1`` below its
    max whose node holds it (joining ``provision_s`` later); -1: every pool at its max."""
    node_sweep(k0, k1, now, n_ki, n_kf, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_pos, n_opos,
               n_launch, n_release, n_id, n_span)
    for k in range(k0, k1):  # launch in the first pool with room whose node holds the request
        if n_ki[k, KI_ALIVE] >= n_ki[k, KI_MAX] or not node_holds(k, c, m, d, n_lim):
            continue
        s = node_launch(k, now, now + n_kf[k, KF_PROV], False, n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist,
                        n_plen, n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm,
                        n_launch, n_ready, n_release, n_last, n_ctr, n_head, ht, hi, si, n_span)
        n_ki[k, KI_LAUNCHED] += 1
        return s
    return -1


@njit(cache=True)
def node_dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now, n_pk,
                  n_pf, n_req, n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax, n_spread, n_plist, n_plen, n_olist,
                  n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release,
                  n_last, n_ctr, n_head, n_nxt, n_prv, n_span, g_ri, g_mf, g_f, g_lru, g_mb):
    """Start pool ``p``'s waiting rollouts, each on a node (``_node_rules.best_fit``, or one launched for
    it, ``node_launch_for``, the attempt starting when it joins), the pool's policy choosing which as in ``dispatch_inline``
    (a plain queue's front, ``pop_front``; else ``best`` over the lists' ``heads``), while start-cap room
    lasts, until the chosen one finds no room: a plain queue's front then waits (it blocks those behind
    it), an evicting policy evicts for it (``evict_for``; the victim's request leaves its node) and
    tries again."""
    k0 = n_pk[p, NK_0]
    k1 = k0 + n_pk[p, NK_N]
    policy = pi[p, P_POLICY]
    plain = policy_queue(policy) != CHOOSES  # (a registered plain queue too)
    while True:
        if pi[p, P_START_CAP] >= 0 and pi[p, P_BUILDING] >= pi[p, P_START_CAP]:
            break
        if plain:
            if pi[p, P_QLEN] == 0:
                break
            r = pop_front(pi, pw, qh, r_timeout, ri, wi, p)
            if not ri[r, R_QUEUED]:
                continue  # dropped while it waited
            w = ri[r, R_WORK]
        else:
            heads(pi, pw, ri, tmp, wi, p)
            w, r = best(bf, bi, ceil, pi, pw, r_timeout, ri, tmp, wf, wi, p, now)
            if w < 0:
                break
        if np.isnan(n_pf[p, NP_T0]):  # the pool's first start: its base nodes are up from now
            n_pf[p, NP_T0] = now
            for k in range(k0, k1):
                for _ in range(n_ki[k, KI_MIN]):
                    node_launch(k, now, now, True, n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist,
                                n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch,
                                n_ready, n_release, n_last, n_ctr, n_head, ht, hi, si, n_span)
        c, m, d = n_req[w, 0], n_req[w, 1], n_req[w, 2]
        s = node_best_fit(k0, k1, c, m, d, now, n_olist, n_ofree, n_olen, n_release, n_used, n_lim, n_cap, n_inv,
                          n_spread, n_id, n_pmax)
        if s < 0:  # none fits: a node launched for it (the call is rare: its arguments cost)
            s = node_launch_for(k0, k1, c, m, d, now, n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax, n_spread, n_plist, n_plen,
                         n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready,
                         n_release, n_last, n_ctr, n_head, ht, hi, si, n_span)
        if s < 0 and plain:  # every pool at its max: the front goes back and waits for room
            ri[r, R_QN] = wi[w, W_QH]
            wi[w, W_QH] = r
            if wi[w, W_QT] < 0:
                wi[w, W_QT] = r
            pi[p, P_QLEN] += 1
            break
        if s < 0:
            row = evict_for(af, ai, bf, bi, ceil, hi, ht, pf, pi, pw, r_timeout, ri, si, sl, tmp, wf, wi, p, now)
            if row < 0:
                break
            node_leave(ai, ri, row, now, n_pf, n_req, n_kf, n_cap, n_thr, n_pmax, n_olist, n_ofree, n_olen, n_pool,
                       n_used, n_count, n_opos, n_perm, n_release, n_last, n_head, n_nxt, n_prv)
            continue
        if not plain:
            _unlink(ri, wi, w)
        k = n_pool[s]
        node_take(k, s, c, m, d, n_cap, n_thr, n_used, n_count, n_release, n_olist, n_ofree, n_olen, n_opos, n_pmax)
        n_ki[k, KI_PLACED] += 1
        n_prv[r] = -1  # on the node's list (a reclaim ends them all)
        n_nxt[r] = n_head[s]
        if n_head[s] >= 0:
            n_prv[n_head[s]] = r
        n_head[s] = r
        ri[r, R_QUEUED] = 0
        row = ri[r, R_ROW]
        if n_ready[s] > now:  # its node is joining: the attempt starts then (it still waits)
            # its room (the workload's count) and its start-cap place are held from now; the policy's
            # ``started`` hook runs when it starts (``node_join``)
            wi[w, W_USED] += 1
            if pi[p, P_START_CAP] >= 0:
                pi[p, P_BUILDING] += 1
            ai[row, A_SLOT] = s
            wait = n_ready[s] - now
            if wait > 0:
                n_ki[k, KI_WAITED] += 1
                n_kf[k, KF_WAIT_S] += wait
                if wait > n_kf[k, KF_WAIT_MAX]:
                    n_kf[k, KF_WAIT_MAX] = wait
            push(ht, hi, si, max(n_ready[s], now), NODE_JOIN, row, n_id[s])
        else:  # it starts now, as on a slot pool (with ``[images]`` its build as its node's cache says)
            started(ai, ceil, r_timeout, wi, policy, w, row, now)
            si[WAITING] -= 1
            if n_pk[p, NK_IMAGES]:
                node_image(af, ai, row, s, n_id[s], g_ri, g_mf, g_f, g_lru, g_mb)
            place(af, ai, hi, ht, lg, pf, pi, si, sl, p, row, -1, now)
            ai[row, A_SLOT] = s


@njit(cache=True)
def node_join(af, ai, ceil, hi, ht, lg, pf, pi, r_timeout, ri, si, sl, wi, n_id, row, nid, now, g_ri, g_mf, g_f, g_lru, g_mb):
    """Attempt ``row`` waited for its node (id ``nid``), which joins now: it starts (unless the node was
    reclaimed before it joined: the attempt went back to the queue)."""
    s = ai[row, A_SLOT]
    if ai[row, A_STATE] != PENDING or s < 0 or n_id[s] != nid:
        return
    si[WAITING] -= 1
    p = ri[ai[row, A_ROLL], R_POOL]
    policy_started(pi[p, P_POLICY], ai, ceil, r_timeout, wi, ri[ai[row, A_ROLL], R_WORK], row, now)
    if pi[p, P_START_CAP] >= 0:
        pi[p, P_BUILDING] -= 1  # its start-cap place, held since its dispatch, is the build's now
    if g_ri.shape[0]:
        node_image(af, ai, row, s, nid, g_ri, g_mf, g_f, g_lru, g_mb)
    place(af, ai, hi, ht, lg, pf, pi, si, sl, p, row, -1, now)
    ai[row, A_SLOT] = s


@njit(cache=True, inline="always")
def node_leave(ai, ri, row, now, n_pf, n_req, n_kf, n_cap, n_thr, n_pmax, n_olist, n_ofree, n_olen, n_pool, n_used,
               n_count, n_opos, n_perm, n_release, n_last, n_head, n_nxt, n_prv):
    """Attempt ``row`` (of a pool made of nodes) ended now: its request leaves its node; an emptied node
    is due for release ``scale_down_s`` after its last attempt (a base node stays)."""
    r = ai[row, A_ROLL]
    w = ri[r, R_WORK]
    p = ri[r, R_POOL]
    s = ai[row, A_SLOT]
    k = n_pool[s]
    if n_prv[r] >= 0:
        n_nxt[n_prv[r]] = n_nxt[r]
    else:
        n_head[s] = n_nxt[r]
    if n_nxt[r] >= 0:
        n_prv[n_nxt[r]] = n_prv[r]
    if now > n_pf[p, NP_LAST]:
        n_pf[p, NP_LAST] = now
    node_left(k, s, n_req[w, 0], n_req[w, 1], n_req[w, 2], now, n_kf[k, KF_DOWN], n_cap, n_thr, n_used, n_count, n_last,
              n_release, n_perm, n_olist, n_ofree, n_olen, n_opos, n_pmax)


@njit(cache=True)
def node_reclaim(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, s, nid, now, n_pk, n_pf, n_ki, n_kf,
                 n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos,
                 n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head, n_nxt, n_span):
    """Node ``nid`` (in slot ``s``) is reclaimed now, if it is still up: every attempt on it ends as a
    preempted exception (retried as the retry policy says, ``end_attempt``), one still waiting for the
    node to join goes back to the queue (it ran nothing); the node is gone, billed launch to now, and a
    base node is replaced (joining ``provision_s`` later). The pool to dispatch (-1: none)."""
    if n_pool[s] < 0 or n_id[s] != nid or n_release[s] < now:
        return -1  # released before its reclaim (or its slot holds another node now)
    k = n_pool[s]
    p = n_ki[k, KI_POOL]
    n_ki[k, KI_RECLAIMS] += 1
    r = n_head[s]
    while r >= 0:
        nx = n_nxt[r]
        row = ri[r, R_ROW]
        n_ki[k, KI_LOST] += 1
        if ai[row, A_STATE] == RUNNING:
            cut_short(af, ai, pi, ri, row, now)
            ai[row, A_SLOT] = -1
            end_attempt(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, row, EXCEPTION, PREEMPTION, False, now)
            if now > n_pf[p, NP_LAST]:
                n_pf[p, NP_LAST] = now
        else:  # waiting for the node: back to the queue, its first entry kept
            ai[row, A_SLOT] = -1
            enq = af[row, A_ENQ]
            wi[ri[r, R_WORK], W_USED] -= 1  # the room it held (its policy never saw it start)
            if pi[p, P_START_CAP] >= 0:
                pi[p, P_BUILDING] -= 1
            si[WAITING] -= 1
            enqueue(af, hi, ht, pf, pi, ri, si, wi, r, row, now)
            af[row, A_ENQ] = enq
        r = nx
    n_head[s] = -1
    n_count[s] = 0
    n_kf[k, KF_NODE_S] += now - n_launch[s]
    node_span(n_span, nid, n_launch[s], now, k)
    n_release[s] = np.inf
    n_ki[k, KI_ALIVE] -= 1
    node_unlist(k, s, n_pool, n_pos, n_plist, n_plen, n_olist, n_ofree, n_olen, n_opos)
    if n_perm[s]:
        n_ki[k, KI_LAUNCHED] += 1
        node_launch(k, now, now + n_kf[k, KF_PROV], True, n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist,
                    n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release,
                    n_last, n_ctr, n_head, ht, hi, si, n_span)
    return p


@njit(cache=True)
def node_trace(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, j, now, n_pk, n_pf, n_ki, n_kf,
               n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos,
               n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head, n_nxt, n_span, n_tt, n_tk, n_tu,
               n_tmiss):
    """Reclaim trace row ``j`` is due: one node of its node pool up now (``_node_rules.trace_pick``, the
    node replay's rule) is reclaimed as a Poisson reclaim is (``node_reclaim``); none up, the row is
    counted missed. The next row is pushed. The pool to dispatch (-1: none)."""
    if j + 1 < n_tt.size:
        push(ht, hi, si, n_tt[j + 1], NODE_TRACE, j + 1, 0)
    k = n_tk[j]
    s = node_trace_pick(k, n_tu[j], now, n_plist, n_plen, n_release)
    if s < 0:
        n_tmiss[k] += 1
        return -1
    return node_reclaim(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, s, n_id[s], now, n_pk,
                        n_pf, n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool,
                        n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr,
                        n_head, n_nxt, n_span)


@njit(cache=True)
def run(S):
    """Process events until the run ends (``ST_DONE``), ``ev_limit`` heap events have run
    (``ST_PAUSE``) or the heap or the attempt rows may not hold the next event (``ST_GROW``)."""
    # The arrays are taken out of the tuple once, borrowed (``_jit.borrow``): numba counts a
    # reference for every array a helper is passed (an atomic add and subtract), measured at more
    # than half the kernel's time; ``S`` owns them for the whole call.
    af, ai, arr_r, arr_t, bf, bi = borrow(S.af), borrow(S.ai), borrow(S.arr_r), borrow(S.arr_t), borrow(S.bf), borrow(S.bi)
    ceil, hi, ht, pf, pi, pw = borrow(S.ceil), borrow(S.hi), borrow(S.ht), borrow(S.pf), borrow(S.pi), borrow(S.pw)
    r_timeout, ri, sf, si, tmp = borrow(S.r_timeout), borrow(S.ri), borrow(S.sf), borrow(S.si), borrow(S.tmp)
    wf, wi, sl, qh, lg = borrow(S.wf), borrow(S.wi), borrow(S.sl), borrow(S.qh), borrow(S.lg)
    ii, fl, vi, vf, dv, dq = borrow(S.ii), borrow(S.fl), borrow(S.vi), borrow(S.vf), borrow(S.dv), borrow(S.dq)
    xi, xf, ti, tf, cl, cs, cin = borrow(S.xi), borrow(S.xf), borrow(S.ti), borrow(S.tf), borrow(S.cl), borrow(S.cs), borrow(S.cin)
    # pools made of nodes: their arrays, borrowed once as the others
    n_pk, n_pf, n_req, n_ki, n_kf = borrow(S.n_pk), borrow(S.n_pf), borrow(S.n_req), borrow(S.n_ki), borrow(S.n_kf)
    n_cap, n_lim, n_inv, n_thr, n_pmax = borrow(S.n_cap), borrow(S.n_lim), borrow(S.n_inv), borrow(S.n_thr), borrow(S.n_pmax)
    n_spread, n_plist, n_plen, n_olist = borrow(S.n_spread), borrow(S.n_plist), borrow(S.n_plen), borrow(S.n_olist)
    n_ofree, n_olen, n_pool, n_used = borrow(S.n_ofree), borrow(S.n_olen), borrow(S.n_pool), borrow(S.n_used)
    n_count, n_id, n_pos, n_opos, n_perm = borrow(S.n_count), borrow(S.n_id), borrow(S.n_pos), borrow(S.n_opos), borrow(S.n_perm)
    n_launch, n_ready, n_release, n_last, n_ctr = (borrow(S.n_launch), borrow(S.n_ready), borrow(S.n_release),
                                                   borrow(S.n_last), borrow(S.n_ctr))
    n_head, n_nxt, n_prv = borrow(S.n_head), borrow(S.n_nxt), borrow(S.n_prv)
    n_tt, n_tk, n_tu, n_tmiss, n_span = borrow(S.n_tt), borrow(S.n_tk), borrow(S.n_tu), borrow(S.n_tmiss), borrow(S.n_span)
    span_margin = n_pool.size + 1  # node launches one event may make (at most every node pool's max, and a replacement)
    g_ri, g_mf, g_f, g_lru, g_mb = borrow(S.g_ri), borrow(S.g_mf), borrow(S.g_f), borrow(S.g_lru), borrow(S.g_mb)
    n = ri.shape[0]
    na = arr_t.size
    while si[DONE] < n or si[TRAINING]:
        if si[HN] + si[HEAP_MARGIN] > ht.size or si[ROWS] + si[ROW_MARGIN] > ai.shape[0]:
            return ST_GROW
        if n_ctr[0] + span_margin > n_span.shape[0]:
            return ST_GROW
        k = si[AI]
        if si[HN] > 0 and (k >= na or ht[0] <= arr_t[k]):
            if si[NEV] >= si[EV_LIMIT]:
                return ST_PAUSE
            t = ht[0]
            kind = hi[0, 1]
            x = hi[0, 2]
            xv = hi[0, 3]
            pop(ht, hi, si)
            si[NEV] += 1
        elif k < na:
            t = arr_t[k]
            kind = ARRIVAL
            x = arr_r[k]
            xv = 0
            si[AI] = k + 1
        else:
            break
        now = sf[NOW]
        if t < now:
            si[CLOCK_OK] = 0
        dt = t - now
        sf[AREA_BUSY] += si[BUSY] * dt
        if si[WAITING]:
            sf[AREA_WAIT] += si[WAITING] * dt
        sf[NOW] = t
        now = t
        # Each handler names the pool to dispatch after it (-1: none), so the dispatch below is
        # the loop's one call site (compiled inline, as end_attempt's).
        p = -1
        if kind == AGENT_CUT and ai[x, A_STATE] == RUNNING:  # a served attempt's agent timeout or exception
            c = inference.agent_cut(af, ai, hi, ht, si, r_timeout, xf, xi, x, now, A_ROLL, A_PLAN, A_PHASE, A_AGENT,
                                    A_VERIFY, A_CUT)
            if c != -1:  # it cut the loop: the episode ends at the replicas after the event
                mark_ended_early(pi, ri, si, ri[ai[x, A_ROLL], R_POOL], ai[x, A_ROLL])
            if c == FINISH:  # an exception: the attempt ends now, as at a finish
                kind = FINISH
        if kind == FINISH:
            if ai[x, A_STATE] == RUNNING:
                rp = end_attempt(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, x, ai[x, A_PLAN], ai[x, A_PHASE], False, now)
                p = ri[ai[x, A_ROLL], R_POOL]
                if rp >= 0:  # a round of dynamic sampling was released: dispatched before the slot is freed
                    dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, rp, now)
                    free_attempt_slot(ai, hi, ht, pf, pi, si, sl, p, x, now)
                if n_pk[p, NK_N]:
                    if rp >= 0:  # the released round takes nodes before the ending attempt's room leaves
                        node_dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf,
                                      wi, rp, now, n_pk, n_pf, n_req, n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax,
                                      n_spread, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id,
                                      n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head, n_nxt,
                                      n_prv, n_span, g_ri, g_mf, g_f, g_lru, g_mb)
                    node_leave(ai, ri, x, now, n_pf, n_req, n_kf, n_cap, n_thr, n_pmax, n_olist, n_ofree, n_olen,
                               n_pool, n_used, n_count, n_opos, n_perm, n_release, n_last, n_head, n_nxt, n_prv)
        elif kind == POOL:  # a replica's prefill end or decode finishes; the calls that ended go on
            inference.pool_event(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, vi, vf, xf, xi, x, xv, now)
            inference.continue_calls(af, hi, ht, si, ii, tf, ti, xi, xf, now, A_START, A_BUILD, A_AGENT, A_VERIFY)
        elif kind == TURN:  # attempt x's turn sends its model call (unless its agent phase was cut)
            if ai[x, A_STATE] == RUNNING and af[x, A_AGENT] == np.inf:
                inference.submit(hi, ht, si, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, ai[x, A_ROLL], x, now)
        elif kind == ARRIVAL:
            enqueue(af, hi, ht, pf, pi, ri, si, wi, x, x, now)
            p = ri[x, R_POOL]
        elif kind == SLOT_READY:  # xv: the tracked slot (-1: a counted pool's)
            if xv < 0:
                pi[x, P_PROVN] -= 1
                pi[x, P_FREE] += 1
                p = x
            elif sl[xv, SL_STATE] == S_PROV:
                pi[x, P_PROVN] -= 1
                relist(pi, sl, x, xv)
                p = x
        elif kind == BUILD_DONE:
            if ai[x, A_STATE] == RUNNING:
                p = ri[ai[x, A_ROLL], R_POOL]
                pi[p, P_BUILDING] -= 1
        elif kind == RELEASE:
            p = on_release(af, bf, bi, hi, ht, pf, pi, ri, si, wi, x, now)
        elif kind == TRAIN_DONE:
            if n_pk[wi[x, W_POOL], NK_N]:  # the released batch takes nodes before the next training is pushed
                q = train_done(af, bf, bi, hi, ht, pf, pi, ri, si, wi, x, now)
                if q >= 0 and pi[q, P_QLEN] > 0:
                    node_dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, q,
                                  now, n_pk, n_pf, n_req, n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax, n_spread,
                                  n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos,
                                  n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head, n_nxt, n_prv, n_span,
                                  g_ri, g_mf, g_f, g_lru, g_mb)
                maybe_train(bf, bi, hi, ht, si, wf, wi, x, now)
            else:
                on_train_done(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, x, now)
        elif kind == PREEMPT:
            on_preempt(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, x, now)
        elif kind == NODE_BACK:
            on_node_back(pi, sl, x, xv)
            p = x
        elif kind == DROP:
            p = on_drop(af, ai, bf, bi, hi, ht, pf, pi, ri, si, wf, wi, x, xv, now)
        elif kind == NODE_JOIN:
            node_join(af, ai, ceil, hi, ht, lg, pf, pi, r_timeout, ri, si, sl, wi, n_id, x, xv, now, g_ri, g_mf, g_f, g_lru, g_mb)
        elif kind == NODE_RECLAIM:
            p = node_reclaim(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, x, xv, now, n_pk, n_pf,
                             n_ki, n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used,
                             n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head,
                             n_nxt, n_span)
        elif kind == NODE_TRACE:
            p = node_trace(af, ai, bf, bi, ceil, hi, ht, pf, pi, r_timeout, ri, si, sl, wf, wi, x, now, n_pk, n_pf, n_ki,
                           n_kf, n_cap, n_thr, n_pmax, n_plist, n_plen, n_olist, n_ofree, n_olen, n_pool, n_used,
                           n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release, n_last, n_ctr, n_head,
                           n_nxt, n_span, n_tt, n_tk, n_tu, n_tmiss)
        if p >= 0 and n_pk[p, NK_N]:
            if pi[p, P_QLEN] > 0:  # (most ends find nobody waiting: no call)
                node_dispatch(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now, n_pk, n_pf, n_req,
                              n_ki, n_kf, n_cap, n_lim, n_inv, n_thr, n_pmax, n_spread, n_plist, n_plen, n_olist, n_ofree,
                              n_olen, n_pool, n_used, n_count, n_id, n_pos, n_opos, n_perm, n_launch, n_ready, n_release,
                              n_last, n_ctr, n_head, n_nxt, n_prv, n_span, g_ri, g_mf, g_f, g_lru, g_mb)
            p = -1
        if p >= 0:
            dispatch_inline(af, ai, bf, bi, ceil, hi, ht, lg, pf, pi, pw, qh, r_timeout, ri, si, sl, tmp, wf, wi, p, now)
        if si[ENDED_EARLY]:  # a served attempt ended early in this event: its episode ends at the replicas too
            end_episodes(pi, ri, si, hi, ht, cl, cs, cin, dq, dv, fl, ii, tf, ti, vi, vf, xf, xi, now)
    return ST_DONE

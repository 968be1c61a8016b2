"""The admission loop: every event run on ``_admit_kernel``, with or without an inference pool.

``refusal(prep)`` says why a prepared run is outside the kernel; ``run``
returns what the pure event loop returns for it, bit for bit (its oracle in
``tests/simulate/engine/oracle/``; tests compare them): every admission
policy registered in ``policy_registry`` (FIFO, ``shortest-timeout-first``, ``priority`` with quotas
and preemption, ``timeout-ceiling``, and any registered from outside the package), start caps, queue timeouts, provisioning delays, retries and
node preemption (``preempt_rate_per_node_s``, drawn by ``prepare.NodeReclaims`` as the pure loop
draws), on open, closed and RL workloads; an inference pool serving the model calls (``_inference_rules``:
routing, ``max_num_seqs``, the iteration base, the prefix cache and its host tier); and ``[fleet.limits]``, claimed when an attempt takes its
slot (``fifo.claim``), which the pure loop does not place (``tests/simulate/engine/oracle/limits_pass.py``
places them where nothing feeds back; tests compare).

One source, two ways: numba's build (cached on disk,
``_jit.cache_dir()``), or the same file loaded as plain Python (``_plain.twin``) for a run too small
to pay numba's per-process load (``worth_it``, rent-or-buy), without numba, or with
``NUMBA_DISABLE_JIT`` / ``SANDBOX_FLEET_PURE_PYTHON`` set.
"""

from __future__ import annotations

import gc
import importlib
import sys

import numpy as np

from sandbox_fleet.simulate.engine import fast, node_fleet, policies, policy_registry
from sandbox_fleet.simulate.engine.fast import _plain
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.trainer import TrainerSteps, layouts
from sandbox_fleet.simulate.engine.workloads import CLOSED, OPEN, RL, AsyncRL

_KERNEL = "sandbox_fleet.simulate.engine.fast._admit_kernel"
KINDS = {OPEN: 0, RL: 1, CLOSED: 2}  # _admit_kernel's K_OPEN, K_RL, K_CLOSED
#: rollouts from which compiling pays for numba's per-process load (~0.3-0.4 s CPU from the cache) over
#: the interpreted kernel (~0.1 ms a rollout or model call): plain and compiled cost the same near 5,000
#: (BENCHMARKS.md, "Issue 36, a cache load without SciPy", ``bench_kernel_crossover.py``)
MIN_ROLLOUTS = 5_000
CALLS_PER_ROLLOUT = 1  # model calls that cost the interpreted kernel one fixed-hold rollout's time (measured below)
_spent = 0  # rollouts this process ran interpreted while numba was available (the rent-or-buy rule)
PROGRESS_EVERY = 1 << 16  # heap events between progress callbacks
NO_LIMIT = -1  # the kernel's "none" for caps and limits


def load() -> None:
    """Import numba and the kernel and compile or load it now, on a two-rollout run (numba compiles
    on the first call; later runs of any size then use it)."""
    from sandbox_fleet.simulate.engine.distributions import Deterministic
    from sandbox_fleet.simulate.engine.entities import Fleet
    from sandbox_fleet.simulate.engine.prepare import prepare
    from sandbox_fleet.simulate.engine.workloads import Poisson

    run(prepare(Fleet(cap=1), [Poisson(rate_per_s=1.0, n=2, holds=Deterministic(1.0))], 0), compiled=True)


def loaded() -> bool:
    """Whether this process ran the compiled kernel of the registered policies (its load is paid): a
    module imported for its column constants (a plug-in's hooks) has loaded no machine code yet."""
    K = sys.modules.get(_KERNEL)
    return K is not None and bool(getattr(K.run, "signatures", ())) and K.POLICY_KEY == policy_registry.fingerprint()


#: what buying the compiled kernel costs when its cache is empty, in ``MIN_ROLLOUTS``: the compile after an
#: install took 67.6 + 12.6 s CPU (BENCHMARKS.md, "the inference pool on the admission kernel, the quiet
#: rerun"), the interpreted kernel's time on ~800,000 rollouts or model calls at ~0.1 ms each
COMPILE_OVER_LOAD = 160


def cached() -> bool:
    """Whether the kernel's machine code is in numba's cache (an index of ``run`` under
    ``_jit.cache_dir()``): a process then loads it, else it compiles it (once after an install)."""
    from pathlib import Path

    from sandbox_fleet.simulate.engine.fast import cache_key  # (not ``_jit``: it imports numba)

    # numba drops an index older than its source (it stamps the file's mtime): a cache left by an
    # earlier install or checkout of the same key would be compiled again, so it does not count
    source_mtime = (Path(__file__).parent / "_admit_kernel.py").stat().st_mtime
    return any(p.stat().st_mtime >= source_mtime for p in cache_key.cache_dir().glob("*/_admit_kernel.run-*.nbi"))


def worth_it(prep) -> bool:
    """Whether the compiled kernel pays for what it costs this process: it is loaded, or this run with
    what the process ran interpreted reaches ``MIN_ROLLOUTS`` (a load from the cache) or
    ``COMPILE_OVER_LOAD`` times it (a compile into an empty cache): rent or buy, so a search of many
    small runs buys once and never pays more than twice the better choice's cost. The bits are the
    same either way."""
    if loaded():
        return True
    need = MIN_ROLLOUTS if cached() else MIN_ROLLOUTS * COMPILE_OVER_LOAD
    return work(prep) + _spent >= need


def work(prep) -> int:
    """A run's size in rollouts' worth of the kernel's time: its rollouts, and its model calls when an
    inference pool serves them (each a turn event and a replica event or two)."""
    if prep.turn_draws is None:
        return prep.n
    return prep.n + int(prep.turn_draws.turns.sum()) // CALLS_PER_ROLLOUT


def compiled_for(prep) -> bool:
    """Whether this run takes the compiled kernel (numba may run and it pays), else its source as
    plain Python (``_plain.twin``), counted towards ``worth_it``."""
    global _spent
    if not fast.available():
        return False
    if worth_it(prep):
        return True
    _spent += work(prep)
    return False


def kernel(compiled: bool):
    """The kernel module: numba's build, or the same source loaded as plain Python; loaded again
    when the registered policies changed since it was (its generated dispatch is theirs, and so is
    its cache directory: ``_jit.point_cache``)."""
    key = policy_registry.fingerprint()
    if compiled:
        from sandbox_fleet.simulate.engine.fast import _admit_kernel, _jit

        if _admit_kernel.POLICY_KEY != key:
            _jit.point_cache()
            _admit_kernel = importlib.reload(_admit_kernel)
        return _admit_kernel
    K = _plain.twin(_KERNEL)
    if K.POLICY_KEY != key:
        del sys.modules[_KERNEL + _plain.SUFFIX]
        K = _plain.twin(_KERNEL)
    return K


def refusal(prep) -> str | None:
    """Why the kernel cannot run this prepared run (``None``: it can)."""
    if prep.inference is not None and prep.turn_draws is None:
        return "an inference pool without per-turn draws"
    for pl in prep.pools:
        if pl.admission not in policy_registry.names():
            return f"admission {pl.admission!r}"
    for wl in prep.workloads:
        if wl.kind not in KINDS:
            return f"workload kind {wl.kind!r}"
        pool = prep.pools[wl.pool]
        if isinstance(wl, AsyncRL) and wl.dynamic is not None:
            if pool.admission in policies.POLICIES:
                return f"dynamic_sampling in a pool with admission {pool.admission!r} (no trainer releases its rounds there)"
    return None


def _timeouts(prep) -> np.ndarray:
    out = np.full(prep.n, np.inf)
    for w, ep in enumerate(prep.episodes):
        t = ep.agent_timeout_s
        lo, hi = int(prep.offsets[w]), int(prep.offsets[w + 1])
        if t is not None:
            out[lo:hi] = np.asarray(t, dtype=float)
    return out


def _per_event(pl) -> int:
    """A bound on the attempts one event may start or end in capped pool ``pl`` (the kernel grows
    its rows and heap before an event unless they hold that many more). A dispatch starts at most
    the cap and, evicting (priority with ``preempt``), ends as many; a node preemption ends its
    slots' attempts with a dispatch after each (a later slot of the node may be refilled once)."""
    cap = int(pl.cap)
    spn = pl.slots_per_node if pl.preempt_rate_per_node_s > 0 else 0
    if policy_registry.get(pl.admission).may_evict(pl):
        return (1 + spn) * (cap + 1)
    return cap + 2 * spn + 1


def initial_state(prep, K, on_progress=None):
    """Kernel ``K``'s ``State`` at time 0, with its first events pushed as the pure loop pushes them."""
    from sandbox_fleet.simulate.engine.limits_rules import new_state

    N = prep.n
    pools, wls = prep.pools, prep.workloads
    P, W = len(pools), len(wls)
    i64 = np.int64
    per_event = [_per_event(pl) for pl in pools if pl.cap is not None]
    # a pool made of nodes that evicts may end as many attempts in one event as it holds (its rollouts at most)
    held = np.bincount([wl.pool for wl in wls], weights=prep.counts, minlength=P)
    per_event += [_per_event(pl.model_copy(update={"cap": int(min(n, held[p]))}))
                  for p, (pl, n) in enumerate(zip(pools, node_fleet.room(pools, wls)))
                  if n and policy_registry.get(pl.admission).may_evict(pl)]
    row_margin = max([*per_event, node_fleet.max_lost(pools, wls)], default=0) + 2  # rows one event may append
    heap_margin = 2 * N + 4 * sum(per_event) + 16  # pushes one event may make
    if prep.inference is not None:  # a replica's event reschedules it and continues each call it ended
        heap_margin += 2 * prep.inference.replicas + row_margin  # (each attempt ended early: a replica's reschedule)
        heap_margin += sum(per_event) + 1  # each attempt started: its agent phase's cut; a cut: its verifier's end
    rows0 = N + max(row_margin, N // 8)

    si = np.zeros(K.N_SI, dtype=i64)
    si[K.CLOCK_OK] = 1
    si[K.ROWS] = N
    si[K.SERVED] = int(prep.inference is not None)
    pi = np.full((P, K.N_PI), 0, dtype=i64)
    pi[:, K.P_EE_H] = pi[:, K.P_EE_T] = -1
    pf = np.zeros((P, K.N_PF))
    order: list[int] = []
    reclaims = [prep.node_reclaims(p) for p in range(P)]
    per_pool = np.bincount([wl.pool for wl in wls], weights=prep.counts, minlength=P).astype(i64)
    nslots = nq = 0
    gates = [0.0, 0.0, 0.0]  # ``lg``: the claim's one-cell buffers, then each limited pool's starting slots
    for p, pl in enumerate(pools):
        mine = [w for w, wl in enumerate(wls) if wl.pool == p]
        policy = policy_registry.get(pl.admission)
        pi[p, K.P_POLICY] = policy.code
        pi[p, K.P_CAP] = NO_LIMIT if pl.cap is None else int(pl.cap)
        pi[p, K.P_FREE] = 0 if pl.cap is None else int(pl.cap)
        pi[p, K.P_START_CAP] = NO_LIMIT if pl.start_cap is None else int(pl.start_cap)
        pi[p, K.P_EVICTS] = int(policy.may_evict(pl))
        pi[p, K.P_HAS_TIMEOUT] = int(pl.queue_timeout_s is not None)
        pi[p, K.P_W0], pi[p, K.P_NW] = len(order), len(mine)
        order += mine
        pf[p, K.PF_PROV] = pl.provision_delay_s
        pf[p, K.PF_TIMEOUT] = 0.0 if pl.queue_timeout_s is None else float(pl.queue_timeout_s)
        pf[p, K.PF_REPLACE] = pl.node_replace_s
        if pl.preempt_rate_per_node_s > 0:  # a finite cap (``Fleet`` checks): its slots are tracked
            pi[p, K.P_TRACKED], pi[p, K.P_SLOT0], pi[p, K.P_FTOP] = 1, nslots, int(pl.cap)
            pi[p, K.P_SPN] = pl.slots_per_node
            nslots += int(pl.cap)
        if policy.keyed:  # a plain queue in its ``key`` order: a heap of the pool's rollouts
            pi[p, K.P_Q0] = nq
            nq += int(per_pool[p])
        lim = pl.limits
        if lim is not None and lim.places:  # the limits' figures, as the kernel's ``place`` reads them
            pi[p, K.P_LIMITED], pi[p, K.P_G0], pi[p, K.P_GN] = 1, len(gates), lim.max_starting or 0
            gates += [0.0] * (lim.max_starting or 0)
            pf[p, K.PF_RATE], pf[p, K.PF_BURST] = float(lim.creates_per_s or 0.0), float(lim.burst)
            pf[p, K.PF_COLD], pf[p, K.PF_SIZE] = float(lim.cold_start_s), float(lim.warm_pool_size)
            pf[p, K.PF_REFILL] = float(lim.warm_pool_refill_per_s or 0.0)
            pf[p, K.PF_BUCKET : K.PF_BUCKET + 2] = new_state(float(lim.burst))
            pf[p, K.PF_WARM : K.PF_WARM + 2] = new_state(float(lim.warm_pool_size))

    wi = np.zeros((W, K.N_WI), dtype=i64)
    wf = np.zeros((W, K.N_WF + W))  # then wf[u, N_WF + v]: a timeout-ceiling's count (``node_fleet.ceiling_units``)
    sizes: list[int] = []
    starts: list[int] = []
    r_batch = np.zeros(N, dtype=i64)
    rl = layouts(wls, prep.offsets, r_batch)  # each RL workload's batches (and rounds) in rollout ids
    rounds: list[tuple[int, int, int, int]] = []  # dynamic sampling: (workload, first rollout, rollouts, step)
    for w, wl in enumerate(wls):
        wi[w, K.W_R0] = -1
        pl = pools[wl.pool]
        wi[w, K.W_KIND] = KINDS[wl.kind]
        wi[w, K.W_POOL] = wl.pool
        wi[w, K.W_NEXT] = int(prep.offsets[w])
        wi[w, K.W_HI] = int(prep.offsets[w + 1])
        wi[w, K.W_QH] = wi[w, K.W_QT] = -1
        wi[w, K.W_TOP] = -1 if pi[wl.pool, K.P_EVICTS] else -2
        wi[w, K.W_MAX_RETRIES] = prep.max_retries[w]
        wi[w, K.W_RETRY_ON] = sum(1 << int(c) for c in prep.retry_on[w])
        wf[w, K.WF_START_S] = float(wl.start_s)
        # the per-workload parameters its hooks read (priority: class, quota, limit)
        for col, value in policy_registry.get(pl.admission).column_values(pl, wl).items():
            wi[w, getattr(K, col)] = value
        if wl.kind == CLOSED:
            wi[w, K.W_POP] = min(wl.population, wl.count)
        if wl.kind == RL:
            st = rl[w]
            wi[w, K.B_LO] = len(sizes)
            wi[w, K.B_N] = len(st.sizes)
            wi[w, K.STALENESS] = st.staleness
            wf[w, K.WF_TRAIN_S] = st.train_s
            wf[w, K.WF_START_S] = st.start_s
            sizes += [int(sz) for sz in st.sizes]
            starts += st.starts
            if st.rounds is not None:
                wi[w, K.W_R0] = len(rounds)  # made a row index below, once every batch row is counted
                rounds += [(w, int(lo), int(sz), int(j)) for lo, sz, j in zip(st.round_lo, st.round_size, st.round_step)]
    # a timeout-ceiling pool's running ceilings: at most its cap, or its rollouts when it has none
    ceil_cap = max([int(per_pool[p]) if pl.cap is None else int(pl.cap)
                    for p, pl in enumerate(pools) if pl.admission == "timeout-ceiling"] or [0]) + 1
    nb = len(sizes) + len(rounds)

    si[K.EV_LIMIT] = PROGRESS_EVERY if on_progress is not None else np.iinfo(i64).max
    si[K.HEAP_MARGIN], si[K.ROW_MARGIN] = heap_margin, row_margin
    bi = np.zeros((nb, K.N_BI), dtype=i64)
    bi[: len(sizes), K.BI_START], bi[: len(sizes), K.BI_SIZE], bi[: len(sizes), K.BI_REM] = starts, sizes, sizes
    bi[:, K.BI_PEND] = -1
    for k, (w, lo, sz, j) in enumerate(rounds):
        row, step = len(sizes) + k, int(wi[w, K.B_LO]) + j
        bi[row, K.BI_START], bi[row, K.BI_SIZE], bi[row, K.BI_REM], bi[row, K.BI_STEP] = lo, sz, sz, j
        if bi[step, K.BI_RN] == 0:
            bi[step, K.BI_R0] = row
        bi[step, K.BI_RN] = row + 1
    for w in rl:
        if wi[w, K.W_R0] >= 0:
            wi[w, K.W_R0] += len(sizes)
    ri = np.zeros((N, K.N_RI), dtype=i64)
    ri[:, K.R_WORK] = np.repeat(np.arange(W, dtype=i64), prep.counts)
    ri[:, K.R_POOL] = np.repeat(np.array([wl.pool for wl in wls], dtype=i64), prep.counts)
    ri[:, K.R_BATCH] = r_batch
    ri[:, K.R_ROW] = np.arange(N)
    ri[:, K.R_QN] = -1
    ai = np.zeros((rows0, K.N_AI), dtype=i64)
    ai[:N, K.A_ROLL] = np.arange(N)
    ai[:, K.A_STATE] = K.PENDING
    ai[:N, K.A_PHASE] = prep.phase
    ai[:N, K.A_PLAN] = prep.plan
    ai[:, K.A_BELOW] = -1
    ai[:, K.A_SLOT] = -1
    sl = np.zeros((nslots, K.N_SL), dtype=i64)
    for p in range(P):  # every slot free and on its pool's stack, the lowest id on top
        if pi[p, K.P_TRACKED]:
            base, cap = int(pi[p, K.P_SLOT0]), int(pi[p, K.P_CAP])
            sl[base : base + cap, K.SL_STACK] = np.arange(base + cap - 1, base - 1, -1)
    sl[:, K.SL_INLIST] = 1
    af = np.full((rows0, K.N_AF), np.nan)
    af[:, K.A_WAIT] = 0.0
    for c, v in ((K.A_BUILD, prep.build), (K.A_AGENT, prep.agent), (K.A_VERIFY, prep.verify), (K.A_HOLD, prep.hold_np)):
        af[:N, c] = v
    S = K.State(
        si=si, sf=np.zeros(K.N_SF), ht=np.zeros(heap_margin + 1024), hi=np.zeros((heap_margin + 1024, 4), dtype=i64),
        arr_t=np.array(prep.arr_t_np, dtype=float), arr_r=np.asarray(prep.arr_ids, dtype=i64),
        pi=pi, pf=pf, pw=np.array(order, dtype=i64), wi=wi, wf=wf, ceil=np.zeros((W, ceil_cap)),
        bi=bi, bf=np.full((nb, K.N_BF), np.nan), ri=ri, r_timeout=_timeouts(prep), ai=ai, af=af,
        tmp=np.zeros((2, W), dtype=i64), sl=sl, qh=np.zeros(nq, dtype=i64),
        lg=np.array(gates, dtype=float), **_inference_state(prep, K, rows0), **node_fleet.state_fields(pools, wls, K, N),
        **node_fleet.trace_fields(pools, K, prep.seed, wls), **node_fleet.image_fields(prep, K))
    for p, (pl, n) in enumerate(zip(pools, node_fleet.room(pools, wls))):
        if pl.node_pools:
            pi[p, K.P_ACTIVE] = 1  # its slot dispatch never runs: ``run`` calls ``node_dispatch``
            pi[p, K.P_CAP] = n  # the sandboxes its nodes hold at their max (a bound on the rows one event appends)
            S.n_pk[p, K.NK_IMAGES] = int(prep.node_images is not None)  # its builds meet its nodes' caches
    wf[:, K.WF_CEIL_CAP], wf[:, K.N_WF:] = node_fleet.ceiling_units(pools, wls, pi[:, K.P_CAP])
    # The first events, in the pure loop's order (``LoopState.schedule_start``): RL, then closed releases.
    for w, st in rl.items():
        K.push(S.ht, S.hi, S.si, st.start_s, K.RELEASE, w, 0)
    for w, wl in enumerate(wls):
        if wl.kind == CLOSED:
            K.push(S.ht, S.hi, S.si, float(wl.start_s), K.RELEASE, w, 0)
    for p, pl in enumerate(pools):
        if pl.preempt_rate_per_node_s > 0:
            K.push(S.ht, S.hi, S.si, 0.0 + reclaims[p].gap_s(), K.PREEMPT, p, 0)
    if S.n_tt.size:  # a reclaim trace: its first row (each row pushes the next, ``node_trace``)
        K.push(S.ht, S.hi, S.si, float(S.n_tt[0]), K.NODE_TRACE, 0, 0)
    return S, rl, reclaims


def _in_flight(prep) -> int:
    """Rollouts that may hold a sandbox at once (a bound on calls per replica)."""
    if any(pl.cap is None for pl in prep.pools):
        return prep.n
    return min(prep.n, sum(int(pl.cap) for pl in prep.pools))


def _records(prep, rows: int) -> int:
    """Rows of the per-call records (``tf``) a run with ``rows`` attempt rows may fill: every turn
    drawn, and where attempts may restart (retries, evictions, node preemption) each further row's
    turns again and one withdrawn call per row."""
    td = prep.turn_draws
    turns = int(td.turns.sum())
    if rows <= prep.n or td.turns.size == 0:
        return turns
    return max(turns + (rows - prep.n) * int(td.turns.max()), rows)


def _inference_state(prep, K, rows: int) -> dict[str, np.ndarray]:
    """The inference pool's arrays of ``K.State`` (``_inference_rules``' layout), empty without one."""
    from sandbox_fleet.simulate.engine.fast import _inference_rules as I

    i64 = np.int64
    cfg, td, N = prep.inference, prep.turn_draws, prep.n
    if cfg is None:
        return {"ii": np.zeros(I.N_II, dtype=i64), "fl": np.zeros(I.N_FL), "vi": np.zeros((0, I.N_VI), dtype=i64),
                "vf": np.zeros((0, I.N_VF)), "dv": np.zeros((0, 1)), "dq": np.zeros((0, 1, 2), dtype=i64),
                "xi": np.zeros((0, I.N_XI), dtype=i64), "xf": np.zeros((0, I.N_XF)),
                "ti": np.zeros((0, I.N_TI), dtype=i64), "tf": np.zeros((0, I.N_TF)),
                "cl": np.zeros((0, 4), dtype=np.int32), "cs": np.zeros((0, 2)), "cin": np.zeros((0, 2), dtype=np.bool_)}
    R = cfg.replicas
    sticky = cfg.routing == "sticky"
    unlimited = cfg.kv_cache_bytes is None
    ii = np.zeros(I.N_II, dtype=i64)
    ii[I.I_STICKY], ii[I.I_CACHING], ii[I.I_UNLIMITED], ii[I.I_STRIDE] = sticky, bool(cfg.caching), unlimited, N
    ii[I.I_SEATS] = int(cfg.max_num_seqs) if cfg.max_num_seqs is not None else (1 << 62)
    fl = np.zeros(I.N_FL)
    fl[I.F_B], fl[I.F_INV_P], fl[I.F_INV_D] = float(cfg.base_units), 1.0 / cfg.prefill_tok_s, 1.0 / cfg.decode_tok_s
    fl[I.F_KVB], fl[I.F_CAP] = float(cfg.kv_bytes_per_token), 0.0 if unlimited else float(cfg.kv_cache_bytes)
    fl[I.F_HOST_CAP] = float(cfg.kv_offload_bytes)
    vi = np.zeros((R, I.N_VI), dtype=i64)
    for c in (I.V_PF_H, I.V_PF_T, I.V_WT_H, I.V_WT_T, I.V_G_H, I.V_G_T, I.V_H_H, I.V_H_T):
        vi[:, c] = -1
    vf = np.zeros((R, I.N_VF))
    vf[:, I.V_P_END] = np.inf
    C = max(1, _in_flight(prep))
    xi = np.zeros((N, I.N_XI), dtype=i64)
    xi[:, I.X_OFF], xi[:, I.X_NT] = td.off, td.turns
    xi[:, I.X_QNEXT] = xi[:, I.X_ASSIGN] = -1
    ti = np.zeros((int(td.turns.sum()), I.N_TI), dtype=i64)
    ti[:, I.T_NEW], ti[:, I.T_DEC] = td.new_tokens, td.decode_tokens
    tf = np.zeros((_records(prep, rows) if _may_restart(prep) else ti.shape[0], I.N_TF))
    tf[: ti.shape[0], I.T_CMD] = td.command_s
    keys = 1 if not cfg.caching else (N if sticky else R * N)
    return {"ii": ii, "fl": fl, "vi": vi, "vf": vf, "dv": np.zeros((R, C)), "dq": np.zeros((R, C, 2), dtype=i64),
            "xi": xi, "xf": np.zeros((N, I.N_XF)), "ti": ti, "tf": tf, "cl": np.full((keys, 4), -1, dtype=np.int32),
            "cs": np.zeros((keys, 2)), "cin": np.zeros((keys, 2), dtype=np.bool_)}


def _may_restart(prep) -> bool:
    """Whether an attempt may end early or retry (a served rollout then starts its episode again)."""
    return any(m > 0 for m in prep.max_retries) or any(
        pl.preempt_rate_per_node_s > 0 or policy_registry.get(pl.admission).may_evict(pl)
        or any(k.reclaim_per_node_h > 0 for k in pl.node_pools or ()) for pl in prep.pools)


def _served(prep, S, K):
    """The inference pool's records (``inference.figures.ServedRun``), its replicas' clocks closed at the
    run's end (``None`` without a pool)."""
    from sandbox_fleet.simulate.engine.fast import _inference_rules as I
    from sandbox_fleet.simulate.engine.inference.figures import ServedRun, unloaded_holds

    cfg = prep.inference
    if cfg is None:
        return None
    I.close(S.fl, S.vi, S.vf, float(S.sf[K.NOW]))  # the run's end
    evicted = 0.0
    for e in S.vf[:, I.V_EVICTED].tolist():  # summed as the pure pool does: replica by replica
        evicted += e
    ii, tf = S.ii, S.tf
    return ServedRun(
        replicas=cfg.replicas, gpus_per_replica=cfg.gpus_per_replica,
        wait_s=tf[: ii[I.I_NWAIT], I.T_WAIT].copy(), ttft_s=tf[: ii[I.I_NTTFT], I.T_TTFT].copy(),
        sojourn_s=tf[: ii[I.I_NSOJ], I.T_SOJ].copy(),
        area_busy=S.vf[:, I.V_A_BUSY].copy(), area_n=S.vf[:, I.V_A_N].copy(), area_sys=S.vf[:, I.V_A_SYS].copy(),
        input_tokens=int(ii[I.I_IN_T]), cached_tokens=int(ii[I.I_CACHED_T]), decode_tokens=int(ii[I.I_DEC_T]),
        evicted_bytes=float(evicted), r_input=S.xi[:, I.X_IN].copy(), r_cached=S.xi[:, I.X_CACHED].copy(),
        r_output=S.xi[:, I.X_OUT].copy(), r_turns=S.xi[:, I.X_NT].copy(), unloaded_hold_s=unloaded_holds(prep),
        prefill_tok_s=cfg.prefill_tok_s, decode_tok_s=cfg.decode_tok_s,
        withdrawn_s=tf[: ii[I.I_NWD], I.T_WD].copy(), calls=int(ii[I.I_NSUB]))


def _grown(a: np.ndarray, size: int) -> np.ndarray:
    """``a`` with room for ``size`` rows (the new ones zero)."""
    if a.shape[0] >= size:
        return np.ascontiguousarray(a)
    out = np.zeros((size, *a.shape[1:]), dtype=a.dtype)
    out[: a.shape[0]] = a
    return out


def run(prep, on_progress=None, compiled: bool | None = None) -> ExecutorOutput:
    """Run ``prep`` on the compiled kernel or its source as plain Python (``compiled``; ``None``:
    as ``compiled_for`` decides); the same bits either way."""
    K = kernel(compiled_for(prep) if compiled is None else compiled)
    N = prep.n
    S, rl, K.RECLAIMS[0] = initial_state(prep, K, on_progress)
    K.RETRY_DRAW[0] = prep.retry_attempt
    # The retry draws (Python, through objmode) allocate; a cyclic collection they trigger would
    # walk every object of the process (measured: the largest cost of a run with evictions). The
    # kernel makes no cycles, so the collector waits until it returns.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        while True:
            status = K.run(S)
            if status == K.ST_DONE:
                break
            if status == K.ST_GROW:
                rows, heap = S.ai.shape[0], S.ht.size
                if int(S.si[K.ROWS]) + int(S.si[K.ROW_MARGIN]) > rows:
                    rows *= 2
                if int(S.si[K.HN]) + int(S.si[K.HEAP_MARGIN]) > heap:
                    heap *= 2
                S = S._replace(ht=_grown(S.ht, heap), hi=_grown(S.hi, heap), ai=_grown(S.ai, rows), af=_grown(S.af, rows))
                if int(S.n_ctr[0]) + S.n_pool.size + 1 > S.n_span.shape[0]:  # node ids' billed spans
                    S = S._replace(n_span=_grown(S.n_span, 2 * S.n_span.shape[0]))
                if prep.inference is not None and _may_restart(prep):  # room for the calls of the new rows
                    S = S._replace(tf=_grown(S.tf, _records(prep, rows)))
            else:
                on_progress(int(S.si[K.DONE]), N)
                S.si[K.EV_LIMIT] += PROGRESS_EVERY
    finally:
        K.RETRY_DRAW[0] = K.RECLAIMS[0] = None
        if was_enabled:
            gc.enable()

    steps = {w: trainer_steps(S, K, w) for w in rl}

    rows = int(S.si[K.ROWS])
    cols = {"arrival_s": S.af[:, K.A_ENQ], "start_s": S.af[:, K.A_START], "finish_s": S.af[:, K.A_FIN],
            "state": S.ai[:, K.A_STATE], "phase": S.ai[:, K.A_PHASE], "build_s": S.af[:, K.A_BUILD],
            "agent_s": S.af[:, K.A_AGENT], "verify_s": S.af[:, K.A_VERIFY]}
    first = {k: (v[:N].astype(np.int8) if k in ("state", "phase") else v[:N].copy()) for k, v in cols.items()}
    extra = {k: v[N:rows].tolist() for k, v in cols.items()}
    extra["rollout"] = S.ai[N:rows, K.A_ROLL].tolist()
    extra["attempt"] = S.ai[N:rows, K.A_TRY].tolist()
    return ExecutorOutput(first=first, extra=extra, rl=steps, preemptions=int(S.si[K.PREEMPTIONS]), area_busy=float(S.sf[K.AREA_BUSY]),
                          area_wait=float(S.sf[K.AREA_WAIT]), clock_monotonic=bool(S.si[K.CLOCK_OK]),
                          limits=_limits_figures(S, K, N), served=_served(prep, S, K),
                          nodes=node_fleet.figures(S, K, prep.pools), images=node_fleet.image_run(S, K, prep))


def trainer_steps(S, K, w: int) -> TrainerSteps:
    """RL workload ``w``'s steps as the kernel left them (its batch rows ``bi``/``bf``, its counters in ``wi``)."""
    wi, bf = S.wi, S.bf
    lo, hi = int(wi[w, K.B_LO]), int(wi[w, K.B_LO] + wi[w, K.B_N])
    return TrainerSteps(release_s=bf[lo:hi, K.BF_RELEASE].tolist(), batch_end_s=bf[lo:hi, K.BF_BATCH_END].tolist(),
                        train_start_s=bf[lo:hi, K.BF_TRAIN_START].tolist(), train_end_s=bf[lo:hi, K.BF_TRAIN_END].tolist(),
                        version=int(wi[w, K.VERSION]), next_release=int(wi[w, K.NEXT_REL]),
                        next_train=int(wi[w, K.NEXT_TRAIN]), training=bool(wi[w, K.TRAINING_W]),
                        rem=S.bi[lo:hi, K.BI_REM].tolist())


def _limits_figures(S, K, N: int) -> dict[str, np.ndarray] | None:
    """``[fleet.limits]``' per-rollout figures (``ExecutorOutput.limits``) over the first attempts that
    started in a limited pool, in rollout order: claimed warm, and the wait from the slot to the sandbox."""
    limited = S.pi[:, K.P_LIMITED] == 1
    if not limited.any():
        return None
    mine = limited[S.ri[:, K.R_POOL]] & ~np.isnan(S.af[:N, K.A_START])
    return {"warm": S.ai[:N, K.A_WARM][mine].astype(bool), "ready_wait_s": S.af[:N, K.A_WAIT][mine].copy()}

"""The compiled pool loop: fleet + inference pool runs on a numba kernel.

``supported(prep)`` says whether a prepared run is in the kernel's feature set; ``run``
returns what ``loop.run_events`` returns (the same arrays, areas, RL state and pool
records, bit for bit), with the pool's records already as an ``inference.figures.ServedRun``.

Supported: an inference pool (sticky or least-loaded routing, ``max_num_seqs``, iteration
base, prefix cache with or without a host tier, unlimited or none); closed, RL and open
workloads; any number of fleet pools, each FIFO, bounded or unbounded, with or without a
provisioning delay. Everything else runs on the pure path: fleets with a start cap,
another admission policy or a queue timeout (preemption and retries are refused with a
pool anyway), and runs whose per-replica arrays would be too large (``MAX_CELLS``).

Numba is imported only here (and by the kernel module), when a run first needs it. The
kernel is cached on disk (``cache=True``, in ``_jit.cache_dir()``: ``numba/`` under
``$SANDBOX_FLEET_CACHE_DIR``, else ``~/.cache/sandbox-fleet``), so only the first process after an
install or an upgrade pays its compile (~15-25 s). Every process still pays ~1-2 s on its first
use (importing numba, loading the cached machine code), which the pure loop spends on ~100,000
model calls, so ``worth_it`` sends smaller runs to the pure loop until the kernel is loaded in
the process (``load()`` loads it up front, e.g. before a search that runs many small loops).
"""

from __future__ import annotations

import sys

import numpy as np

from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.workloads import CLOSED, OPEN, RL

_KERNEL = "sandbox_fleet.simulate.engine.fast._pool_loop_kernel"
MIN_CALLS = 100_000  # model calls from which a process's first kernel run beats the pure loop
MAX_CELLS = 20_000_000  # replica x rollout cells (done heaps, 24 B each; least-loaded cache keys, 34 B)
PROGRESS_EVERY = 1 << 16  # events between progress callbacks (the kernel pauses and resumes)
HEAP_SLACK = 2  # initial event-heap size in units of the most one event can push (it doubles when needed)


def _in_flight(prep) -> int:
    """Rollouts that may hold a sandbox at once (a bound on calls per replica)."""
    if any(pl.cap is None for pl in prep.pools):
        return prep.n
    return min(prep.n, sum(int(pl.cap) for pl in prep.pools))


def load() -> None:
    """Import numba and the kernel now (later runs of any size then use it)."""
    from sandbox_fleet.simulate.engine.fast import _pool_loop_kernel  # noqa: F401


def loaded() -> bool:
    return _KERNEL in sys.modules


def worth_it(prep) -> bool:
    """Whether the kernel pays for its per-process load on this run."""
    return loaded() or int(np.sum(prep.turn_draws.turns)) >= MIN_CALLS


def supported(prep) -> bool:
    """Whether the kernel covers this prepared run (else the pure path runs it)."""
    cfg = prep.inference
    if cfg is None or prep.turn_draws is None:
        return False
    from sandbox_fleet.simulate.engine.executors import pool_refusal

    if any(pool_refusal(pl) is not None for pl in prep.pools):  # FIFO pools only, as the recursion
        return False
    for wl in prep.workloads:
        if wl.kind not in (OPEN, RL, CLOSED) or wl.retry.max_retries > 0:
            return False
    cells = cfg.replicas * _in_flight(prep)
    if cfg.routing != "sticky" and cfg.caching:
        cells = max(cells, cfg.replicas * prep.n)
    return cells <= MAX_CELLS


def run(prep, on_progress=None) -> ExecutorOutput:
    from sandbox_fleet.simulate.engine.fast import _pool_loop_kernel as K
    from sandbox_fleet.simulate.engine.inference.figures import ServedRun, unloaded_holds
    from sandbox_fleet.simulate.engine.trainer import rl_states

    N = prep.n
    cfg = prep.inference
    td = prep.turn_draws
    pools, wls = prep.pools, prep.workloads
    P, W, R = len(pools), len(wls), cfg.replicas
    i64 = np.int64

    si = np.zeros(K.N_SI, dtype=i64)
    si[K.CLOCK_OK] = 1
    sf = np.zeros(K.N_SF)

    # Initial events, pushed in the pure loop's order: RL releases, then closed populations.
    init = [(float(wl.start_s), K.RELEASE, w) for w, wl in enumerate(wls) if wl.kind == RL]
    init += [(float(wl.start_s), K.RELEASE, w) for w, wl in enumerate(wls) if wl.kind == CLOSED]
    margin = N + 2 * R + 16  # pushes one event can make, at most
    cap0 = HEAP_SLACK * margin + len(init)
    ht = np.zeros(cap0)
    hi = np.zeros((cap0, 4), dtype=i64)
    for t, kind, w in init:
        K.hpush(ht, hi, si, t, kind, w, 0)

    arr_t = np.array(prep.arr_t_np, dtype=float)
    arr_r = np.asarray(prep.arr_ids, dtype=i64)

    a_enq = np.full(N, np.nan)
    a_start = np.full(N, np.nan)
    a_fin = np.full(N, np.nan)
    a_state = np.full(N, -2, dtype=i64)
    a_phase = prep.phase.astype(i64)
    a_build = np.array(prep.build, dtype=float)
    a_agent = np.array(prep.agent, dtype=float)
    a_verify = np.array(prep.verify, dtype=float)
    a_hold = np.asarray(prep.hold_np, dtype=float)
    a_plan = prep.plan.astype(i64)
    r_work = np.repeat(np.arange(len(wls), dtype=i64), prep.counts)
    r_pool = np.repeat(np.array([wl.pool for wl in wls], dtype=i64), prep.counts)
    fnext = np.full(N, -1, dtype=i64)

    fq = np.full((P, 2), -1, dtype=i64)
    free_n = np.array([pl.cap or 0 for pl in pools], dtype=i64)
    unb = np.array([pl.cap is None for pl in pools], dtype=np.bool_)
    prov = np.array([pl.provision_delay_s for pl in pools], dtype=float)

    # Workloads; RL batches flat across RL workloads.
    wi = np.zeros((W, K.N_WI), dtype=i64)
    train_s = np.zeros(W)
    sizes: list[int] = []
    starts: list[int] = []
    r_batch = np.zeros(N, dtype=i64)
    rl = rl_states(wls, prep.offsets, r_batch)  # the trainer's state, as the Python executors set it up
    for w, wl in enumerate(wls):
        wi[w, K.W_KIND] = {OPEN: K.K_OPEN, RL: K.K_RL, CLOSED: K.K_CLOSED}[wl.kind]
        wi[w, K.W_POOL] = wl.pool
        wi[w, K.W_NEXT] = int(prep.offsets[w])
        wi[w, K.W_HI] = int(prep.offsets[w + 1])
        if wl.kind == CLOSED:
            wi[w, K.W_POP] = min(wl.population, wl.count)
        if wl.kind == RL:
            st = rl[w]
            wi[w, K.B_LO] = len(sizes)
            wi[w, K.B_N] = len(st.sizes)
            wi[w, K.STALENESS] = st.staleness
            train_s[w] = st.train_s
            sizes += [int(sz) for sz in st.sizes]
            starts += [st.base + int(s0) for s0 in st.starts]
    nb = len(sizes)
    b_size = np.array(sizes, dtype=i64)
    b_start = np.array(starts, dtype=i64)
    b_rem = b_size.copy()
    release_s, batch_end_s, train_start_s, train_end_s = (np.full(nb, np.nan) for _ in range(4))

    # Driver and pool.
    off = td.off.astype(i64)
    nt = np.asarray(td.turns, dtype=i64)
    new = np.asarray(td.new_tokens, dtype=i64)
    dec = np.asarray(td.decode_tokens, dtype=i64)
    cmd = np.asarray(td.command_s, dtype=float)
    cur = np.zeros(N, dtype=i64)
    ctx = np.zeros(N, dtype=i64)
    ri = np.zeros((R, K.N_RI), dtype=i64)
    for c in (K.PF_H, K.PF_T, K.WT_H, K.WT_T, K.G_H, K.G_T, K.H_H, K.H_T):
        ri[:, c] = -1
    rf = np.zeros((R, K.N_RF))
    rf[:, K.P_END] = np.inf
    C = max(1, _in_flight(prep))
    dv = np.zeros((R, C))
    ds = np.zeros((R, C), dtype=i64)
    dr = np.zeros((R, C), dtype=i64)
    qnext = np.full(N, -1, dtype=i64)
    assign = np.full(N, -1, dtype=i64)
    req_arr, req_pre, req_dec = np.zeros(N), np.zeros(N), np.zeros(N)
    req_ctx = np.zeros(N, dtype=i64)
    req_last = np.zeros(N, dtype=np.bool_)
    r_in, r_cached, r_out = (np.zeros(N, dtype=i64) for _ in range(3))
    calls = int(nt.sum())
    wait_s, ttft_s, sojourn_s = np.zeros(calls), np.zeros(calls), np.zeros(calls)
    sticky = cfg.routing == "sticky"
    seats = int(cfg.max_num_seqs) if cfg.max_num_seqs is not None else (1 << 62)
    unlimited = cfg.kv_cache_bytes is None
    cap_bytes = 0.0 if unlimited else float(cfg.kv_cache_bytes)
    keys = 1 if not cfg.caching else (N if sticky else R * N)  # < 2**31 (MAX_CELLS)
    cache_arrays = []
    for _ in range(2):  # GPU tier, host tier: prev, next, size, present
        cache_arrays += [np.full(keys, -1, dtype=np.int32), np.full(keys, -1, dtype=np.int32), np.zeros(keys),
                         np.zeros(keys, dtype=np.bool_)]

    gp, gn, gs, gin, hp, hn, hs, hin = cache_arrays
    a = K.Args(
        si=si, sf=sf, ht=ht, hi=hi, ev_limit=PROGRESS_EVERY if on_progress is not None else np.iinfo(i64).max,
        N=N, arr_t=arr_t, arr_r=arr_r,
        a_enq=a_enq, a_start=a_start, a_fin=a_fin, a_state=a_state, a_phase=a_phase, a_build=a_build,
        a_agent=a_agent, a_verify=a_verify, a_hold=a_hold, a_plan=a_plan,
        r_work=r_work, r_pool=r_pool, r_batch=r_batch, fnext=fnext,
        fq=fq, free_n=free_n, unb=unb, prov=prov,
        wi=wi, train_s=train_s, b_start=b_start, b_size=b_size, b_rem=b_rem, release_s=release_s,
        batch_end_s=batch_end_s, train_start_s=train_start_s, train_end_s=train_end_s,
        served=True, off=off, nt=nt, new=new, dec=dec, cmd=cmd, cur=cur, ctx=ctx,
        ri=ri, rf=rf, dv=dv, ds=ds, dr=dr, qnext=qnext, assign=assign, req_arr=req_arr, req_ctx=req_ctx,
        req_pre=req_pre, req_dec=req_dec, req_last=req_last,
        r_in=r_in, r_cached=r_cached, r_out=r_out, wait_s=wait_s, ttft_s=ttft_s, sojourn_s=sojourn_s,
        sticky=sticky, b=float(cfg.base_units), inv_p=1.0 / cfg.prefill_tok_s, inv_d=1.0 / cfg.decode_tok_s,
        seats=seats, kvb=float(cfg.kv_bytes_per_token), caching=bool(cfg.caching), cap_bytes=cap_bytes,
        cap_unlimited=unlimited, host_cap=float(cfg.kv_offload_bytes), stride=N,
        gp=gp, gn=gn, gs=gs, gin=gin, hp=hp, hn=hn, hs=hs, hin=hin, margin=margin)
    while True:
        status = K.run(*a)
        if status == K.ST_DONE:
            break
        if status == K.ST_GROW:
            a = a._replace(ht=np.concatenate((a.ht, np.zeros(a.ht.size))), hi=np.concatenate((a.hi, np.zeros_like(a.hi))))
        else:
            on_progress(int(si[K.DONE]), N)
            a = a._replace(ev_limit=a.ev_limit + PROGRESS_EVERY)

    for w, st in rl.items():
        lo, hi_ = int(wi[w, K.B_LO]), int(wi[w, K.B_LO] + wi[w, K.B_N])
        st.release_s = release_s[lo:hi_].tolist()
        st.batch_end_s = batch_end_s[lo:hi_].tolist()
        st.train_start_s = train_start_s[lo:hi_].tolist()
        st.train_end_s = train_end_s[lo:hi_].tolist()
        st.rem = b_rem[lo:hi_].tolist()
        st.version, st.next_release, st.next_train = (int(wi[w, c]) for c in (K.VERSION, K.NEXT_REL, K.NEXT_TRAIN))
        st.training = bool(wi[w, K.TRAINING_W])

    first = {"arrival_s": a_enq, "start_s": a_start, "finish_s": a_fin, "state": a_state.astype(np.int8),
             "phase": a_phase.astype(np.int8), "build_s": a_build, "agent_s": a_agent, "verify_s": a_verify}
    extra: dict[str, list] = {k: [] for k in first}
    extra["rollout"] = []
    extra["attempt"] = []
    evicted = 0
    for e in rf[:, K.EVICTED].tolist():  # summed as the pure path does: replica by replica
        evicted += e
    served = ServedRun(
        replicas=R,
        gpus_per_replica=cfg.gpus_per_replica,
        wait_s=wait_s[: si[K.NWAIT]].copy(),
        ttft_s=ttft_s[: si[K.NTTFT]].copy(),
        sojourn_s=sojourn_s[: si[K.NSOJ]].copy(),
        area_busy=rf[:, K.A_BUSY].copy(),
        area_n=rf[:, K.A_N].copy(),
        area_sys=rf[:, K.A_SYS].copy(),
        input_tokens=int(si[K.IN_T]),
        cached_tokens=int(si[K.CACHED_T]),
        decode_tokens=int(si[K.DEC_T]),
        evicted_bytes=float(evicted),
        r_input=r_in,
        r_cached=r_cached,
        r_output=r_out,
        r_turns=nt.copy(),
        unloaded_hold_s=unloaded_holds(prep),
        prefill_tok_s=cfg.prefill_tok_s,
        decode_tok_s=cfg.decode_tok_s,
    )
    return ExecutorOutput(first=first, extra=extra, rl=rl, area_busy=float(sf[K.AREA_BUSY]),
                          area_wait=float(sf[K.AREA_WAIT]), clock_monotonic=bool(si[K.CLOCK_OK]), served=served)

"""Pools made of nodes inside the engine (``Fleet.node_pools``, issue 37 item 1): the checks, the admission
kernel's node arrays, and the figures it returns.

The kernel (``fast/_admit_kernel.node_dispatch``) places each attempt on a node chosen by the one
placement rule (``fast/_node_rules.best_fit``, which the node replay ``nodes.py`` also calls); what feeds
back is the wait: a request that fits no live node launches one (below ``max_nodes``) and starts when it
joins ``provision_s`` later, or, every pool at its max, waits for room (the pool's admission policy picks
which rollout goes next, as on a slot pool). A node is billed from launch to release (``scale_down_s``
after its last attempt left, unless one lands first); a pool's ``min_nodes`` from its first start to its
last end. With ``[images]`` each node keeps its own image cache (``image_fields``), from cold at its launch.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.entities import Fleet, FleetNodePool
from sandbox_fleet.simulate.engine.workloads import Workload


def check(pools: Sequence[Fleet], workloads: Sequence[Workload]) -> None:
    """Every workload of a pool made of nodes gives a request that some node type of the pool holds."""
    for w, wl in enumerate(workloads):
        nps = pools[wl.pool].node_pools
        where = f"workload {wl.name or f'w{w}'}"
        if nps is None:
            if wl.request is not None:
                raise InputError(f"{where}: 'request' needs a pool made of nodes (its pool has no node_pools)")
            continue
        if wl.request is None:
            raise InputError(f"{where}: its pool is made of nodes: give request = {{cpu = ..., memory_mb = ..., disk_mb = ...}}")
        cpu, mem, disk = wl.request
        if not any(cpu <= n.cpu and mem <= n.memory_mb and disk <= n.disk_mb for n in nps):
            raise InputError(f"{where}: request (cpu {cpu:g}, memory_mb {mem:g}, disk_mb {disk:g}) fits no node type "
                             f"of its pool ({', '.join(n.name for n in nps)})")


def state_fields(pools: Sequence[Fleet], workloads: Sequence[Workload], K: Any, n_rollouts: int) -> dict[str, np.ndarray]:
    """The kernel ``K``'s ``n_*`` State fields for these pools (one empty node pool row when none has nodes)."""
    i64 = np.int64
    P = len(pools)
    n_pk = np.zeros((P, K.N_NK), i64)
    specs: list[FleetNodePool] = []
    owner: list[int] = []
    for p, pl in enumerate(pools):
        if pl.node_pools:
            n_pk[p, K.NK_0], n_pk[p, K.NK_N] = len(specs), len(pl.node_pools)
            specs += pl.node_pools
            owner += [p] * len(pl.node_pools)
    nk = max(len(specs), 1)
    slots = max(sum(n.max_nodes for n in specs), 1)  # gone nodes are swept before a launch: at most max each
    n_req = np.zeros((len(workloads), 3))
    for w, wl in enumerate(workloads):
        if wl.request is not None:
            n_req[w] = wl.request
    cap = np.ones((nk, 3))
    n_ki = np.zeros((nk, K.N_KI), i64)
    n_kf = np.zeros((nk, K.N_KF))
    for k, n in enumerate(specs):
        n_ki[k, K.KI_POOL] = owner[k]
        cap[k] = (n.cpu, n.memory_mb, n.disk_mb)
        n_ki[k, K.KI_MIN], n_ki[k, K.KI_MAX] = n.min_nodes, n.max_nodes
        n_kf[k, K.KF_PROV], n_kf[k, K.KF_DOWN] = n.provision_s, n.scale_down_s
        n_kf[k, K.KF_RATE] = n.reclaim_per_node_h / 3600.0
    lim = cap * (1.0 + 1e-12)  # a request fits up to the allocatable, with float slack (nodes.py's)
    # the smallest request of each node pool's fleet pool: a node with less free cpu holds none (open list)
    thr = np.zeros(nk)
    for p, pl in enumerate(pools):
        if pl.node_pools:
            mine = [wl.request[0] for wl in workloads if wl.pool == p and wl.request is not None]
            lo = min(mine) if mine else 0.0
            for k in range(int(n_pk[p, 0]), int(n_pk[p, 0] + n_pk[p, 1])):
                thr[k] = lo - (lim[k, 0] - cap[k, 0])
    n_pf = np.full((P, K.N_NP), np.nan)
    n_pf[:, K.NP_LAST] = -np.inf
    return {
        "n_pk": n_pk, "n_pf": n_pf, "n_req": n_req, "n_ki": n_ki, "n_kf": n_kf, "n_cap": cap, "n_lim": lim, "n_inv": 1.0 / cap[:, :2].copy(),
        "n_thr": thr, "n_pmax": np.zeros(nk), "n_spread": np.array([int(n.placement == "spread") for n in specs] or [0], i64),
        "n_plist": np.zeros((nk, slots), i64), "n_plen": np.zeros(nk, i64), "n_olist": np.zeros((nk, slots), i64),
        "n_ofree": np.zeros((nk, slots)), "n_olen": np.zeros(nk, i64), "n_pool": np.full(slots, -1, i64),
        "n_used": np.zeros((slots, 3)), "n_count": np.zeros(slots, i64), "n_id": np.zeros(slots, i64),
        "n_pos": np.zeros(slots, i64), "n_opos": np.full(slots, -1, i64), "n_perm": np.zeros(slots, i64),
        "n_launch": np.zeros(slots), "n_ready": np.zeros(slots), "n_release": np.full(slots, np.inf),
        "n_last": np.full(slots, -np.inf), "n_ctr": np.zeros(1, i64), "n_head": np.full(slots, -1, i64),
        "n_nxt": np.full(n_rollouts, -1, i64), "n_prv": np.full(n_rollouts, -1, i64),
        "n_span": np.zeros((max(64, 2 * (slots + 1)), 3))}


def trace_origin_us(p: int, pools: Sequence[Fleet], workloads: Sequence[Workload]) -> int | None:
    """The wall-clock instant of fleet pool ``p``'s run time 0 (microseconds since the epoch): the first
    start of the telemetry its replay workloads replay (each replays it from its ``start_s``); None when
    it replays none. Replays of telemetry whose clocks disagree leave a timestamp ambiguous: refused."""
    origins = {o for wl in workloads if wl.pool == p and (o := getattr(wl, "origin_us", None)) is not None}
    if len(origins) > 1:
        raise InputError(f"{pools[p].reclaim_trace}: pool {pools[p].name}'s replay workloads replay telemetry on "
                         "different clocks, so a timestamp in its reclaim trace has no one origin; give seconds from "
                         "the run's start")
    return origins.pop() if origins else None


def trace_fields(pools: Sequence[Fleet], K: Any, seed: int, workloads: Sequence[Workload] = ()) -> dict[str, np.ndarray]:
    """The kernel's reclaim trace fields: every fleet pool's trace (``Fleet.reclaim_trace``, read by the one
    reader, ``reclaim_trace.load_trace``, seconds from the run's start; a timestamp from the replayed
    telemetry's first start, ``trace_origin_us``) merged in time order (ties:
    pool order, then file order), each row's node pool, and the uniform draw of the node it takes (a stream
    of its own a fleet pool, ``prepare.NODE_TRACE``, so no other draw moves); rows before the run's start
    find no node up (counted missed)."""
    from sandbox_fleet.simulate.engine.prepare import NODE_TRACE, stream
    from sandbox_fleet.simulate.engine.reclaim_trace import load_trace

    nk = max(sum(len(pl.node_pools or []) for pl in pools), 1)
    miss = np.zeros(nk, np.int64)
    t_all, k_all, u_all = [np.zeros(0)], [np.zeros(0, np.int64)], [np.zeros(0)]
    k0 = 0
    for p, pl in enumerate(pools):
        if pl.reclaim_trace is not None and pl.node_pools:
            tr = load_trace(pl.reclaim_trace, trace_origin_us(p, pools, workloads), [n.name for n in pl.node_pools])
            order = np.argsort(tr.time_s, kind="stable")
            t, k = tr.time_s[order], tr.pool[order] + k0
            u = stream(seed, NODE_TRACE, p).random(t.size)
            early = t < 0
            np.add.at(miss, k[early], 1)
            t_all.append(t[~early])
            k_all.append(k[~early])
            u_all.append(u[~early])
        k0 += len(pl.node_pools or [])
    t, k, u = np.concatenate(t_all), np.concatenate(k_all), np.concatenate(u_all)
    order = np.argsort(t, kind="stable")
    return {"n_tt": t[order], "n_tk": k[order].astype(np.int64), "n_tu": u[order], "n_tmiss": miss}


def room(pools: Sequence[Fleet], workloads: Sequence[Workload]) -> list[int]:
    """Per pool, the most sandboxes its nodes hold at ``max_nodes`` (0: a slot pool): each node type's
    whole requests of the pool's smallest request in each of cpu, memory and disk. With one request
    kind it is exact (``max_nodes`` x the requests a node holds): the cap of the slot pool it equals, and
    a bound on the attempts one event starts or evicts (a ``timeout-ceiling`` counts ``ceiling_units``)."""
    out = []
    for p, pl in enumerate(pools):
        reqs = [wl.request for wl in workloads if wl.pool == p and wl.request is not None]
        if not pl.node_pools or not reqs:
            out.append(0)
            continue
        lo = [min(float(q[c]) for q in reqs) for c in range(3)]
        out.append(sum(n.max_nodes * min(int(cap * (1.0 + 1e-12) // x) if x > 0 else 1 << 30
                                         for cap, x in zip((n.cpu, n.memory_mb, n.disk_mb), lo))
                       for n in pl.node_pools))
    return out


def _fit(cap: Sequence[float], q: Sequence[float]) -> int:
    """Whole requests ``q`` an empty node of allocatable ``cap`` holds (``room``'s count, with its float slack)."""
    return min(int(c * (1.0 + 1e-12) // x) if x > 0 else 1 << 30 for c, x in zip(cap, q))


def ceiling_units(pools: Sequence[Fleet], workloads: Sequence[Workload], caps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A timeout-ceiling's count in sandboxes of the RL workload ``v``'s own request (its ``ceiling_admits``):
    per workload ``v``, the sandboxes of its request its pool holds (a slot pool: its cap ``caps[p]``, -1
    unbounded; a pool made of nodes: each node type's whole requests of ``v``'s at ``max_nodes``), and per
    pair ``(u, v)`` the sandboxes of ``v``'s request one of ``u``'s takes room for: the most, over cpu,
    memory and disk, of ``ceil(u's / v's)`` (1 on a slot pool and between equal requests).

    The bound is sound on nodes: a node's whole requests of ``v`` drop, when a sandbox lands on it, by at
    most that count in the dimension that binds, so a batch the count admits fits whichever nodes the
    other sandboxes sit on (fragmentation included); with one request kind it is ``room``'s exact count."""
    W = len(workloads)
    cap_v = np.zeros(W)
    units = np.ones((W, W))
    for v, wv in enumerate(workloads):
        pl = pools[wv.pool]
        if not pl.node_pools or wv.request is None:
            cap_v[v] = float(caps[wv.pool])
            continue
        qv = wv.request
        cap_v[v] = float(sum(n.max_nodes * _fit((n.cpu, n.memory_mb, n.disk_mb), qv) for n in pl.node_pools))
        for u, wu in enumerate(workloads):
            if wu.pool == wv.pool and wu.request is not None and tuple(wu.request) != tuple(qv):
                units[u, v] = float(max(math.ceil(a / b * (1.0 - 1e-12)) if b > 0 else 0 for a, b in zip(wu.request, qv)))
    return cap_v, units


def image_fields(prep: Any, K: Any) -> dict[str, np.ndarray]:
    """The kernel ``K``'s ``g_*`` State fields: ``[images]`` on pools made of nodes (``prep.node_images``),
    each node slot's cache (``_node_rules.cache_touch``'s layout after ``K.GL_IMG0``) and each first
    attempt's outcome; no rollout rows without."""
    from sandbox_fleet.simulate.engine.fast._node_rules import cache_width

    i64 = np.int64
    ni = prep.node_images
    if ni is None:
        return {"g_ri": np.zeros((0, K.N_G), i64), "g_mf": np.zeros((0, 4)), "g_f": np.zeros(K.GF_SIZE0 + 1),
                "g_lru": np.zeros((1, K.GL_IMG0 + 1), i64), "g_mb": np.zeros(1)}
    cfg = ni.config
    size = np.asarray(cfg.catalog.size_mb, dtype=float)
    slots = max(sum(n.max_nodes for pl in prep.pools for n in pl.node_pools or []), 1)
    g_ri = np.full((prep.n, K.N_G), -1, i64)
    g_ri[:, K.G_IMG] = ni.image
    g_ri[:, K.G_PLAN], g_ri[:, K.G_PHASE] = ni.miss_i[:, 0], ni.miss_i[:, 1]
    g_f = np.zeros(K.GF_SIZE0 + size.size)
    g_f[K.GF_MB], g_f[K.GF_PIN], g_f[K.GF_SIZE0 :] = float(cfg.cache_mb), float(cfg.prepull), size
    g_lru = np.zeros((slots, K.GL_IMG0 + cache_width(size, float(cfg.cache_mb), cfg.prepull)), i64)
    g_lru[:, K.GL_OWN] = -1
    return {"g_ri": g_ri, "g_mf": np.ascontiguousarray(ni.miss_f, dtype=float), "g_f": g_f, "g_lru": g_lru,
            "g_mb": np.zeros(slots)}


def image_run(S: Any, K: Any, prep: Any) -> Any:
    """The summary's image run of a pool made of nodes (``images.NodeImages.run``), or None."""
    if prep.node_images is None:
        return None
    return prep.node_images.run(S.g_ri[:, K.G_HIT], S.g_ri[:, K.G_NODE], S.g_ri[:, K.G_SEQ])


def max_lost(pools: Sequence[Fleet], workloads: Sequence[Workload]) -> int:
    """The most attempts one node reclaim may end (each may append a retry row): a node's cpu over the
    smallest cpu request of its pool, over the pools with reclaims."""
    most = 0
    for p, pl in enumerate(pools):
        cpus = [wl.request[0] for wl in workloads if wl.pool == p and wl.request is not None]
        for n in pl.node_pools or []:
            if (n.reclaim_per_node_h > 0 or pl.reclaim_trace is not None) and cpus:
                most = max(most, int(n.cpu // min(cpus)) + 1)
    return most


def figures(S: Any, K: Any, pools: Sequence[Fleet]) -> list[dict[str, Any]] | None:
    """Per node pool, after the run: node-hours and $ (the nodes still up billed to their release, a base
    node to its pool's last end), peak nodes, launches, attempts placed, the waits for a joining node, the
    reclaim trace's rows that found no node up, and each node's billed span."""
    if not any(pl.node_pools for pl in pools):
        return None
    from sandbox_fleet.simulate.engine.fast._node_rules import billed_until

    node_s = S.n_kf[:, K.KF_NODE_S].copy()
    span = S.n_span[: int(S.n_ctr[0])].copy()  # by node id: launch, release, node pool (the released ones)
    for s in range(S.n_pool.size):
        k = int(S.n_pool[s])
        if k < 0:
            continue
        p = next(p for p in range(len(pools)) if S.n_pk[p, K.NK_0] <= k < S.n_pk[p, K.NK_0] + S.n_pk[p, K.NK_N])
        until = billed_until(bool(S.n_perm[s]), float(S.n_release[s]), float(S.n_pf[p, K.NP_LAST]))
        node_s[k] += until - S.n_launch[s]
        span[S.n_id[s]] = (S.n_launch[s], until, k)  # still up at the end: billed to there
    out = []
    for p, pl in enumerate(pools):
        for j, n in enumerate(pl.node_pools or []):
            k = int(S.n_pk[p, K.NK_0]) + j
            nh = float(node_s[k]) / 3600.0
            t0, t1 = float(S.n_pf[p, K.NP_T0]), float(S.n_pf[p, K.NP_LAST])
            out.append({
                "pool": pl.name, "name": n.name, "tier": n.tier, "node_hours": nh, "usd": nh * n.usd_per_node_h,
                "peak_nodes": int(S.n_ki[k, K.KI_PEAK]), "launched": int(S.n_ki[k, K.KI_LAUNCHED]),
                "attempts": int(S.n_ki[k, K.KI_PLACED]), "waited": int(S.n_ki[k, K.KI_WAITED]),
                "reclaims": int(S.n_ki[k, K.KI_RECLAIMS]), "sandboxes_lost": int(S.n_ki[k, K.KI_LOST]),
                "wait_s_total": float(S.n_kf[k, K.KF_WAIT_S]), "wait_s_max": float(S.n_kf[k, K.KF_WAIT_MAX]),
                "span_s": (t1 - t0) if np.isfinite(t0) and np.isfinite(t1) else 0.0,
                "trace_missed": int(S.n_tmiss[k]) if pl.reclaim_trace is not None else None,
                # its nodes' billed spans (launch order), for the stranded series (``metrics.node_figures``)
                "node_launch_s": span[span[:, 2] == k, 0].tolist(), "node_release_s": span[span[:, 2] == k, 1].tolist()})
    return out


# --- a slot pool's node keys as a one-pool node fleet (issue 37 item 1) -------------------------------
#: the request one slot stands for on a pool expanded from its slot keys (``as_node_fleet``): one unit of
#: cpu, memory and disk, so a node of ``slots_per_node`` units holds ``slots_per_node`` attempts
SLOT_REQUEST = (1.0, 1.0, 1.0)


def node_keys_refusal(pl: Fleet, pools: Sequence[Fleet]) -> str | None:
    """Why a slot pool with node preemption cannot be written as a one-pool node fleet (``None``: it can).

    - ``provision_delay_s``: a freed slot waits before its next rollout; a node's freed room is
      reusable at once (its ``provision_s`` is a launched node's join), so no node pool says it.
    - ``[images]`` beside another slot pool: the cache follows the engine's placement only when every
      pool is made of nodes (``images.check_pool``)."""
    if pl.provision_delay_s > 0:
        return (f"fleet {pl.name}: provision_delay_s = {pl.provision_delay_s:g} (a freed slot's refill delay) has no "
                "node-pool counterpart: a node's freed room is reusable at once")
    if len(pools) > 1 and any(q.node_pools is None and q is not pl for q in pools):
        return f"fleet {pl.name}: beside slot pools ([images] and the summary keep slot pools and node pools apart)"
    return None


def slot_node_pools(pl: Fleet) -> list[FleetNodePool]:
    """A slot pool's node keys (``cap``, ``slots_per_node``, ``preempt_rate_per_node_s``, ``node_replace_s``)
    as node pools: ``cap // slots_per_node`` base nodes of ``slots_per_node`` units (``SLOT_REQUEST``), and,
    when ``cap`` is not a multiple, one base node of the remaining units (a second node type, tried after
    the full ones); each reclaimed at the key's rate (Poisson per node) and replaced by a node that joins
    ``node_replace_s`` later. The nodes pack (the most-allocated node first), as a real scheduler fills
    nodes; billed at $0 (the slot keys carry no price)."""
    assert pl.cap is not None  # Fleet refuses preemption without a finite cap
    spn = int(pl.slots_per_node)
    full, rest = divmod(int(pl.cap), spn)
    out = []
    for name, units, count in (("nodes", spn, full), ("partial", rest, 1 if rest else 0)):
        if count:
            out.append(FleetNodePool(name=name, cpu=float(units), memory_mb=float(units), disk_mb=float(units),
                                     tier="spot", min_nodes=count, max_nodes=count, provision_s=float(pl.node_replace_s),
                                     reclaim_per_node_h=3600.0 * float(pl.preempt_rate_per_node_s), placement="pack"))
    return out


def as_node_fleet(pools: Sequence[Fleet], workloads: Sequence[Workload]) -> tuple[list[Fleet], list[Workload]]:
    """The run with every slot pool that has node preemption written as a one-pool node fleet
    (``slot_node_pools``), its workloads requesting ``SLOT_REQUEST``; pools without preemption, pools
    made of nodes and workloads on them unchanged. A pool ``node_keys_refusal`` names is an error."""
    import dataclasses

    out_pools = list(pools)
    out_wl = list(workloads)
    for p, pl in enumerate(pools):
        if pl.node_pools is not None or pl.preempt_rate_per_node_s <= 0:
            continue
        why = node_keys_refusal(pl, pools)
        if why is not None:
            raise InputError(why)
        out_pools[p] = pl.model_copy(update={"cap": None, "preempt_rate_per_node_s": 0.0, "node_replace_s": 0.0,
                                             "node_pools": slot_node_pools(pl)})
        for w, wl in enumerate(workloads):
            if wl.pool == p:
                out_wl[w] = dataclasses.replace(wl, request=SLOT_REQUEST)
    return out_pools, out_wl

"""Node replay: each rollout's request placed on a node of a node pool, nodes launched, billed and released.

A pass over per-rollout intervals (start, end, request) where nothing feeds back into the run that
made them: issue 37's placement and billing. A fleet is one or more ``NodePoolSpec`` in priority
order (the reserved base first, as a NodePool ``weight`` or a preferred affinity makes it):

- **placement**: a rollout starting at ``t`` goes on a node that fits its cpu, memory and disk (the
  node's allocatable: capacity after the system reserve), trying the pools in order; inside a pool
  ``pack`` takes the most-allocated node (the kube-scheduler's ``MostAllocated`` score, cpu and
  memory weighted equally, as Karpenter's consolidation prefers) and ``spread`` the least-allocated
  (the scheduler's default ``LeastAllocated`` scoring); ties go to the oldest node. It never migrates.
- **launch**: when nothing fits, the first pool below its ``max_nodes`` whose node holds the request
  launches a node; it joins ``provision_s`` later, and the rollouts placed on it before then wait
  for it (their hold starts when it joins: the wait shifts their own interval, nothing else).
  A rollout that no pool can hold (too big for every node type, or every pool at its max) is
  counted as unplaced, not queued.
- **release**: a pool's first ``min_nodes`` nodes are up over the whole history; any other node is
  released ``scale_down_s`` after its last sandbox ends (Karpenter's ``consolidateAfter`` for an
  empty node), unless a rollout lands on it first; a rollout starting exactly at the release time
  still lands on it.
- **billing**: a node is billed from launch to release; the ``min_nodes`` from the first start to
  the last end. Ends come before starts at the same instant (a freed request is reusable at once).
- **reclaims**: a pool with ``reclaim_per_node_h`` > 0 loses each node at an exponential time from
  its launch (Poisson per node, memoryless: the catalog's spot rate), and a reclaim trace (time,
  pool) takes one node of its pool up then, drawn uniformly. A reclaim ends every sandbox on the node
  (each restarts from scratch at that instant, placed again like a start, its whole hold again: the
  re-run) and the node is gone, billed launch to reclaim; a ``min_nodes`` node is replaced at once
  and joins ``provision_s`` later. At one instant ends come before reclaims, reclaims before starts.
  A rollout that waited for its node and is reclaimed before the node joined lost nothing it ran.

The kernel is one event loop (starts in time order and re-runs, ends, reclaims), compiled by numba
when the work pays for loading it (``worth_it``; plain Python otherwise, the same source). Ends come
from the measured ends in order, except the rollouts that waited for a node or were re-run (a binary
heap of their shifted ends); each start scans its pools' live nodes in order, with a contiguous
free-cpu test first, until a pool has a fit.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.fast._node_rules import (
    best_fit,
    billed_until,
    free_slot,
    holds,
    leave,
    open_node,
    sweep,
    take,
    trace_pick,
)
from sandbox_fleet.simulate.engine.fast._node_rules import unlist as _unlist

PLACEMENTS = ("pack", "spread")
_INF = np.inf


@dataclass(frozen=True)
class NodePoolSpec:
    """One node pool: a node type's allocatable cpu / memory MB / disk MB (after the system reserve),
    its price and tier, its size limits and delays, and its placement rule."""

    name: str
    cpu: float
    memory_mb: float
    disk_mb: float
    usd_per_node_h: float
    tier: str = "on_demand"
    min_nodes: int = 0
    max_nodes: Optional[int] = None  # None: unbounded
    provision_s: float = 0.0
    scale_down_s: float = 0.0
    placement: str = "pack"
    #: spot reclaims per node-hour, Poisson per node (0: none)
    reclaim_per_node_h: float = 0.0

    def __post_init__(self) -> None:
        where = f"node pool {self.name!r}"
        for key in ("cpu", "memory_mb", "disk_mb"):
            v = getattr(self, key)
            if not (v >= 0 and np.isfinite(v)):
                raise InputError(f"{where}: {key} must be a finite number >= 0, got {v!r}")
        for key in ("usd_per_node_h", "provision_s", "scale_down_s", "reclaim_per_node_h"):
            v = getattr(self, key)
            if not (v >= 0 and np.isfinite(v)):
                raise InputError(f"{where}: {key} must be a finite number >= 0, got {v!r}")
        if int(self.min_nodes) != self.min_nodes or self.min_nodes < 0:
            raise InputError(f"{where}: min_nodes must be a whole number >= 0, got {self.min_nodes!r}")
        if self.max_nodes is not None and (int(self.max_nodes) != self.max_nodes or self.max_nodes < self.min_nodes):
            raise InputError(f"{where}: max_nodes must be a whole number >= min_nodes ({self.min_nodes}), got {self.max_nodes!r}")
        if self.placement not in PLACEMENTS:
            raise InputError(f"{where}: placement must be one of {', '.join(PLACEMENTS)}, got {self.placement!r}")


@dataclass
class PoolReplay:
    """One pool's replayed figures."""

    name: str
    tier: str
    node_hours: float
    usd: float
    peak_nodes: int
    launched: int  # nodes launched after the start (the min_nodes not counted)
    rollouts: int  # rollouts placed on this pool's nodes
    #: allocatable resource-hours billed but not requested (cpu core-h, memory MB-h, disk MB-h)
    stranded_cpu_h: float
    stranded_memory_mb_h: float
    stranded_disk_mb_h: float
    #: reclaims of this pool's nodes, the sandboxes they ended (each re-run), the most one reclaim ended,
    #: and the sandbox-hours those ended attempts had run (the re-run work)
    reclaims: int = 0
    sandboxes_lost: int = 0
    most_lost: int = 0
    rerun_sandbox_h: float = 0.0


@dataclass
class NodeReplay:
    """The replay of one history on one fleet."""

    pools: list[PoolReplay]
    span_s: float  # first start to last end (after provisioning waits)
    usd: float
    placed: int
    unplaced: int  # rollouts no pool could hold (request above every node type, or every pool at its max)
    waited: int  # rollouts that waited for a node to join
    wait_s_total: float
    wait_s_max: float
    node_of: np.ndarray = field(repr=False)  # per rollout (input order): the node id it ran on, -1 unplaced
    #: per node id (launch order): its pool, and the interval it was billed (launch to release), seconds
    node_pool: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    node_launch_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    node_release_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    #: per rollout (input order): the end of its last attempt (NaN unplaced); the attempts a reclaim ended
    #: (rollout, pool, begin, end seconds); trace reclaims that found no node of their pool up
    end_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    lost_rollout: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    lost_pool: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0, np.int64))
    lost_begin_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    lost_end_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    trace_missed: int = 0
    hold_s: np.ndarray = field(repr=False, default_factory=lambda: np.zeros(0))
    requests: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 3)))
    pool_capacity: np.ndarray = field(repr=False, default_factory=lambda: np.zeros((0, 3)))

    def nodes_over_time(self, bins: int) -> tuple[np.ndarray, np.ndarray]:
        """The most nodes up at once in each of ``bins`` equal spans of the billed time, per pool
        (``nodes_over_time``)."""
        return nodes_over_time(self.node_pool, self.node_launch_s, self.node_release_s, len(self.pools), bins)

    def stranded_over_time(self, bins: int) -> tuple[np.ndarray, np.ndarray]:
        """Allocatable billed but not requested per span (``stranded_over_time``), every attempt's request
        over [begin, end) (the ended attempts included: their node was billed while they ran)."""
        done = self.node_of >= 0
        begin = np.concatenate([self.end_s[done] - self.hold_s[done], self.lost_begin_s])
        stop = np.concatenate([self.end_s[done], self.lost_end_s])
        weight = np.concatenate([self.requests[done], self.requests[self.lost_rollout]])
        table, kind = np.unique(weight, axis=0, return_inverse=True)  # the request kinds
        return stranded_over_time(self.node_launch_s, self.node_release_s, self.node_pool, self.pool_capacity,
                                  begin, stop, kind.reshape(-1), table, bins)

    @property
    def reclaims(self) -> int:
        return sum(p.reclaims for p in self.pools)

    @property
    def node_hours(self) -> float:
        return sum(p.node_hours for p in self.pools)

    @property
    def usd_per_h(self) -> Optional[float]:
        """The fleet's cost per hour of history; None over a zero span."""
        return self.usd / (self.span_s / 3600.0) if self.span_s > 0 else None


def nodes_over_time(node_pool: np.ndarray, launch_s: np.ndarray, release_s: np.ndarray, pools: int,
                    bins: int) -> tuple[np.ndarray, np.ndarray]:
    """The most nodes up at once in each of ``bins`` equal spans of the billed time (first launch to last
    release), per pool: (bin starts in seconds, an array pools x bins). A node is up over [launch, release).
    Called on the node replay's nodes and on the engine's (``metrics.node_figures``)."""
    t0 = float(launch_s.min())
    t1 = float(release_s.max())
    width = (t1 - t0) / bins if t1 > t0 else 1.0
    edges = t0 + width * np.arange(bins)
    out = np.zeros((pools, bins), np.int64)
    for k in range(pools):
        mine = node_pool == k
        m = int(mine.sum())
        if m == 0:
            continue
        times = np.concatenate([launch_s[mine], release_s[mine]])
        step = np.concatenate([np.ones(m, np.int64), -np.ones(m, np.int64)])
        order = np.lexsort((step, times))  # a release before a launch at one instant: up over [launch, release)
        times, up = times[order], np.cumsum(step[order])
        where = np.minimum(((times - t0) // width).astype(np.int64), bins - 1)
        np.maximum.at(out[k], where, up)
        before = np.searchsorted(times, edges, side="right") - 1  # the count carried into each bin
        out[k] = np.maximum(out[k], np.where(before >= 0, up[np.maximum(before, 0)], 0))
    return edges, out


def stranded_over_time(launch_s: np.ndarray, release_s: np.ndarray, node_kind: np.ndarray, capacity: np.ndarray,
                       begin_s: np.ndarray, end_s: np.ndarray, request_kind: np.ndarray, requests: np.ndarray,
                       bins: int) -> tuple[np.ndarray, np.ndarray]:
    """Allocatable billed but not requested, per resource, in each of ``bins`` equal spans of the billed
    time (first launch to last release): (bin starts in seconds, an array 3 x bins of cpu core-h, memory
    MB-h and disk MB-h). Billed: each node's ``capacity[node_kind]`` row (kinds x 3) over [launch, release);
    requested: each attempt's ``requests[request_kind]`` row over [begin, end). Called on the node
    replay's intervals and on the engine's (``metrics.node_figures``): the one computation."""
    t0 = float(launch_s.min())
    t1 = float(release_s.max())
    width = (t1 - t0) / bins if t1 > t0 else 1.0
    edges = t0 + width * np.arange(bins + 1)
    edges[-1] = max(t1, edges[-1])
    billed = _overlap_hours(launch_s, release_s, node_kind, capacity, edges)
    requested = _overlap_hours(begin_s, np.maximum(end_s, begin_s), request_kind, requests, edges)
    return edges[:-1], billed - requested

def _overlap_hours(begin: np.ndarray, stop: np.ndarray, kind: np.ndarray, table: np.ndarray,
                   edges: np.ndarray) -> np.ndarray:
    """sum_i table[kind_i] x |[begin_i, stop_i) n [edges_b, edges_b+1)| in hours, per table column and bin
    (columns x bins), in one pass without sorting: the time each kind's intervals (clipped to the edges)
    spend in each bin, their partial first and last bins added directly and the bins strictly between
    through a difference array, then weighted by the kind's row (a few kinds: a request kind, a node type)."""
    lo, hi = edges[0], edges[-1]
    b = np.clip(begin, lo, hi)
    e = np.clip(stop, lo, hi)
    nb = edges.size - 1
    kinds = table.shape[0]
    ib = np.clip(np.searchsorted(edges, b, side="right") - 1, 0, nb - 1)
    ie = np.clip(np.searchsorted(edges, e, side="right") - 1, 0, nb - 1)
    same = ib == ie
    first = np.where(same, e - b, edges[ib + 1] - b)  # the first bin (the only one when it ends there)
    last = np.where(same, 0.0, e - edges[ie])  # the last bin, when it ends in another
    inside = np.bincount(kind * nb + ib, first, kinds * nb) + np.bincount(kind * nb + ie, last, kinds * nb)
    on = (~same).astype(np.float64)
    between = (np.bincount(kind * (nb + 1) + ib + 1, on, kinds * (nb + 1))
               - np.bincount(kind * (nb + 1) + ie, on, kinds * (nb + 1))).reshape(kinds, nb + 1)
    seconds = inside.reshape(kinds, nb) + np.cumsum(between, axis=1)[:, :nb] * np.diff(edges)
    # weighted in a fixed order, kind by kind (no BLAS: its SIMD kernel picks the summation order)
    out = np.zeros((table.shape[1], nb))
    for k in range(kinds):
        out += np.multiply.outer(table[k], seconds[k])
    return out / 3600.0


#: rollout-replays from which the compiled kernel pays for its per-process load: interpreted, a rollout
#: costs ~25 us (20,000 on ~30 nodes: 0.51 s on the shared 2-core machine); importing numba and loading
#: the cached kernel ~0.76 s, ~30,000 rollouts' worth (the first process after an install also compiles
#: it, ~15 s, once)
MIN_WORK = 30_000
_compiled: Any = None
_spent = 0  # rollouts this process replayed interpreted


def load() -> None:
    """Compile the kernel (or load it from numba's cache) now: later replays of any size use it."""
    global _compiled
    if _compiled is None:
        from sandbox_fleet.simulate.engine.fast._jit import COMPILED, njit

        if not COMPILED:
            _compiled = _kernel
            return
        # the kernel's source stays plain Python (the interpreted path runs it as written); numba compiles
        # a copy whose helpers are compiled too, so numba is imported only when a replay pays for it
        from sandbox_fleet.simulate.engine.fast import _node_rules
        from sandbox_fleet.simulate.engine.fast._jit import jitable

        for rule in (_node_rules.best_fit, _node_rules.holds, _node_rules.set_free, _node_rules.close,
                     _node_rules.unlist, _node_rules.billed_until, _node_rules.open_node, _node_rules.trace_pick,
                     _node_rules.free_slot, _node_rules.sweep):
            jitable(rule)  # compiled where the kernel calls it (the admission kernel calls it too)
        jitable(_node_rules.leave, inline=True)  # once an end: inlined (a call passing its arrays costs ~45%)
        jitable(_node_rules.take, inline=True)  # once a start: inlined too
        scope = dict(globals())
        for fn in (_heap_push, _heap_pop, _launch, _kernel):
            scope[fn.__name__] = njit(cache=True)(types.FunctionType(fn.__code__, scope, fn.__name__))
        _compiled = scope["_kernel"]


def loaded() -> bool:
    return _compiled is not None


def worth_it(rollouts: int) -> bool:
    """Whether a replay of ``rollouts`` (or a search stating its whole work) runs compiled: the kernel is
    loaded, or this work with what the process replayed interpreted reaches ``MIN_WORK`` (never more
    than twice the better choice's cost, the rent-or-buy rule)."""
    return loaded() or rollouts + _spent >= MIN_WORK


def load_if_pays(rollouts: int) -> None:
    """Load the compiled kernel now if ``rollouts`` of work (a search's whole work) pay for it."""
    if worth_it(rollouts):
        load()


def _run_kernel(*args):
    global _spent
    n = int(args[0].size)
    if worth_it(n):
        load()
        return _compiled(*args)
    _spent += n
    return _kernel(*args)


def replay_nodes(start_s: np.ndarray, end_s: np.ndarray, cpu: np.ndarray, memory_mb: np.ndarray, disk_mb: np.ndarray,
                 pools: list[NodePoolSpec], *, reclaim_trace: Optional[tuple[np.ndarray, np.ndarray]] = None,
                 seed: int = 0) -> NodeReplay:
    """Replay rollouts (per-rollout start and end seconds, and requests) on ``pools`` (in priority order).

    ``reclaim_trace``: reclaims as (seconds on the same clock as the starts, pool index) arrays;
    ``seed``: the draws of per-node reclaim times and of the node a trace reclaim takes."""
    start = np.ascontiguousarray(start_s, dtype=np.float64)
    end = np.ascontiguousarray(end_s, dtype=np.float64)
    req = np.ascontiguousarray(np.stack([np.asarray(cpu, float), np.asarray(memory_mb, float), np.asarray(disk_mb, float)], axis=1))
    n = start.size
    if end.size != n or req.shape[0] != n:
        raise InputError("node replay: start, end and the requests must have one value per rollout")
    if not pools:
        raise InputError("node replay: at least one node pool is needed")
    if n == 0:
        raise InputError("node replay: no rollouts to replay")
    if not (np.all(np.isfinite(start)) and np.all(np.isfinite(end)) and np.all(end >= start)):
        raise InputError("node replay: every rollout needs finite start and end seconds with end >= start")
    if not (np.all(np.isfinite(req)) and np.all(req >= 0)):
        raise InputError("node replay: every request must be a finite number >= 0")
    order = np.argsort(start, kind="stable").astype(np.int64)
    end_order = np.argsort(end, kind="stable").astype(np.int64)
    cap = np.array([[p.cpu, p.memory_mb, p.disk_mb] for p in pools], dtype=np.float64)
    p_min = np.array([p.min_nodes for p in pools], dtype=np.int64)
    unbounded = np.iinfo(np.int64).max
    p_max = np.array([unbounded if p.max_nodes is None else p.max_nodes for p in pools], dtype=np.int64)
    p_prov = np.array([p.provision_s for p in pools], dtype=np.float64)
    p_down = np.array([p.scale_down_s for p in pools], dtype=np.float64)
    p_spread = np.array([p.placement == "spread" for p in pools], dtype=np.bool_)
    p_rate = np.array([p.reclaim_per_node_h / 3600.0 for p in pools], dtype=np.float64)
    trace_t, trace_pool = _trace(reclaim_trace, len(pools))
    reclaiming = bool(np.any(p_rate > 0) or trace_t.size)
    rng = np.random.default_rng(seed)
    trace_u = rng.random(trace_t.size)
    slots = int(p_min.sum()) + 64
    room = n // 4 + 1024 if reclaiming else 0
    while True:
        ids = n + int(p_min.sum()) + room
        # each node id's reclaim clock: drawn up front so that compiled and plain runs draw alike, and a
        # retry with more room extends the same stream
        ex = np.random.default_rng([seed, 1]).standard_exponential(ids) if np.any(p_rate > 0) else np.zeros(1)
        out = _run_kernel(start, end, req, order, end_order, cap, p_min, p_max, p_prov, p_down, p_spread, p_rate,
                          trace_t, trace_pool, trace_u, ex, slots, room, reclaiming)
        if out[0] == 0:
            break
        if out[0] == _FAIL_SLOTS:
            slots *= 2  # more nodes alive at once than slots: run again with room
        else:
            room *= 2
            if room > MAX_RERUNS_PER_ROLLOUT * n + 1_000_000:
                raise InputError(f"node replay: over {MAX_RERUNS_PER_ROLLOUT} re-runs a rollout: the reclaim rate "
                                 "ends holds faster than they finish (re-runs from scratch are unbounded)")
    (_, node_of, id_pool, id_span, node_s, peak, launched, placed_on, used_h, waits, real_end, rec,
     lost_i, lost_k, lost_b, lost_e, missed) = out
    span = float(waits[3] - start[order[0]])
    hold = end - start
    result = []
    for k, p in enumerate(pools):
        nh = float(node_s[k]) / 3600.0
        mine = lost_k == k
        result.append(PoolReplay(
            name=p.name, tier=p.tier, node_hours=nh, usd=nh * p.usd_per_node_h, peak_nodes=int(peak[k]),
            launched=int(launched[k]), rollouts=int(placed_on[k]),
            stranded_cpu_h=nh * p.cpu - float(used_h[k, 0]),
            stranded_memory_mb_h=nh * p.memory_mb - float(used_h[k, 1]),
            stranded_disk_mb_h=nh * p.disk_mb - float(used_h[k, 2]),
            reclaims=int(rec[k, 0]), sandboxes_lost=int(rec[k, 1]), most_lost=int(rec[k, 2]),
            rerun_sandbox_h=float(np.sum(lost_e[mine] - lost_b[mine])) / 3600.0,
        ))
    placed = int(np.count_nonzero(node_of >= 0))
    return NodeReplay(pools=result, span_s=span, usd=sum(p.usd for p in result), placed=placed, unplaced=n - placed,
                      waited=int(waits[0]), wait_s_total=float(waits[1]), wait_s_max=float(waits[2]), node_of=node_of,
                      node_pool=id_pool, node_launch_s=id_span[:, 0], node_release_s=id_span[:, 1],
                      end_s=np.where(node_of >= 0, real_end, np.nan), lost_rollout=lost_i, lost_pool=lost_k,
                      lost_begin_s=lost_b, lost_end_s=lost_e, trace_missed=int(missed), hold_s=hold, requests=req,
                      pool_capacity=cap)


#: re-runs per rollout past which a replay stops (the reclaim rate outruns the holds)
MAX_RERUNS_PER_ROLLOUT = 64


def _trace(trace: Optional[tuple[np.ndarray, np.ndarray]], npools: int) -> tuple[np.ndarray, np.ndarray]:
    """The trace's reclaims in time order (ties in input order), checked."""
    if trace is None:
        return np.zeros(0), np.zeros(0, np.int64)
    t = np.asarray(trace[0], dtype=np.float64)
    k = np.asarray(trace[1], dtype=np.int64)
    if t.shape != k.shape or not np.all(np.isfinite(t)) or np.any((k < 0) | (k >= npools)):
        raise InputError("node replay: a reclaim trace needs finite times and a known pool on every row")
    order = np.argsort(t, kind="stable")
    return np.ascontiguousarray(t[order]), np.ascontiguousarray(k[order])


# the kernel's failure codes: more nodes alive at once than slots; more lost attempts or node ids than room
_FAIL_SLOTS = -1
_FAIL_ROOM = -2
# counters held in one int64 array (numba passes arrays by reference): slots in use are < TOP, the next
# node id, the reclaim heap's size
_TOP, _NEXT_ID, _CSIZE = 0, 1, 2


def _heap_push(ht, hi, size, t, i):
    """Push (t, i) on a binary min-heap ordered by time, then key."""
    j = size
    ht[j] = t
    hi[j] = i
    while j > 0:
        parent = (j - 1) // 2
        if ht[parent] < ht[j] or (ht[parent] == ht[j] and hi[parent] < hi[j]):
            break
        ht[parent], ht[j] = ht[j], ht[parent]
        hi[parent], hi[j] = hi[j], hi[parent]
        j = parent
    return size + 1


def _heap_pop(ht, hi, size):
    size -= 1
    ht[0] = ht[size]
    hi[0] = hi[size]
    j = 0
    while True:
        a = 2 * j + 1
        if a >= size:
            break
        b = a + 1
        c = a
        if b < size and (ht[b] < ht[a] or (ht[b] == ht[a] and hi[b] < hi[a])):
            c = b
        if ht[j] < ht[c] or (ht[j] == ht[c] and hi[j] <= hi[c]):
            break
        ht[c], ht[j] = ht[j], ht[c]
        hi[c], hi[j] = hi[j], hi[c]
        j = c
    return size


def _launch(k, t, ready_s, perm, ctr, slots, ids, pool, pos, plist, plen, node_id, id_pool, id_span, slot_of_id,
            used, count, head, last_out, launch, ready, release, permanent, cap, p_rate, ex, ct, ci, track, thr,
            olist, ofree, olen, opos, pmax):
    """A node of pool ``k`` launched at ``t`` (joining at ``ready_s``) in a free slot; its reclaim drawn
    when the pool has a reclaim rate. Returns the slot, or a failure code."""
    top = ctr[_TOP]
    s = free_slot(pool, top)  # (``_node_rules``: the kernel's too)
    if s == slots:
        return _FAIL_SLOTS
    nid = ctr[_NEXT_ID]
    if nid == ids:
        return _FAIL_ROOM
    if s == top:
        ctr[_TOP] = top + 1
    open_node(k, s, nid, t, ready_s, perm, cap, thr, pool, pos, plist, plen, node_id, used, count, last_out, launch,
              ready, release, permanent, opos, head, olist, ofree, olen, pmax)  # (``_node_rules``: the kernel's too)
    id_pool[nid] = k
    id_span[nid, 0] = t
    ctr[_NEXT_ID] = nid + 1
    if track:
        slot_of_id[nid] = s
        if p_rate[k] > 0:  # Poisson reclaims per node: its first (and only) reclaim, memoryless from launch
            ctr[_CSIZE] = _heap_push(ct, ci, ctr[_CSIZE], t + ex[nid] / p_rate[k], nid)
    return s


def _kernel(start, end, req, order, end_order, cap, p_min, p_max, p_prov, p_down, p_spread, p_rate, trace_t, trace_pool,
            trace_u, ex, slots, room, track):  # one event loop, kept whole for the compiler
    n = start.size
    npools = cap.shape[0]
    ids = n + int(p_min.sum()) + room  # node ids: one a placement at most, plus replaced base nodes
    many = n if track else 1  # what only reclaims need
    # per node slot: pool (-1 free), used resources, sandboxes on it (a count, and a linked list when
    # reclaims may end them), launch / ready / release times, the latest end of a sandbox that left it,
    # permanence, node id, its position in its pool's live list and open list (-1: not open)
    pool = np.full(slots, -1, np.int64)
    used = np.zeros((slots, 3))
    count = np.zeros(slots, np.int64)
    head = np.full(slots, -1, np.int64)
    launch = np.zeros(slots)
    ready = np.zeros(slots)
    release = np.full(slots, np.inf)
    last_out = np.full(slots, -np.inf)
    permanent = np.zeros(slots, np.bool_)
    node_id = np.zeros(slots, np.int64)
    pos = np.zeros(slots, np.int64)
    opos = np.full(slots, -1, np.int64)
    # per pool: its live slots (plist[k, :plen[k]]), and its open ones (olist[k, :olen[k]], in no order:
    # ties go by node id): the nodes whose free cpu could hold the smallest request, each one's free cpu
    # at the same position (a contiguous first test); a start scans only these (the index by free capacity)
    plist = np.empty((npools, slots), np.int64)
    plen = np.zeros(npools, np.int64)
    olist = np.empty((npools, slots), np.int64)
    ofree = np.zeros((npools, slots))
    olen = np.zeros(npools, np.int64)
    pmax = np.zeros(npools)  # never below the largest free cpu of the pool's open nodes: a full pool is skipped whole
    lim = cap * (1.0 + 1e-12)  # a request fits up to the allocatable, with float slack
    smallest = np.inf
    for i in range(n):
        if req[i, 0] < smallest:
            smallest = req[i, 0]
    thr = np.zeros(npools)  # a node with less free cpu than this holds no request
    inv = np.zeros((npools, 2))  # cpu and memory shares of the allocatable: the MostAllocated score
    for k in range(npools):
        thr[k] = smallest - (lim[k, 0] - cap[k, 0])
        for r in range(2):
            if cap[k, r] > 0:
                inv[k, r] = 1.0 / cap[k, r]
    alive = np.zeros(npools, np.int64)
    peak = np.zeros(npools, np.int64)
    launched = np.zeros(npools, np.int64)
    placed_on = np.zeros(npools, np.int64)
    node_s = np.zeros(npools)
    used_h = np.zeros((npools, 3))
    rec = np.zeros((npools, 3), np.int64)  # per pool: reclaims, sandboxes they ended, the most one ended
    node_of = np.full(n, -1, np.int64)
    slot_of = np.full(n, -1, np.int64)
    nxt = np.full(many, -1, np.int64)
    prv = np.full(many, -1, np.int64)
    begin_of = np.zeros(many)
    gen = np.zeros(many, np.int64)  # attempts ended by a reclaim: a stale end in the heap carries an older one
    started = np.zeros(n, np.bool_)
    via_heap = np.zeros(n, np.bool_)
    real_end = end.copy()
    # ends: the rollouts that started on time leave in ``end_order``; those that waited for a node, were
    # re-run after a reclaim (or a zero-length hold the order reaches before its start) leave through a heap
    ht = np.empty(n + room)  # one live end a rollout, and the stale ends of reclaimed attempts
    hi = np.empty(n + room, np.int64)
    hsize = 0
    rt = np.empty(many)  # re-runs due: (reclaim time, rollout)
    ri = np.empty(many, np.int64)
    rsize = 0
    rated = False
    for k in range(npools):
        if p_rate[k] > 0:
            rated = True
    ct = np.empty(ids if rated else 1)  # per-node Poisson reclaims: (time, node id)
    ci = np.empty(ids if rated else 1, np.int64)
    slot_of_id = np.full(ids if track else 1, -1, np.int64)
    lost_i = np.empty(room, np.int64)  # attempts a reclaim ended: rollout, pool, begin, end
    lost_k = np.empty(room, np.int64)
    lost_b = np.empty(room)
    lost_e = np.empty(room)
    lost_n = 0
    tp = 0  # the next reclaim of the trace
    missed = 0  # trace reclaims that found no node of their pool up
    waits = np.zeros(4)  # waited, total wait s, max wait s, last end
    ctr = np.zeros(3, np.int64)
    id_pool = np.empty(ids, np.int64)  # per node id: its pool, launch and release (the billed interval)
    id_span = np.empty((ids, 2))
    t0 = start[order[0]]
    fail = 0
    for k in range(npools):
        for _ in range(p_min[k]):
            s = _launch(k, t0, t0, True, ctr, slots, ids, pool, pos, plist, plen, node_id, id_pool, id_span,
                        slot_of_id, used, count, head, last_out, launch, ready, release, permanent, cap, p_rate, ex,
                        ct, ci, track, thr, olist, ofree, olen, opos, pmax)
            if s < 0:
                fail = s
                break
        alive[k] = p_min[k]
        peak[k] = p_min[k]
    running = 0
    oi = 0
    eptr = 0
    while fail == 0:
        ts = np.inf  # the next start: a measured one, or a re-run of a rollout a reclaim ended
        if oi < n:
            ts = start[order[oi]]
        rerun = rsize > 0 and rt[0] <= ts
        if rerun:
            ts = rt[0]
        tr = np.inf  # the next reclaim, while anything runs or is still to start
        tk = -1
        if track and (running > 0 or ts < np.inf):
            while ctr[_CSIZE] > 0:
                s = slot_of_id[ci[0]]
                if s >= 0 and node_id[s] == ci[0] and pool[s] >= 0 and release[s] >= ct[0]:
                    break
                ctr[_CSIZE] = _heap_pop(ct, ci, ctr[_CSIZE])  # a node gone before its reclaim
            if ctr[_CSIZE] > 0:
                tr = ct[0]
            if tp < trace_t.size and trace_t[tp] < tr:
                tr = trace_t[tp]
                tk = trace_pool[tp]
        bound = min(ts, tr)  # ends at or before it come first (a freed request is reusable at once)
        while True:  # the ends at or before it, in time order: the measured order's, or the heap's
            while eptr < n:  # skip the order's entries that do not leave through it
                j = end_order[eptr]
                if end[j] > bound:
                    break
                if not started[j]:
                    via_heap[j] = True  # ends where it starts, later in this instant: it leaves through the heap
                elif slot_of[j] >= 0 and not via_heap[j]:
                    break
                eptr += 1
            from_order = eptr < n and end[end_order[eptr]] <= bound
            if hsize > 0 and ht[0] <= bound and not (from_order and end[end_order[eptr]] <= ht[0]):
                j = hi[0]
                hsize = _heap_pop(ht, hi, hsize)
                if track:
                    g = j // n
                    j = j % n
                    if g != gen[j]:
                        continue  # a stale end: that attempt was reclaimed
            elif from_order:
                j = end_order[eptr]
                eptr += 1
            else:
                break
            # rollout j leaves its node (``_node_rules.leave``: the admission kernel's too)
            running -= 1
            s = slot_of[j]
            k = pool[s]
            if track:  # the node's list of sandboxes (a reclaim ends them all)
                if prv[j] >= 0:
                    nxt[prv[j]] = nxt[j]
                else:
                    head[s] = nxt[j]
                if nxt[j] >= 0:
                    prv[nxt[j]] = prv[j]
            leave(k, s, req[j, 0], req[j, 1], req[j, 2], real_end[j], p_down[k], cap, thr, used, count, last_out, release,
                  permanent, olist, ofree, olen, opos, pmax)
        if ts == np.inf and running == 0:
            break  # nothing left to start or end: a later reclaim takes nothing
        if tr <= ts and tr < np.inf:  # a reclaim before the next start: it ends every sandbox on its node
            s = -1
            if tk >= 0:  # from the trace: one node of the pool up then, drawn uniformly
                tp += 1
                s = trace_pick(tk, trace_u[tp - 1], tr, plist, plen, release)  # (the admission kernel's too)
                if s < 0:
                    missed += 1
                    continue
            else:
                s = slot_of_id[ci[0]]
                ctr[_CSIZE] = _heap_pop(ct, ci, ctr[_CSIZE])
                if release[s] < tr:
                    continue  # the ends just drained emptied it, and it was released before its reclaim
            k = pool[s]
            lost = 0
            j = head[s]
            while j >= 0:
                if lost_n == room:
                    fail = _FAIL_ROOM
                    break
                stop = max(tr, begin_of[j])  # a rollout still waiting for the node ran for nothing
                lost_i[lost_n] = j
                lost_k[lost_n] = k
                lost_b[lost_n] = begin_of[j]
                lost_e[lost_n] = stop
                lost_n += 1
                for r in range(3):
                    used_h[k, r] -= req[j, r] * (real_end[j] - stop) / 3600.0
                gen[j] += 1
                via_heap[j] = True
                slot_of[j] = -1
                node_of[j] = -1
                running -= 1
                rsize = _heap_push(rt, ri, rsize, tr, j)
                lost += 1
                j = nxt[j]
            if fail != 0:
                break
            head[s] = -1
            rec[k, 0] += 1
            rec[k, 1] += lost
            if lost > rec[k, 2]:
                rec[k, 2] = lost
            node_s[k] += tr - launch[s]  # the node is gone: billed launch to reclaim
            id_span[node_id[s], 1] = tr
            slot_of_id[node_id[s]] = -1
            _unlist(k, s, pool, pos, plist, plen, olist, ofree, olen, opos)
            count[s] = 0
            release[s] = np.inf
            alive[k] -= 1
            if permanent[s]:  # a base node is replaced; its replacement joins after the provisioning delay
                s = _launch(k, tr, tr + p_prov[k], True, ctr, slots, ids, pool, pos, plist, plen, node_id, id_pool,
                            id_span, slot_of_id, used, count, head, last_out, launch, ready, release, permanent, cap,
                            p_rate, ex, ct, ci, track, thr, olist, ofree, olen, opos, pmax)
                if s < 0:
                    fail = s
                    break
                alive[k] += 1
                launched[k] += 1
            continue
        if ts == np.inf:
            break  # nothing left to start, end or reclaim
        if rerun:
            i = ri[0]
            rsize = _heap_pop(rt, ri, rsize)
        else:
            i = order[oi]
            oi += 1
        t = ts
        hold = end[i] - start[i]
        started[i] = True
        # the placement rule (``_node_rules.best_fit``, shared with the admission kernel)
        best = best_fit(0, npools, req[i, 0], req[i, 1], req[i, 2], t, olist, ofree, olen, release, used, lim, cap, inv,
                        p_spread, node_id, pmax)
        if best < 0:  # before a launch every pool's gone nodes are released, so the live counts are exact
            # (``_node_rules.sweep``, the kernel's too; a swept node's pending reclaim finds its slot free or
            # another node's there, and is dropped)
            sweep(0, npools, t, plist, plen, release, launch, node_id, pool, pos, olist, ofree, olen, opos, node_s,
                  alive, id_span)
            for k in range(npools):  # launch in the first pool with room whose node holds the request
                if alive[k] >= p_max[k]:
                    continue
                if not holds(k, req[i, 0], req[i, 1], req[i, 2], lim):
                    continue
                best = _launch(k, t, t + p_prov[k], False, ctr, slots, ids, pool, pos, plist, plen, node_id, id_pool,
                               id_span, slot_of_id, used, count, head, last_out, launch, ready, release, permanent,
                               cap, p_rate, ex, ct, ci, track, thr, olist, ofree, olen, opos, pmax)
                if best < 0:
                    fail = best
                    break
                alive[k] += 1
                launched[k] += 1
                if alive[k] > peak[k]:
                    peak[k] = alive[k]
                break
        if fail != 0:
            break
        if best < 0:
            continue  # unplaced: no pool can hold it
        k = pool[best]
        begin = t
        if ready[best] > t:
            wait = ready[best] - t
            waits[0] += 1
            waits[1] += wait
            if wait > waits[2]:
                waits[2] = wait
            begin = ready[best]
            via_heap[i] = True
        real_end[i] = begin + hold
        node_of[i] = node_id[best]
        slot_of[i] = best
        placed_on[k] += 1
        running += 1
        if track:
            begin_of[i] = begin
            nxt[i] = head[best]
            prv[i] = -1
            if head[best] >= 0:
                prv[head[best]] = i
            head[best] = i
        for r in range(3):
            used_h[k, r] += req[i, r] * hold / 3600.0
        # it takes its room on the node (``_node_rules.take``, the kernel's too)
        take(k, best, req[i, 0], req[i, 1], req[i, 2], cap, thr, used, count, release, olist, ofree, olen, opos, pmax)
        if via_heap[i]:
            hsize = _heap_push(ht, hi, hsize, real_end[i], gen[i] * n + i if track else i)
    last_end = t0
    for i in range(n):
        if slot_of[i] >= 0 and real_end[i] > last_end:
            last_end = real_end[i]
    for x in range(lost_n):
        if lost_e[x] > last_end:
            last_end = lost_e[x]
    for s in range(ctr[_TOP]):
        k = pool[s]
        if k < 0:
            continue
        until = billed_until(permanent[s], release[s], last_end)
        node_s[k] += until - launch[s]
        id_span[node_id[s], 1] = until
    waits[3] = last_end
    nodes = ctr[_NEXT_ID]
    return (fail, node_of, id_pool[:nodes], id_span[:nodes], node_s, peak, launched, placed_on, used_h, waits,
            real_end, rec, lost_i[:lost_n], lost_k[:lost_n], lost_b[:lost_n], lost_e[:lost_n], missed)

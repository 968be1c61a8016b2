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

The kernel is one loop over the starts in time order, compiled by numba (``fast._jit.njit``; plain
Python without it). Ends come from the measured ends in order, except the rollouts that waited for a
node (a binary heap of their shifted ends); each start scans its pools' live nodes in order, with a
contiguous free-cpu test first, until a pool has a fit.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.fast._jit import njit

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

    def __post_init__(self) -> None:
        where = f"node pool {self.name!r}"
        for key in ("cpu", "memory_mb", "disk_mb"):
            v = getattr(self, key)
            if not (v >= 0 and np.isfinite(v)):
                raise InputError(f"{where}: {key} must be a finite number >= 0, got {v!r}")
        for key in ("usd_per_node_h", "provision_s", "scale_down_s"):
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

    def nodes_over_time(self, bins: int) -> tuple[np.ndarray, np.ndarray]:
        """The most nodes up at once in each of ``bins`` equal spans of the billed time, per pool:
        (bin starts in seconds, an array pools x bins). A node is up over [launch, release)."""
        t0 = float(self.node_launch_s.min())
        t1 = float(self.node_release_s.max())
        width = (t1 - t0) / bins if t1 > t0 else 1.0
        edges = t0 + width * np.arange(bins)
        out = np.zeros((len(self.pools), bins), np.int64)
        for k in range(len(self.pools)):
            mine = self.node_pool == k
            m = int(mine.sum())
            if m == 0:
                continue
            times = np.concatenate([self.node_launch_s[mine], self.node_release_s[mine]])
            step = np.concatenate([np.ones(m, np.int64), -np.ones(m, np.int64)])
            order = np.lexsort((step, times))  # a release before a launch at one instant: up over [launch, release)
            times, up = times[order], np.cumsum(step[order])
            where = np.minimum(((times - t0) // width).astype(np.int64), bins - 1)
            np.maximum.at(out[k], where, up)
            before = np.searchsorted(times, edges, side="right") - 1  # the count carried into each bin
            out[k] = np.maximum(out[k], np.where(before >= 0, up[np.maximum(before, 0)], 0))
        return edges, out

    @property
    def node_hours(self) -> float:
        return sum(p.node_hours for p in self.pools)

    @property
    def usd_per_h(self) -> Optional[float]:
        """The fleet's cost per hour of history; None over a zero span."""
        return self.usd / (self.span_s / 3600.0) if self.span_s > 0 else None


def replay_nodes(start_s: np.ndarray, end_s: np.ndarray, cpu: np.ndarray, memory_mb: np.ndarray, disk_mb: np.ndarray,
                 pools: list[NodePoolSpec]) -> NodeReplay:
    """Replay rollouts (per-rollout start and end seconds, and requests) on ``pools`` (in priority order)."""
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
    slots = int(p_min.sum()) + 64
    while True:
        out = _kernel(start, end, req, order, end_order, cap, p_min, p_max, p_prov, p_down, p_spread, slots)
        if out[0] >= 0:
            break
        slots *= 2  # more nodes alive at once than slots: run again with room
    _, node_of, id_pool, id_span, node_s, peak, launched, placed_on, used_h, waits = out
    known = id_pool >= 0
    span = float(waits[3] - start[order[0]])
    result = []
    for k, p in enumerate(pools):
        nh = float(node_s[k]) / 3600.0
        result.append(PoolReplay(
            name=p.name, tier=p.tier, node_hours=nh, usd=nh * p.usd_per_node_h, peak_nodes=int(peak[k]),
            launched=int(launched[k]), rollouts=int(placed_on[k]),
            stranded_cpu_h=nh * p.cpu - float(used_h[k, 0]),
            stranded_memory_mb_h=nh * p.memory_mb - float(used_h[k, 1]),
            stranded_disk_mb_h=nh * p.disk_mb - float(used_h[k, 2]),
        ))
    placed = int(np.count_nonzero(node_of >= 0))
    return NodeReplay(pools=result, span_s=span, usd=sum(p.usd for p in result), placed=placed, unplaced=n - placed,
                      waited=int(waits[0]), wait_s_total=float(waits[1]), wait_s_max=float(waits[2]), node_of=node_of,
                      node_pool=id_pool[known], node_launch_s=id_span[known, 0], node_release_s=id_span[known, 1])


@njit(cache=True)
def _heap_push(ht, hi, size, t, i):
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


@njit(cache=True)
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


@njit(cache=True, inline="always")
def _free(j, s, req, real_end, used, count, last_out, release, permanent, pool, p_down):
    """Rollout ``j`` leaves node slot ``s``; an emptied node (not a permanent one) is due for release."""
    k = pool[s]
    for r in range(3):
        used[s, r] -= req[j, r]
    count[s] -= 1
    if real_end[j] > last_out[s]:
        last_out[s] = real_end[j]
    if count[s] == 0:
        for r in range(3):
            used[s, r] = 0.0  # an empty node holds nothing: no float residue
        if not permanent[s]:
            release[s] = last_out[s] + p_down[k]
    return k


@njit(cache=True)
def _kernel(start, end, req, order, end_order, cap, p_min, p_max, p_prov, p_down, p_spread, slots):  # one loop, kept whole for the compiler
    n = start.size
    npools = cap.shape[0]
    # per node slot: pool (-1 free), used resources, sandboxes on it, launch / ready / release times,
    # the latest end of a sandbox that left it, permanence, node id, and its position in its pool's list
    pool = np.full(slots, -1, np.int64)
    used = np.zeros((slots, 3))
    count = np.zeros(slots, np.int64)
    launch = np.zeros(slots)
    ready = np.zeros(slots)
    release = np.full(slots, np.inf)
    last_out = np.full(slots, -np.inf)
    permanent = np.zeros(slots, np.bool_)
    node_id = np.zeros(slots, np.int64)
    pos = np.zeros(slots, np.int64)
    # per pool: its live slots (plist[k, :plen[k]], in no order: ties go by node id), each one's free cpu
    # at the same position (a contiguous first test), and the earliest release due among them
    plist = np.empty((npools, slots), np.int64)
    pfree = np.zeros((npools, slots))
    plen = np.zeros(npools, np.int64)
    pmax = np.zeros(npools)  # never below the largest free cpu of the pool's nodes: a full pool is skipped whole
    lim = cap * (1.0 + 1e-12)  # a request fits up to the allocatable, with float slack
    inv = np.zeros((npools, 2))  # cpu and memory shares of the allocatable: the MostAllocated score
    for k in range(npools):
        for r in range(2):
            if cap[k, r] > 0:
                inv[k, r] = 1.0 / cap[k, r]
    alive = np.zeros(npools, np.int64)
    peak = np.zeros(npools, np.int64)
    launched = np.zeros(npools, np.int64)
    placed_on = np.zeros(npools, np.int64)
    node_s = np.zeros(npools)
    used_h = np.zeros((npools, 3))
    node_of = np.full(n, -1, np.int64)
    slot_of = np.full(n, -1, np.int64)
    started = np.zeros(n, np.bool_)
    via_heap = np.zeros(n, np.bool_)
    real_end = end.copy()
    # ends: the rollouts that started on time leave in ``end_order``; the few that waited for a node
    # (and a zero-length hold the order reaches before its start) leave through a heap
    ht = np.empty(n)
    hi = np.empty(n, np.int64)
    hsize = 0
    eptr = 0
    waits = np.zeros(4)  # waited, total wait s, max wait s, last end
    fail = np.full(1, -1, np.int64)
    next_id = 0
    ids = n + int(p_min.sum())  # at most one node launched per rollout
    id_pool = np.full(ids, -1, np.int64)  # per node id: its pool, launch and release (the billed interval)
    id_span = np.zeros((ids, 2))
    t0 = start[order[0]]
    top = 0  # slots in use are < top
    for k in range(npools):
        for _ in range(p_min[k]):
            if top >= slots:
                return (fail[0], node_of, id_pool, id_span, node_s, peak, launched, placed_on, used_h, waits)
            pool[top] = k
            pos[top] = plen[k]
            plist[k, plen[k]] = top
            pfree[k, plen[k]] = cap[k, 0]
            pmax[k] = cap[k, 0]
            plen[k] += 1
            node_id[top] = next_id
            id_pool[next_id] = k
            id_span[next_id, 0] = t0
            next_id += 1
            launch[top] = t0
            ready[top] = t0
            permanent[top] = True
            top += 1
        alive[k] = p_min[k]
        peak[k] = p_min[k]
    last_end = t0
    for oi in range(n):
        i = order[oi]
        t = start[i]
        while eptr < n and end[end_order[eptr]] <= t:  # ends at or before this start free their requests first
            j = end_order[eptr]
            eptr += 1
            if not started[j]:
                via_heap[j] = True  # ends where it starts, later in this instant: it leaves through the heap
            elif slot_of[j] >= 0 and not via_heap[j]:
                s = slot_of[j]
                k = _free(j, s, req, real_end, used, count, last_out, release, permanent, pool, p_down)
                pfree[k, pos[s]] = cap[k, 0] - used[s, 0]
                pmax[k] = max(pmax[k], pfree[k, pos[s]])
        while hsize > 0 and ht[0] <= t:
            j = hi[0]
            hsize = _heap_pop(ht, hi, hsize)
            s = slot_of[j]
            k = _free(j, s, req, real_end, used, count, last_out, release, permanent, pool, p_down)
            pfree[k, pos[s]] = cap[k, 0] - used[s, 0]
            pmax[k] = max(pmax[k], pfree[k, pos[s]])
        started[i] = True
        best = -1
        for k in range(npools):  # pools in order; inside one, the best fit among nodes not gone before t
            need = req[i, 0] - (lim[k, 0] - cap[k, 0])  # the cpu a node must have free, with the float slack
            if pmax[k] < need:
                continue
            best_score = 0.0
            most = 0.0
            for x in range(plen[k]):
                f = pfree[k, x]
                if f > most:
                    most = f
                if f < need:  # the cheap first test: most nodes of a busy pool are full on cpu
                    continue
                s = plist[k, x]
                if release[s] < t:  # gone before this start (released at release[s]): not a candidate
                    continue
                if used[s, 1] + req[i, 1] > lim[k, 1] or used[s, 2] + req[i, 2] > lim[k, 2]:
                    continue
                score = used[s, 0] * inv[k, 0] + used[s, 1] * inv[k, 1]
                if p_spread[k]:
                    score = -score
                if best < 0 or score > best_score or (score == best_score and node_id[s] < node_id[best]):
                    best = s
                    best_score = score
            pmax[k] = most
            if best >= 0:
                break
        if best < 0:  # before a launch every pool's gone nodes are released, so the live counts are exact
            for k in range(npools):
                x = 0
                while x < plen[k]:
                    s = plist[k, x]
                    if release[s] < t:
                        node_s[k] += release[s] - launch[s]
                        id_span[node_id[s], 1] = release[s]
                        pool[s] = -1
                        release[s] = np.inf
                        alive[k] -= 1
                        plen[k] -= 1
                        last = plist[k, plen[k]]
                        plist[k, x] = last
                        pfree[k, x] = pfree[k, plen[k]]
                        pos[last] = x
                        continue
                    x += 1
            for k in range(npools):  # launch in the first pool with room whose node holds the request
                if alive[k] >= p_max[k]:
                    continue
                if req[i, 0] > lim[k, 0] or req[i, 1] > lim[k, 1] or req[i, 2] > lim[k, 2]:
                    continue
                s = 0
                while s < top and pool[s] >= 0:
                    s += 1
                if s == slots:
                    return (fail[0], node_of, id_pool, id_span, node_s, peak, launched, placed_on, used_h, waits)
                if s == top:
                    top += 1
                pool[s] = k
                pos[s] = plen[k]
                plist[k, plen[k]] = s
                plen[k] += 1
                node_id[s] = next_id
                id_pool[next_id] = k
                id_span[next_id, 0] = t
                next_id += 1
                used[s, 0] = 0.0
                used[s, 1] = 0.0
                used[s, 2] = 0.0
                count[s] = 0
                last_out[s] = -np.inf
                launch[s] = t
                ready[s] = t + p_prov[k]
                release[s] = np.inf
                permanent[s] = False
                alive[k] += 1
                launched[k] += 1
                if alive[k] > peak[k]:
                    peak[k] = alive[k]
                best = s
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
        real_end[i] = begin + (end[i] - start[i])
        if real_end[i] > last_end:
            last_end = real_end[i]
        node_of[i] = node_id[best]
        slot_of[i] = best
        placed_on[k] += 1
        count[best] += 1
        release[best] = np.inf
        for r in range(3):
            used[best, r] += req[i, r]
            used_h[k, r] += req[i, r] * (real_end[i] - begin) / 3600.0
        pfree[k, pos[best]] = cap[k, 0] - used[best, 0]
        pmax[k] = max(pmax[k], pfree[k, pos[best]])  # a new node's free cpu
        if via_heap[i]:
            hsize = _heap_push(ht, hi, hsize, real_end[i], i)
    while eptr < n:
        j = end_order[eptr]
        eptr += 1
        if slot_of[j] >= 0 and not via_heap[j]:
            _free(j, slot_of[j], req, real_end, used, count, last_out, release, permanent, pool, p_down)
    while hsize > 0:
        j = hi[0]
        hsize = _heap_pop(ht, hi, hsize)
        _free(j, slot_of[j], req, real_end, used, count, last_out, release, permanent, pool, p_down)
    for s in range(top):
        k = pool[s]
        if k < 0:
            continue
        if permanent[s]:
            node_s[k] += last_end - launch[s]
            id_span[node_id[s], 1] = last_end
        else:
            node_s[k] += release[s] - launch[s]
            id_span[node_id[s], 1] = release[s]
    waits[3] = last_end
    return (np.int64(0), node_of, id_pool, id_span, node_s, peak, launched, placed_on, used_h, waits)

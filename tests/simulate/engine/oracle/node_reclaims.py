"""The pure loop's pools made of fixed nodes with reclaims: the oracle of the admission kernel's node
reclaims (``_admit_kernel.node_dispatch`` / ``node_reclaim`` / ``node_join``) on the fleets
``node_fleet.as_node_fleet`` writes from a slot pool's node keys, written again here from the rules
(docs/simulate.md, "Nodes in the engine"), not imported.

What it covers: a pool (every admission policy the oracle's queues run) whose node pools all have ``min_nodes = max_nodes`` (base nodes, up from
the pool's first start, never launched for a request nor released), start caps and queue timeouts,
any workload kind. The rules:

- **placement**: node pools in order; in the first with a node that fits the request (cpu, memory and
  disk, up to the allocatable with 1e-12 slack), ``pack`` takes the most-allocated node (cpu and memory
  shares summed), ``spread`` the least; ties to the oldest node (launch order). A node still joining is
  a candidate: an attempt placed on it waits (still counted waiting) and starts when it joins.
  Nothing fits: the front of the queue waits for room (it blocks those behind it).
- **reclaims**: each node's reclaim is drawn at its launch, exponential of mean 1 / rate, from the
  pool's ``PREEMPTIONS`` stream; at it, every attempt on the node (the last placed first) ends as a
  preempted exception (running) or goes back to the queue keeping its first entry time (waiting for
  the node to join); the node is gone and a replacement launches at once, joining ``provision_s``
  later; then the pool dispatches once (nothing dispatches while the node's attempts end).
"""

from __future__ import annotations

from heapq import heappop, heappush

from tests.simulate.engine.oracle.admission import KeyedQueue

from sandbox_fleet.simulate.engine.entities import EXCEPTION, PREEMPTION
from sandbox_fleet.simulate.engine.prepare import PREEMPTIONS, stream

#: the heap's event kinds of this module (the kernel's values: only their order of pushing matters)
NODE_JOIN, NODE_RECLAIM = 16, 17


class Node:
    __slots__ = ("k", "nid", "on", "ready", "up", "used")

    def __init__(self, k: int, nid: int, ready: float):
        self.k, self.nid, self.ready = k, nid, ready
        self.used = [0.0, 0.0, 0.0]
        self.on: list[int] = []  # rollouts on it, in placement order
        self.up = True


def supported(pl) -> str | None:
    """Why this oracle cannot run a pool made of nodes (``None``: it can)."""
    if pl.limits is not None:
        return "[fleet.limits]"
    if any(n.min_nodes != n.max_nodes for n in pl.node_pools):
        return "node pools that launch and release nodes (min_nodes < max_nodes)"
    return None


class NodePools:
    """One fleet pool's node pools, their nodes and their reclaim stream."""

    def __init__(self, st, p: int):
        pl = st.pools[p]
        why = supported(pl)
        if why is not None:
            raise ValueError(f"the node oracle does not run {why}")
        self.st, self.p, self.specs = st, p, pl.node_pools
        self.cap = [(n.cpu, n.memory_mb, n.disk_mb) for n in self.specs]
        self.rng = stream(st.prep.seed, PREEMPTIONS, p)
        self.nodes: list[list[Node]] = [[] for _ in self.specs]
        self.by_id: dict[int, Node] = {}
        self.started = False
        # the sandboxes its nodes hold of its smallest request (a timeout-ceiling pool's cap)
        reqs = [wl.request for wl in st.prep.workloads if wl.pool == p]
        lo = [min(q[c] for q in reqs) for c in range(3)]
        self.room = sum(n.max_nodes * min(int(cap * (1.0 + 1e-12) // x) for cap, x in zip(self.cap[k], lo))
                        for k, n in enumerate(self.specs))
        self.quiet = False  # a reclaim's attempts are ending: no dispatch until it is over

    def launch(self, k: int, ready: float) -> None:
        st = self.st
        node = Node(k, st.node_ids, ready)
        st.node_ids += 1
        self.nodes[k].append(node)
        self.by_id[node.nid] = node
        rate = self.specs[k].reclaim_per_node_h / 3600.0
        if rate > 0:
            st.push(st.now + float(self.rng.exponential(1.0 / rate)), NODE_RECLAIM, (self.p, node.nid))

    def fit(self, req) -> Node | None:
        for k, spec in enumerate(self.specs):
            lim = [c * (1.0 + 1e-12) for c in self.cap[k]]
            best, best_score = None, 0.0
            for node in self.nodes[k]:
                if any(node.used[c] + req[c] > lim[c] for c in range(3)):
                    continue
                score = node.used[0] * (1.0 / self.cap[k][0]) + node.used[1] * (1.0 / self.cap[k][1])
                if spec.placement == "spread":
                    score = -score
                if best is None or score > best_score:  # (nodes in launch order: a tie keeps the oldest)
                    best, best_score = node, score
            if best is not None:
                return best
        return None

    def first_start(self) -> None:
        """The pool's first start: its base nodes are up from now."""
        if not self.started:
            self.started = True
            for k, spec in enumerate(self.specs):
                for _ in range(spec.min_nodes):
                    self.launch(k, self.st.now)

    def put(self, node: Node, r: int, w: int) -> int:
        """Rollout ``r`` of workload ``w`` takes room on ``node``: its row."""
        st = self.st
        req = st.prep.workloads[w].request
        for c in range(3):
            node.used[c] += req[c]
        node.on.append(r)
        st.r_queued[r] = False
        return st.r_row[r]

    def wait_for_join(self, node: Node, row: int) -> None:
        """Attempt ``row`` was placed on a joining node: it starts then (its start-cap place held now)."""
        st = self.st
        if st.start_cap[self.p] is not None:
            st.building[self.p] += 1
        st.a_slot[row] = node.nid
        st.push(max(node.ready, st.now), NODE_JOIN, (row, node.nid))

    def dispatch(self) -> None:
        if self.quiet:
            return
        if self.st.policies[self.p] is not None:
            self.quiet = True  # an eviction's end does not dispatch again
            try:
                self.dispatch_policy()
            finally:
                self.quiet = False
            return
        st, p = self.st, self.p
        q = st.queues[p]
        sc = st.start_cap[p]
        while q:
            if sc is not None and st.building[p] >= sc:
                return
            keyed = isinstance(q, KeyedQueue)
            entry = heappop(q._heap) if keyed else None  # (its key and queue order, to put it back as it was)
            r = entry[2] if keyed else q.popleft()
            if not st.r_queued[r]:
                continue  # dropped while waiting
            self.first_start()
            node = self.fit(st.prep.workloads[st.r_work[r]].request)
            if node is None:  # the front waits for room, where it was
                heappush(q._heap, entry) if keyed else q.appendleft(r)
                return
            row = self.put(node, r, st.r_work[r])
            if node.ready > st.now:  # joining: it starts then, still counted waiting
                self.wait_for_join(node, row)
            else:
                self.start_on(node, row)

    def dispatch_policy(self) -> None:
        """A policy pool: the policy picks the next rollout; it takes room on a node, or, none fitting, an
        evicting policy evicts for it (the victim's request leaves its node) and it tries again."""
        st, p = self.st, self.p
        pol = st.policies[p]
        sc = st.start_cap[p]
        while True:
            if sc is not None and st.building[p] >= sc:
                return
            pick = pol.best(pol.heads_now(), pol.used)
            if pick is None:
                return
            w, r = pick
            self.first_start()
            node = self.fit(st.prep.workloads[w].request)
            if node is None:
                if pol.make_room():
                    continue
                return
            pol.pop_head(w)
            row = self.put(node, r, w)
            pol.used[w] += 1  # its room, from now; the policy's ``started`` when it starts
            if node.ready > st.now:
                self.wait_for_join(node, row)
            else:
                pol.started(w, row)
                self.start_on(node, row)

    def start_on(self, node, row: int) -> None:
        """Attempt ``row`` starts now on ``node`` (up): it leaves the waiting count."""
        st = self.st
        st.waiting -= 1
        st.place(self.p, row, -1)
        st.a_slot[row] = node.nid

    def leave(self, row: int) -> None:
        """Attempt ``row`` ended: its request leaves its node."""
        st = self.st
        node = self.by_id[st.a_slot[row]]
        r = st.a_roll[row]
        req = st.prep.workloads[st.r_work[r]].request
        for c in range(3):
            node.used[c] -= req[c]
        node.on.remove(r)
        if not node.on:
            node.used = [0.0, 0.0, 0.0]  # an emptied node holds nothing (no float residue)

    def reclaim(self, nid: int) -> None:
        st, p = self.st, self.p
        node = self.by_id.get(nid)
        if node is None or not node.up:
            return
        self.quiet = True
        for r in reversed(node.on):
            row = st.r_row[r]
            if st.a_state[row] == -1:  # running
                st.cut_short(row)
                st.a_slot[row] = -1
                st.end_attempt(row, EXCEPTION, PREEMPTION)
            else:  # waiting for the node to join: back to the queue, its first entry kept
                st.a_slot[row] = -1
                enq = st.a_enq[row]
                pol = st.policies[p]
                if pol is not None:
                    pol.used[st.r_work[r]] -= 1  # the room it held (its policy never saw it start)
                if st.start_cap[p] is not None:
                    st.building[p] -= 1
                st.waiting -= 1
                st.enqueue(r, row)
                st.a_enq[row] = enq
        node.on = []
        node.up = False
        self.nodes[node.k].remove(node)
        del self.by_id[nid]
        self.launch(node.k, st.now + self.specs[node.k].provision_s)  # its replacement, joining later
        self.quiet = False
        self.dispatch()

    def join(self, row: int, nid: int) -> None:
        st, p = self.st, self.p
        if st.a_state[row] != -2 or st.a_slot[row] != nid:
            return  # its node was reclaimed before it joined
        st.waiting -= 1
        pol = st.policies[p]
        if pol is not None:
            pol.started(st.r_work[st.a_roll[row]], row)
        if st.start_cap[p] is not None:
            st.building[p] -= 1  # its start-cap place, held since its dispatch, is the build's now
        st.place(p, row, -1)
        st.a_slot[row] = nid


def node_pools(st) -> dict[int, NodePools]:
    """The pools made of nodes of the loop ``st``, by pool."""
    return {p: NodePools(st, p) for p, pl in enumerate(st.pools) if pl.node_pools}


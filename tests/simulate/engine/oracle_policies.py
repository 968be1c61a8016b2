"""The pure event loop's admission policies (``priority``, ``timeout-ceiling``): the oracle the
admission kernel (``fast/_admit_kernel``, the one production implementation) is compared with, bit
for bit (``test_admit_kernel.py``). Production never runs them: every run with a policy pool runs on
the kernel (``policies.problems`` refuses policies beside an inference pool and the event loop refuses
them). ``run_oracle`` runs ``loop.run_events`` with them (and, with an inference pool, ``inference/pool.py``:
the oracle of ``test_inference_kernel.py``); the rules are the module
docstring of ``sandbox_fleet.simulate.engine.policies``.
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Iterator
from typing import TYPE_CHECKING

from tests.simulate.engine.oracle.loop import run_events

from sandbox_fleet.simulate.engine.entities import EXCEPTION, PREEMPTION
from sandbox_fleet.simulate.engine.policies import CEILING, PRIORITY
from sandbox_fleet.simulate.engine.workloads import RL, AsyncRL

if TYPE_CHECKING:
    from tests.simulate.engine.oracle.loop_state import LoopState

# --- queues --------------------------------------------------------------------------------
class WorkloadQueues:
    """One FIFO list per workload of the pool, entries ``(seq, rollout)``; ``seq`` orders entries
    across workloads. An entry whose rollout left the queue (dropped) is skipped lazily."""

    def __init__(self, st: LoopState, p: int):
        self.st, self.p = st, p
        prep = st.prep
        self.works = [w for w, wl in enumerate(prep.workloads) if wl.pool == p]
        self.lists: dict[int, list[tuple[int, int]]] = {w: [] for w in self.works}
        self.heads = dict.fromkeys(self.works, 0)
        self.seq = 0
        self.r_seq: dict[int, int] = {}
        self.entries = 0
        self.used = dict.fromkeys(self.works, 0)  # slots held per workload
        self.active = False  # inside dispatch (an eviction's end_attempt calls it again)

    # the queue interface enqueue() uses
    def append(self, r: int) -> None:
        self.seq += 1
        self.lists[self.st.r_work[r]].append((self.seq, r))
        self.r_seq[r] = self.seq
        self.entries += 1

    def __len__(self) -> int:
        return self.entries

    def live(self, w: int, i: int) -> int:
        """Index of workload ``w``'s first live entry at or after ``i`` (its list's length: none)."""
        lst, queued = self.lists[w], self.st.r_queued
        while i < len(lst):
            seq, r = lst[i]
            if queued[r] and self.r_seq.get(r) == seq:
                return i
            i += 1
        return i

    def pop_head(self, w: int) -> None:
        """Take workload ``w``'s head (live: ``heads_now`` moved it there)."""
        lst = self.lists[w]
        i = self.heads[w]
        self.entries -= 1
        self.heads[w] = i + 1
        if i + 1 > 1024 and 2 * (i + 1) > len(lst):  # drop the consumed prefix now and then
            del lst[: i + 1]
            self.heads[w] = 0

    # what a policy decides
    def rank(self, w: int, used: int) -> tuple[int, int]:
        """Sort key of workload ``w``'s head (holding ``used`` slots) before its queue order (smaller first)."""
        return 0, 0

    def admits(self, w: int, r: int, used: int) -> bool:
        return True

    evicts = False  # whether make_room may free a slot

    def make_room(self) -> bool:
        """No slot is free: free one for a waiting rollout if the policy may (evicting)."""
        return False

    def best(self, at: dict[int, int], used: dict[int, int]) -> tuple[int, int] | None:
        """The waiting rollout the policy starts first, ``(workload, rollout)``, with workload
        ``w``'s next entry at ``at[w]`` (live) and ``used[w]`` slots held; ``None``: none admitted."""
        best = None
        lists = self.lists
        for w in self.works:
            i = at[w]
            if i >= len(lists[w]):
                continue
            seq, r = lists[w][i]
            if not self.admits(w, r, used[w]):
                continue
            key = (*self.rank(w, used[w]), seq)
            if best is None or key < best[0]:
                best = (key, w, r)
        return None if best is None else (best[1], best[2])

    def heads_now(self) -> dict[int, int]:
        """Each workload's first live entry, the dead ones before it dropped for good."""
        heads = self.heads
        for w in self.works:
            i = self.live(w, heads[w])
            self.entries -= i - heads[w]
            heads[w] = i
        return heads

    def ranked(self) -> Iterator[tuple[int, int]]:
        """Waiting rollouts in the order the policy would start them, each admitted given the
        ones before it."""
        at, used = dict(self.heads_now()), dict(self.used)
        while (pick := self.best(at, used)) is not None:
            yield pick
            w = pick[0]
            used[w] += 1
            at[w] = self.live(w, at[w] + 1)

    def dispatch(self) -> None:
        """Start waiting rollouts while slots (and start-cap room) last."""
        if self.active:
            return
        st, p = self.st, self.p
        sc = st.start_cap[p]
        self.active = True
        try:
            while True:
                if sc is not None and st.building[p] >= sc:
                    return
                slot = st.take_slot(p)
                pick = self.best(self.heads_now(), self.used) if slot is not None or self.evicts else None
                if pick is None:
                    if slot is not None:
                        st.untake_slot(p, slot)
                    return
                if slot is None:
                    if self.make_room():
                        continue
                    return
                w, r = pick
                self.pop_head(w)
                st.r_queued[r] = False
                st.waiting -= 1
                row = st.r_row[r]
                self.used[w] += 1
                self.started(w, row)
                st.place(p, row, slot)
        finally:
            self.active = False

    def started(self, w: int, row: int) -> None:
        pass

    def ended(self, w: int, row: int) -> None:
        self.used[w] -= 1


#: admission name -> its queues (the pure loop's): each policy registers once, with ``register``
REGISTRY: dict[str, type[WorkloadQueues]] = {}


def register(name: str):
    """Class decorator: the policy ``name`` dispatches through this ``WorkloadQueues`` subclass."""
    def add(cls: type[WorkloadQueues]) -> type[WorkloadQueues]:
        REGISTRY[name] = cls
        return cls
    return add


@register(PRIORITY)
class PriorityQueues(WorkloadQueues):
    """``admission = "priority"``: see the module docstring."""

    def __init__(self, st: LoopState, p: int):
        super().__init__(st, p)
        wls = st.prep.workloads
        cap = st.pools[p].cap
        self.prio = {w: int(wls[w].priority or 0) for w in self.works}
        self.nominal = {w: int(wls[w].nominal or 0) for w in self.works}
        self.limit = {w: math.inf if wls[w].borrow_limit is None else self.nominal[w] + int(wls[w].borrow_limit or 0)
                      for w in self.works}
        if cap is not None:
            self.limit = {w: min(lim, cap) for w, lim in self.limit.items()}
        self.preempt = self.evicts = st.pools[p].preempt
        self.running: dict[int, list[int]] = {w: [] for w in self.works}  # rows in start order (lazy)
        from tests.simulate.engine.oracle.loop_state import RUNNING  # (loop_state imports this module's users)

        self.running_code = RUNNING

    def rank(self, w: int, used: int) -> tuple[int, int]:
        return int(used >= self.nominal[w]), -self.prio[w]

    def admits(self, w: int, r: int, used: int) -> bool:
        return used < self.limit[w]

    def started(self, w: int, row: int) -> None:
        if self.preempt:
            self.running[w].append(row)

    def latest(self, w: int) -> int | None:
        """Workload ``w``'s most recently started attempt still running."""
        lst, state, running = self.running[w], self.st.a_state, self.running_code
        while lst and state[lst[-1]] != running:
            lst.pop()
        return lst[-1] if lst else None

    def victim(self, w: int, used: int) -> int | None:
        """The attempt a rollout of ``w`` (holding ``used`` slots) may evict, or ``None``."""
        reclaim = used < self.nominal[w]
        best = None
        for v in self.works:
            if v == w or self.used[v] <= self.nominal[v]:
                continue  # only a borrowing workload loses slots
            if not (self.prio[v] < self.prio[w] or reclaim):
                continue
            row = self.latest(v)
            if row is None:
                continue
            key = (self.prio[v], -self.st.a_start[row], -row)
            if best is None or key < best[0]:
                best = (key, row)
        return None if best is None else best[1]

    def make_room(self) -> bool:
        if not self.preempt:
            return False
        covered = self.st.provisioning[self.p]  # slots on their way reach the first waiting rollouts
        used = dict(self.used)
        for w, _ in self.ranked():
            if covered:
                covered -= 1
                used[w] += 1
                continue
            row = self.victim(w, used[w])
            if row is None:
                return False
            self.evict(row)
            return True
        return False

    def evict(self, row: int) -> None:
        """Take running attempt ``row``'s slot: it ends as a preemption and its rollout re-runs
        (without using its retry budget: ``LoopState.r_evicted``)."""
        st = self.st
        r = st.a_roll[row]
        st.r_evicted[r] = st.r_evicted.get(r, 0) + 1
        st.cut_short(row)
        st.end_attempt(row, EXCEPTION, PREEMPTION, requeue=True)


@register(CEILING)
class CeilingQueues(WorkloadQueues):
    """``admission = "timeout-ceiling"``: see the module docstring."""

    def __init__(self, st: LoopState, p: int):
        super().__init__(st, p)
        prep = st.prep
        self.rl = [w for w in self.works if prep.workloads[w].kind == RL]
        self.ceilings: dict[int, list[float]] = {w: [] for w in self.works}  # running attempts' ceilings, sorted

    def rank(self, w: int, used: int) -> tuple[int, int]:
        return (0 if w in self.rl else 1), 0

    def next_release(self, v: int) -> tuple[float, int] | None:
        """When RL workload ``v``'s next batch is released at the earliest, and its size."""
        rl = self.st.rl.get(v)
        if rl is None or rl.next_release >= len(rl.sizes):
            return None
        wl = self.st.prep.workloads[v]
        assert isinstance(wl, AsyncRL)  # self.rl holds RL workloads only
        j = rl.next_release
        now = self.st.now
        if j == 0:  # not released yet: it goes out at start_s
            return max(float(wl.start_s), now), rl.sizes[j]
        if rl.training and rl.next_train + 1 + rl.staleness >= j:
            return rl.train_start_s[rl.next_train] + rl.train_s, rl.sizes[j]
        return now + rl.train_s, rl.sizes[j]

    def admits(self, w: int, r: int, used: int) -> bool:
        st = self.st
        ceiling = st.now + st.prep.timeout_of(r)
        cap = st.pools[self.p].cap
        if cap is None and self.p in st.nodes_of:  # a pool made of nodes: the sandboxes its nodes hold
            cap = st.nodes_of[self.p].room
        for v in self.rl:
            if v == w:
                continue
            release = self.next_release(v)
            if release is None or ceiling <= release[0]:
                continue
            t_rel, batch = release
            past = sum(len(c) - bisect_right(c, t_rel) for u, c in self.ceilings.items() if u != v)
            if cap is not None and past + 1 > cap - batch:
                return False
        return True

    def started(self, w: int, row: int) -> None:
        insort(self.ceilings[w], self.st.now + self.st.prep.timeout_of(self.st.a_roll[row]))

    def ended(self, w: int, row: int) -> None:
        super().ended(w, row)
        st = self.st
        c = self.ceilings[w]
        ceiling = st.a_start[row] + st.prep.timeout_of(st.a_roll[row])
        i = bisect_right(c, ceiling) - 1
        assert i >= 0 and c[i] == ceiling, "an ending attempt's ceiling was not recorded"
        del c[i]


def make(policy: str, st: LoopState, p: int) -> WorkloadQueues:
    return REGISTRY[policy](st, p)



def run_oracle(prep, on_progress=None, **kw):
    """``loop.run_events`` with these policies (the oracle of the admission kernel)."""
    return run_events(prep, on_progress, policy_queues=make, **kw)

"""Admission policies that choose among waiting rollouts by more than arrival order.

Both keep one first-come-first-served list per workload and, when a slot is free, start
the best head that the policy admits; a head it refuses does not block the others.

``priority`` (Kueue-like classes and quotas in one shared pool):

- **Quota.** A workload holds at most ``nominal + borrow_limit`` slots (no
  ``borrow_limit``: up to the cap; no ``nominal``: 0). Holding more than ``nominal`` is
  *borrowing*.
- **Order.** A rollout its workload's nominal quota covers starts before any that would
  borrow (nominal slots are guaranteed; borrowing takes what is left); within each group,
  higher ``priority`` first (a workload without one has 0), then the order the rollouts
  entered the queue. Without quotas every rollout borrows: plain priority order.
- **Preemption** (``preempt = true``). A rollout that its quota admits but that finds no
  slot evicts a running rollout of a workload that is borrowing, and either has a lower
  priority or (when the waiting rollout is within its own nominal quota) any priority:
  the lowest priority first, then the latest started (the least work lost). A rollout
  within its nominal quota is never evicted, and an evicted rollout ranks behind the one
  that evicted it, so no two rollouts evict each other in turn. The evicted attempt ends
  as a ``preemption`` (its sandbox time is lost, as a spot reclaim's is) and its rollout
  re-runs from the back of the queue; evictions do not use the retry budget. With a provisioning delay, a waiting rollout evicts only when the
  slots already being provisioned would not reach it.

``timeout-ceiling`` (the source's "admit against the timeout ceiling and reclaim early"):

- **Ceiling.** A rollout's ceiling is its start plus its timeout (``agent_timeout_s``;
  none: infinite), and the pool reclaims its sandbox there: a hold that would run past it
  ends at the ceiling as a timeout (``prepare`` cuts the drawn holds).
- **Room for the next batch.** For each RL workload on the pool, the next release is the
  end of the training step that releases it when that step is training, else the earliest
  it could come (now + ``train_s``; before the first release, ``start_s``). A rollout of
  another workload whose ceiling ends after that release is admitted only if, counting
  every running rollout of the other workloads whose ceiling also ends after it, the
  slots left at the release still hold the whole batch (``cap - batch``).
- **Released batches first.** A waiting rollout of an RL workload starts before any
  waiting rollout of another workload (else work queued before a release would take the
  slots the released batch needs, the same stall at the release itself).
"""

from __future__ import annotations

import math
from bisect import bisect_right, insort
from collections.abc import Iterator
from typing import TYPE_CHECKING

import numpy as np

from sandbox_fleet.simulate.engine.entities import NO_PHASE, TIMEOUT, Fleet
from sandbox_fleet.simulate.engine.workloads import RL, AsyncRL, Workload

if TYPE_CHECKING:
    from sandbox_fleet.simulate.engine.loop_state import LoopState

PRIORITY, CEILING = "priority", "timeout-ceiling"
QUOTA_KEYS = ("priority", "nominal", "borrow_limit")


# --- checks -------------------------------------------------------------------------------
def problems(pools: list[Fleet], workloads: list[Workload], served: bool) -> Iterator[tuple[str, int, str, str]]:
    """What a scenario gets wrong about these policies: ``(table, index, key, message)`` with
    table ``"fleet"`` or ``"workload"``; ``prepare`` and the scenario builder word it."""
    for i, pl in enumerate(pools):
        if pl.admission in POLICIES and served:
            yield "fleet", i, "admission", f"{pl.admission!r} is not simulated with an inference pool yet"
        if pl.admission == CEILING and not any(wl.kind == RL and wl.pool == i for wl in workloads):
            yield "fleet", i, "admission", ("'timeout-ceiling' keeps room for an RL workload's next batch; "
                                            f"pool {pl.name} has no RL workload")
    for w, wl in enumerate(workloads):
        pl = pools[wl.pool]
        for key in QUOTA_KEYS:
            value = getattr(wl, key)
            if value is None:
                continue
            if pl.admission != PRIORITY:
                yield "workload", w, key, (f"'{key}' needs its pool's admission = \"priority\" "
                                           f"(pool {pl.name} admits by {pl.admission!r})")
            elif isinstance(value, bool) or int(value) != value or (key != "priority" and value < 0):
                yield "workload", w, key, f"expected a whole number{'' if key == 'priority' else ' >= 0'}, got {value!r}"
            elif key != "priority" and pl.cap is None:
                yield "workload", w, key, f"quotas need a finite cap (pool {pl.name} is unbounded)"
        if wl.borrow_limit is not None and wl.nominal is None:
            yield "workload", w, "borrow_limit", "a borrowing limit needs a nominal quota ('nominal')"
    for i, pl in enumerate(pools):
        mine = [w for w, wl in enumerate(workloads) if wl.pool == i and wl.nominal is not None]
        total = sum(int(workloads[w].nominal or 0) for w in mine)
        if pl.cap is not None and total > pl.cap:
            yield "workload", mine[-1], "nominal", (f"the nominal quotas on pool {pl.name} sum to {total} slots, "
                                                    f"over its cap of {pl.cap}")
        for w in mine:
            wl = workloads[w]
            nominal, borrow = int(wl.nominal or 0), wl.borrow_limit
            if pl.cap is not None and borrow is not None and nominal + borrow > pl.cap:
                yield "workload", w, "borrow_limit", (f"nominal {nominal} + borrow_limit {borrow} exceeds the cap "
                                                      f"of pool {pl.name} ({pl.cap})")


# --- reclaim at the ceiling ----------------------------------------------------------------
def cut_at_ceiling(b: np.ndarray, a: np.ndarray, v: np.ndarray, hold: np.ndarray, state: np.ndarray,
                   phase: np.ndarray, ceiling_s: float | np.ndarray) -> None:
    """Reclaim every attempt whose hold passes ``ceiling_s`` there, in place: its phases end
    where the ceiling falls and it ends as a timeout (the ceiling strikes before anything later)."""
    over = hold > ceiling_s
    if not over.any():
        return
    c = np.broadcast_to(np.asarray(ceiling_s, dtype=float), hold.shape)
    in_build = over & (b >= c)
    in_agent = over & ~in_build & (b + a >= c)
    in_verify = over & ~in_build & ~in_agent
    b[in_build] = c[in_build]
    a[in_build] = 0.0
    v[in_build] = 0.0
    a[in_agent] = c[in_agent] - b[in_agent]
    v[in_agent] = 0.0
    v[in_verify] = c[in_verify] - b[in_verify] - a[in_verify]
    hold[over] = c[over]
    state[over] = TIMEOUT
    phase[over] = NO_PHASE


def cut_one(attempt: tuple[float, float, float, float, int, int], ceiling_s: float) -> tuple[float, float, float, float, int, int]:
    """``cut_at_ceiling`` of one attempt ``(build, agent, verify, hold, state, phase)``."""
    if not attempt[3] > ceiling_s:
        return attempt
    b, a, v, h = (np.array([x], dtype=float) for x in attempt[:4])
    s, p = (np.array([x], dtype=np.int8) for x in attempt[4:])
    cut_at_ceiling(b, a, v, h, s, p, ceiling_s)
    return float(b[0]), float(a[0]), float(v[0]), float(h[0]), int(s[0]), int(p[0])


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
        from sandbox_fleet.simulate.engine.loop_state import RUNNING  # (loop_state imports this module's users)

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
            self.st.evict(row)
            return True
        return False


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


POLICIES = tuple(REGISTRY)  # the registered names (``problems``, ``invariants`` and ``steady`` read them)


def make(policy: str, st: LoopState, p: int) -> WorkloadQueues:
    return REGISTRY[policy](st, p)

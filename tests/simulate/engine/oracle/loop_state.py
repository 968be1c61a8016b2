"""The general event loop's state and its event handlers (``loop.py`` runs them).

State lives in flat Python lists. Row ``r`` of the attempt lists (``a_*``) is rollout
``r``'s first attempt (pre-drawn); retries append rows. Per rollout (``r_*``): its
current attempt row, queue epoch (for timeouts) and whether it waits.

Which slot an attempt holds matters only when a node can be preempted (it takes its
slots' attempts down) or a freed slot is unavailable for a while (provisioning). A
*counted* pool has neither: it keeps just ``nfree[p]``, its free slots, and its
attempts hold slot -1 (as in an unbounded pool). Other capped pools track slots.

Slot states (tracked pools; slot ids are global, pool ``p`` owns
``slot_base[p] .. slot_base[p] + cap - 1``):

- ``S_FREE``: no attempt; may take one now.
- ``S_BUSY``: runs attempt ``slot_row[s]``.
- ``S_PROV``: its last attempt ended; a ``SLOT_READY`` event makes it free after the
  pool's provisioning delay.
- ``S_DOWN``: its node was preempted; a ``NODE_BACK`` event makes it free.

Each pool keeps a free list (a stack, lowest id on top). ``in_list[s]`` says whether
``s`` is in its pool's list; a listed slot may have gone down meanwhile, so whoever
pops one skips it unless it is ``S_FREE`` (lazy removal). Queues drop timed-out
rollouts lazily too: ``r_queued[r]`` is false for an entry that left.

Every event is pushed as ``(time, seq, kind, payload)`` with ``seq`` from one
counter, so ties run in the order they were scheduled (see ``events.py``).
"""

from __future__ import annotations

import math
from heapq import heappush
from itertools import count
from typing import TYPE_CHECKING, Any

from tests.simulate.engine.oracle.admission import make_queue
from tests.simulate.engine.oracle.node_reclaims import NODE_JOIN, NODE_RECLAIM, node_pools
from tests.simulate.engine.oracle.trainer import RLState, rl_states

from sandbox_fleet.simulate.engine import events as ev
from sandbox_fleet.simulate.engine.entities import (
    AGENT,
    BUILD,
    COMPLETED,
    DROPPED,
    EXCEPTION,
    PREEMPTION,
    RETRIED,
    TIMEOUT,
)
from sandbox_fleet.simulate.engine.policies import POLICIES
from sandbox_fleet.simulate.engine.prepare import Prepared
from sandbox_fleet.simulate.engine.workloads import CLOSED, Closed

if TYPE_CHECKING:
    from tests.simulate.engine.oracle.driver import Driver

PENDING, RUNNING = -2, -1  # attempt states before a terminal one (entities' codes are >= 0)
S_FREE, S_BUSY, S_PROV, S_DOWN = 0, 1, 2, 3


class LoopState:
    """Everything the general loop mutates, with the handlers of every event kind.

    Counters: ``busy`` attempts running, ``waiting`` rollouts queued, ``done``
    rollouts in a terminal state, ``training`` trainers mid-step, ``preemptions``.
    """

    def __init__(self, prep: Prepared, policy_queues=None):
        N = prep.n
        self.prep = prep
        self.n = N
        pools = self.pools = prep.pools
        P = len(pools)
        self.r_pool, self.r_work = prep.r_pool, prep.r_work

        ids = list(range(N))
        # evictions by a priority pool re-run their rollout as retries do
        retries = any(m > 0 for m in prep.max_retries) or any(pl.preempt for pl in pools)
        self.a_roll = ids
        self.a_enq = [math.nan] * N
        self.a_start = [math.nan] * N
        self.a_fin = [math.nan] * N
        self.a_state = [PENDING] * N
        self.a_phase = prep.phase.tolist()
        # Phase durations are read or rewritten only by start caps, retries, preemption, queue
        # timeouts and the inference pool; without them the drawn arrays are the result (None here).
        self.phases_kept = prep.inference is not None or any(m > 0 for m in prep.max_retries) or any(
            pl.start_cap is not None or pl.preempt_rate_per_node_s > 0 or pl.preempt or pl.queue_timeout_s is not None
            or any(n.reclaim_per_node_h > 0 for n in pl.node_pools or ()) for pl in pools)
        if self.phases_kept:
            self.a_build, self.a_agent, self.a_verify = prep.build.tolist(), prep.agent.tolist(), prep.verify.tolist()
        else:
            self.a_build = self.a_agent = self.a_verify = None
        # retries append rows: then a copy, so prep's list stays the first attempts'
        self.a_hold = list(prep.hold) if retries else prep.hold
        self.a_plan = prep.plan.tolist()
        self.a_slot = [-1] * N
        self.a_try = [0] * N
        # Only a retry appends to a_roll or moves r_row: without retries both stay the identity.
        self.r_row = list(ids) if retries else ids
        self.r_epoch = [0] * N
        self.r_queued = [False] * N

        # A policy pool (priority, timeout-ceiling) dispatches through its own queue object: the
        # admission kernel runs them in production; ``policy_queues(name, state, pool)`` makes the
        # pure loop's, its oracle in ``tests/``.
        if policy_queues is None and any(pl.admission in POLICIES for pl in pools):
            raise ValueError("admission policies run on the admission kernel (fast/admit_loop)")
        self.policies = [policy_queues(pl.admission, self, p) if pl.admission in POLICIES else None
                         for p, pl in enumerate(pools)]
        self.queues = [pol if pol is not None else make_queue(pl.admission, prep.timeout_of)
                       for pol, pl in zip(self.policies, pools)]
        self.provisioning = [0] * P  # slots being provisioned (S_PROV), per pool
        self.r_evicted: dict[int, int] = {}  # rollout -> evictions by a priority pool (spare the retry budget)
        self.unbounded = [pl.cap is None for pl in pools]
        self.counted = [pl.cap is not None and pl.preempt_rate_per_node_s == 0 and pl.provision_delay_s <= 0
                        for pl in pools]
        self.nfree = [pl.cap if c and pl.cap is not None else 0 for pl, c in zip(pools, self.counted)]  # counted: capped
        tracked = [0 if c or pl.cap is None else pl.cap for pl, c in zip(pools, self.counted)]
        self.slot_base, self.free = [], []
        nslots = 0
        for size in tracked:
            self.slot_base.append(nslots)
            self.free.append(list(range(nslots + size - 1, nslots - 1, -1)))  # lowest id on top
            nslots += size
        self.slot_pool = [p for p, size in enumerate(tracked) for _ in range(size)]
        self.slot_state = [S_FREE] * nslots
        self.slot_row = [-1] * nslots
        self.in_list = [True] * nslots
        self.prov = [pl.provision_delay_s for pl in pools]
        self.start_cap = [pl.start_cap for pl in pools]
        self.building = [0] * P
        self.qtimeout = [pl.queue_timeout_s for pl in pools]
        self.reclaims = [prep.node_reclaims(p) for p in range(P)]
        self.nodes = [rc.nodes for rc in self.reclaims]
        self.node_down = [[False] * k for k in self.nodes]

        self.heap: list = []
        self.seq = count()
        self.now = 0.0
        self.busy = self.waiting = self.done = self.preemptions = self.training = 0

        self.rl: dict[int, RLState] = {}
        self.r_batch = [0] * N
        self.pop_next: dict[int, int] = {}  # closed populations: the next rollout id to start
        self.driver: Driver | None = None
        self.ended_early: list[int] = []  # served rollouts whose attempt ended early or retries, this event
        self.cut_s: dict[int, float] = {}  # served attempt row -> its drawn agent cut from the agent's start
        self.cut_rows: set[int] = set()  # served attempt rows whose agent phase a timeout or exception cut
        # pools made of fixed nodes with reclaims (``node_reclaims``): node ids count launches across pools
        self.node_ids = 0
        self.nodes_of = node_pools(self)

    # --- set-up --------------------------------------------------------------------------
    def schedule_start(self) -> None:
        """Push the first events: RL and closed releases, the inference driver, preemptions."""
        prep = self.prep
        self.rl = rl_states(prep.workloads, prep.offsets, self.r_batch)
        for w, st in self.rl.items():
            self.push(st.start_s, ev.RELEASE, w)
        for w, wl in enumerate(prep.workloads):
            if wl.kind == CLOSED:
                assert isinstance(wl, Closed)  # the CLOSED kind is Closed's
                self.pop_next[w] = int(prep.offsets[w])
                self.push(float(wl.start_s), ev.RELEASE, w)
        if prep.inference is not None:
            from tests.simulate.engine.oracle.driver import Driver

            assert prep.turn_draws is not None  # prepare draws the turns whenever a pool serves them
            self.driver = Driver(prep.inference, prep.turn_draws, self.push, ev.TURN, ev.POOL, ev.FINISH,
                                 self.a_start, self.a_build, self.a_agent, self.a_verify)
        for p, pl in enumerate(self.pools):
            if pl.preempt_rate_per_node_s > 0:
                self.push(self.next_preemption(p, 0.0), ev.PREEMPT, p)

    def push(self, t: float, kind: int, payload) -> None:
        heappush(self.heap, (t, next(self.seq), kind, payload))

    def next_preemption(self, p: int, now: float) -> float:
        return now + self.reclaims[p].gap_s()

    # --- queue and slots -------------------------------------------------------------------
    def enqueue(self, r: int, row: int) -> None:
        p = self.r_pool[r]
        self.a_enq[row] = self.now
        self.queues[p].append(r)
        self.r_queued[r] = True
        self.r_epoch[r] += 1
        self.waiting += 1
        timeout_s = self.qtimeout[p]
        if timeout_s is not None:
            self.push(self.now + timeout_s, ev.DROP, (r, self.r_epoch[r]))

    def dispatch(self, p: int) -> None:
        """Start queued rollouts of pool ``p`` while slots (and start-cap room) last."""
        if p in self.nodes_of:
            self.nodes_of[p].dispatch()
            return
        pol = self.policies[p]
        if pol is not None:
            pol.dispatch()
            return
        q = self.queues[p]
        sc = self.start_cap[p]
        r_queued = self.r_queued
        while q:
            if sc is not None and self.building[p] >= sc:
                return
            slot = self.take_slot(p)
            if slot is None:
                return
            r = q.popleft()
            if not r_queued[r]:  # dropped while waiting: lazy removal
                self.untake_slot(p, slot)
                continue
            r_queued[r] = False
            self.waiting -= 1
            self.place(p, self.r_row[r], slot)

    def take_slot(self, p: int) -> int | None:
        """A free slot of pool ``p``, taken (-1: an unbounded or counted pool's), or ``None``."""
        if self.counted[p]:
            if not self.nfree[p]:
                return None
            self.nfree[p] -= 1
            return -1
        if self.unbounded[p]:
            return -1
        fl, in_list, slot_state = self.free[p], self.in_list, self.slot_state
        while fl:
            s = fl.pop()
            in_list[s] = False
            if slot_state[s] == S_FREE:
                return s
        return None

    def untake_slot(self, p: int, slot: int) -> None:
        """Give back a slot ``take_slot`` returned, unused."""
        if self.counted[p]:
            self.nfree[p] += 1
        elif slot >= 0:
            self.free[p].append(slot)
            self.in_list[slot] = True

    def place(self, p: int, row: int, slot: int) -> None:
        """Start attempt ``row`` now on ``slot`` (-1: an unbounded or counted pool) of pool ``p``.

        The one place an attempt starts; ``loop.py`` inlines its plain-pool case.
        """
        now = self.now
        self.a_start[row] = now
        self.a_state[row] = RUNNING
        self.a_slot[row] = slot
        self.busy += 1
        if self.start_cap[p] is not None:
            # Pushed before the finish so a zero-length episode frees its start slot first.
            self.building[p] += 1
            self.push(now + self.a_build[row], ev.BUILD_DONE, row)
        if self.driver is not None and self.a_phase[row] != BUILD:
            self.push(now + self.a_build[row], ev.TURN, row)  # the hold unfolds turn by turn
            cut = self.cut_s[row] = self.a_agent[row]  # prepare drew where a timeout or exception falls
            if cut != math.inf:
                self.push((now + self.a_build[row]) + cut, ev.AGENT_CUT, row)
        else:
            self.push(now + self.a_hold[row], ev.FINISH, row)
        if slot >= 0:
            self.slot_state[slot] = S_BUSY
            self.slot_row[slot] = row

    def free_slot(self, p: int, slot: int) -> None:
        if self.counted[p]:
            self.nfree[p] += 1
            return
        if slot < 0:
            return
        self.slot_row[slot] = -1
        if self.prov[p] > 0:
            self.slot_state[slot] = S_PROV
            self.provisioning[p] += 1
            self.push(self.now + self.prov[p], ev.SLOT_READY, slot)
        else:
            self.relist(p, slot)

    def relist(self, p: int, slot: int) -> None:
        """``slot`` of tracked pool ``p`` is free now: back on its pool's free list (once)."""
        self.slot_state[slot] = S_FREE
        if not self.in_list[slot]:
            self.free[p].append(slot)
            self.in_list[slot] = True

    # --- rollouts ending -------------------------------------------------------------------
    def terminal(self, r: int) -> None:
        """Rollout ``r`` ended: count it, start a closed population's next, settle an RL batch."""
        self.done += 1
        w = self.r_work[r]
        if w in self.pop_next:
            self.release_next(w)
            return
        st = self.rl.get(w)
        if st is not None and st.rollout_ended(self.r_batch[r], self.now):
            if st.rounds is not None:  # dynamic sampling: the round ended, so its step's next round goes now
                self.release(st)
            self.maybe_train(st)

    def maybe_train(self, st: RLState) -> None:
        """Start the trainer's next step if it is due (it starts now: its batch ended now or the
        step before it did)."""
        if st.can_train():
            self.training += 1
            self.push(st.start_step(), ev.TRAIN_DONE, st.w)

    def release(self, st: RLState) -> None:
        p = self.prep.workloads[st.w].pool
        rels = st.take_releasable(self.now)
        for rng_ in rels:
            for r in rng_:
                self.enqueue(r, r)
        if rels:
            self.dispatch(p)

    def release_next(self, w: int) -> None:
        """A closed population: the next rollout, if any, enters now."""
        r = self.pop_next[w]
        if r < self.prep.offsets[w + 1]:
            self.pop_next[w] = r + 1
            self.enqueue(r, r)

    def end_attempt(self, row: int, state: int, phase: int, requeue: bool = False) -> None:
        """Close a running attempt now; retry its rollout (always when ``requeue``) or end it."""
        r = self.a_roll[row]
        p = self.r_pool[r]
        self.busy -= 1
        self.a_fin[row] = self.now
        self.a_phase[row] = phase
        pol = self.policies[p]
        if pol is not None:
            pol.ended(self.r_work[r], row)
        tries = self.a_try[row] - self.r_evicted.get(r, 0) if self.r_evicted else self.a_try[row]
        retry = requeue or self.prep.retryable(r, state, phase, tries)
        if self.driver is not None and (retry or phase == PREEMPTION) and r not in self.ended_early:
            self.ended_early.append(r)  # its episode ends at the replicas once the event is handled
        if retry:
            self.a_state[row] = RETRIED
            self.append_retry(r, self.a_try[row] + 1)
        else:
            self.a_state[row] = state
            self.terminal(r)
        if p in self.nodes_of:
            if self.a_slot[row] >= 0:
                self.nodes_of[p].leave(row)
        else:
            self.free_slot(p, self.a_slot[row])
        self.dispatch(p)

    def append_retry(self, r: int, attempt: int) -> None:
        """A new attempt row for rollout ``r``, queued now."""
        b, a, v, h, s, ph = self.prep.retry_attempt(r, attempt)
        new = len(self.a_roll)
        columns: tuple[tuple[list[Any], Any], ...] = (
            (self.a_roll, r), (self.a_enq, math.nan), (self.a_start, math.nan), (self.a_fin, math.nan),
            (self.a_state, PENDING), (self.a_phase, ph), (self.a_build, b), (self.a_agent, a),
            (self.a_verify, v), (self.a_hold, h), (self.a_plan, s), (self.a_slot, -1), (self.a_try, attempt))
        for lst, val in columns:
            lst.append(val)
        self.r_row[r] = new
        self.enqueue(r, new)

    # --- event handlers (payload as pushed) --------------------------------------------------
    def on_arrival(self, r: int) -> None:
        self.enqueue(r, r)
        self.dispatch(self.r_pool[r])

    def on_finish(self, row: int) -> None:
        if self.a_state[row] == RUNNING:
            self.end_attempt(row, self.a_plan[row], self.a_phase[row])

    def on_slot_ready(self, slot: int) -> None:
        if self.slot_state[slot] == S_PROV:
            p = self.slot_pool[slot]
            self.provisioning[p] -= 1
            self.relist(p, slot)
            self.dispatch(p)

    def on_build_done(self, row: int) -> None:
        if self.a_state[row] == RUNNING:
            p = self.r_pool[self.a_roll[row]]
            self.building[p] -= 1
            self.dispatch(p)

    def on_release(self, w: int) -> None:
        if w in self.pop_next:
            wl = self.prep.workloads[w]
            assert isinstance(wl, Closed)  # pop_next holds the closed workloads only
            # a population above count starts every rollout at once (and never loops on a huge one)
            for _ in range(min(wl.population, wl.count)):
                self.release_next(w)
            self.dispatch(wl.pool)
        else:
            self.release(self.rl[w])

    def on_train_done(self, w: int) -> None:
        st = self.rl[w]
        self.training -= 1
        st.end_train(self.now)
        nodes = self.nodes_of.get(self.prep.workloads[w].pool)
        if nodes is not None:  # a pool made of nodes dispatches the released batch after the next step is due
            nodes.quiet = True
        self.release(st)
        self.maybe_train(st)
        if nodes is not None:
            nodes.quiet = False
            nodes.dispatch()

    def on_preempt(self, p: int) -> None:
        """A node of pool ``p`` fails: its running attempts end as preempted exceptions."""
        pl = self.pools[p]
        node = self.reclaims[p].node()
        now = self.now
        if not self.node_down[p][node]:
            self.preemptions += 1
            self.node_down[p][node] = True
            assert pl.cap is not None  # Fleet refuses preemption without a finite cap
            lo = self.slot_base[p] + node * pl.slots_per_node
            hi = min(lo + pl.slots_per_node, self.slot_base[p] + pl.cap)
            for s in range(lo, hi):
                row = self.slot_row[s]
                if self.slot_state[s] == S_PROV:  # its SLOT_READY will find it down
                    self.provisioning[p] -= 1
                self.slot_state[s] = S_DOWN
                self.slot_row[s] = -1
                if row >= 0 and self.a_state[row] == RUNNING:
                    self.cut_short(row)
                    self.a_slot[row] = -1
                    self.end_attempt(row, EXCEPTION, PREEMPTION)
            self.push(now + pl.node_replace_s, ev.NODE_BACK, (p, node))
        if self.done < self.n:
            self.push(self.next_preemption(p, now), ev.PREEMPT, p)

    def cut_short(self, row: int) -> None:
        """Running attempt ``row`` stops now: its phases end where it is (it leaves the build
        phase, and its start slot, if it was building)."""
        elapsed = self.now - self.a_start[row]
        a_build, a_agent, a_verify = self.a_build, self.a_agent, self.a_verify
        b, a = a_build[row], a_agent[row]
        driver = self.driver
        if (driver is not None and self.a_phase[row] != BUILD and row not in driver.calls_over
                and row not in self.cut_rows):
            a = math.inf  # served and its last call's command not over: still in its agent phase
        if elapsed < b:
            p = self.r_pool[self.a_roll[row]]
            if self.start_cap[p] is not None:
                self.building[p] -= 1
            a_build[row], a_agent[row], a_verify[row] = elapsed, 0.0, 0.0
        elif elapsed < b + a:
            a_agent[row], a_verify[row] = elapsed - b, 0.0
        else:
            a_verify[row] = elapsed - b - a

    def on_turn(self, row: int) -> None:
        # (an attempt ended early, or whose agent phase was cut, leaves its turns behind)
        if self.a_state[row] == RUNNING and row not in self.cut_rows:
            assert self.driver is not None
            self.driver.call(self.a_roll[row], self.now, row)

    def on_agent_cut(self, row: int) -> None:
        """A served attempt reaches its drawn agent cut. Unless its loop of calls and commands is over,
        the agent phase stops here: an exception (drawn before the timeout) ends the attempt with no
        verifier; a timeout runs the verifier, then ends as a timeout (a verifier exception drawn for the
        attempt stands). Either way the episode ends at the replicas once the event is handled."""
        if self.a_state[row] != RUNNING:
            return
        driver = self.driver
        assert driver is not None
        if row in driver.calls_over and self.now >= driver.agent_end[row]:
            return  # its last command ended first
        r = self.a_roll[row]
        self.cut_rows.add(row)
        self.a_agent[row] = self.cut_s[row]
        if r not in self.ended_early:
            self.ended_early.append(r)
        if self.cut_s[row] < self.prep.timeout_of(r):
            self.a_verify[row] = 0.0
            self.end_attempt(row, EXCEPTION, AGENT)
            return
        if self.a_plan[row] == COMPLETED:
            self.a_plan[row] = TIMEOUT
        self.push(self.now + self.a_verify[row], ev.FINISH, row)

    def end_episodes(self) -> None:
        """After an event: each served rollout whose attempt it ended early or retried, pool by pool
        in the order they ended, withdraws its call and starts its episode over."""
        assert self.driver is not None
        early, self.ended_early = self.ended_early, []
        for r in sorted(early, key=lambda r: self.r_pool[r]):
            self.driver.end_episode(r, self.now)

    def on_node_back(self, x: tuple[int, int]) -> None:
        p, node = x
        self.node_down[p][node] = False
        pl = self.pools[p]
        assert pl.cap is not None  # a node came back: the pool preempts, so it has a finite cap
        lo = self.slot_base[p] + node * pl.slots_per_node
        hi = min(lo + pl.slots_per_node, self.slot_base[p] + pl.cap)
        for s in range(hi - 1, lo - 1, -1):  # lowest slot ends on top
            self.relist(p, s)
        self.dispatch(p)

    def on_drop(self, x: tuple[int, int]) -> None:
        """The rollout waited past the queue timeout: it ends without a sandbox."""
        r, epoch = x
        if not (self.r_queued[r] and self.r_epoch[r] == epoch):
            return
        self.r_queued[r] = False
        self.waiting -= 1
        row = self.r_row[r]
        self.a_fin[row] = self.now
        self.a_state[row] = DROPPED
        self.a_plan[row] = DROPPED
        self.a_phase[row] = 0
        self.a_build[row] = self.a_agent[row] = self.a_verify[row] = 0.0
        self.terminal(r)
        if self.r_work[r] in self.pop_next:  # its successor entered the queue
            self.dispatch(self.r_pool[r])

    def handlers(self) -> dict:
        """Event kind -> handler, for the kinds the loop does not inline."""
        return {ev.FINISH: self.on_finish, ev.SLOT_READY: self.on_slot_ready, ev.BUILD_DONE: self.on_build_done,
                ev.RELEASE: self.on_release, ev.TRAIN_DONE: self.on_train_done, ev.PREEMPT: self.on_preempt,
                ev.NODE_BACK: self.on_node_back, ev.DROP: self.on_drop,
                NODE_JOIN: lambda x: self.nodes_of[self.r_pool[self.a_roll[x[0]]]].join(*x),
                NODE_RECLAIM: lambda x: self.nodes_of[x[0]].reclaim(x[1])}

    # --- checks ----------------------------------------------------------------------------
    def audit(self) -> None:
        """Raise AssertionError unless the counters, slots and free lists agree (tests call it mid-run)."""
        running = [row for row, s in enumerate(self.a_state) if s == RUNNING]
        assert self.busy == len(running), (self.busy, len(running))
        assert self.waiting == sum(self.r_queued), (self.waiting, sum(self.r_queued))
        assert self.done == sum(1 for s in self.a_state if s >= 0 and s != RETRIED), self.done
        for s, st in enumerate(self.slot_state):
            row = self.slot_row[s]
            if st == S_BUSY:
                assert row >= 0 and self.a_state[row] == RUNNING and self.a_slot[row] == s, (s, row)
            else:
                assert row == -1, (s, st, row)
        for p, pl in enumerate(self.pools):
            if self.counted[p]:
                held = sum(1 for row in running if self.r_pool[self.a_roll[row]] == p)
                assert self.nfree[p] + held == pl.cap, (p, self.nfree[p], held)
                assert not self.free[p], p
        for p, fl in enumerate(self.free):
            assert len(set(fl)) == len(fl), f"pool {p}: a slot twice in the free list"
            base = self.slot_base[p]
            cap = self.pools[p].cap
            size = 0 if self.counted[p] or cap is None else cap  # cap None: unbounded
            for s in range(base, base + size):
                assert self.in_list[s] == (s in fl), (p, s)
                if self.slot_state[s] == S_FREE:
                    assert self.in_list[s], f"free slot {s} not in its pool's free list"
        for row in running:
            s = self.a_slot[row]
            if s >= 0:
                assert self.slot_state[s] == S_BUSY and self.slot_row[s] == row, (row, s)
        for p, base in enumerate(self.slot_base):
            cap = self.pools[p].cap
            size = 0 if self.counted[p] or cap is None else cap
            prov = sum(1 for s in range(base, base + size) if self.slot_state[s] == S_PROV)
            assert self.provisioning[p] == prov, (p, self.provisioning[p], prov)
            pol = self.policies[p]
            if pol is not None:
                for w in pol.works:
                    held = sum(1 for row in running if self.r_work[self.a_roll[row]] == w)
                    assert pol.used[w] == held, (p, w, pol.used[w], held)
                live = sum(1 for w in pol.works for seq, r in pol.lists[w][pol.heads[w]:]
                           if self.r_queued[r] and pol.r_seq.get(r) == seq)
                assert live == sum(1 for r, q in enumerate(self.r_queued) if q and self.r_pool[r] == p), p

"""Replicas serving model calls: continuous batching as (generalised) processor sharing.

Virtual-time clock, per replica. With ``n`` sequences in service each progresses at
``1 / (n + b)`` work-seconds per second (``config`` derives this from the iteration
model; ``b = 0`` is processor sharing). The replica keeps one virtual clock ``V`` that
advances at that rate; a call entering service with work ``w`` at virtual time ``V0``
finishes when ``V`` reaches ``V0 + w``, and its first token comes when ``V`` reaches
``V0 + prefill work``. Finish marks sit in a heap (the earliest is the replica's next
event, pushed on the engine's event list and invalidated by a version number when
the batch changes); first-token marks sit in a second heap and are read off, at the
exact time ``V`` crossed them, whenever the clock advances. So an event costs
O(log n) and no request is ever updated one by one.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable
from heapq import heappop, heappush

from sandbox_fleet.simulate.inference.cache import PrefixCache
from sandbox_fleet.simulate.inference.config import Inference
from sandbox_fleet.simulate.inference.routing import fewest


class Replica:
    __slots__ = ("v", "t", "n", "done", "marks", "waiting", "ver", "area_n", "area_busy", "area_sys", "cache")

    def __init__(self, cache: PrefixCache):
        self.v = 0.0  # virtual time
        self.t = 0.0  # real time of the last advance
        self.n = 0  # sequences in service
        self.done: list = []  # (v_finish, seq, request)
        self.marks: list = []  # (v_first_token, seq, arrival_s)
        self.waiting: deque = deque()  # requests waiting for a seat
        self.ver = 0
        self.area_n = 0.0  # integral of n dt
        self.area_busy = 0.0  # time with n > 0
        self.area_sys = 0.0  # integral of (in service + waiting) dt
        self.cache = cache


class Pool:
    """``schedule(t, payload)`` puts a pool event on the engine's list; ``on_done(r, now)``
    continues rollout ``r`` after its call ended."""

    def __init__(self, cfg: Inference, n_rollouts: int, schedule: Callable, on_done: Callable):
        self.cfg = cfg
        R = cfg.replicas
        self.reps = [Replica(PrefixCache(cfg.kv_cache_bytes, cfg.kv_offload_bytes)) for _ in range(R)]
        self.sticky = cfg.routing == "sticky"
        self.assign: dict[int, int] = {}
        self.live = [0] * R  # rollouts routed to a replica with a call still to come
        self.load = [0] * R  # calls in service or waiting
        self.inv_p = 1.0 / cfg.prefill_tok_s
        self.inv_d = 1.0 / cfg.decode_tok_s
        self.b = cfg.base_units
        self.seats = cfg.max_num_seqs if cfg.max_num_seqs is not None else math.inf
        self.kvb = cfg.kv_bytes_per_token
        self.caching = cfg.caching
        self.schedule, self.on_done = schedule, on_done
        self.seq = 0
        self.wait_s = array("d")
        self.ttft_s = array("d")
        self.sojourn_s = array("d")
        self.calls = 0
        self.input_tokens = 0
        self.cached_tokens = 0
        self.decode_tokens = 0
        self.r_in = [0] * n_rollouts
        self.r_cached = [0] * n_rollouts
        self.r_out = [0] * n_rollouts

    # --- clock -------------------------------------------------------------------------
    def _advance(self, rep: Replica, now: float) -> None:
        dt = now - rep.t
        if dt <= 0:
            return
        n = rep.n
        if n:
            k = n + self.b
            v_new = rep.v + dt / k
            marks = rep.marks
            while marks and marks[0][0] <= v_new:
                vm, _, arr = heappop(marks)
                self.ttft_s.append(rep.t + (vm - rep.v) * k - arr)
            rep.v = v_new
            rep.area_n += n * dt
            rep.area_busy += dt
            rep.area_sys += (n + len(rep.waiting)) * dt
        rep.t = now

    def _reschedule(self, i: int, rep: Replica, now: float) -> None:
        rep.ver += 1
        if rep.done:
            self.schedule(now + (rep.done[0][0] - rep.v) * (rep.n + self.b), (i, rep.ver))

    def _start(self, rep: Replica, req: list, now: float) -> None:
        self.wait_s.append(now - req[1])
        rep.n += 1
        s = self.seq
        self.seq = s + 2
        heappush(rep.done, (rep.v + req[4], s, req))
        heappush(rep.marks, (rep.v + req[3], s + 1, req[1]))

    # --- calls -------------------------------------------------------------------------
    def submit(self, now: float, r: int, ctx: int, new: int, dec: int, last: bool) -> None:
        """Rollout ``r`` sends a call: ``ctx`` tokens of earlier context, ``new`` new
        prompt tokens, ``dec`` tokens to decode; ``last``: its final call."""
        if self.sticky:
            i = self.assign.get(r)
            if i is None:
                i = fewest(self.live)
                self.assign[r] = i
                self.live[i] += 1
        else:
            i = fewest(self.load)
        rep = self.reps[i]
        cached = ctx if (ctx and self.caching and rep.cache.take(r)) else 0
        computed = ctx + new - cached
        self.calls += 1
        self.input_tokens += ctx + new
        self.cached_tokens += cached
        self.decode_tokens += dec
        self.r_in[r] += ctx + new
        self.r_cached[r] += cached
        self.r_out[r] += dec
        pre = computed * self.inv_p
        # request: [rollout, arrival_s, context after, prefill work, total work, last]
        req = [r, now, ctx + new + dec, pre, pre + dec * self.inv_d, last]
        self._advance(rep, now)
        self.load[i] += 1
        if rep.n < self.seats:
            self._start(rep, req, now)
        else:
            rep.waiting.append(req)
        self._reschedule(i, rep, now)

    def event(self, now: float, payload: tuple[int, int]) -> None:
        """A replica's earliest call finishes (unless the batch changed since it was scheduled)."""
        i, ver = payload
        rep = self.reps[i]
        if ver != rep.ver:
            return
        self._advance(rep, now)
        head = rep.done[0][0]
        if rep.v < head:  # rounding: the event was scheduled for exactly this virtual time
            rep.v = head
        marks = rep.marks
        while marks and marks[0][0] <= rep.v:
            self.ttft_s.append(now - heappop(marks)[2])
        finished = []
        done = rep.done
        while done and done[0][0] <= rep.v:
            req = heappop(done)[2]
            rep.n -= 1
            self.load[i] -= 1
            self.sojourn_s.append(now - req[1])
            r = req[0]
            if self.caching:
                rep.cache.put(r, req[2] * self.kvb)
            if req[5] and self.sticky:
                self.live[i] -= 1
            finished.append(r)
        while rep.waiting and rep.n < self.seats:
            self._start(rep, rep.waiting.popleft(), now)
        self._reschedule(i, rep, now)
        for r in finished:
            self.on_done(r, now)

    def close(self, end_s: float) -> None:
        """Integrate every replica's clock to the end of the run."""
        for rep in self.reps:
            self._advance(rep, end_s)

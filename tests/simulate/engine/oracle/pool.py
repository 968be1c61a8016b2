"""Replicas serving model calls: prefill first, then decoding by processor sharing.

Each replica follows the continuous-batching iteration model of ``config``:

- A call that has a seat is prefilled whole, in arrival order, at ``prefill_tok_s``;
  the iteration holding a prompt stalls the batch's decoding meanwhile (vLLM's default
  schedule: waiting prompts go first). Its first token comes when its prefill ends.
- Decoding shares the replica: with ``n`` sequences decoding each progresses at
  ``1 / (n + b)`` work-seconds per second (work = tokens / ``decode_tok_s``; ``b`` the
  iteration base in decode-token times). ``b = 0`` is processor sharing.

Virtual-time clock. The replica keeps one decode clock ``V`` advancing at that rate
(frozen while a prompt is prefilled); a sequence that starts decoding at ``V0`` with
work ``w`` finishes when ``V`` reaches ``V0 + w``. Finish marks sit in a heap; the
replica's next event (a prefill end, else the earliest finish) goes on the engine's
event list, invalidated by a version number whenever the batch changes. An event costs
O(log n); no request is ever updated one by one.
"""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Callable
from heapq import heapify, heappop, heappush

from tests.simulate.engine.oracle.cache import PrefixCache

from sandbox_fleet.simulate.engine.inference.config import Inference
from sandbox_fleet.simulate.engine.inference.routing import fewest

# request: [rollout, arrival_s, context after, prefill_s, decode work, last call, input tokens, cached, decode tokens,
# its number in the order calls were sent]
ROLL, ARR, CTX, PRE, DEC, LAST, INP, CACHED, DTOK, CALL = range(10)


class Replica:
    __slots__ = (
        "area_busy",
        "area_n",
        "area_sys",
        "cache",
        "done",
        "n",
        "p_end",
        "prefill",
        "t",
        "v",
        "ver",
        "waiting",
    )

    def __init__(self, cache: PrefixCache):
        self.v = 0.0  # decode virtual time
        self.t = 0.0  # real time of the last advance
        self.n = 0  # sequences decoding
        self.done: list = []  # (v_finish, seq, request)
        self.prefill: deque = deque()  # seated calls awaiting or in prefill (head: in prefill)
        self.p_end = math.inf  # when the head's prefill ends
        self.waiting: deque = deque()  # calls waiting for a seat
        self.ver = 0
        self.area_n = 0.0  # integral of sequences in service (prefill + decode) dt
        self.area_busy = 0.0  # time with a sequence in service
        self.area_sys = 0.0  # integral of calls in the pool (in service or waiting) dt
        self.cache = cache


class Pool:
    """``schedule(t, payload)`` puts a pool event on the engine's list; ``on_done(r, now)``
    continues rollout ``r`` after its call ended."""

    def __init__(self, cfg: Inference, n_rollouts: int, schedule: Callable, on_done: Callable,
                 kind: int | None = None):
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
        # With ``kind``, ``schedule`` is the engine's ``push(t, kind, payload)`` itself (one
        # Python frame less per pool event than a wrapper).
        self.push = schedule if kind is not None else (lambda t, _k, payload: schedule(t, payload))
        self.kind = kind
        self.seq = 0
        self.wait_s = array("d")
        self.ttft_s = array("d")
        self.sojourn_s = array("d")
        self.input_tokens = 0
        self.cached_tokens = 0
        self.decode_tokens = 0
        self.r_in = [0] * n_rollouts
        self.r_cached = [0] * n_rollouts
        self.r_out = [0] * n_rollouts
        self.withdrawn_s = array("d")  # per call withdrawn: its time in the pool
        self.sent = 0  # calls submitted
        self.ended: dict[int, str] = {}  # call number -> "served" / "withdrawn" (each exactly once)

    # --- clock -------------------------------------------------------------------------
    def _advance(self, rep: Replica, now: float) -> None:
        dt = now - rep.t
        if dt <= 0:
            return
        n = rep.n
        busy = n + len(rep.prefill)
        if busy:
            if n and not rep.prefill:
                rep.v += dt / (n + self.b)
            rep.area_n += busy * dt
            rep.area_busy += dt
            rep.area_sys += (busy + len(rep.waiting)) * dt
        rep.t = now

    def _seat(self, rep: Replica, req: list, now: float) -> None:
        """``req`` takes a seat: into the prefill line, or straight to decoding."""
        self.wait_s.append(now - req[ARR])
        if rep.prefill or req[PRE] > 0:
            if not rep.prefill:
                rep.p_end = now + req[PRE]
            rep.prefill.append(req)
        else:
            self.ttft_s.append(now - req[ARR])
            self._decode(rep, req)

    def _decode(self, rep: Replica, req: list) -> None:
        rep.n += 1
        heappush(rep.done, (rep.v + req[DEC], self.seq, req))
        self.seq += 1

    # --- calls -------------------------------------------------------------------------
    def submit(self, now: float, r: int, ctx: int, new: int, dec: int, last: bool) -> None:
        """Rollout ``r`` sends a call: ``ctx`` tokens of earlier context, ``new`` new
        prompt tokens, ``dec`` tokens to decode; ``last``: its final call."""
        self.sent += 1
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
        inp = ctx + new
        self.input_tokens += inp
        self.cached_tokens += cached
        self.decode_tokens += dec
        self.r_in[r] += inp
        self.r_cached[r] += cached
        self.r_out[r] += dec
        pre = (inp - cached) * self.inv_p
        req = [r, now, inp + dec, pre, dec * self.inv_d, last, inp, cached, dec, self.sent - 1]
        # The hot path: ``_advance``, ``_seat`` and ``_reschedule`` written out inline.
        prefill = rep.prefill
        dt = now - rep.t
        if dt > 0:
            n = rep.n
            busy = n + len(prefill)
            if busy:
                if n and not prefill:
                    rep.v += dt / (n + self.b)
                rep.area_n += busy * dt
                rep.area_busy += dt
                rep.area_sys += (busy + len(rep.waiting)) * dt
            rep.t = now
        self.load[i] += 1
        if rep.n + len(prefill) >= self.seats:
            rep.waiting.append(req)  # the replica's next event is unchanged
            return
        self.wait_s.append(0.0)  # seated on arrival: now - now
        if prefill:
            prefill.append(req)  # queued behind the prompt in prefill: next event unchanged
            return
        rep.ver = ver = rep.ver + 1
        if pre > 0:
            rep.p_end = p_end = now + pre
            prefill.append(req)
            self.push(p_end, self.kind, (i, ver))
        else:
            self.ttft_s.append(0.0)
            rep.n = n = rep.n + 1
            done = rep.done
            heappush(done, (rep.v + req[DEC], self.seq, req))
            self.seq += 1
            self.push(now + (done[0][0] - rep.v) * (n + self.b), self.kind, (i, ver))

    def event(self, now: float, payload: tuple[int, int]) -> None:
        """A replica's scheduled event (unless the batch changed since): the head's
        prefill ends, or (no prefill pending) the earliest decoding call ends."""
        i, ver = payload
        rep = self.reps[i]
        if ver != rep.ver:
            return
        # The hot path: ``_advance``, ``_decode`` and ``_reschedule`` written out inline.
        b = self.b
        prefill, done = rep.prefill, rep.done
        dt = now - rep.t
        if dt > 0:
            n = rep.n
            busy = n + len(prefill)
            if busy:
                if n and not prefill:
                    rep.v += dt / (n + b)
                rep.area_n += busy * dt
                rep.area_busy += dt
                rep.area_sys += (busy + len(rep.waiting)) * dt
            rep.t = now
        if prefill:
            req = prefill.popleft()
            self.ttft_s.append(now - req[ARR])
            rep.n += 1
            heappush(done, (rep.v + req[DEC], self.seq, req))
            self.seq += 1
            if prefill:
                rep.p_end = now + prefill[0][PRE]
        elif rep.v < done[0][0]:
            rep.v = done[0][0]  # rounding: the event was scheduled for exactly this virtual time
        finished = []
        v = rep.v
        while done and done[0][0] <= v:
            req = heappop(done)[2]
            rep.n -= 1
            self.load[i] -= 1
            self.sojourn_s.append(now - req[ARR])
            r = req[ROLL]
            self._ends(req, "served")
            if self.caching:
                rep.cache.put(r, req[CTX] * self.kvb)
            if req[LAST] and self.sticky:
                self.live[i] -= 1
            finished.append(r)
        if rep.waiting:
            while rep.waiting and rep.n + len(prefill) < self.seats:
                self._seat(rep, rep.waiting.popleft(), now)
        rep.ver = ver = ver + 1
        if prefill:
            self.push(rep.p_end, self.kind, (i, ver))
        elif done:
            self.push(now + (done[0][0] - v) * (rep.n + b), self.kind, (i, ver))
        for r in finished:
            self.on_done(r, now)

    def _ends(self, req: list, how: str) -> None:
        call = req[CALL]
        assert call not in self.ended, f"call {call} ended twice"
        self.ended[call] = how

    def withdraw(self, r: int, now: float) -> None:
        """Rollout ``r``'s attempt ended before its call did: the call leaves its replica, wherever it
        is (waiting for a seat, in the prefill line, decoding); the others go on without it."""
        found = None
        for i, rep in enumerate(self.reps):
            for where in (rep.waiting, rep.prefill):
                for req in where:
                    if req[ROLL] == r:
                        found = (i, rep, where, req)
            for entry in rep.done:
                if entry[2][ROLL] == r:
                    found = (i, rep, None, entry[2])
        if found is None:
            return
        i, rep, where, req = found
        self._advance(rep, now)
        if where is rep.prefill:
            head = rep.prefill[0] is req
            rep.prefill.remove(req)
            if head and rep.prefill:  # the next prompt's prefill starts now
                rep.p_end = now + rep.prefill[0][PRE]
        elif where is rep.waiting:
            rep.waiting.remove(req)
        else:
            rep.done[:] = [e for e in rep.done if e[2] is not req]
            heapify(rep.done)
            rep.n -= 1
        self.load[i] -= 1
        self.input_tokens -= req[INP]
        self.cached_tokens -= req[CACHED]
        self.decode_tokens -= req[DTOK]
        self.r_in[r] -= req[INP]
        self.r_cached[r] -= req[CACHED]
        self.r_out[r] -= req[DTOK]
        self.withdrawn_s.append(now - req[ARR])
        self._ends(req, "withdrawn")
        while rep.waiting and rep.n + len(rep.prefill) < self.seats:
            self._seat(rep, rep.waiting.popleft(), now)
        rep.ver += 1
        if rep.prefill:
            self.push(rep.p_end, self.kind, (i, rep.ver))
        elif rep.done:
            self.push(now + (rep.done[0][0] - rep.v) * (rep.n + self.b), self.kind, (i, rep.ver))

    def forget(self, r: int, live: bool) -> None:
        """Rollout ``r``'s conversation is over (its attempt ended early or retries): its cached
        prefixes go, and its sticky replica (where ``live``: a call was still to come) counts it no more."""
        if self.sticky:
            i = self.assign.pop(r, None)
            if i is not None and live:
                self.live[i] -= 1
        if self.caching:
            for rep in self.reps:
                rep.cache.take(r)

    def close(self, end_s: float) -> None:
        """Integrate every replica's clock to the end of the run."""
        for rep in self.reps:
            self._advance(rep, end_s)

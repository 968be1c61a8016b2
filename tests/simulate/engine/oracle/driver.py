"""Turn-by-turn glue between a rollout's hold and the pool.

A hold with an inference pool is emergent: build, then per turn a model call (seat
wait + prefill + decode, served by the pool) followed by the turn's command, then the
verifier. The driver keeps each rollout's turn index and context; the engine calls
``call`` when a turn's model call is due and the pool calls back ``done`` when it ends.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from tests.simulate.engine.oracle.pool import Pool

from sandbox_fleet.simulate.engine.inference.config import Inference
from sandbox_fleet.simulate.engine.inference.figures import ServedRun, unloaded_holds
from sandbox_fleet.simulate.engine.inference.turn_draws import TurnDraws


class Driver:
    def __init__(self, cfg: Inference, draws: TurnDraws, push: Callable, turn_kind: int, pool_kind: int,
                 finish_kind: int, a_start: list, a_build: list, a_agent: list, a_verify: list):
        n = int(draws.turns.size)
        self.off = draws.off.tolist()
        self.nt = draws.turns.tolist()
        self.new = draws.new_tokens.tolist()
        self.dec = draws.decode_tokens.tolist()
        self.cmd = draws.command_s.tolist()
        self.cur = [0] * n
        self.ctx = [0] * n
        self.row = list(range(n))  # the attempt row whose calls a rollout sends
        self.calls_over: set[int] = set()  # attempt rows whose last call ended (their agent phase is set)
        self.agent_end: dict[int, float] = {}  # ... and when their last command ends
        self.push = push
        self.turn_kind, self.finish_kind = turn_kind, finish_kind
        self.a_start, self.a_build, self.a_agent, self.a_verify = a_start, a_build, a_agent, a_verify
        self.pool = Pool(cfg, n, push, self.done, kind=pool_kind)

    def call(self, r: int, now: float, row: int | None = None) -> None:
        """Rollout ``r``'s attempt ``row`` (default: its first, row ``r``) sends its current turn's model call."""
        self.row[r] = r if row is None else row
        k = self.cur[r]
        i = self.off[r] + k
        self.pool.submit(now, r, self.ctx[r], self.new[i], self.dec[i], k == self.nt[r] - 1)

    def done(self, r: int, now: float) -> None:
        k = self.cur[r]
        i = self.off[r] + k
        self.ctx[r] += self.new[i] + self.dec[i]
        self.cur[r] = k + 1
        end = now + self.cmd[i]
        row = self.row[r]
        if k + 1 < self.nt[r]:
            self.push(end, self.turn_kind, row)
        else:
            self.calls_over.add(row)
            self.agent_end[row] = end
            self.a_agent[row] = end - self.a_start[row] - self.a_build[row]
            self.push(end + self.a_verify[row], self.finish_kind, row)

    def end_episode(self, r: int, now: float) -> None:
        """Rollout ``r``'s attempt ended early or retries: its call in flight is withdrawn, its
        conversation forgotten, and its next attempt starts again from the first turn."""
        self.pool.withdraw(r, now)
        self.pool.forget(r, self.cur[r] < self.nt[r])
        self.cur[r] = 0
        self.ctx[r] = 0


def served_run(driver, prep) -> ServedRun:
    """The pool's records as the kernel returns them (``admit_loop``'s ``ServedRun``)."""
    pool = driver.pool
    reps = pool.reps
    return ServedRun(
        replicas=len(reps),
        gpus_per_replica=pool.cfg.gpus_per_replica,
        wait_s=np.frombuffer(pool.wait_s, dtype=float).copy(),
        ttft_s=np.frombuffer(pool.ttft_s, dtype=float).copy(),
        sojourn_s=np.frombuffer(pool.sojourn_s, dtype=float).copy(),
        area_busy=np.array([r.area_busy for r in reps]),
        area_n=np.array([r.area_n for r in reps]),
        area_sys=np.array([r.area_sys for r in reps]),
        input_tokens=pool.input_tokens,
        cached_tokens=pool.cached_tokens,
        decode_tokens=pool.decode_tokens,
        evicted_bytes=float(sum(r.cache.evicted_bytes for r in reps)),
        r_input=np.asarray(pool.r_in, dtype=np.int64),
        r_cached=np.asarray(pool.r_cached, dtype=np.int64),
        r_output=np.asarray(pool.r_out, dtype=np.int64),
        r_turns=np.asarray(prep.turn_draws.turns, dtype=np.int64),
        unloaded_hold_s=unloaded_holds(prep),
        prefill_tok_s=prep.inference.prefill_tok_s,
        decode_tok_s=prep.inference.decode_tok_s,
        withdrawn_s=np.frombuffer(pool.withdrawn_s, dtype=float).copy(),
        calls=pool.sent,
    )

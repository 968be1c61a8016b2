"""Turn-by-turn glue between a rollout's hold and the pool.

A hold with an inference pool is emergent: build, then per turn a model call (seat
wait + prefill + decode, served by the pool) followed by the turn's command, then the
verifier. The driver keeps each rollout's turn index and context; the engine calls
``call`` when a turn's model call is due and the pool calls back ``done`` when it ends.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sandbox_fleet.simulate.engine.inference.config import Inference
from sandbox_fleet.simulate.engine.inference.pool import Pool


@dataclass
class TurnDraws:
    """Per-turn draws of every rollout, flat: rollout ``r``'s turns are
    ``off[r] .. off[r] + turns[r] - 1``."""

    turns: np.ndarray  # int64 per rollout
    new_tokens: np.ndarray  # int64 per turn: new prompt tokens
    decode_tokens: np.ndarray  # int64 per turn
    command_s: np.ndarray  # float per turn

    @property
    def off(self) -> np.ndarray:
        return np.concatenate(([0], np.cumsum(self.turns)[:-1])).astype(np.int64)


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
        self.push = push
        self.turn_kind, self.finish_kind = turn_kind, finish_kind
        self.a_start, self.a_build, self.a_agent, self.a_verify = a_start, a_build, a_agent, a_verify
        self.pool = Pool(cfg, n, push, self.done, kind=pool_kind)

    def call(self, r: int, now: float) -> None:
        """Rollout ``r`` (its only attempt: row ``r``) sends its current turn's model call."""
        k = self.cur[r]
        i = self.off[r] + k
        self.pool.submit(now, r, self.ctx[r], self.new[i], self.dec[i], k == self.nt[r] - 1)

    def done(self, r: int, now: float) -> None:
        k = self.cur[r]
        i = self.off[r] + k
        self.ctx[r] += self.new[i] + self.dec[i]
        self.cur[r] = k + 1
        end = now + self.cmd[i]
        if k + 1 < self.nt[r]:
            self.push(end, self.turn_kind, r)
        else:
            self.a_agent[r] = end - self.a_start[r] - self.a_build[r]
            self.push(end + self.a_verify[r], self.finish_kind, r)

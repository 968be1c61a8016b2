"""The per-turn draws of every rollout when the model calls are served by an inference pool
(``prepare`` draws them; the admission kernel reads them)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


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

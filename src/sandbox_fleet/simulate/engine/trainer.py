"""Trainer-side state of an RL workload: which batch may be released, when each step trains.

Batch ``j`` may be released once ``j <= version + staleness`` (``version`` = finished
trainer steps). Trainer step ``j`` starts when batch ``j`` has fully ended and step
``j - 1`` is done, and lasts ``train_s``.

Both Python executors keep these rules here: the event loop calls ``start_step`` when a
batch ends or a step finishes (``TRAIN_DONE`` events), the FIFO recursion, which learns the
finishes out of time order, calls it for every step due as soon as its batch is complete.
"""

from __future__ import annotations

import math

import numpy as np

from sandbox_fleet.simulate.engine.workloads import RL, AsyncRL, Workload


class RLState:
    __slots__ = (
        "base",
        "batch_end_s",
        "next_release",
        "next_train",
        "release_s",
        "rem",
        "sizes",
        "staleness",
        "start_s",
        "starts",
        "train_end_s",
        "train_s",
        "train_start_s",
        "training",
        "version",
        "w",
    )

    def __init__(self, w: int, batch: np.ndarray, staleness: int, train_s: float, base: int, start_s: float = 0.0):
        self.w = w
        self.start_s = float(start_s)  # when the workload releases its first batch
        self.sizes = [int(b) for b in batch]
        self.starts = np.concatenate(([0], np.cumsum(batch)[:-1])).astype(np.int64).tolist()
        self.rem = list(self.sizes)
        self.version = 0
        self.next_release = 0
        self.next_train = 0
        self.training = False
        self.staleness = staleness
        self.train_s = float(train_s)
        self.base = base  # global id of the workload's first rollout
        steps = len(self.sizes)
        self.release_s = [math.nan] * steps
        self.batch_end_s = [math.nan] * steps
        self.train_start_s = [math.nan] * steps
        self.train_end_s = [math.nan] * steps

    def take_releasable(self, now: float, version: int | None = None) -> list[range]:
        """Mark every batch eligible under ``version`` (default: the current one) as
        released at ``now``; returns their global rollout ids."""
        out = []
        steps = len(self.sizes)
        v = self.version if version is None else version
        while self.next_release < steps and self.next_release <= v + self.staleness:
            j = self.next_release
            self.next_release = j + 1
            self.release_s[j] = now
            lo = self.base + self.starts[j]
            out.append(range(lo, lo + self.sizes[j]))
        return out

    def rollout_ended(self, j: int, t: float) -> bool:
        """A rollout of batch ``j`` ended at ``t``; returns whether that completes the batch.

        The batch ends with its last rollout: the latest ``t`` (the FIFO path reports
        ends out of time order; the event loop in order, so the last report wins)."""
        if not self.batch_end_s[j] >= t:  # NaN until the batch's first end
            self.batch_end_s[j] = t
        self.rem[j] -= 1
        return self.rem[j] == 0

    def can_train(self) -> bool:
        j = self.next_train
        return (not self.training) and j < self.next_release and self.rem[j] == 0

    def start_step(self) -> float:
        """Begin step ``next_train`` (``can_train()`` holds) when both its batch has ended and
        the step before is done; returns when it ends."""
        k = self.next_train
        prev = self.train_end_s[k - 1] if k else -math.inf
        return self.begin_train(max(self.batch_end_s[k], prev))

    def begin_train(self, now: float) -> float:
        """Start step ``next_train`` at ``now``; returns when it ends."""
        self.training = True
        self.train_start_s[self.next_train] = now
        return now + self.train_s

    def end_train(self, now: float) -> None:
        self.train_end_s[self.next_train] = now
        self.training = False
        self.version += 1
        self.next_train += 1

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(getattr(self, k), dtype=float) for k in ("release_s", "batch_end_s", "train_start_s", "train_end_s")}


def rl_states(workloads: list[Workload], offsets: np.ndarray, r_batch: list[int] | np.ndarray) -> dict[int, RLState]:
    """A fresh trainer state per RL workload (keyed by workload index); fills ``r_batch``
    (per global rollout id: its batch within its workload)."""
    out: dict[int, RLState] = {}
    for w, wl in enumerate(workloads):
        if wl.kind != RL:
            continue
        assert isinstance(wl, AsyncRL)  # the RL kind is AsyncRL's (SyncRL is one)
        st = out[w] = RLState(w, wl.batch_sizes, wl.staleness, wl.train_s, int(offsets[w]), wl.start_s)
        for j, (s0, sz) in enumerate(zip(st.starts, st.sizes)):
            lo = st.base + s0
            r_batch[lo : lo + sz] = [j] * sz
    return out

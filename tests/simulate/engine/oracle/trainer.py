"""The trainer's rules as the pure event loop applies them: the oracle of the admission kernel's
(``_admit_kernel.release``, ``maybe_train``, ``on_train_done``, ``terminal``), which production runs.

Batch ``j`` may be released once ``j <= version + staleness`` (``version`` = finished
trainer steps). Trainer step ``j`` starts when batch ``j`` has fully ended and step
``j - 1`` is done, and lasts ``train_s``. With dynamic sampling a step's batch goes out in
rounds, each once the round before has ended.

The event loop (``loop_state``) calls ``start_step`` when a batch ends or a step finishes
(``TRAIN_DONE`` events). It keeps its own copy on purpose: a test oracle written apart from the
kernel's arrays (production's layout and record are ``simulate.engine.trainer``).
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
        "pending",
        "release_s",
        "rem",
        "round_end_s",
        "round_lo",
        "round_release_s",
        "round_rem",
        "round_size",
        "round_step",
        "rounds",
        "sizes",
        "staleness",
        "start_s",
        "starts",
        "step_round0",
        "train_end_s",
        "train_s",
        "train_start_s",
        "training",
        "version",
        "w",
    )

    def __init__(self, w: int, batch: np.ndarray, staleness: int, train_s: float, base: int, start_s: float = 0.0,
                 rounds: list[list[int]] | None = None, group_size: int = 1):
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
        # dynamic sampling: the rounds (rollouts each, in release order), the step of each, the first of each step
        self.rounds = rounds
        self.pending: dict[int, int] = {}  # released steps with rounds to come -> the next round
        if rounds is not None:
            size = [n * group_size for step in rounds for n in step]
            self.round_step = [j for j, step in enumerate(rounds) for _ in step]
            self.round_lo = (base + np.concatenate(([0], np.cumsum(size)[:-1]))).astype(np.int64).tolist()
            self.round_size, self.round_rem = size, list(size)
            self.round_release_s = [math.nan] * len(size)
            self.round_end_s = [math.nan] * len(size)
            self.step_round0 = np.concatenate(([0], np.cumsum([len(s) for s in rounds]))).astype(np.int64).tolist()

    def round_range(self, k: int, now: float) -> range:
        """Release round ``k`` at ``now``; its global rollout ids."""
        self.round_release_s[k] = now
        lo = self.round_lo[k]
        return range(lo, lo + self.round_size[k])

    def next_round_due(self, k: int) -> bool:
        """Round ``k`` has ended and its step has a round after it."""
        return self.round_rem[k] == 0 and k + 1 < self.step_round0[self.round_step[k] + 1]

    def take_releasable(self, now: float, version: int | None = None) -> list[range]:
        """Mark every batch eligible under ``version`` (default: the current one) as
        released at ``now``; returns their global rollout ids."""
        out = []
        for j, k in list(self.pending.items()):  # dynamic sampling: a round whose round before has ended
            if self.round_rem[k - 1] == 0 and self.round_end_s[k - 1] <= now:
                out.append(self.round_range(k, now))
                if k + 1 < self.step_round0[j + 1]:
                    self.pending[j] = k + 1
                else:
                    del self.pending[j]
        steps = len(self.sizes)
        v = self.version if version is None else version
        while self.next_release < steps and self.next_release <= v + self.staleness:
            j = self.next_release
            self.next_release = j + 1
            self.release_s[j] = now
            if self.rounds is None:
                lo = self.base + self.starts[j]
                out.append(range(lo, lo + self.sizes[j]))
                continue
            k = self.step_round0[j]
            out.append(self.round_range(k, now))
            if k + 1 < self.step_round0[j + 1]:
                self.pending[j] = k + 1
        return out

    def rollout_ended(self, j: int, t: float) -> bool:
        """A rollout of batch ``j`` (with dynamic sampling: of round ``j``) ended at ``t``; returns
        whether that completes the batch (the round).

        The batch ends with its last rollout: the latest ``t`` (the FIFO path reports
        ends out of time order; the event loop in order, so the last report wins)."""
        if self.rounds is not None:
            k, j = j, self.round_step[j]
            if not self.round_end_s[k] >= t:
                self.round_end_s[k] = t
            self.round_rem[k] -= 1
            if not self.batch_end_s[j] >= t:
                self.batch_end_s[j] = t
            self.rem[j] -= 1
            return self.round_rem[k] == 0
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
        dr = wl.groups_drawn if wl.dynamic is not None else None
        st = out[w] = RLState(w, wl.batch_sizes, wl.staleness, wl.train_s, int(offsets[w]), wl.start_s,
                              None if dr is None else dr.rounds, 1 if dr is None else dr.group_size)
        if dr is not None:  # rollouts map to their round
            for k, (lo, sz) in enumerate(zip(st.round_lo, st.round_size)):
                r_batch[lo : lo + sz] = [k] * sz
            continue
        for j, (s0, sz) in enumerate(zip(st.starts, st.sizes)):
            lo = st.base + s0
            r_batch[lo : lo + sz] = [j] * sz
    return out

"""An RL workload's trainer as data: which rollouts make each batch (``layouts``), and the steps a run
leaves (``TrainerSteps``).

The trainer's rules are written once, in the admission kernel (``fast/_admit_kernel``): ``release``
(batch ``j`` goes out once ``j <= version + staleness``; with dynamic sampling a step's next round once
the round before has ended), ``maybe_train`` (step ``j`` starts when batch ``j`` has fully ended and step
``j - 1`` is done, and lasts ``train_s``), ``on_train_done`` and ``terminal``. Every RL run is the
kernel's (``fifo.one_pass_refusal`` sends RL there); the pure event loop's copy of the rules is the oracle
in ``tests/simulate/engine/oracle/trainer.py``. This module holds no rule: a layout, and a record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from sandbox_fleet.simulate.engine.workloads import RL, AsyncRL, Workload


@dataclass(frozen=True)
class Layout:
    """RL workload ``w``'s batches in rollout ids: batch ``j`` is rollouts ``starts[j]`` ..
    ``starts[j] + sizes[j] - 1``, consecutive from ``base`` (the workload's first). With dynamic
    sampling (``rounds``) a batch is released in rounds: round ``k`` is rollouts ``round_lo[k]`` ..
    ``round_lo[k] + round_size[k] - 1`` of step ``round_step[k]``, in release order."""

    w: int
    base: int
    starts: list[int]  # global ids
    sizes: list[int]
    staleness: int
    train_s: float
    start_s: float  # when the workload releases its first batch
    rounds: list[list[int]] | None = None  # dynamic sampling: per step, the groups each round releases
    round_lo: list[int] = field(default_factory=list)
    round_size: list[int] = field(default_factory=list)
    round_step: list[int] = field(default_factory=list)


def layouts(workloads: list[Workload], offsets: np.ndarray, r_batch: np.ndarray) -> dict[int, Layout]:
    """Each RL workload's layout (keyed by workload index); fills ``r_batch`` (per global rollout id:
    its batch within its workload, with dynamic sampling its round)."""
    out: dict[int, Layout] = {}
    for w, wl in enumerate(workloads):
        if wl.kind != RL:
            continue
        assert isinstance(wl, AsyncRL)  # the RL kind is AsyncRL's (SyncRL is one)
        base = int(offsets[w])
        sizes = [int(b) for b in wl.batch_sizes]
        starts = (base + np.concatenate(([0], np.cumsum(sizes)[:-1]))).astype(np.int64).tolist()
        dr = wl.groups_drawn if wl.dynamic is not None else None
        rounds, lo, size, step_of = None, [], [], []
        if dr is not None:
            rounds = dr.rounds
            size = [n * dr.group_size for step in rounds for n in step]
            lo = (base + np.concatenate(([0], np.cumsum(size)[:-1]))).astype(np.int64).tolist()
            step_of = [j for j, step in enumerate(rounds) for _ in step]
        lay = Layout(w, base, starts, sizes, int(wl.staleness), float(wl.train_s), float(wl.start_s), rounds, lo,
                     size, step_of)
        for k, (lo_k, sz) in enumerate(zip(starts, sizes) if rounds is None else zip(lo, size)):
            r_batch[lo_k : lo_k + sz] = k
        out[w] = lay
    return out


@dataclass
class TrainerSteps:
    """An RL workload's steps as a run left them: per step its batch's release and end, its training's
    start and end (NaN: not reached), and the trainer's counters (finished steps ``version``, batches
    released ``next_release``, the step to train next ``next_train``, ``training`` mid-step, and each
    batch's rollouts not yet ended, ``rem``)."""

    release_s: list[float]
    batch_end_s: list[float]
    train_start_s: list[float]
    train_end_s: list[float]
    version: int
    next_release: int
    next_train: int
    training: bool
    rem: list[int]

    def arrays(self) -> dict[str, np.ndarray]:
        return {k: np.asarray(getattr(self, k), dtype=float) for k in ("release_s", "batch_end_s", "train_start_s", "train_end_s")}

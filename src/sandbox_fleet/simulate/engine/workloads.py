"""Workloads: who releases rollouts, and when.

Open workloads (``Poisson``, ``Replay``) fix every arrival time up front; RL
workloads (``SyncRL``, ``AsyncRL``) release batches in response to the trainer; the
closed workload (``Closed``) keeps a fixed population of rollouts in the system,
starting a new one whenever one ends.
Rollout ``k`` of a workload is its ``k``-th released rollout, so an explicit
per-rollout array (holds, exception flags, telemetry attributes) is consumed in
release order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.distributions import Dist
from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling, GroupDraw, draw
from sandbox_fleet.simulate.engine.entities import Episode, RetryPolicy

if TYPE_CHECKING:
    import pyarrow as pa

# Workload kinds: who decides when a rollout arrives.
OPEN, RL, CLOSED = 0, 1, 2  # fixed arrival times; the trainer; a fixed population


@dataclass(kw_only=True)
class Workload:
    """Common fields.

    - ``holds``: a distribution or an explicit per-rollout array of hold seconds
      (shorthand for ``Episode(agent=holds, exception=exception)``); or give ``episode``.
    - ``attrs``: per-rollout arrays copied into telemetry (any ROLLOUT_SCHEMA column,
      e.g. ``model``, ``task_id``, ``reward``, ``input_tokens``).
    - ``pool``: index of the fleet (pool) this workload draws slots from.
    - ``priority``, ``nominal``, ``borrow_limit``: for a pool with ``admission = "priority"``
      only (``policies``): higher priority is served first; ``nominal`` slots are the
      workload's quota, ``borrow_limit`` how many more it may hold (``None``: up to the cap).
    """

    holds: Dist | np.ndarray | None = None
    exception: np.ndarray | None = None
    episode: Episode | None = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    attrs: dict[str, np.ndarray] = field(default_factory=dict)
    pool: int = 0
    name: str | None = None
    priority: int | None = None
    nominal: int | None = None
    borrow_limit: int | None = None
    #: each sandbox's request (cpu, memory MB, disk MB), placed on a pool made of nodes (``Fleet.node_pools``)
    request: tuple[float, float, float] | None = None

    kind = OPEN

    def resolved_episode(self) -> Episode:
        if self.episode is not None:
            if self.holds is not None or self.exception is not None:
                raise InputError("give a workload either holds/exception or an episode, not both")
            return self.episode
        if self.holds is None:
            raise InputError("a workload needs holds (a distribution or an array) or an episode")
        return Episode(agent=self.holds, exception=self.exception)

    @property
    def count(self) -> int:
        raise NotImplementedError

    def arrivals(self, rng: np.random.Generator) -> np.ndarray:
        """Arrival times of an open workload (the OPEN kinds define it)."""
        raise NotImplementedError

    def check_arrays(self) -> None:
        n = self.count
        ep = self.resolved_episode()
        for what, arr in (("holds", ep.agent), ("exception", ep.exception), ("agent_timeout_s", ep.agent_timeout_s)):
            if isinstance(arr, np.ndarray) and arr.shape[0] < n:
                raise InputError(f"workload {self.name}: {what} has {arr.shape[0]} values for {n} rollouts")
        if isinstance(ep.agent, np.ndarray) and (not np.all(np.isfinite(ep.agent[:n])) or np.any(ep.agent[:n] < 0)):
            raise InputError(f"workload {self.name}: holds must be finite and >= 0")
        for col, arr in self.attrs.items():
            if len(arr) < n:
                raise InputError(f"workload {self.name}: attrs[{col!r}] has {len(arr)} values for {n} rollouts")


@dataclass(kw_only=True)
class Poisson(Workload):
    """Open arrivals at ``rate_per_s``, ``count`` rollouts, from ``start_s``."""

    rate_per_s: float
    n: int
    start_s: float = 0.0

    def __post_init__(self) -> None:
        if not self.rate_per_s > 0:
            raise InputError(f"poisson rate_per_s must be > 0, got {self.rate_per_s}")
        if self.n < 1:
            raise InputError(f"poisson count must be >= 1, got {self.n}")

    @property
    def count(self) -> int:
        return int(self.n)

    def arrivals(self, rng: np.random.Generator) -> np.ndarray:
        t = np.cumsum(rng.exponential(1.0 / self.rate_per_s, self.count))
        t += self.start_s  # in place: start_s + each cumulative sum, without another array
        return t


@dataclass(kw_only=True)
class Replay(Workload):
    """Open arrivals at given times (seconds, sorted), e.g. measured start times.

    ``start_s`` shifts every arrival: the rollout at ``arrivals_s[k]`` arrives at
    ``start_s + arrivals_s[k]``.
    """

    arrivals_s: np.ndarray
    start_s: float = 0.0
    #: replayed telemetry: the wall-clock instant of run time 0 (microseconds since the epoch: its first
    #: start, less ``start_s``), a reclaim trace's origin (``node_fleet.trace_origin_us``)
    origin_us: int | None = None

    def __post_init__(self) -> None:
        a = np.asarray(self.arrivals_s, dtype=float)
        if a.ndim != 1 or a.size == 0 or not np.all(np.isfinite(a)) or np.any(a < 0):
            raise InputError("replay needs at least one arrival time, each finite and >= 0")
        if not (self.start_s >= 0 and np.isfinite(self.start_s)):
            raise InputError(f"replay start_s must be a finite number >= 0, got {self.start_s}")
        if np.any(np.diff(a) < 0):
            a = np.sort(a, kind="stable")
        self.arrivals_s = a

    @property
    def count(self) -> int:
        return int(self.arrivals_s.size)

    def arrivals(self, rng: np.random.Generator) -> np.ndarray:
        # A fresh array either way: the run's results keep it, and must not share the input's.
        return self.start_s + self.arrivals_s if self.start_s else self.arrivals_s.copy()

    @classmethod
    def from_table(cls, rollouts: pa.Table, *, use_holds: bool = True, **kw) -> Replay:
        """Replay a canonical rollout table: its start times (the first at ``start_s``) and its holds."""
        if rollouts.num_rows == 0:
            raise InputError("replay: the telemetry has no rollouts")
        import pyarrow as pa  # only replays read Arrow: spare every other simulation the import

        start = rollouts.column("started_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
        finish = rollouts.column("finished_at").cast(pa.int64()).to_numpy(zero_copy_only=False)
        order = np.argsort(start, kind="stable")
        arr = (start[order] - start[order][0]) / 1e6
        if use_holds and "holds" not in kw and "episode" not in kw:
            kw["holds"] = np.maximum(finish[order] - start[order], 0) / 1e6
        origin_us = int(start[order][0]) - round(float(kw.get("start_s", 0.0)) * 1e6)
        return cls(arrivals_s=arr, origin_us=origin_us, **kw)


@dataclass(kw_only=True)
class Closed(Workload):
    """A closed population: ``population`` rollouts are in the system (holding or
    waiting for a sandbox) at all times from ``start_s``; when one ends the next of
    ``count`` starts at once. Above the fleet cap they queue."""

    population: int
    n: int
    start_s: float = 0.0
    kind = CLOSED

    def __post_init__(self) -> None:
        if int(self.population) != self.population or self.population < 1:
            raise InputError(f"closed population must be a positive integer, got {self.population}")
        if self.n < 1:
            raise InputError(f"closed count must be >= 1, got {self.n}")

    @property
    def count(self) -> int:
        return int(self.n)


@dataclass(kw_only=True)
class AsyncRL(Workload):
    """RL with a staleness bound: batch ``j`` is released once ``j <= version + staleness``.

    ``version`` counts finished trainer steps. The trainer runs step ``j`` (for
    ``train_s``) when batch ``j`` has fully ended (finished or dropped) and step
    ``j-1`` is done. ``staleness = 0`` is synchronous RL.
    ``batch``: one size for every step, or an array of per-step sizes.
    ``dynamic``: dynamic sampling (``dynamic_sampling``): ``batch`` is then B x G, the groups a step
    trains on, and ``prepare`` draws each step's rounds (``draw_groups``), setting ``batch`` to the
    rollouts each step releases over all its rounds.
    """

    batch: int | np.ndarray
    steps: int | None = None
    train_s: float = 0.0
    staleness: int = 1
    start_s: float = 0.0
    dynamic: DynamicSampling | None = None
    #: the rounds ``draw_groups`` drew for the run being prepared (None without ``dynamic``)
    groups_drawn: GroupDraw | None = None
    kind = RL

    def __post_init__(self) -> None:
        if isinstance(self.batch, (int, np.integer)):
            if self.steps is None or self.steps < 1:
                raise InputError("an RL workload needs steps >= 1 when batch is one number")
            self.batch = np.full(int(self.steps), int(self.batch), dtype=np.int64)
        else:
            self.batch = np.asarray(self.batch, dtype=np.int64)
            if self.steps is not None and self.steps != self.batch.size:
                raise InputError(f"RL workload: steps={self.steps} but {self.batch.size} batch sizes")
            self.steps = int(self.batch.size)
        if self.batch.size == 0 or np.any(self.batch < 1):
            raise InputError("RL workload batch sizes must be >= 1")
        if not self.train_s >= 0:
            raise InputError(f"RL workload train_s must be >= 0, got {self.train_s}")
        if self.staleness < 0:
            raise InputError(f"RL workload staleness must be >= 0, got {self.staleness}")
        if self.dynamic is not None:
            self._check_dynamic()

    def _check_dynamic(self) -> None:
        ds = self.dynamic
        assert ds is not None
        trained = int(ds.groups) * int(ds.group_size)
        if np.any(self.batch_sizes != trained):
            raise InputError(f"workload {self.name}: with dynamic_sampling a step trains on groups x group_size = "
                             f"{trained} rollouts; batch must be that (or left out)")
        ep = self.episode
        arrays = [self.holds, self.exception, *([] if ep is None else [ep.agent, ep.exception, ep.agent_timeout_s])]
        if any(isinstance(a, np.ndarray) for a in arrays) or self.attrs:
            raise InputError(f"workload {self.name}: dynamic_sampling draws how many rollouts a step releases, so "
                             "per-rollout arrays (holds, exception, timeouts, attrs) cannot be given; use distributions")

    def draw_groups(self, rng: np.random.Generator) -> None:
        """Dynamic sampling: draw every step's rounds for this run (``prepare``), setting ``batch`` to the
        rollouts each step releases and ``attrs`` ``task_id`` and ``reward`` (1 a valid pass, 0 a valid
        fail, null invalid) to the drawn outcomes."""
        assert self.dynamic is not None and self.steps is not None
        dr = self.groups_drawn = draw(self.dynamic, int(self.steps), rng)
        self.batch = dr.step_rollouts
        g = dr.group_size
        names = np.array([f"task-{t}" for t in range(self.dynamic.task_pass.size)], dtype=object)
        self.attrs = {"task_id": names[np.repeat(dr.task, g)],
                      "reward": np.where(dr.rollout_valid, dr.rollout_passed.astype(np.float64), np.nan)}

    @property
    def count(self) -> int:
        return int(self.batch_sizes.sum())

    @property
    def batch_sizes(self) -> np.ndarray:
        """``batch`` as ``__post_init__`` left it: one size per step."""
        assert isinstance(self.batch, np.ndarray)
        return self.batch


@dataclass(kw_only=True)
class SyncRL(AsyncRL):
    """Synchronous RL: release a batch, wait for all of it, train ``train_s``, repeat."""

    staleness: int = 0

    def __post_init__(self) -> None:
        if self.staleness != 0:
            raise InputError("SyncRL has staleness 0; use AsyncRL for a staleness bound")
        super().__post_init__()

"""Simulating candidates: scenario data for a point, and a memo that runs batches on a sweep backend.

Every candidate runs with the same seeds (``run.seed + 0..reps-1``): common random numbers, so
the difference between two candidates is their configuration, not their luck.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

from sandbox_fleet.optimize.inputs import Base
from sandbox_fleet.optimize.space import Option
from sandbox_fleet.sweep.backends import run_tasks
from sandbox_fleet.sweep.task import simulate_variant


@dataclass(frozen=True)
class Goal:
    """Passing trajectories per hour at least ``passing_per_hour``, or a step of ``batch`` within ``max_step_s``."""

    passing_per_hour: float | None = None
    batch: int | None = None
    train_s: float = 0.0
    max_step_s: float | None = None
    steps: int = 2

    @property
    def step_mode(self) -> bool:
        return self.max_step_s is not None


@dataclass(frozen=True)
class Result:
    passing_per_hour: float
    step_s: float | None
    evicted_gb: float
    hold_mean_s: float
    values: tuple[float, ...]  # passing per hour of each replication
    steps: tuple[float, ...]


def scenario_data(base: Base, goal: Goal, opt: Option, replicas: int, cap: int, count: int, seed: int) -> dict:
    """The scenario a candidate is: the input's loop with this fleet, workload size and pool."""
    d = copy.deepcopy(base.data)
    d["fleet"] = {**d["fleet"], "cap": cap}
    wl = d["workload"]
    if goal.step_mode:
        wl.update(kind="sync-rl", batch=goal.batch, steps=goal.steps, train_s=goal.train_s)
    else:
        # at least two holds per sandbox, so the throughput is the loop's, not one wave's
        wl.update(kind="closed", population=cap, count=max(count, 2 * cap))
    inf = d["inference"]
    inf.update(gpu=opt.gpu, gpus=replicas * opt.gpus_per_replica, gpus_per_replica=opt.gpus_per_replica,
               kv_offload_gb=opt.kv_offload_gb)
    if not opt.caching:
        inf["kv_cache_gb"] = 0
        inf.pop("kv_offload_gb")
    d["run"] = {**d.get("run", {}), "seed": seed}
    return d


def passing_per_hour(s: dict, pass_rate: float, population: int | None) -> float:
    """Passing trajectories per hour of one simulate summary.

    A closed loop keeps ``population`` sandboxes busy, so by Little's law it completes
    ``population / mean hold`` rollouts a second in steady state; completed / simulated time
    would count the fill and the drain at the end (with few rollouts per sandbox, mostly drain).
    An RL run is its steps back to back: completed / simulated time.
    """
    done = s["completed"] / s["rollouts"] if s["rollouts"] else 0.0
    if population is not None:
        hold = s["hold_s"]["mean"]
        return population * 3600.0 / hold * done * pass_rate if hold else 0.0
    return s["completed"] * pass_rate * 3600.0 / s["sim_time_s"] if s["sim_time_s"] else 0.0


class Evaluator:
    """Memoised simulations of (option, replicas, cap), run in batches on ``backend``."""

    def __init__(self, base: Base, goal: Goal, count: int, seed: int, *, backend: str, workers: int | None,
                 progress: bool = False, search_reps: int = 1):
        self.search_reps = search_reps
        self.base, self.goal, self.count, self.seed = base, goal, count, seed
        self.backend, self.workers, self.progress = backend, workers, progress
        self.memo: dict[tuple, Result] = {}
        self.simulations = 0

    def run(self, points: list[tuple[Option, int, int]], reps: int | None = None) -> list[Result]:
        """Results of ``points`` (each with ``reps`` replications, default the search's), simulating only the new ones."""
        reps = reps or self.search_reps
        todo = list(dict.fromkeys(p for p in points if (p, reps) not in self.memo))
        tasks = [(scenario_data(self.base, self.goal, o, r, c, self.count, self.seed), str(self.base.base_dir),
                  f"{self.base.name} with {o.label}, {r} replicas, cap {c}", self.seed + i)
                 for (o, r, c) in todo for i in range(reps)]
        if tasks:
            out = run_tasks(simulate_variant, tasks, backend=self.backend, workers=self.workers,
                            progress=self.progress, label=f"optimize: {len(todo)} candidates")
            self.simulations += len(tasks)
            for j, p in enumerate(todo):
                self.memo[(p, reps)] = self._result(out[j * reps:(j + 1) * reps])
        return [self.memo[(p, reps)] for p in points]

    def _result(self, sums: list[dict]) -> Result:
        pr = self.base.pass_rate
        vals = tuple(passing_per_hour(s, pr, None if self.goal.step_mode else s["concurrency"]["peak"]) for s in sums)
        steps = tuple(s["step_s"]["mean"] for s in sums if s.get("step_s") and s["step_s"]["mean"] is not None)
        n = len(sums)
        return Result(
            passing_per_hour=sum(vals) / n,
            step_s=sum(steps) / len(steps) if steps else None,
            evicted_gb=sum((s["inference"] or {}).get("evicted_gb") or 0.0 for s in sums) / n,
            hold_mean_s=sum(s["hold_s"]["mean"] or 0.0 for s in sums) / n,
            values=vals, steps=steps)

    def meets(self, r: Result) -> bool:
        if self.goal.step_mode:
            return r.step_s is not None and r.step_s <= self.goal.max_step_s
        return r.passing_per_hour >= self.goal.passing_per_hour

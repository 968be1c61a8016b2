"""Simulating candidates: scenario data for a point, and a memo that runs batches on a sweep backend.

Every candidate runs with the same seeds (``run.seed + 0..reps-1``): common random numbers, so
the difference between two candidates is their configuration, not their luck.

``--scale F`` simulates a slice of the campaign: ``round(F cap)`` sandboxes, ``F`` x the rollouts,
and each replica with ``f = round(F cap) / cap`` of its GPUs' prefill and decode rates, prefix
cache and offload (the same iteration floor). Per replica, ``f`` x the sequences at ``f`` x the
rate decode each at the full replica's speed (``f d / (f n + t f d) = d / (n + t d)``), and ``f``
x the contexts fit ``f`` x the cache: the slice is the full loop shrunk, so its throughput is
``f`` x the full loop's. Results are mapped back (``passing/h / f``) before anything compares them.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path

from sandbox_fleet.optimize.inputs import Base
from sandbox_fleet.optimize.space import Option, rework_hours
from sandbox_fleet.simulate.engine.steady import BATCHES, MIN_HOLDS_PER_SANDBOX, t95
from sandbox_fleet.simulate.model import SimulatedHoldStats, SimulateSummary, SteadyState
from sandbox_fleet.sweep.backends import run_tasks
from sandbox_fleet.textout import Ticker

GIB = 1024**3
#: holds per sandbox of a confirmation run: MSER-5 may delete up to half of it, which still leaves the
#: steady window ``MIN_HOLDS_PER_SANDBOX`` holds per sandbox, the length its interval needs
CONFIRM_HOLDS = 2 * MIN_HOLDS_PER_SANDBOX


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
class Evaluation:
    passing_per_hour: float  # at full scale
    step_s: float | None
    evicted_gb: float
    hold_mean_s: float
    values: tuple[float, ...]  # passing per hour of each replication (full scale)
    steps: tuple[float, ...]
    rework: tuple[tuple[float, float], ...] = ()  # (spot reclaims per node-hour, re-run share of sandbox-hours)
    stable: bool = True  # every replication reached a steady state (``steady_state.stable``)
    holds_per_sandbox: float | None = None  # the fewest over the replications' steady windows
    rollouts: int = 0  # per replication (the slice's)
    #: per replication, the standard error of its passing/h over its steady window (batch means; full scale)
    run_se: tuple[float, ...] = ()

    def rework_share(self, rate_per_node_h: float) -> float:
        return dict(self.rework).get(rate_per_node_h, 0.0)


@dataclass(frozen=True)
class CandidateRun:
    """One simulated candidate: its simulate summary and the spot re-run hours of its holds.

    ``rework_h[i]`` is the re-run hours at the ``i``-th spot reclaim rate, over ``hold_h`` hours held.
    """

    summary: SimulateSummary
    hold_h: float
    rework_h: tuple[float, ...]


def slice_cap(cap: int, scale: float) -> int:
    """Sandboxes of the simulated slice for a full-scale ``cap``."""
    return max(1, round(cap * scale))


def scenario_data(base: Base, goal: Goal, opt: Option, replicas: int, cap: int, count: int, seed: int,
                  scale: float = 1.0) -> dict:
    """The scenario a candidate is: the input's loop with this fleet, workload size and pool.

    ``scale < 1``: the slice (``slice_cap`` sandboxes, replicas with ``f`` of their capacity);
    ``count`` is the slice's rollouts.
    """
    d = copy.deepcopy(base.data)
    c = slice_cap(cap, scale)
    d["fleet"] = {**d["fleet"], "cap": c}
    wl = d["workload"]
    if goal.step_mode:
        assert goal.batch is not None  # a step goal has its batch (api._goal)
        wl.update(kind="sync-rl", batch=slice_cap(goal.batch, scale), steps=goal.steps, train_s=goal.train_s)
    else:
        # at least two holds per sandbox, so the throughput is the loop's, not one wave's
        wl.update(kind="closed", population=c, count=max(count, 2 * c))
        # the written scenario's summary then carries the claim itself (steady_state.passing_per_hour)
        d["run"] = {**d.get("run", {}), "pass_rate": base.pass_rate}
    inf = d["inference"]
    inf.update(gpu=opt.gpu, gpus=replicas * opt.gpus_per_replica, gpus_per_replica=opt.gpus_per_replica,
               kv_offload_gb=opt.kv_offload_gb)
    f = c / cap
    if f < 1:
        inf.update(_shrunk_replica(inf, opt, f, base.base_dir))
    if not opt.caching:
        inf["kv_cache_gb"] = 0
        inf.pop("kv_offload_gb")
    d["run"] = {**d.get("run", {}), "seed": seed}
    return d


def _shrunk_replica(inf: dict, opt: Option, f: float, base_dir: Path) -> dict:
    """Explicit pool rates for a replica with ``f`` of its GPUs' throughput and memory (the same iteration floor)."""
    from sandbox_fleet import gpus as G

    cat = G.load_gpus(None if inf.get("gpu_catalog") is None else base_dir / inf["gpu_catalog"])
    g, p = cat[opt.gpu], float(inf["model_params_b"])
    bpp, frac = float(inf.get("bytes_per_param", 2.0)), float(inf.get("memory_fraction", 0.9))
    rate = G.compute_tok_s(g, p, float(inf.get("utilisation", 0.4)), opt.gpus_per_replica)
    out = {"prefill_tok_s": f * rate, "decode_tok_s": f * rate,
           "iteration_base_ms": 1000.0 * G.weights_read_s(g, p, bpp, opt.gpus_per_replica),
           "kv_offload_gb": f * opt.kv_offload_gb}
    if "kv_cache_gb" not in inf:
        out["kv_cache_gb"] = f * G.kv_free_bytes(g, p, opt.gpus_per_replica, bytes_per_param=bpp,
                                                 memory_fraction=frac) / GIB
    else:
        out["kv_cache_gb"] = f * float(inf["kv_cache_gb"])
    return out


def simulate_candidate(data: dict, base_dir: str, source: str, seed: int,
                       spot_rates: tuple[float, ...]) -> CandidateRun:
    """One candidate run (in any worker): the simulate summary plus the spot re-run hours of its holds.

    The re-run is priced on every hold, not the mean (``(e^{rh} - 1)/r - h`` is convex in ``h``):
    ``rework`` holds the sums of hold hours and of re-run hours at each catalog reclaim rate.
    """
    from sandbox_fleet.simulate.engine.run import preload_kernel, run_workloads
    from sandbox_fleet.sweep.variants import check

    preload_kernel()  # many small loops per worker: all of them compiled (same bytes as the pure loop)
    _, built = check(data, Path(base_dir), source)
    res = run_workloads(built.fleets, built.workloads, seed, engine=built.engine, inference=built.inference)
    holds = res.hold_s[res.started]
    return CandidateRun(summary=built.summary(res, seed=seed),
                        hold_h=float(holds.sum() / 3600.0),
                        rework_h=tuple(float(rework_hours(holds, r)) for r in spot_rates))


def passing_per_hour(s: SimulateSummary, pass_rate: float, population: int | None) -> float:
    """Passing trajectories per hour of one simulate summary.

    A closed loop: completed rollouts per hour over its steady window (``steady_state``: the warm-up
    MSER-5 deletes and the drain after the last start left out) x the pass rate. An RL run is its
    steps back to back: completed / simulated time.
    """
    if population is not None:
        st = s.steady_state or SteadyState()
        return (st.completed_per_hour or 0.0) * pass_rate
    assert s.completed is not None  # simulate's summary always counts the completed rollouts
    return s.completed * pass_rate * 3600.0 / s.sim_time_s if s.sim_time_s else 0.0


def _window_se(st: SteadyState, pass_rate: float) -> float:
    """One run's standard error of passing/h over its steady window: its batch-means interval's half
    width over the Student t it was made with (``BATCHES - 1`` degrees of freedom); 0 without one."""
    ci = st.completed_per_hour_ci
    if not ci:
        return 0.0
    return (ci[1] - ci[0]) / 2 / t95(BATCHES - 1) * pass_rate


class Evaluator:
    """Memoised simulations of (option, replicas, cap), run in batches on ``backend``.

    ``cap`` is full scale; a run simulates its slice (``scale``) and reports full-scale figures.
    The search screens each candidate on a run of ``screen_holds`` holds per sandbox (when that is
    shorter than the campaign's rollouts); the winner is confirmed on full-length runs. Runs are
    memoised per (point, seed, rollouts), so a confirmation reuses a screen of the same length.
    """

    def __init__(self, base: Base, goal: Goal, count: int, seed: int, *, backend: str, workers: int | None,
                 progress: bool = False, search_reps: int = 1, scale: float = 1.0,
                 spot_rates: tuple[float, ...] = (), screen_holds: int = 0):
        self.search_reps, self.screen_holds = search_reps, screen_holds
        self.base, self.goal, self.count, self.seed, self.scale = base, goal, count, seed, scale
        self.backend, self.workers, self.progress = backend, workers, progress
        #: advances the command's one progress bar (set by run_optimize; a no-op by default)
        self.ticker = Ticker()
        self.spot_rates = tuple(sorted(set(spot_rates)))
        self.runs: dict[tuple, CandidateRun] = {}
        self.memo: dict[tuple, Evaluation] = {}
        self.simulations = 0

    def rollouts(self, cap: int, full: bool) -> int:
        """Rollouts of one run of ``cap`` (full scale), by holds per sandbox of the slice's ``c`` sandboxes.

        A confirmation (``full``, or every run with ``screen_holds = 0``) runs at least ``CONFIRM_HOLDS``
        holds per sandbox (more when the input's count is larger); a search run is a screen of
        ``screen_holds`` per sandbox. An RL step target runs its steps: the input's count, at least 2 x c.
        """
        c = slice_cap(cap, self.scale)
        if self.goal.step_mode:
            return max(self.count, 2 * c)
        if full or not self.screen_holds:
            return max(self.count, CONFIRM_HOLDS * c)
        return max(2, self.screen_holds) * c

    def searched(self, p: tuple[Option, int, int]) -> Evaluation:
        """The search's result for ``p`` (already run)."""
        return self.memo[(p, self.search_reps, self.rollouts(p[2], False))]

    def run(self, points: list[tuple[Option, int, int]], reps: int | None = None, full: bool = False) -> list[Evaluation]:
        """Results of ``points`` (``reps`` replications, default the search's; screens unless ``full``), simulating only new runs."""
        reps = reps or self.search_reps
        keys = [(p, reps, self.rollouts(p[2], full)) for p in points]
        need = list(dict.fromkeys((p, i, n) for p, _, n in keys for i in range(reps) if (p, i, n) not in self.runs))
        tasks = []
        for (o, r, c), i, n in need:
            d = scenario_data(self.base, self.goal, o, r, c, n, self.seed, self.scale)
            tasks.append((d, str(self.base.base_dir), f"{self.base.name} with {o.label}, {r} replicas, cap {c}",
                          self.seed + i, self.spot_rates))
        if tasks:
            out = run_tasks(simulate_candidate, tasks, backend=self.backend, workers=self.workers,
                            ticker=self.ticker)
            self.simulations += len(tasks)
            self.runs.update(zip(need, out))
        for k in keys:
            if k not in self.memo:
                p, reps_k, n = k
                self.memo[k] = self._result([self.runs[(p, i, n)] for i in range(reps_k)], p[2])
        return [self.memo[k] for k in keys]

    def _result(self, runs: list[CandidateRun], cap: int) -> Evaluation:
        pr = self.base.pass_rate
        f = slice_cap(cap, self.scale) / cap  # the slice's share of the full loop
        sums = [r.summary for r in runs]
        vals = tuple(passing_per_hour(s, pr, None if self.goal.step_mode else slice_cap(cap, self.scale)) / f
                     for s in sums)
        steady = [s.steady_state or SteadyState() for s in sums]
        hps = [st.holds_per_sandbox for st in steady if st.holds_per_sandbox is not None]
        steps = tuple(s.step_s.mean for s in sums if s.step_s is not None and s.step_s.mean is not None)
        n = len(sums)
        hold_h = sum(r.hold_h for r in runs)
        rework = tuple((rate, sum(r.rework_h[i] for r in runs) / hold_h if hold_h else 0.0)
                       for i, rate in enumerate(self.spot_rates))
        return Evaluation(
            passing_per_hour=sum(vals) / n,
            step_s=sum(steps) / len(steps) if steps else None,
            evicted_gb=sum((s.inference.evicted_gb if s.inference else None) or 0.0 for s in sums) / n,
            hold_mean_s=sum((s.hold_s or SimulatedHoldStats()).mean or 0.0 for s in sums) / n,
            values=vals, steps=steps, rework=rework, stable=all(st.stable is not False for st in steady),
            holds_per_sandbox=min(hps) if hps else None, rollouts=sums[0].rollouts or 0,
            run_se=() if self.goal.step_mode else tuple(_window_se(st, pr) / f for st in steady))

    def meets(self, r: Evaluation) -> bool:
        """The target is met, by a point with a steady state (an unstable one meets nothing)."""
        if not r.stable:
            return False
        if self.goal.step_mode:
            assert self.goal.max_step_s is not None  # step_mode is max_step_s given
            return r.step_s is not None and r.step_s <= self.goal.max_step_s
        assert self.goal.passing_per_hour is not None  # a goal without a step bound has a rate (api._goal)
        return r.passing_per_hour >= self.goal.passing_per_hour

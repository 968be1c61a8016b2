"""A validated scenario turned into engine objects (fleets and workloads).

Every check the engine would make is made here first, so a refusal is one
InputError line naming the scenario file and the key.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, TypedDict

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_memory
from sandbox_fleet.simulate.engine import distributions as D
from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling
from sandbox_fleet.simulate.engine.entities import Build, Episode, Fleet, RetryPolicy, SubstrateCost, Turns
from sandbox_fleet.simulate.engine.policies import problems
from sandbox_fleet.simulate.engine.workloads import AsyncRL, Closed, Poisson, Replay, SyncRL, Workload
from sandbox_fleet.simulate.scenario import bounds
from sandbox_fleet.simulate.scenario.spec import (
    DeterministicSpec,
    EmpiricalSpec,
    EpisodeParts,
    ExceptionsSpec,
    ExponentialSpec,
    FilterSpec,
    FleetSpec,
    LogNormalSpec,
    MixtureSpec,
    ScenarioSpec,
    WeibullSpec,
    WorkloadSpec,
)

if TYPE_CHECKING:
    import pyarrow as pa

    from sandbox_fleet.simulate.engine.images import ImageCache
    from sandbox_fleet.simulate.engine.inference.config import Inference
    from sandbox_fleet.simulate.model import SimulateSummary


class _Common(TypedDict):
    """What every workload kind takes from its table besides its own fields."""

    retry: RetryPolicy
    pool: int
    name: str
    priority: int | None
    nominal: int | None
    borrow_limit: int | None
    request: tuple[float, float, float] | None


class _RLFields(_Common):
    batch: int | np.ndarray
    steps: int | None
    train_s: float
    start_s: float
    episode: Episode
    dynamic: DynamicSampling | None


class Built:
    """A scenario turned into engine objects."""

    def __init__(self, fleets: list[Fleet], workloads: list[Workload], seed: int, engine: str, epoch: str,
                 inference=None, pass_rate: float | None = None, warmup_s: float | None = None):
        self.fleets, self.workloads, self.seed, self.engine, self.epoch = fleets, workloads, seed, engine, epoch
        self.inference = inference  # inference.Inference or None
        self.pass_rate, self.warmup_s = pass_rate, warmup_s  # [run]: for the steady-state block
        self.reads: list[str] = []  # telemetry files (or globs) the scenario read: replay, empirical

    def summary(self, res, **head) -> SimulateSummary:
        """``res.summary_model`` with this scenario's pass rate and warm-up (``[run]``)."""
        return res.summary_model(pass_rate=self.pass_rate, warmup_s=self.warmup_s, **head)


def build(spec: ScenarioSpec, base_dir: Path, source: str = "<scenario>",
          max_memory_gb: float | None = None) -> Built:
    """Turn a validated scenario into fleets and workloads.

    Everything the engine would refuse is checked here first, so the one-line
    InputError names ``source`` and the key (``key 'workload.steps': ...``); an
    engine-level refusal this misses is still prefixed with the file and the table.
    An RL schedule's rollouts (steps x batch) are checked against ``max_memory_gb`` (default:
    the share of memory this process may allocate) before its per-step arrays exist.
    """
    ctx = _Ctx(base_dir, source, bounds.horizon_s(spec.run.epoch))
    ctx.max_memory_gb = max_memory_gb
    ctx.filter = spec.filter
    if spec.filter is not None:  # named as the file spells it, before any telemetry is read
        from sandbox_fleet.telemetry.scenario_filter import check_scenario_filter

        check_scenario_filter(source, spec.filter.since, spec.filter.until)
    many_fleets = spec.fleets is not None
    # load_scenario and the sweep's variants both refuse a file without exactly one of the two
    fleet_specs = spec.fleets if spec.fleets is not None else [spec.fleet]
    fleets = []
    names: dict[str, int] = {}
    for i, f in enumerate(fleet_specs):
        assert f is not None  # see fleet_specs
        fleets.append(ctx.fleet(f, i))
        names[fleets[-1].name] = i
    if spec.workloads is not None:
        shared = [k for k in EpisodeParts.model_fields if getattr(spec, k) is not None]
        if shared:
            ctx.fail(shared[0], "with [[workloads]], put this table inside each workload")
        wspecs = spec.workloads
        keys = [f"workloads.{i}" for i in range(len(wspecs))]
        top: set[str] = set()
    else:
        # The single-workload form may take its episode tables from the top level.
        assert spec.workload is not None  # checked on loading, as fleet_specs
        update = {}
        for k in EpisodeParts.model_fields:
            if getattr(spec, k) is not None:
                if getattr(spec.workload, k) is not None:
                    ctx.fail(f"workload.{k}", f"'{k}' given both at top level and in [workload]")
                update[k] = getattr(spec, k)
        wspecs = [spec.workload.model_copy(update=update)]
        keys = ["workload"]
        top = set(update)
    ctx.times(fleet_specs, wspecs, keys, spec.run, many_fleets)
    seen: dict[str, int] = {}
    for i, w in enumerate(wspecs):
        name = w.name or f"w{i}"
        if name in seen:
            ctx.fail(f"{keys[i]}.name", f"workload name {name!r} is used twice (names key the telemetry ids)")
        seen[name] = i
    ctx.served = spec.inference is not None
    if spec.images is not None:
        from sandbox_fleet.simulate.scenario.images import image_cache

        ctx.images = image_cache(spec.images, base_dir, ctx.fail)
    if spec.substrate is not None:
        from sandbox_fleet.simulate.scenario.images import substrate_cost

        ctx.substrate = substrate_cost(spec.substrate, base_dir, ctx.fail)
    inference = None
    if spec.inference is not None:
        from sandbox_fleet.simulate.scenario.inference import build_inference

        inference = ctx.inference = build_inference(spec.inference, base_dir, ctx.fail, ctx.guard)
    workloads = [ctx.workload(w, i, keys[i], top, names, len(fleets)) for i, w in enumerate(wspecs)]
    for where, i, key, msg in problems(fleets, workloads, inference is not None):
        if where == "fleet":
            ctx.fail(f"fleets.{i}.{key}" if many_fleets else f"fleet.{key}", msg)
        ctx.fail(f"{keys[i]}.{key}", msg)
    if spec.run.engine == "fifo":  # the one pass: what the file says (a drawn retry is refused when the run draws it)
        from sandbox_fleet.simulate.engine.fifo import one_pass_refusal
        from sandbox_fleet.simulate.engine.run import fifo_refusal_text

        why = one_pass_refusal(fleets, workloads, inference, retries=False)
        if why is not None:
            ctx.fail("run.engine", fifo_refusal_text(why))
    if ctx.images is not None:
        from sandbox_fleet.simulate.engine.images import check_pools
        from sandbox_fleet.simulate.engine.workloads import OPEN

        ctx.guard("images", lambda: check_pools(fleets, workloads, OPEN))
    built = Built(fleets, workloads, spec.run.seed, spec.run.engine, spec.run.epoch, inference,
                  pass_rate=spec.run.pass_rate, warmup_s=spec.run.warmup_s)
    built.reads = [path for paths in ctx._tables for path in paths]
    return built


class _Ctx:
    def __init__(self, base_dir: Path, source: str, horizon_s: float = float("inf")):
        self.base, self.source, self.horizon_s = base_dir, source, horizon_s
        self.max_memory_gb: float | None = None
        self.served = False  # the scenario has [inference]
        self.images: ImageCache | None = None  # [images]: every workload's builds share it
        self.substrate: SubstrateCost | None = None  # [substrate]: added to every workload's holds
        self.inference: Inference | None = None  # [inference]: every turn's call is served by it
        self._tables: dict[tuple[str, ...], pa.Table] = {}
        self.filter: FilterSpec | None = None  # [filter]: the rollouts of every telemetry read that are kept

    def fail(self, key: str, what: str) -> NoReturn:
        raise InputError(f"{self.source}: key '{key}': {what}")

    def times(self, fleets, wspecs, keys: list[str], run, many_fleets: bool) -> None:
        """The scenario's times that are no hold (holds, their parts whatever the keys are called, are
        bounded as built by ``bounds.check_hold``): each finite and before year 9999, named by its key.
        Which quantities are seconds is said here, not guessed from a key's ending (``zipf_s`` is an
        exponent, ``prefill_tok_s`` a rate). Timeouts are exempt: one past the end of the run never fires."""
        for i, f in enumerate(fleets):
            at = f"fleets.{i}" if many_fleets else "fleet"
            for name in ("provision_delay_s", "node_replace_s"):
                bounds.check_time(float(getattr(f, name)), f"{at}.{name}", self.horizon_s, self.fail)
        for w, at in zip(wspecs, keys):
            for name in ("start_s", "train_s"):
                bounds.check_time(float(getattr(w, name)), f"{at}.{name}", self.horizon_s, self.fail)
            for j, x in enumerate(w.arrivals_s or []):
                bounds.check_time(float(x), f"{at}.arrivals_s.{j}", self.horizon_s, self.fail)
        if run.warmup_s is not None:
            bounds.check_time(float(run.warmup_s), "run.warmup_s", self.horizon_s, self.fail)

    def guard(self, key: str, make):
        """Call ``make()``; an engine-level InputError gets the file and key in front."""
        try:
            return make()
        except InputError as exc:
            if str(exc).startswith(f"{self.source}:"):
                raise
            raise InputError(f"{self.source}: key '{key}': {exc}") from None

    def fleet(self, f: FleetSpec, i: int) -> Fleet:
        """The validated table is the engine's fleet (``FleetSpec`` is a ``Fleet``); only a pool the
        file leaves unnamed gets its index as a name (``model_copy``: no second validation)."""
        update: dict[str, str] = {} if "name" in f.model_fields_set else {"name": f"pool{i}"}
        if f.reclaim_trace is not None and not Path(f.reclaim_trace).is_absolute():
            update["reclaim_trace"] = str(self.base / f.reclaim_trace)  # relative to the scenario file
        return f.model_copy(update=update) if update else f

    def rollouts(self, paths: list[str] | str, key: str):
        from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

        items = [paths] if isinstance(paths, str) else list(paths)
        resolved = tuple(str((self.base / p) if not Path(p).is_absolute() else Path(p)) for p in items)
        if resolved not in self._tables:
            tel = load_telemetry(list(resolved), progress=False)
            if self.filter is not None:
                f = self.filter
                tel = self.guard("filter", lambda: filter_rollouts(tel, models=f.models, since=f.since, until=f.until))
            self._tables[resolved] = tel.rollouts
        table = self._tables[resolved]
        if table.num_rows == 0:
            self.fail(key, f"the telemetry {', '.join(items)} has no rollouts")
        return table

    def dist(self, s, key: str, tokens: bool = False) -> D.Dist:
        d: D.Dist
        if not tokens:  # a distribution's own seconds (its scale, its floor) named before the built one is judged
            for name in ("value_s", "mean_s", "median_s", "scale_s", "min_s"):
                if getattr(s, name, None) is not None:
                    bounds.check_time(float(getattr(s, name)), f"{key}.{name}", self.horizon_s, self.fail)
        if isinstance(s, ExponentialSpec):
            d = D.Exponential(s.mean_s)
        elif isinstance(s, DeterministicSpec):
            d = D.Deterministic(s.value_s)
        elif isinstance(s, LogNormalSpec):
            d = D.LogNormal(s.median_s, s.sigma)
        elif isinstance(s, WeibullSpec):
            d = D.Weibull(s.shape, s.scale_s)
        elif isinstance(s, MixtureSpec):
            d = D.Mixture(
                tuple(self.dist(c.hold, f"{key}.components.{i}.hold") for i, c in enumerate(s.components)),
                tuple(c.weight for c in s.components),
                tuple(c.label or f"c{i}" for i, c in enumerate(s.components)) if any(c.label for c in s.components) else (),
                tuple(c.exception for c in s.components) if any(c.exception for c in s.components) else (),
            )
        else:
            d = self.empirical(s, key)
        if s.min_s is not None or s.max_s is not None:
            # D.clip keeps a mixture a mixture, so its labels and exception flags survive.
            d = D.clip(d, s.min_s or 0.0, s.max_s if s.max_s is not None else float("inf"))
        if tokens:
            bounds.check_tokens(d, key, self.fail)
        else:
            bounds.check_dist(d, key, self.horizon_s, self.fail)
        return d

    def empirical(self, s: EmpiricalSpec, key: str) -> D.Dist:
        from sandbox_fleet.simulate.scenario.calibrate import NO_MODEL, empirical_by_model_outcome, holds_s

        if (s.values is None) == (s.telemetry is None):
            self.fail(key, "empirical needs exactly one of values or telemetry")
        if s.values is not None:
            if s.by or s.model:
                self.fail(f"{key}.by" if s.by else f"{key}.model", "'by' and 'model' need telemetry, not values")
            return D.Empirical(np.asarray(s.values, dtype=float))
        import pyarrow.compute as pc

        assert s.telemetry is not None  # exactly one of values and telemetry, and values is None
        table = self.rollouts(s.telemetry, f"{key}.telemetry")
        if s.model is not None:
            table = table.filter(pc.equal(pc.fill_null(table.column("model"), NO_MODEL), s.model))
            if table.num_rows == 0:
                self.fail(f"{key}.model", f"no rollouts of model {s.model!r} in the telemetry")
        if not s.by:
            return D.Empirical(holds_s(table))
        mix = empirical_by_model_outcome(table)
        if "model" not in s.by:
            mix = D.Mixture(mix.components, mix.weights, (), mix.exceptions)
        if "outcome" not in s.by:
            mix = D.Mixture(mix.components, mix.weights, mix.labels, ())
        return mix

    def episode(self, w: WorkloadSpec, k) -> Episode:
        """``k(name)`` is the key of the episode table ``name`` (top level or in the workload)."""
        if w.hold is None and w.turns is None:
            self.fail(k("hold"), "give [hold] or [turns]")
        if w.hold is not None and w.turns is not None:
            self.fail(k("turns"), "give [hold] or [turns], not both")
        build = None
        if w.build is not None:
            build = Build(w.build.hit_p,
                          self.dist(w.build.hit, f"{k('build')}.hit") if w.build.hit else None,
                          self.dist(w.build.miss, f"{k('build')}.miss") if w.build.miss else None,
                          self.images)
            if self.images is not None and "hit_p" in w.build.model_fields_set:
                self.fail(f"{k('build')}.hit_p", "with [images] the cache decides each hit; drop hit_p")
        elif self.images is not None:
            build = Build(images=self.images)  # warm builds take 0 s; a miss pays the pull
        if self.images is not None and self.images.pull_mb_per_s is None and (w.build is None or w.build.miss is None):
            self.fail("images.pull_mb_per_s", "give pull_mb_per_s, or a [build] miss distribution, for what a miss costs")
        if self.substrate is not None and self.substrate.turns_mean is not None and w.turns is not None:
            self.fail("substrate.turns_per_rollout", "a [turns] workload counts its own turns; drop turns_per_rollout")
        turns = None
        if w.turns is not None:
            turns = self.turns(w, k)
        elif self.served:
            self.fail(k("turns"), "with [inference] a workload needs [turns] with prefill_tokens and decode_tokens")
        exc = w.exceptions or ExceptionsSpec()
        ep = Episode(
            agent=self.dist(w.hold, k("hold")) if w.hold is not None else None,
            turns=turns,
            build=build,
            verifier=self.dist(w.verifier, k("verifier")) if w.verifier is not None else None,
            exception_rate_per_s=dict(exc.rate_per_s.items()),
            exception_p=dict(exc.p.items()),
            agent_timeout_s=w.agent_timeout_s,
            substrate=self.substrate,
        )
        bounds.check_hold(ep, k, self.horizon_s, self.fail, self.inference)
        return ep

    def turns(self, w: WorkloadSpec, k) -> Turns:
        t, key = w.turns, k("turns")
        assert t is not None  # episode() asks for turns only when the workload has them
        if self.served:
            if t.model_latency is not None:
                self.fail(f"{key}.model_latency", "give [turns] model_latency or [inference], not both "
                                                  "(with [inference] the pool serves each call)")
            for name in ("prefill_tokens", "decode_tokens"):
                if getattr(t, name) is None:
                    self.fail(f"{key}.{name}", "[inference] needs the tokens per turn")
        else:
            if t.model_latency is None:
                self.fail(f"{key}.model_latency", "needed unless the scenario has [inference]")
            for name in ("prefill_tokens", "decode_tokens"):
                if getattr(t, name) is not None:
                    self.fail(f"{key}.{name}", "token draws need an [inference] pool")

        def opt(name: str):
            d = getattr(t, name)
            return self.dist(d, f"{key}.{name}", tokens=name.endswith("_tokens")) if d is not None else None

        return Turns(self.dist(t.turns, f"{key}.turns"), opt("model_latency"), opt("command"),
                     opt("prefill_tokens"), opt("decode_tokens"))

    def workload(self, w: WorkloadSpec, i: int, key: str, top: set[str], pools: dict[str, int], n_pools: int) -> Workload:
        """``key``: the workload's table (``workload`` or ``workloads.N``); ``top``: the
        episode tables that came from the top level of the file."""
        return self.guard(key, lambda: self._workload(w, i, key, top, pools, n_pools))

    def _workload(self, w: WorkloadSpec, i: int, key: str, top: set[str], pools: dict[str, int], n_pools: int) -> Workload:
        def k(name: str) -> str:
            return name if name in top else f"{key}.{name}"

        if isinstance(w.pool, str):
            if w.pool not in pools:
                self.fail(k("pool"), f"pool {w.pool!r} is not a fleet name ({', '.join(pools)})")
            pool = pools[w.pool]
        else:
            pool = w.pool
            if not 0 <= pool < n_pools:
                self.fail(k("pool"), f"pool {pool} does not exist ({n_pools} pool(s), counted from 0)")
        retry = RetryPolicy(w.retry.max_retries, tuple(w.retry.on), w.retry.redraw) if w.retry else RetryPolicy()
        request = None if w.request is None else (w.request.cpu, w.request.memory_mb, w.request.disk_mb)
        common = _Common(retry=retry, pool=pool, name=w.name or f"w{i}", priority=w.priority, nominal=w.nominal,
                         borrow_limit=w.borrow_limit, request=request)

        def need(*keys: str) -> None:
            for name in keys:
                if getattr(w, name) is None:
                    self.fail(k(name), f"kind {w.kind!r} needs '{name}'")

        def forbid(*keys: str) -> None:
            for name in keys:
                if name in w.model_fields_set:
                    self.fail(k(name), f"'{name}' does not apply to kind {w.kind!r}")

        if w.kind != "closed":
            forbid("population")
        if w.kind not in ("sync-rl", "async-rl"):
            forbid("dynamic_sampling")
        if w.kind == "closed":
            need("population", "count")
            assert w.population is not None and w.count is not None  # need() refused them missing
            forbid("rate_per_s", "batch", "steps", "train_s", "staleness", "telemetry", "arrivals_s")
            return Closed(population=w.population, n=w.count, start_s=w.start_s, episode=self.episode(w, k), **common)
        if w.kind == "poisson":
            need("rate_per_s", "count")
            assert w.rate_per_s is not None and w.count is not None  # need() refused them missing
            forbid("batch", "steps", "train_s", "staleness", "telemetry", "arrivals_s")
            span = w.start_s + w.count / w.rate_per_s
            if span > self.horizon_s:
                self.fail(k("rate_per_s"), f"{w.count:,} arrivals at {w.rate_per_s:g}/s last {span:.4g} s, past year 9999 "
                                           f"from run.epoch (at most {self.horizon_s:.4g} s)")
            return Poisson(rate_per_s=w.rate_per_s, n=w.count, start_s=w.start_s, episode=self.episode(w, k), **common)
        if w.kind in ("sync-rl", "async-rl"):
            dynamic = None
            if w.dynamic_sampling is not None:
                from sandbox_fleet.simulate.scenario.dynamic import build_dynamic

                dynamic = self.guard(k("dynamic_sampling"),
                                     lambda: build_dynamic(w.dynamic_sampling, self.base, k("dynamic_sampling"), self.fail))
                if w.batch is None:  # a step trains on B groups of G
                    w = w.model_copy(update={"batch": dynamic.groups * dynamic.group_size})
            need("batch")
            assert w.batch is not None  # need() refused it missing
            forbid("rate_per_s", "count", "telemetry", "arrivals_s")
            batch: int | np.ndarray
            if isinstance(w.batch, list):
                if w.steps is not None and w.steps != len(w.batch):
                    self.fail(k("steps"), f"steps = {w.steps} but batch lists {len(w.batch)} sizes; drop steps or make them agree")
                batch = np.asarray(w.batch, dtype=np.int64)
            else:
                if w.steps is None:
                    self.fail(k("steps"), f"kind {w.kind!r} needs 'steps' when batch is one number")
                batch = w.batch
                check_memory(float(w.steps) * (float(batch) * bounds.BYTES_PER_ATTEMPT + 64), self.max_memory_gb,
                             f"{self.source}: key '{k('steps')}': {w.steps:,} steps of {batch:,} rollouts")
            if w.kind == "sync-rl" and w.staleness not in (None, 0):
                self.fail(k("staleness"), "sync-rl has staleness 0; use kind = \"async-rl\"")
            kw: _RLFields = {"batch": batch, "steps": w.steps, "train_s": w.train_s, "start_s": w.start_s,
                             "episode": self.episode(w, k), "dynamic": dynamic, **common}
            if w.kind == "sync-rl":
                return SyncRL(**kw)
            return AsyncRL(staleness=1 if w.staleness is None else w.staleness, **kw)
        # replay: start_s shifts the replayed arrival times
        forbid("rate_per_s", "batch", "steps", "train_s", "staleness")
        if (w.telemetry is None) == (w.arrivals_s is None):
            self.fail(key, "replay needs exactly one of telemetry or arrivals_s")
        if w.arrivals_s is not None:
            arr = np.asarray(w.arrivals_s, dtype=float)
            if w.count is not None:
                arr = arr[: w.count]
            return Replay(arrivals_s=arr, start_s=w.start_s, episode=self.episode(w, k), **common)
        assert w.telemetry is not None  # exactly one of telemetry and arrivals_s, and arrivals_s is None
        table = self.rollouts(w.telemetry, k("telemetry"))
        if w.count is not None:
            order = np.argsort(table.column("started_at").cast("int64").to_numpy(zero_copy_only=False), kind="stable")
            table = table.take(order[: w.count])
        if w.hold is None and w.turns is None:
            wl = Replay.from_table(table, start_s=w.start_s, **common)  # measured holds, in start order
            if self.images is not None and self.images.pull_mb_per_s is None:
                self.fail("images.pull_mb_per_s", "a replay of measured holds has no [build] miss: give pull_mb_per_s")
            if self.images is not None or self.substrate is not None:  # the measured holds, plus builds / overhead
                wl.episode = Episode(agent=wl.holds, build=Build(images=self.images) if self.images else None,
                                     substrate=self.substrate)
                wl.holds = None
        else:
            wl = Replay.from_table(table, use_holds=False, start_s=w.start_s, episode=self.episode(w, k), **common)
        if self.images is not None and self.images.catalog.by_task and "task_id" in table.column_names:
            # each replayed rollout builds its own task's image (Replay orders rows by start, stably)
            start = table.column("started_at").cast("int64").to_numpy(zero_copy_only=False)
            ids = np.asarray(table.column("task_id").cast("string").to_pylist(), dtype=object)
            wl.attrs["task_id"] = ids[np.argsort(start, kind="stable")]
        return wl

"""Scenario files (TOML, validated by Pydantic; an unknown key is an error naming it).

Smallest form::

    [fleet]
    cap = 10
    [workload]
    kind = "poisson"          # or "sync-rl", "async-rl", "replay"
    rate_per_s = 7.0
    count = 200000
    [hold]
    dist = "exponential"      # or lognormal (median_s, sigma), deterministic (value_s),
    mean_s = 1.0              #    weibull (shape, scale_s), mixture, empirical
    [run]
    seed = 1

Several pools: ``[[fleets]]`` (each with a ``name``); several workloads:
``[[workloads]]``, each with its own ``hold`` / ``build`` / ... tables and a ``pool``
(name or index). Relative paths are relative to the scenario file. Every table is
shown in ``examples/scenarios/``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Annotated, Literal, Union

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import distributions as D
from sandbox_fleet.simulate.entities import Build, Episode, Fleet, RetryPolicy, Turns
from sandbox_fleet.simulate.workloads import AsyncRL, Poisson, Replay, SyncRL, Workload


class Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


PosFloat = Annotated[float, Field(gt=0, allow_inf_nan=False)]
NonNegFloat = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class _Clip(Strict):
    min_s: NonNegFloat | None = None
    max_s: PosFloat | None = None

    @field_validator("max_s")
    @classmethod
    def _max_not_below_min(cls, v: float | None, info: ValidationInfo) -> float | None:
        lo = info.data.get("min_s")
        if v is not None and lo is not None and lo > v:
            raise PydanticCustomError("clip_bounds", "max_s {hi} is below min_s {lo}; need min_s <= max_s", {"hi": v, "lo": lo})
        return v


class ExponentialSpec(_Clip):
    dist: Literal["exponential"]
    mean_s: PosFloat


class DeterministicSpec(_Clip):
    dist: Literal["deterministic"]
    value_s: NonNegFloat


class LogNormalSpec(_Clip):
    dist: Literal["lognormal"]
    median_s: PosFloat
    sigma: NonNegFloat


class WeibullSpec(_Clip):
    dist: Literal["weibull"]
    shape: PosFloat
    scale_s: PosFloat


class EmpiricalSpec(_Clip):
    """Bootstrap from ``values`` or from measured telemetry (``by`` model and/or outcome)."""

    dist: Literal["empirical"]
    values: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None
    telemetry: list[str] | str | None = None
    by: list[Literal["model", "outcome"]] = []
    model: str | None = None  # keep only this model's rows


class ComponentSpec(Strict):
    weight: NonNegFloat
    label: str | None = None
    exception: bool = False
    hold: "DistSpec"


class MixtureSpec(_Clip):
    dist: Literal["mixture"]
    components: list[ComponentSpec] = Field(min_length=1)

    @field_validator("components")
    @classmethod
    def _some_weight(cls, v: list[ComponentSpec]) -> list[ComponentSpec]:
        if sum(c.weight for c in v) <= 0:
            raise PydanticCustomError("mixture_weights", "the components' weights must have a positive sum", {})
        return v


DistSpec = Annotated[
    Union[ExponentialSpec, DeterministicSpec, LogNormalSpec, WeibullSpec, EmpiricalSpec, MixtureSpec],
    Field(discriminator="dist"),
]
ComponentSpec.model_rebuild()


class FleetSpec(Strict):
    name: str | None = None
    cap: Annotated[int, Field(ge=1)] | None = None
    unbounded: bool = False
    provision_delay_s: NonNegFloat = 0.0
    start_cap: Annotated[int, Field(ge=1)] | None = None
    admission: Literal["fifo", "shortest-timeout-first"] = "fifo"
    slots_per_node: Annotated[int, Field(ge=1)] = 96
    preempt_rate_per_node_s: NonNegFloat = 0.0
    node_replace_s: NonNegFloat = 0.0
    queue_timeout_s: PosFloat | None = None


class BuildSpec(Strict):
    hit_p: Annotated[float, Field(ge=0, le=1)] = 1.0
    hit: DistSpec | None = None
    miss: DistSpec | None = None


class TurnsSpec(Strict):
    turns: DistSpec
    model_latency: DistSpec
    command: DistSpec | None = None


class ExceptionsSpec(Strict):
    rate_per_s: dict[Literal["build", "agent", "verifier"], NonNegFloat] = {}
    p: dict[Literal["build", "agent", "verifier"], Annotated[float, Field(ge=0, le=1)]] = {}


class RetrySpec(Strict):
    max_retries: Annotated[int, Field(ge=0)] = 0
    on: list[Literal["build", "agent", "verifier", "preemption"]] = ["build", "verifier", "preemption"]


class EpisodeParts(Strict):
    hold: DistSpec | None = None
    turns: TurnsSpec | None = None
    build: BuildSpec | None = None
    verifier: DistSpec | None = None
    exceptions: ExceptionsSpec | None = None
    retry: RetrySpec | None = None
    agent_timeout_s: PosFloat | None = None


class WorkloadSpec(EpisodeParts):
    kind: Literal["poisson", "sync-rl", "async-rl", "replay"]
    name: str | None = None
    pool: str | int = 0
    # poisson
    rate_per_s: PosFloat | None = None
    count: Annotated[int, Field(ge=1)] | None = None
    start_s: NonNegFloat = 0.0
    # RL
    batch: int | list[int] | None = None
    steps: Annotated[int, Field(ge=1)] | None = None
    train_s: NonNegFloat = 0.0
    staleness: Annotated[int, Field(ge=0)] | None = None
    # replay
    telemetry: list[str] | str | None = None
    arrivals_s: Annotated[list[NonNegFloat], Field(min_length=1)] | None = None

    @field_validator("batch")
    @classmethod
    def _batch_sizes(cls, v: int | list[int] | None) -> int | list[int] | None:
        # Checked here, not with per-member constraints, so the error names 'batch' itself.
        if isinstance(v, list) and not v:
            raise PydanticCustomError("batch_sizes", "give at least one batch size", {})
        if v is not None and min(v if isinstance(v, list) else [v]) < 1:
            raise PydanticCustomError("batch_sizes", "batch sizes must be >= 1, got {v}", {"v": v})
        return v


class RunSpec(Strict):
    seed: int = 1
    engine: Literal["auto", "fifo", "events"] = "auto"
    epoch: str = "2026-01-01T00:00:00+00:00"


class ScenarioSpec(EpisodeParts):
    fleet: FleetSpec | None = None
    fleets: list[FleetSpec] | None = None
    workload: WorkloadSpec | None = None
    workloads: list[WorkloadSpec] | None = None
    run: RunSpec = RunSpec()


# --- loading ----------------------------------------------------------------------------
def _error_line(path: str, err: ValidationError) -> str:
    e = err.errors()[0]
    loc = ".".join(str(p) for p in e["loc"] if not (isinstance(p, str) and p in _DIST_TAGS))
    if e["type"] == "extra_forbidden":
        return f"{path}: unknown key '{loc}'"
    if e["type"] == "union_tag_invalid":
        return f"{path}: key '{loc}.dist' must be one of {', '.join(sorted(_DIST_TAGS))}"
    if e["type"] == "missing":
        return f"{path}: missing key '{loc}'"
    return f"{path}: key '{loc}': {e['msg']}"


_DIST_TAGS = {"exponential", "deterministic", "lognormal", "weibull", "empirical", "mixture"}


def load_scenario(path: str | Path) -> ScenarioSpec:
    """Parse and validate a scenario file; any problem is one InputError line."""
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{p}: scenario file not found") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not valid TOML ({exc})") from None
    try:
        spec = ScenarioSpec.model_validate(data)
    except ValidationError as exc:
        raise InputError(_error_line(str(p), exc)) from None
    if (spec.fleet is None) == (spec.fleets is None):
        raise InputError(f"{p}: give exactly one of [fleet] or [[fleets]]")
    if (spec.workload is None) == (spec.workloads is None):
        raise InputError(f"{p}: give exactly one of [workload] or [[workloads]]")
    return spec


class Built:
    """A scenario turned into engine objects."""

    def __init__(self, fleets: list[Fleet], workloads: list[Workload], seed: int, engine: str, epoch: str):
        self.fleets, self.workloads, self.seed, self.engine, self.epoch = fleets, workloads, seed, engine, epoch


def build(spec: ScenarioSpec, base_dir: Path, source: str = "<scenario>") -> Built:
    """Turn a validated scenario into fleets and workloads.

    Everything the engine would refuse is checked here first, so the one-line
    InputError names ``source`` and the key (``key 'workload.steps': ...``); an
    engine-level refusal this misses is still prefixed with the file and the table.
    """
    ctx = _Ctx(base_dir, source)
    many_fleets = spec.fleets is not None
    fleet_specs = spec.fleets if many_fleets else [spec.fleet]
    fleets = []
    names: dict[str, int] = {}
    for i, f in enumerate(fleet_specs):
        key = f"fleets.{i}" if many_fleets else "fleet"
        fleets.append(ctx.fleet(f, i, key))
        names[f.name or f"pool{i}"] = i
    if spec.workloads is not None:
        shared = [k for k in EpisodeParts.model_fields if getattr(spec, k) is not None]
        if shared:
            ctx.fail(shared[0], "with [[workloads]], put this table inside each workload")
        wspecs = spec.workloads
        keys = [f"workloads.{i}" for i in range(len(wspecs))]
        top: set[str] = set()
    else:
        # The single-workload form may take its episode tables from the top level.
        update = {}
        for k in EpisodeParts.model_fields:
            if getattr(spec, k) is not None:
                if getattr(spec.workload, k) is not None:
                    ctx.fail(f"workload.{k}", f"'{k}' given both at top level and in [workload]")
                update[k] = getattr(spec, k)
        wspecs = [spec.workload.model_copy(update=update)]
        keys = ["workload"]
        top = set(update)
    seen: dict[str, int] = {}
    for i, w in enumerate(wspecs):
        name = w.name or f"w{i}"
        if name in seen:
            ctx.fail(f"{keys[i]}.name", f"workload name {name!r} is used twice (names key the telemetry ids)")
        seen[name] = i
    workloads = [ctx.workload(w, i, keys[i], top, names, len(fleets)) for i, w in enumerate(wspecs)]
    if spec.run.engine == "fifo":
        from sandbox_fleet.simulate.fifo import pool_eligible

        bad = [i for i, f in enumerate(fleets) if not pool_eligible(f)]
        if bad:
            ctx.fail("run.engine", f"'fifo' needs FIFO pools without start_cap, preemption or queue_timeout_s "
                                   f"(pool {fleets[bad[0]].name} has one); use \"auto\" or \"events\"")
    return Built(fleets, workloads, spec.run.seed, spec.run.engine, spec.run.epoch)


class _Ctx:
    def __init__(self, base_dir: Path, source: str):
        self.base, self.source = base_dir, source
        self._tables: dict[tuple[str, ...], object] = {}

    def fail(self, key: str, what: str):
        raise InputError(f"{self.source}: key '{key}': {what}")

    def guard(self, key: str, make):
        """Call ``make()``; an engine-level InputError gets the file and key in front."""
        try:
            return make()
        except InputError as exc:
            if str(exc).startswith(f"{self.source}:"):
                raise
            raise InputError(f"{self.source}: key '{key}': {exc}") from None

    def fleet(self, f: FleetSpec, i: int, key: str) -> Fleet:
        if f.cap is None and not f.unbounded:
            self.fail(f"{key}.cap", "give cap = N, or unbounded = true")
        if f.cap is not None and f.unbounded:
            self.fail(f"{key}.unbounded", "cap and unbounded = true contradict")
        if f.preempt_rate_per_node_s > 0 and f.cap is None:
            self.fail(f"{key}.preempt_rate_per_node_s", "preemption needs a finite cap (nodes are cap / slots_per_node)")
        return self.guard(key, lambda: Fleet(
            cap=f.cap, provision_delay_s=f.provision_delay_s, start_cap=f.start_cap, admission=f.admission,
            slots_per_node=f.slots_per_node, preempt_rate_per_node_s=f.preempt_rate_per_node_s,
            node_replace_s=f.node_replace_s, queue_timeout_s=f.queue_timeout_s, name=f.name or f"pool{i}"))

    def rollouts(self, paths: list[str] | str, key: str):
        from sandbox_fleet.telemetry import load_telemetry

        items = [paths] if isinstance(paths, str) else list(paths)
        resolved = tuple(str((self.base / p) if not Path(p).is_absolute() else Path(p)) for p in items)
        if resolved not in self._tables:
            self._tables[resolved] = load_telemetry(list(resolved), progress=False).rollouts
        table = self._tables[resolved]
        if table.num_rows == 0:
            self.fail(key, f"the telemetry {', '.join(items)} has no rollouts")
        return table

    def dist(self, s, key: str) -> D.Dist:
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
        return d

    def empirical(self, s: EmpiricalSpec, key: str) -> D.Dist:
        from sandbox_fleet.simulate.calibrate import NO_MODEL, empirical_by_model_outcome, holds_s

        if (s.values is None) == (s.telemetry is None):
            self.fail(key, "empirical needs exactly one of values or telemetry")
        if s.values is not None:
            if s.by or s.model:
                self.fail(f"{key}.by" if s.by else f"{key}.model", "'by' and 'model' need telemetry, not values")
            return D.Empirical(np.asarray(s.values, dtype=float))
        import pyarrow.compute as pc

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
                          self.dist(w.build.miss, f"{k('build')}.miss") if w.build.miss else None)
        turns = None
        if w.turns is not None:
            turns = Turns(self.dist(w.turns.turns, f"{k('turns')}.turns"),
                          self.dist(w.turns.model_latency, f"{k('turns')}.model_latency"),
                          self.dist(w.turns.command, f"{k('turns')}.command") if w.turns.command else None)
        exc = w.exceptions or ExceptionsSpec()
        return Episode(
            agent=self.dist(w.hold, k("hold")) if w.hold is not None else None,
            turns=turns,
            build=build,
            verifier=self.dist(w.verifier, k("verifier")) if w.verifier is not None else None,
            exception_rate_per_s=dict(exc.rate_per_s),
            exception_p=dict(exc.p),
            agent_timeout_s=w.agent_timeout_s,
        )

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
        retry = RetryPolicy(w.retry.max_retries, tuple(w.retry.on)) if w.retry else RetryPolicy()
        common = dict(retry=retry, pool=pool, name=w.name or f"w{i}")

        def need(*keys: str) -> None:
            for name in keys:
                if getattr(w, name) is None:
                    self.fail(k(name), f"kind {w.kind!r} needs '{name}'")

        def forbid(*keys: str) -> None:
            for name in keys:
                if name in w.model_fields_set:
                    self.fail(k(name), f"'{name}' does not apply to kind {w.kind!r}")

        if w.kind == "poisson":
            need("rate_per_s", "count")
            forbid("batch", "steps", "train_s", "staleness", "telemetry", "arrivals_s")
            return Poisson(rate_per_s=w.rate_per_s, n=w.count, start_s=w.start_s, episode=self.episode(w, k), **common)
        if w.kind in ("sync-rl", "async-rl"):
            need("batch")
            forbid("rate_per_s", "count", "telemetry", "arrivals_s")
            if isinstance(w.batch, list):
                if w.steps is not None and w.steps != len(w.batch):
                    self.fail(k("steps"), f"steps = {w.steps} but batch lists {len(w.batch)} sizes; drop steps or make them agree")
                batch = np.asarray(w.batch, dtype=np.int64)
            else:
                if w.steps is None:
                    self.fail(k("steps"), f"kind {w.kind!r} needs 'steps' when batch is one number")
                batch = w.batch
            if w.kind == "sync-rl" and w.staleness not in (None, 0):
                self.fail(k("staleness"), "sync-rl has staleness 0; use kind = \"async-rl\"")
            kw = dict(batch=batch, steps=w.steps, train_s=w.train_s, start_s=w.start_s, episode=self.episode(w, k), **common)
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
        table = self.rollouts(w.telemetry, k("telemetry"))
        if w.count is not None:
            order = np.argsort(table.column("started_at").cast("int64").to_numpy(zero_copy_only=False), kind="stable")
            table = table.take(order[: w.count])
        if w.hold is None and w.turns is None:
            return Replay.from_table(table, start_s=w.start_s, **common)  # measured holds, in start order
        return Replay.from_table(table, use_holds=False, start_s=w.start_s, episode=self.episode(w, k), **common)


# --- running ----------------------------------------------------------------------------
def run_scenario(path: str | Path, *, telemetry_out: str | Path | None = None, timing: bool = False,
                 progress: bool = False, seed: int | None = None) -> dict:
    """Load, build and simulate a scenario file; returns the summary dict.

    ``seed`` overrides the file's ``[run] seed`` (the summary's ``seed`` is the one used).

    ``telemetry_out`` writes the per-rollout canonical telemetry (Parquet) that
    ``sandbox-fleet measure`` reads. ``timing`` adds wall-clock figures
    (``wall_s``, ``events_per_s``), which differ from run to run: without it the
    summary is byte-identical for the same scenario and seed.
    """
    from datetime import datetime

    from sandbox_fleet.simulate.engine import run_workloads

    p = Path(path)
    spec = load_scenario(p)
    built = build(spec, p.parent, str(p))
    if seed is not None:
        built.seed = seed
    try:
        epoch = datetime.fromisoformat(built.epoch)
    except ValueError:
        raise InputError(f"{p}: key 'run.epoch': expected an ISO time like 2026-01-01T00:00:00+00:00") from None
    if epoch.tzinfo is None:
        raise InputError(f"{p}: key 'run.epoch': give a time zone, e.g. +00:00")
    cb = None
    bar = None
    if progress:
        from rich.progress import Progress

        bar = Progress(transient=True, console=_stderr_console())
        bar.start()
        task = bar.add_task("simulating", total=sum(w.count for w in built.workloads))

        def cb(done: int, total: int) -> None:
            bar.update(task, completed=done, total=total)
    try:
        res = run_workloads(built.fleets, built.workloads, built.seed, engine=built.engine, on_progress=cb)
    finally:
        if bar is not None:
            bar.stop()
    summary = {"scenario": p.name, "seed": built.seed, **res.summary(timing=timing)}
    if telemetry_out is not None:
        import pyarrow.parquet as pq

        out = Path(telemetry_out)
        out.parent.mkdir(parents=True, exist_ok=True)
        # No statistics timestamps or writer-dependent metadata: same input, same bytes.
        pq.write_table(res.to_telemetry(epoch=epoch), out, compression="zstd")
        summary["telemetry"] = str(out)
    return summary


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)

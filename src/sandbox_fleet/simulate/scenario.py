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
from pydantic import BaseModel, ConfigDict, Field, ValidationError

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
    values: list[NonNegFloat] | None = None
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
    batch: Annotated[int, Field(ge=1)] | list[Annotated[int, Field(ge=1)]] | None = None
    steps: Annotated[int, Field(ge=1)] | None = None
    train_s: NonNegFloat = 0.0
    staleness: Annotated[int, Field(ge=0)] | None = None
    # replay
    telemetry: list[str] | str | None = None
    arrivals_s: list[float] | None = None


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
    ctx = _Ctx(base_dir, source)
    fleet_specs = spec.fleets if spec.fleets is not None else [spec.fleet]
    fleets = []
    names: dict[str, int] = {}
    for i, f in enumerate(fleet_specs):
        if f.cap is None and not f.unbounded:
            raise InputError(f"{source}: fleet {f.name or i}: give cap = N, or unbounded = true")
        if f.cap is not None and f.unbounded:
            raise InputError(f"{source}: fleet {f.name or i}: cap and unbounded = true contradict")
        fleets.append(Fleet(cap=f.cap, provision_delay_s=f.provision_delay_s, start_cap=f.start_cap, admission=f.admission,
                            slots_per_node=f.slots_per_node, preempt_rate_per_node_s=f.preempt_rate_per_node_s,
                            node_replace_s=f.node_replace_s, queue_timeout_s=f.queue_timeout_s, name=f.name or f"pool{i}"))
        names[f.name or f"pool{i}"] = i
    if spec.workloads is not None:
        shared = [k for k in EpisodeParts.model_fields if getattr(spec, k) is not None]
        if shared:
            raise InputError(f"{source}: with [[workloads]], put [{shared[0]}] inside each workload")
        wspecs = spec.workloads
    else:
        # The single-workload form may take its episode tables from the top level.
        update = {}
        for k in EpisodeParts.model_fields:
            top = getattr(spec, k)
            if top is not None:
                if getattr(spec.workload, k) is not None:
                    raise InputError(f"{source}: '{k}' given both at top level and in [workload]")
                update[k] = top
        wspecs = [spec.workload.model_copy(update=update)]
    workloads = [ctx.workload(w, i, names, len(fleets)) for i, w in enumerate(wspecs)]
    return Built(fleets, workloads, spec.run.seed, spec.run.engine, spec.run.epoch)


class _Ctx:
    def __init__(self, base_dir: Path, source: str):
        self.base, self.source = base_dir, source
        self._tables: dict[tuple[str, ...], object] = {}

    def rollouts(self, paths: list[str] | str):
        from sandbox_fleet.telemetry import load_telemetry

        items = [paths] if isinstance(paths, str) else list(paths)
        resolved = tuple(str((self.base / p) if not Path(p).is_absolute() else Path(p)) for p in items)
        if resolved not in self._tables:
            self._tables[resolved] = load_telemetry(list(resolved), progress=False).rollouts
        return self._tables[resolved]

    def dist(self, s, where: str) -> D.Dist:
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
                tuple(self.dist(c.hold, f"{where}.components[{i}].hold") for i, c in enumerate(s.components)),
                tuple(c.weight for c in s.components),
                tuple(c.label or f"c{i}" for i, c in enumerate(s.components)) if any(c.label for c in s.components) else (),
                tuple(c.exception for c in s.components) if any(c.exception for c in s.components) else (),
            )
        else:
            d = self.empirical(s, where)
        if s.min_s is not None or s.max_s is not None:
            d = D.Clipped(d, s.min_s or 0.0, s.max_s if s.max_s is not None else float("inf"))
        return d

    def empirical(self, s: EmpiricalSpec, where: str) -> D.Dist:
        from sandbox_fleet.simulate.calibrate import NO_MODEL, empirical_by_model_outcome, holds_s

        if (s.values is None) == (s.telemetry is None):
            raise InputError(f"{self.source}: {where}: empirical needs exactly one of values or telemetry")
        if s.values is not None:
            if s.by or s.model:
                raise InputError(f"{self.source}: {where}: 'by' and 'model' need telemetry, not values")
            return D.Empirical(np.asarray(s.values, dtype=float))
        import pyarrow.compute as pc

        table = self.rollouts(s.telemetry)
        if s.model is not None:
            table = table.filter(pc.equal(pc.fill_null(table.column("model"), NO_MODEL), s.model))
            if table.num_rows == 0:
                raise InputError(f"{self.source}: {where}: no rollouts of model {s.model!r} in the telemetry")
        if not s.by:
            return D.Empirical(holds_s(table))
        mix = empirical_by_model_outcome(table)
        if "model" not in s.by:
            mix = D.Mixture(mix.components, mix.weights, (), mix.exceptions)
        if "outcome" not in s.by:
            mix = D.Mixture(mix.components, mix.weights, mix.labels, ())
        return mix

    def episode(self, w: WorkloadSpec, where: str) -> Episode:
        if w.hold is None and w.turns is None:
            raise InputError(f"{self.source}: {where}: give [hold] or [turns]")
        build = None
        if w.build is not None:
            build = Build(w.build.hit_p,
                          self.dist(w.build.hit, f"{where}.build.hit") if w.build.hit else None,
                          self.dist(w.build.miss, f"{where}.build.miss") if w.build.miss else None)
        turns = None
        if w.turns is not None:
            turns = Turns(self.dist(w.turns.turns, f"{where}.turns.turns"),
                          self.dist(w.turns.model_latency, f"{where}.turns.model_latency"),
                          self.dist(w.turns.command, f"{where}.turns.command") if w.turns.command else None)
        exc = w.exceptions or ExceptionsSpec()
        return Episode(
            agent=self.dist(w.hold, f"{where}.hold") if w.hold is not None else None,
            turns=turns,
            build=build,
            verifier=self.dist(w.verifier, f"{where}.verifier") if w.verifier is not None else None,
            exception_rate_per_s=dict(exc.rate_per_s),
            exception_p=dict(exc.p),
            agent_timeout_s=w.agent_timeout_s,
        )

    def workload(self, w: WorkloadSpec, i: int, pools: dict[str, int], n_pools: int) -> Workload:
        where = f"workload {w.name or i}"
        if isinstance(w.pool, str):
            if w.pool not in pools:
                raise InputError(f"{self.source}: {where}: pool {w.pool!r} is not a fleet name ({', '.join(pools)})")
            pool = pools[w.pool]
        else:
            pool = w.pool
            if not 0 <= pool < n_pools:
                raise InputError(f"{self.source}: {where}: pool {pool} does not exist")
        retry = RetryPolicy(w.retry.max_retries, tuple(w.retry.on)) if w.retry else RetryPolicy()
        common = dict(retry=retry, pool=pool, name=w.name or f"w{i}")

        def need(*keys: str) -> None:
            for k in keys:
                if getattr(w, k) is None:
                    raise InputError(f"{self.source}: {where}: kind {w.kind!r} needs '{k}'")

        def forbid(*keys: str) -> None:
            for k in keys:
                if k in w.model_fields_set:
                    raise InputError(f"{self.source}: {where}: '{k}' does not apply to kind {w.kind!r}")

        if w.kind == "poisson":
            need("rate_per_s", "count")
            forbid("batch", "steps", "train_s", "staleness", "telemetry", "arrivals_s")
            return Poisson(rate_per_s=w.rate_per_s, n=w.count, start_s=w.start_s, episode=self.episode(w, where), **common)
        if w.kind in ("sync-rl", "async-rl"):
            need("batch")
            forbid("rate_per_s", "count", "telemetry", "arrivals_s")
            batch = np.asarray(w.batch, dtype=np.int64) if isinstance(w.batch, list) else w.batch
            kw = dict(batch=batch, steps=w.steps, train_s=w.train_s, start_s=w.start_s, episode=self.episode(w, where), **common)
            if w.kind == "sync-rl":
                if w.staleness not in (None, 0):
                    raise InputError(f"{self.source}: {where}: sync-rl has staleness 0; use kind = \"async-rl\"")
                return SyncRL(**kw)
            return AsyncRL(staleness=1 if w.staleness is None else w.staleness, **kw)
        # replay
        forbid("rate_per_s", "batch", "steps", "train_s", "staleness")
        if (w.telemetry is None) == (w.arrivals_s is None):
            raise InputError(f"{self.source}: {where}: replay needs exactly one of telemetry or arrivals_s")
        if w.arrivals_s is not None:
            arr = np.asarray(w.arrivals_s, dtype=float)
            if w.count is not None:
                arr = arr[: w.count]
            return Replay(arrivals_s=arr, episode=self.episode(w, where), **common)
        table = self.rollouts(w.telemetry)
        if w.count is not None:
            order = np.argsort(table.column("started_at").cast("int64").to_numpy(zero_copy_only=False), kind="stable")
            table = table.take(order[: w.count])
        if w.hold is None and w.turns is None:
            return Replay.from_table(table, **common)  # measured holds, in start order
        return Replay.from_table(table, use_holds=False, episode=self.episode(w, where), **common)


# --- running ----------------------------------------------------------------------------
def run_scenario(path: str | Path, *, telemetry_out: str | Path | None = None, timing: bool = False,
                 progress: bool = False) -> dict:
    """Load, build and simulate a scenario file; returns the summary dict.

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

"""Scenario files: load, build and simulate one (``simulate_scenario``: the model; ``run_scenario``: its JSON).

The TOML schema and ``load_scenario`` live in ``scenario.spec``; turning a spec into
engine objects (``build``) in ``scenario.builder``. Both are re-exported here, so
``sandbox_fleet.simulate.scenario`` stays the one import for scenario files.
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_seed
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.simulate.scenario import bounds
from sandbox_fleet.simulate.scenario.builder import Built, build
from sandbox_fleet.simulate.scenario.spec import (
    BuildSpec,
    ComponentSpec,
    DeterministicSpec,
    DistSpec,
    DynamicSamplingSpec,
    EmpiricalSpec,
    EpisodeParts,
    ExceptionsSpec,
    ExponentialSpec,
    FilterSpec,
    FleetSpec,
    ImagesSpec,
    InferenceSpec,
    LogNormalSpec,
    MixtureSpec,
    NonNegFloat,
    PosFloat,
    RequestSpec,
    RetrySpec,
    RunSpec,
    ScenarioSpec,
    Strict,
    SubstrateSpec,
    TurnsSpec,
    WeibullSpec,
    WorkloadSpec,
    load_scenario,
)

__all__ = [
    "BuildSpec", "Built", "ComponentSpec", "DeterministicSpec", "DistSpec", "DynamicSamplingSpec", "EmpiricalSpec", "EpisodeParts",
    "ExceptionsSpec", "ExponentialSpec", "FilterSpec", "FleetSpec", "ImagesSpec", "InferenceSpec", "LogNormalSpec", "MixtureSpec", "NonNegFloat", "PosFloat",
    "RequestSpec", "RetrySpec", "RunSpec", "ScenarioSpec", "Strict", "SubstrateSpec", "TurnsSpec", "WeibullSpec", "WorkloadSpec", "build",
    "load_scenario", "run_scenario", "simulate_scenario",
]


def run_scenario(path: str | Path, *, telemetry_out: str | Path | None = None, timing: bool = False,
                 progress: bool = False, seed: int | None = None, max_memory_gb: float | None = None) -> dict:
    """``simulate_scenario`` as its JSON dict (what ``simulate --json`` prints; docs/simulate.md)."""
    return simulate_scenario(path, telemetry_out=telemetry_out, timing=timing, progress=progress, seed=seed,
                             max_memory_gb=max_memory_gb).to_json()


def simulate_scenario(path: str | Path, *, telemetry_out: str | Path | None = None, timing: bool = False,
                      progress: bool = False, seed: int | None = None,
                      max_memory_gb: float | None = None) -> SimulateSummary:
    """Load, build and simulate a scenario file; returns its ``SimulateSummary``.

    ``seed`` overrides the file's ``[run] seed`` (the summary's ``seed`` is the one used).
    Before it runs, a scenario whose estimated memory exceeds ``max_memory_gb`` (default: 75%
    of available memory) or that cannot finish is refused (``bounds.check_run``).

    ``telemetry_out`` writes the per-rollout canonical telemetry (Parquet) that
    ``sandbox-fleet measure`` reads. ``timing`` adds wall-clock figures
    (``wall_s``, ``events_per_s``), which differ from run to run: without it the
    summary is byte-identical for the same scenario and seed.
    """
    from datetime import datetime

    from sandbox_fleet.simulate.engine.run import run_workloads

    p = Path(path)
    spec = load_scenario(p)
    built = build(spec, p.parent, str(p), max_memory_gb)
    if seed is not None:
        check_seed(seed)
        built.seed = seed
    bounds.check_run(built, str(p), max_memory_gb)
    if telemetry_out is not None and built.reads:
        from sandbox_fleet.outpaths import check_output

        # the scenario's own telemetry inputs are inputs too (the CLI only knew the scenario file)
        check_output(telemetry_out, inputs=built.reads, suffixes=(".parquet",), option="`telemetry`")
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
        res = run_workloads(built.fleets, built.workloads, built.seed, engine=built.engine, on_progress=cb,
                            inference=built.inference)
    except InputError as exc:
        if built.inference is None or str(exc).startswith(f"{p}:"):
            raise
        raise InputError(f"{p}: {exc}") from None  # checks that need the draws (one context vs kv_cache_gb)
    finally:
        if bar is not None:
            bar.stop()
    _check_clock(res, p, built.epoch)
    if telemetry_out is not None:
        import pyarrow.parquet as pq

        from sandbox_fleet import atomic

        out = Path(telemetry_out)
        # No statistics timestamps or writer-dependent metadata: same input, same bytes.
        with atomic.atomic_path(out) as tmp:
            pq.write_table(res.to_telemetry(epoch=epoch), tmp, compression="zstd")
    try:
        summary = built.summary(res, timing=timing, scenario=p.name, seed=built.seed,
                                telemetry=str(telemetry_out) if telemetry_out is not None else None)
    except InputError as exc:  # a warm-up the run cannot carry: name the file
        raise InputError(f"{p}: {exc}") from None
    f = spec.filter
    if f is None:
        return summary
    from sandbox_fleet.contract import filter_used

    return summary.model_copy(update={"telemetry_filter": filter_used(f.models, f.since, f.until, source="scenario",
                                                                      scenario=p.name)})


def _check_clock(res, p: Path, epoch: str) -> None:
    """The run's clock stayed finite and before year 9999 (sums of long durations can still overflow)."""
    import numpy as np

    horizon = bounds.horizon_s(epoch)
    fin = np.asarray(res.finish_s, dtype=float)
    if fin.size and (np.any(np.isinf(fin)) or float(np.nanmax(fin, initial=0.0)) > horizon):
        raise InputError(f"{p}: the simulated clock runs past year 9999 from run.epoch (at most {horizon:.4g} s); "
                         "shorten the durations in [hold]/[turns]/[build]/[verifier], train_s or the number of steps")


def _stderr_console():
    from rich.console import Console

    return Console(stderr=True)

"""``synth``: simulate the published campaign and write it as an RST-style release.

Order of work: draw every run's rollouts (``population``), plan the runs
(``campaign``), let the engine place them in time on the shared capped pool, give
each prompt group a task, then write the release (``release``). Each subsystem
draws from its own seeded stream, so the same seed gives the same bytes.
"""

from __future__ import annotations

import json
import math
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from sandbox_fleet import __version__, atomic
from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import DROPPED, RETRIED, run_workloads
from sandbox_fleet.synth import campaign as cp
from sandbox_fleet.synth.model import MANIFEST_FIELDS, SynthRun, SynthSummary, SynthTiming
from sandbox_fleet.synth.population import draw_population
from sandbox_fleet.synth.release import EPOCH, trajectory_table, write_tasks, write_trajectories
from sandbox_fleet.synth.tasks import draw_tasks

PRESETS = ("rst",)
MANIFEST = "synth.json"
SCHEMA_VERSION = 1
MAX_SCALE = 10.0
# Random-stream tags (one stream per subsystem; populations also per model).
_POPULATION, _TASKS, _ASSIGN, _IDS = 101, 102, 103, 104


def _stream(seed: int, tag: int, index: int = 0) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(tag, index)))


def check_args(preset: str, scale: float, seed: int) -> None:
    if preset not in PRESETS:
        raise InputError(f"`preset` {preset!r}: expected one of {', '.join(PRESETS)}")
    if not (isinstance(scale, (int, float)) and math.isfinite(scale) and 0 < scale <= MAX_SCALE):
        raise InputError(f"`scale` {scale}: expected a number in (0, {MAX_SCALE:g}]")
    if not isinstance(seed, int) or seed < 0:
        raise InputError(f"`seed` {seed}: expected a whole number >= 0")


def _is_release(folder: Path) -> bool:
    """A folder an earlier synth wrote (the only non-empty folder ``--force`` may replace)."""
    return (folder / MANIFEST).is_file()


def check_out(out: Path, force: bool = False) -> None:
    """A new or empty folder, or (with ``force``) an earlier synth release; never other data."""
    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: exists and is not a folder (expected a folder for the release)")
    if out.is_dir() and any(out.iterdir()) and not _is_release(out):
        raise InputError(f"{out}: folder is not empty and holds no {MANIFEST}; choose an empty or new folder")
    atomic.check_dir_target(out, force=force, replaceable=_is_release)


@contextmanager
def _bar(enabled: bool):
    console = Console(stderr=True)
    if not enabled or not console.is_terminal:
        yield None
        return
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console, transient=True) as bar:
        yield bar


def synth(out: str | Path, preset: str = "rst", scale: float = 1.0, seed: int = 1, progress: bool = True,
          force: bool = False) -> SynthSummary:
    """Simulate the RST campaign at ``scale`` and write its release under ``out``.

    The release is built in a temporary folder beside ``out`` and renamed into place, so an
    interrupted run leaves the previous release (or nothing). An existing release is replaced
    only with ``force``. Returns a summary: what was written, the runs that were simulated
    and the wall time of each stage. ``out/synth.json`` records the inputs (not the times).
    """
    check_args(preset, scale, seed)
    out = Path(out)
    check_out(out, force)
    with atomic.atomic_dir(out, force=force, replaceable=_is_release) as tmp:
        summary = _build(tmp, preset, scale, seed, progress)
    # the paths the release has once renamed into place
    summary.trajectories = str(out / Path(summary.trajectories).relative_to(tmp))
    summary.out, summary.tasks_root = str(out), str(out / "tasks")
    return summary


def _build(out: Path, preset: str, scale: float, seed: int, progress: bool) -> SynthSummary:
    """Simulate and write the release into the (new, empty) folder ``out``."""
    times = {}
    t0 = time.perf_counter()

    rows = cp.rows_per_model(scale)
    pops = {name: draw_population(_stream(seed, _POPULATION, k), cp.profile(name), n) for k, (name, n) in enumerate(rows.items())}
    runs = cp.plan_runs(pops, scale)
    pool = draw_tasks(_stream(seed, _TASKS), scale)
    times["draw_s"] = time.perf_counter() - t0

    t1 = time.perf_counter()
    with _bar(progress) as bar:
        task = bar.add_task("simulating the campaign", total=sum(len(r.population) for r in runs)) if bar else None
        res = run_workloads(
            cp.fleet(scale),
            cp.workloads(runs),
            seed=seed,
            on_progress=(lambda done, total: bar.update(task, completed=done)) if bar else None,
        )
    if np.any(res.state == DROPPED) or np.any(res.state == RETRIED):
        raise RuntimeError("the synth campaign expects one attempt per rollout (no drops, no retries)")
    times["simulate_s"] = time.perf_counter() - t1

    t2 = time.perf_counter()
    starts, finishes, task_idx = [], [], []
    assign = _stream(seed, _ASSIGN)
    for k, run in enumerate(runs):
        sel = np.flatnonzero(res.workload == k)
        order = sel[np.argsort(res.index[sel], kind="stable")]
        starts.append(res.start_s[order])
        finishes.append(res.finish_s[order])
        # A group of 8 rollouts shares one prompt (task); each run walks the pool in its own order.
        prompt = np.arange(len(run.population)) // cp.GROUP_SIZE
        task_idx.append(assign.permutation(len(pool))[prompt % len(pool)])
    table = trajectory_table([r.population for r in runs], starts, finishes, task_idx, pool, _stream(seed, _IDS))
    traj_path = write_trajectories(table, out)
    times["write_trajectories_s"] = time.perf_counter() - t2

    t3 = time.perf_counter()
    with _bar(progress) as bar:
        task = bar.add_task("writing task shards", total=len(pool)) if bar else None
        shards = write_tasks(pool, out, (lambda k: bar.advance(task, k)) if bar else None)
    times["write_tasks_s"] = time.perf_counter() - t3
    times["total_s"] = time.perf_counter() - t0

    fleet = cp.fleet(scale)
    summary = SynthSummary(
        schema_version=SCHEMA_VERSION,
        generator=f"sandbox-fleet {__version__}",
        preset=preset,
        scale=scale,
        seed=seed,
        epoch=EPOCH.isoformat(),
        rollouts=int(table.num_rows),
        tasks=len(pool),
        cap=fleet.cap,
        provision_delay_s=fleet.provision_delay_s,
        runs=[SynthRun(model=r.plan.model, batch=int(r.batch[0]), steps=int(r.batch.size), rollouts=len(r.population),
                       train_s=r.train_s, start_s=r.start_s) for r in runs],
        out=str(out),
        trajectories=str(traj_path),
        tasks_root=str(out / "tasks"),
        shards=len(shards),
        simulated_span_s=float(np.max(res.finish_s) - np.min(res.start_s)),
        events=int(res.events),
        timing=SynthTiming(**times),
    )
    manifest = summary.model_dump(include=set(MANIFEST_FIELDS))
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")  # inside the temporary folder
    return summary

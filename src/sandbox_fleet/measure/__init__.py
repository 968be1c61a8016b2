"""measure: every fleet figure from canonical telemetry, as one JSON-ready dict.

``measure_paths`` reads and filters telemetry, then ``measure_telemetry`` computes
concurrency, holds, phases, steps, tokens, outcomes, exceptions, coverage, per-model and
per-job slices, and task requests. Each figure carries the row count it was computed
over; times are summed in integer microseconds so results never depend on scheduling.
The JSON keys are the contract ``plan`` and ``report`` read (``SCHEMA_VERSION``).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.columns import frame_from_table
from sandbox_fleet.measure.concurrency import concurrency_figures, overall_cap
from sandbox_fleet.measure.coverage import measure_coverage
from sandbox_fleet.measure.groups import by_job, by_model
from sandbox_fleet.measure.holds import measure_holds
from sandbox_fleet.measure.outcomes import measure_exceptions, measure_outcomes, outcome_codes
from sandbox_fleet.measure.phases import measure_phases
from sandbox_fleet.measure.steps import measure_steps
from sandbox_fleet.measure.tasks import measure_tasks
from sandbox_fleet.measure.tokens import measure_tokens
from sandbox_fleet.telemetry.record import Telemetry, conform_rollouts

SCHEMA_VERSION = 1
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)

__all__ = ["SCHEMA_VERSION", "measure_paths", "measure_telemetry"]


def _iso(us: int) -> str:
    return (_EPOCH + timedelta(microseconds=int(us))).isoformat().replace("+00:00", "Z")


def _usable(table: pa.Table, rejected: dict[str, int]) -> pa.Table:
    """Drop rows no interval can be built from, counting them (readers normally did this)."""
    start, finish = table.column("started_at"), table.column("finished_at")
    missing = pc.or_(pc.is_null(start), pc.is_null(finish))
    backwards = pc.fill_null(pc.less(finish, start), False)
    n_missing = pc.sum(pc.cast(missing, pa.int64())).as_py() or 0
    n_back = pc.sum(pc.cast(backwards, pa.int64())).as_py() or 0
    if not (n_missing or n_back):
        return table
    for reason, n in (("missing start or finish", n_missing), ("finished before started", n_back)):
        if n:
            rejected[reason] = rejected.get(reason, 0) + n
    return table.filter(pc.invert(pc.or_(missing, backwards)))


@contextmanager
def _steps(enabled: bool, total: int):
    """A transient progress bar on stderr, advanced once per measurement."""
    if not enabled:
        yield lambda label: None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("measuring", total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=f"measuring: {label}")

        yield advance


def measure_telemetry(t: Telemetry, *, pass_threshold: float = 1.0, seed: int = 0,
                      progress: bool = False) -> dict:
    """Every measurement over ``t.rollouts`` (canonical), as a JSON-ready dict.

    ``seed`` drives the bootstrap intervals only; the same input and seed give the same bytes.
    Raises InputError when no usable rollout is left.
    """
    rejected = dict(t.rejected)
    table = _usable(conform_rollouts(t.rollouts, ", ".join(t.sources) or "<rollouts>"), rejected)
    if table.num_rows == 0:
        where = ", ".join(t.sources) or "input"
        raise InputError(f"{where}: no rollouts left to measure (empty, all rejected, or filtered out)")
    fr = frame_from_table(table)
    with _steps(progress and fr.n >= 1_000_000, 10) as advance:
        # Time-only measurements first: their large buffers come and go before the
        # other columns are pulled out of Arrow, which keeps peak memory down.
        conc = concurrency_figures(fr.start_us, fr.finish_us,
                                   overall_cap(fr.job.codes, fr.job.names, t.caps), with_series=True)
        advance("concurrency")
        steps = measure_steps(fr.start_us, fr.finish_us)
        advance("steps")
        jobs = by_job(fr, pass_threshold, t.caps)
        advance("jobs")
        first_start, last_finish = int(fr.start_us.min()), int(fr.finish_us.max())
        _ = fr.hold_us  # keep the holds, drop the raw times: nothing below needs them
        fr.release("start_us", "finish_us")
        outcome = outcome_codes(fr, pass_threshold)
        holds = measure_holds(fr, outcome)
        del outcome
        advance("holds")
        phases = measure_phases(fr)
        advance("phases")
        tokens = measure_tokens(fr)
        advance("tokens")
        outcomes = measure_outcomes(fr, pass_threshold, seed)
        exceptions = measure_exceptions(fr)
        advance("outcomes")
        coverage = measure_coverage(fr, rejected)
        advance("coverage")
        models = by_model(fr, pass_threshold)
        advance("models")
        tasks = measure_tasks(t.tasks)
        advance("tasks")
    warnings = list(t.warnings)
    added = {k: v - t.rejected.get(k, 0) for k, v in rejected.items() if v != t.rejected.get(k, 0)}
    if added:
        warnings.append("measure rejected rows without a usable interval: "
                        + ", ".join(f"{k}: {v}" for k, v in sorted(added.items())))
    return {
        "schema_version": SCHEMA_VERSION,
        "source": list(t.sources),
        "rows": fr.n,
        "first_started_at": _iso(first_start),
        "last_finished_at": _iso(last_finish),
        "span_s": conc["span_s"],
        "sandbox_s": conc["sandbox_s"],
        "sandbox_hours": conc["sandbox_s"] / 3600,
        "pass_threshold": pass_threshold,
        "seed": seed,
        "concurrency": conc,
        "hold_s": holds,
        "phases": phases,
        "steps": steps,
        "tokens": tokens,
        "outcomes": outcomes,
        "exceptions": exceptions,
        "coverage": coverage,
        "by_model": models,
        "by_job": jobs,
        "tasks": tasks,
        "warnings": warnings,
    }


def measure_paths(paths, *, tasks=None, fmt=None, column_map=None, time_unit=None, assume_tz="UTC",
                  reward_key="reward", models=None, since=None, until=None,
                  pass_threshold: float = 1.0) -> dict:
    """Read telemetry from ``paths`` (any supported format), filter, and measure it.

    Arguments mirror ``sandbox-fleet measure``; see ``sandbox_fleet.telemetry.load_telemetry``.
    """
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

    t = load_telemetry(paths, tasks=tasks, fmt=fmt, column_map=column_map, time_unit=time_unit,
                       assume_tz=assume_tz, reward_key=reward_key, progress=True)
    if models or since or until:
        t = filter_rollouts(t, models=models, since=since, until=until)
    return measure_telemetry(t, pass_threshold=pass_threshold, progress=True)

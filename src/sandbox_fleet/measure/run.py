"""measure entry points: read and filter telemetry, compute every figure, build the summary."""

from __future__ import annotations

import math
from concurrent.futures import Future, ThreadPoolExecutor, wait
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.errors import InputError
from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.measure.arrowpool import prefer_returning_pool
from sandbox_fleet.measure.batchcap import classify_peak
from sandbox_fleet.measure.columns import Frame, decoded, frame_from_table
from sandbox_fleet.measure.concurrency import (
    concurrency_figures,
    effective_cap_figures,
    overall_cap,
)
from sandbox_fleet.measure.coverage import measure_coverage
from sandbox_fleet.measure.groups import by_job, by_model, group_rows_of, model_columns
from sandbox_fleet.measure.holds import measure_holds
from sandbox_fleet.measure.lanes import SharedJobs
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.measure.nodes_health import COLUMNS as NODE_COLUMNS
from sandbox_fleet.measure.nodes_health import measure_node_health
from sandbox_fleet.measure.outcomes import measure_exceptions, measure_outcomes, outcome_codes
from sandbox_fleet.measure.phases import measure_phases
from sandbox_fleet.measure.sql import session
from sandbox_fleet.measure.steps import (
    group_rows,
    measure_grouped_steps,
    measure_steps,
    overall_steps,
    sorted_starts,
)
from sandbox_fleet.measure.tasks import measure_tasks, task_usage
from sandbox_fleet.measure.tasks_health import measure_task_health
from sandbox_fleet.measure.tokens import MIN_TURN_ROWS, measure_tokens
from sandbox_fleet.measure.trajectories import measure_trajectories
from sandbox_fleet.telemetry.record import ROLLOUT_COLUMNS, Telemetry, conform_rollouts

#: Below this many rows measuring takes well under a second: no bar.
BAR_ROWS = 1_000_000
#: Up to this many rows three lanes: the per-task pass and the sweep on two workers, the overall
#: step pass here, the per-model step passes on a worker once the sweep is done (see ``_measure``).
THREE_LANES_ROWS = 4_000_000
#: Up to this many rows two lanes: the sweep and then the per-model step passes on one worker,
#: the overall step pass and then the per-task pass here; later the counts beside the hold sorts.
#: With the text columns coded and the Arrow time columns dropped once copied out, 10M rows
#: peak at ~1.4-1.5 GiB so (three lanes reached 1,554-1,728 MiB, depending on how the passes
#: overlapped). Past it, one pass at a time.
TWO_LANES_ROWS = 12_000_000
#: The rollout columns measure reads: ids never enter a figure (task ids only ``by_task``).
MEASURED_COLUMNS = tuple(c for c in ROLLOUT_COLUMNS if c != "id")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

__all__ = ["MeasureSummary", "measure_paths", "measure_telemetry"]


def _iso(us: int) -> str:
    return (_EPOCH + timedelta(microseconds=int(us))).isoformat().replace("+00:00", "Z")


def _usable(table: pa.Table, rejected: dict[str, int]) -> pa.Table:
    """Drop rows no interval can be built from, counting them (readers normally did this)."""
    start, finish = table.column("started_at"), table.column("finished_at")
    if start.null_count == 0 and finish.null_count == 0 and not pc.any(pc.less(finish, start)).as_py():
        return table  # what every reader hands over: one comparison settles it
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
    from sandbox_fleet.telemetry import progress as bars

    if not bars.active(enabled):
        yield lambda label: None
        return
    from rich.progress import Progress

    with Progress(console=bars.console(), transient=True) as bar:
        task = bar.add_task("measuring", total=total)

        def advance(label: str) -> None:
            bar.update(task, advance=1, description=f"measuring: {label}")

        yield advance


def _all_steps(fr: Frame, pool: ThreadPoolExecutor | None = None, after: Future | None = None):
    """Steps over all starts, per model and per job; the top level notes a mix of runs.

    Runs are jobs when the input has two or more, else models (one synchronous run per
    model, as in a release that only names models). Returns the job row grouping too,
    so ``by_job`` does not sort the rows again. With ``pool`` the per-model passes run
    there, beside the overall and per-job ones (they share only read-only arrays), once
    ``after`` is done: the sweep's buffers and theirs never coexist (peak memory).

    Returns ``(job_steps, job_rows, pending, finish)``: ``pending`` is the per-model passes'
    future (None when they ran here already) and ``finish()`` gives ``(steps, model_steps)``
    once they are done, so the caller works on meanwhile instead of waiting.
    """
    model_codes, model_names = fr.model.labelled()
    has_jobs = bool(fr.job.names)
    # One sort of all starts serves the overall pass and, partitioned, every per-run pass.
    s_all, parts = sorted_starts(fr.start_us, [model_codes] + ([fr.job.codes] if has_jobs else []))
    # The times bound now: the caller releases them from ``fr`` while this may still wait to run.
    by_model = partial(_grouped_steps, fr.start_us, fr.finish_us, model_codes, model_names, (s_all, parts[0]))
    del model_codes
    models = pool.submit(_once_done, after, by_model) if pool is not None else None
    overall = measure_steps(fr.start_us, fr.finish_us, starts_sorted=s_all)
    job_rows = group_rows(fr.job.codes, len(fr.job.names)) if has_jobs else None
    job_steps = (measure_grouped_steps(fr.start_us, fr.finish_us, job_rows, fr.job.names, (s_all, parts[1]))
                 if job_rows else {})
    done = by_model() if models is None else None
    del s_all, parts, by_model

    def finish() -> tuple[dict, dict]:
        model_steps = models.result() if models is not None else done
        assert model_steps is not None  # without a future the passes ran here (done)
        runs_by = "job" if len(job_steps) >= 2 else "model"
        return overall_steps(overall, job_steps if runs_by == "job" else model_steps, runs_by), model_steps

    return job_steps, job_rows, models, finish


def _grouped_steps(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, names: list[str],
                   starts: tuple) -> dict[str, dict]:
    # The row grouping is built when the pass starts, not held while others run (8 bytes a row).
    return measure_grouped_steps(start_us, finish_us, group_rows(codes, len(names)), names, starts)


def _once_done(after: Future | None, work):
    if after is not None:
        after.result()
    return work()


def _counts_lane(fr: Frame, pass_threshold: float, seed: int, min_turn_rows: int, rejected: dict) -> tuple:
    """Passes that read no sorted holds: phases, tokens, outcomes, coverage, trajectories."""
    return (measure_phases(fr), measure_tokens(fr, min_turn_rows), measure_outcomes(fr, pass_threshold, seed),
            measure_coverage(fr, rejected), measure_trajectories(fr.table))


def _then_drain(lane, shared: SharedJobs):
    result = lane()
    shared.drain()
    return result


def measure_telemetry(t: Telemetry, *, pass_threshold: float = 1.0, seed: int = 0,
                      progress: bool = False, min_turn_rows: int = MIN_TURN_ROWS) -> dict:
    """Every measurement over ``t.rollouts`` (canonical), as a ``MeasureSummary``'s JSON-native dict.

    ``seed`` drives the bootstrap intervals only; the same input and seed give the same bytes.
    Raises InputError when no usable rollout is left.
    """
    with session():
        return _measure(t, pass_threshold=pass_threshold, seed=seed, progress=progress, owned=False,
                        min_turn_rows=min_turn_rows)


def rejected_warnings(rejected: dict[str, int]) -> list[str]:
    """One line per rejection reason with its count, so none hides in the JSON alone."""
    return [f"rejected {n:,} row(s): {reason}" for reason, n in sorted(rejected.items()) if n]


def _measure(t: Telemetry, *, pass_threshold: float, seed: int, progress: bool, owned: bool,
             min_turn_rows: int = MIN_TURN_ROWS) -> dict:
    """``measure_telemetry``; ``owned``: the caller hands ``t`` over, so its columns are freed as they are used."""
    rejected = dict(t.rejected)
    # Task ids, models, jobs and exception types as one dictionary each (a reader asked for
    # ``coded`` already gave them so): every figure reads their codes, never the strings.
    table = conform_rollouts(t.rollouts, ", ".join(t.sources) or "<rollouts>", columns=MEASURED_COLUMNS, coded=True)
    table = _usable(table.unify_dictionaries(), rejected)
    if owned:  # the caller handed ``t`` over: ``table`` alone holds the rows now, so what it drops is freed
        t.rollouts = t.rollouts.schema.empty_table()
    if table.num_rows == 0:
        where = ", ".join(t.sources) or "input"
        raise InputError(f"{where}: no rollouts left to measure (empty, all rejected, or filtered out)")
    lanes = 3 if table.num_rows <= THREE_LANES_ROWS else 2 if table.num_rows <= TWO_LANES_ROWS else 1
    with _steps(progress and table.num_rows >= BAR_ROWS, 11) as advance, \
            ThreadPoolExecutor(max_workers=max(lanes - 1, 1)) as pool:
        # The time columns as arrays first (every time pass reads them); the Arrow chunks go.
        health_table = table.select(["task_id", "has_exception", "exception_type"])
        usage = task_usage(decoded(table, "task_id")) if t.tasks is not None else None
        # One bincount pass over the node codes (none when no row names a node); nothing else reads them.
        node_health = measure_node_health(table.select(list(NODE_COLUMNS)))
        fr = frame_from_table(table.drop_columns(["task_id", "node"]))
        del table
        _ = fr.start_us, fr.finish_us
        fr.drop_columns("started_at", "finished_at")  # copied out whole: the Arrow chunks can go (160 MB at 10M rows)
        # The per-task pass (NumPy bincounts of the task codes, mostly outside the GIL; no other
        # figure reads the task ids): with three lanes on a worker beside the passes below; with
        # two here, after the step passes, while the worker has the sweep and then the per-model
        # step passes (on the worker it came first and held the sweep back); with one, first and alone.
        health = None
        if lanes != 2:
            health = pool.submit(measure_task_health, health_table, times=(fr.start_us, fr.finish_us))
            del health_table
        task_health = health.result() if health is not None and lanes == 1 else None
        # Time-only measurements first: their large buffers come and go before the
        # other columns are pulled out of Arrow, which keeps peak memory down. The sweep and
        # the step passes share nothing but the (read-only) times and mostly run in NumPy
        # sorts that release the GIL, so they run side by side (see THREE_LANES_ROWS). The
        # sweep needs only the job codes (for the cap): it starts before the model codes are built.
        cap = overall_cap(fr.job.codes, fr.job.names, t.caps)
        sweep = pool.submit(concurrency_figures, fr.start_us, fr.finish_us, cap, with_series=True) if lanes > 1 else None
        # Group codes once; the model and job strings are read by nothing else.
        _ = fr.model
        fr.drop_columns("model", "job")
        advance("exceptions per task")
        if lanes > 1:
            job_steps, job_rows, model_steps_pending, finish_steps = _all_steps(fr, pool, after=sweep)
            if health is None:
                task_health = measure_task_health(health_table, times=(fr.start_us, fr.finish_us))
                del health_table
            assert sweep is not None  # submitted above whenever lanes > 1
            conc = sweep.result()
            task_health = health.result() if health is not None else task_health
        else:
            conc = concurrency_figures(fr.start_us, fr.finish_us, cap, with_series=True)
            job_steps, job_rows, model_steps_pending, finish_steps = _all_steps(fr)
        conc.update(effective_cap_figures(conc))
        advance("concurrency")
        advance("steps")
        jobs = by_job(fr, pass_threshold, t.caps, job_rows)
        del job_rows
        for name, st in job_steps.items():
            jobs[name]["steps"] = st
        advance("jobs")
        first_start, last_finish = int(fr.start_us.min()), int(fr.finish_us.max())
        _ = fr.hold_us  # keep the holds, drop the raw times: nothing below needs them
        fr.release("start_us", "finish_us")  # (freed once the per-model step passes are done too)
        # Two lanes that share only read-only columns: the hold sorts (holds, per model) here,
        # the token, outcome and coverage passes on the other core, after the per-model step
        # passes (NumPy and Arrow kernels that mostly release the GIL). Then both lanes take
        # from the same queue the per-model counts and sums (one job a column) and the
        # exception types, so neither waits for the other at the end. Each figure is computed
        # alone as before, so no result depends on which lane ran it or when.
        # The masks both lanes read are built once, before either starts.
        _ = (fr.has_exception.values, fr.has_exception.valid, fr.exception, fr.hit_limit, fr.rewarded,
             fr.passed(pass_threshold), fr.zero_tokens, fr.has_tokens)
        counts = partial(_counts_lane, fr, pass_threshold, seed, min_turn_rows, rejected)
        model_jobs, n_models = model_columns(fr, pass_threshold)
        shared = SharedJobs(model_jobs + [partial(measure_exceptions, fr)])
        del model_jobs
        rest = pool.submit(_then_drain, counts, shared) if lanes > 1 else None
        # Shared jobs (blockwise: small buffers) until the per-model step passes are done; the hold
        # sorts only then, so their buffers and those passes' never coexist (peak memory at 10M).
        if model_steps_pending is not None:
            shared.drain(until=model_steps_pending)
            wait([model_steps_pending])
        outcome = outcome_codes(fr, pass_threshold)
        holds = measure_holds(fr, outcome)
        del outcome
        advance("holds")
        *model_cols, exceptions = shared.results()
        models = by_model(fr, pass_threshold, table=group_rows_of(model_cols, n_models))
        del model_cols
        phases, tokens, outcomes, coverage, trajectories = rest.result() if rest else counts()
        steps, model_steps = finish_steps()
        advance("phases")
        advance("tokens")
        advance("outcomes")
        advance("coverage")
        for name, st in model_steps.items():
            models[name]["steps"] = st
        conc = classify_peak(conc, steps, job_steps if steps.get("runs_by") == "job" else model_steps)
        for job in jobs.values():
            if job.get("concurrency") is not None:
                job["concurrency"] = classify_peak(job["concurrency"], job.get("steps"), {})
                job["cap_detected"] = job["concurrency"]["cap_detected"]
        advance("models")
        tasks = measure_tasks(t.tasks, usage)
        advance("tasks")
    warnings = list(t.warnings)
    added = {k: v - t.rejected.get(k, 0) for k, v in rejected.items() if v != t.rejected.get(k, 0)}
    if added:
        warnings.append("measure rejected rows without a usable interval: "
                        + ", ".join(f"{k}: {v}" for k, v in sorted(added.items())))
    warnings.extend(w for w in rejected_warnings(rejected) if w not in warnings)
    if tokens.get("zero_token_rows"):
        warnings.append(f"{tokens['zero_token_rows']:,} row(s) report 0 input and 0 output tokens (an agent that "
                        "does not count them): left out of the token figures as not measured")
    return MeasureSummary.build(**to_jsonable({
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
        "trajectories": trajectories,
        "outcomes": outcomes,
        "exceptions": exceptions,
        "coverage": coverage,
        "by_model": models,
        "by_job": jobs,
        "by_task": task_health,
        "by_node": node_health,
        "tasks": tasks,
        "warnings": warnings,
    })).to_json()


def measure_paths(paths, *, tasks=None, fmt=None, column_map=None, time_unit=None, assume_tz="UTC",
                  reward_key="reward", models=None, since=None, until=None,
                  pass_threshold: float = 1.0, progress: bool = True, cache_dir: str | None = None,
                  latest_time: str | None = "2100-01-01", allow_any_time: bool = False,
                  score: str | None = None, min_turn_rows: int = MIN_TURN_ROWS) -> dict:
    """Read telemetry from ``paths`` (any supported format), filter, and measure it.

    Arguments mirror ``sandbox-fleet measure``; see ``sandbox_fleet.telemetry.load_telemetry``.
    ``progress=False`` draws no bar anywhere (reading, task parsing, measuring).
    """
    from sandbox_fleet.limits import check_range
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

    check_range("`pass_threshold`", pass_threshold, minimum=-math.inf)
    check_range("`min_turn_rows`", min_turn_rows, minimum=1, whole=True)
    prefer_returning_pool()
    t = load_telemetry(paths, tasks=tasks, fmt=fmt, column_map=column_map, time_unit=time_unit,
                       assume_tz=assume_tz, reward_key=reward_key, progress=progress, cache_dir=cache_dir,
                       latest_time=latest_time, allow_any_time=allow_any_time, score=score, coded=True)
    if models or since or until:
        t = filter_rollouts(t, models=models, since=since, until=until)
    # Nothing else holds this table: dropping the columns measure never reads frees them
    # (~240 MB of id strings at 10M rows) before the measurements allocate.
    t.rollouts = t.rollouts.select([c for c in MEASURED_COLUMNS if c in t.rollouts.column_names])
    with session():
        return _measure(t, pass_threshold=pass_threshold, seed=0, progress=progress, owned=True,
                        min_turn_rows=min_turn_rows)

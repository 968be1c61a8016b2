"""measure entry points: read and filter telemetry, compute every figure, build the summary."""

from __future__ import annotations

import math
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
    grouped_sweeps,
    sweep_figures,
)
from sandbox_fleet.measure.coverage import measure_coverage
from sandbox_fleet.measure.fleetcap import (
    FleetCap,
    configured_cap,
    fleet_cap_figures,
    stated_cap_basis,
    summed_cap_at_peak,
)
from sandbox_fleet.measure.groups import by_job, by_model, model_table
from sandbox_fleet.measure.holds import measure_holds
from sandbox_fleet.measure.lanes import Pass, run_plan
from sandbox_fleet.measure.limits import measure_limits
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.measure.nodes_health import COLUMNS as NODE_COLUMNS
from sandbox_fleet.measure.nodes_health import measure_node_health
from sandbox_fleet.measure.outcomes import measure_exceptions, measure_outcomes, outcome_codes
from sandbox_fleet.measure.phases import measure_phases
from sandbox_fleet.measure.rewards import fractional_warning
from sandbox_fleet.measure.rl_groups import COLUMNS as RL_GROUP_COLUMNS
from sandbox_fleet.measure.rl_groups import measure_rl_groups
from sandbox_fleet.measure.sql import session
from sandbox_fleet.measure.steps import (
    group_rows,
    measure_grouped_steps,
    measure_steps,
    overall_steps,
    runs_overlap,
    sorted_starts,
    spans_overlap,
)
from sandbox_fleet.measure.tasks import measure_tasks, task_usage
from sandbox_fleet.measure.tasks_health import measure_task_health
from sandbox_fleet.measure.tokens import MIN_TURN_ROWS, measure_tokens
from sandbox_fleet.measure.trajectories import measure_trajectories
from sandbox_fleet.telemetry.options import ReadOptions
from sandbox_fleet.telemetry.record import ROLLOUT_COLUMNS, Telemetry, conform_rollouts

#: Below this many rows measuring takes well under a second: no bar.
BAR_ROWS = 1_000_000
#: Up to this many rows two passes at a time (``lanes.run_plan``'s two workers); past it one, for
#: peak memory. Its gain is in BENCHMARKS.md.
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


def _usage(table: pa.Table, t: Telemetry) -> pa.Table | None:
    return task_usage(decoded(table, "task_id")) if t.tasks is not None else None


def _by_node(table: pa.Table) -> dict | None:
    # One bincount pass over the node codes (none when no row names a node); nothing else reads them.
    return measure_node_health(table.select(list(NODE_COLUMNS)))


def _frame(table: pa.Table) -> Frame:
    return frame_from_table(table.drop_columns(["task_id", "node"]))


def _times(fr: Frame) -> tuple[np.ndarray, np.ndarray]:
    """The time columns as arrays (every time pass reads them); the Arrow chunks go (160 MB at 10M rows)."""
    times = fr.start_us, fr.finish_us
    fr.drop_columns("started_at", "finished_at")
    return times


def _cap(fr: Frame, t: Telemetry, times: tuple[np.ndarray, np.ndarray]) -> tuple[int | None, FleetCap | None]:
    """``fleetcap.configured_cap`` over every job's own cap, also past the slices kept."""
    _ = fr.job  # the (bounded) job codes every later pass reads are made here
    return configured_cap(t.stated_cap, t.caps, *times, fr.job_all.codes, fr.job_all.names)


def _sweep(fr: Frame, t: Telemetry, times: tuple[np.ndarray, np.ndarray],
           caps: tuple[int | None, FleetCap | None]) -> tuple[dict, dict | None, list | None]:
    """The overall concurrency figures and, from the same sort of the events, each job's
    (``by_job``'s; None when that sort cannot serve them: ``by_job`` then sweeps each job) and
    each job's span (first start, last finish; None likewise)."""
    cap = caps[0]
    names = fr.job.names  # coded by the cap pass before this one starts
    if len(names) < 2:
        return concurrency_figures(*times, cap, with_series=True), None, None
    per_job: dict[str, dict] = {}
    spans: list[tuple[int, int]] = []  # each job's first start and last finish, read off its sweep

    def each(g: int, sw, rows: int) -> None:
        per_job[names[g]] = sweep_figures(sw, rows, t.caps.get(names[g]))
        spans.append((int(sw.times[0]), int(sw.times[-1])))

    overall = grouped_sweeps(*times, fr.job.codes, len(names), each)
    if overall is None:
        return concurrency_figures(*times, cap, with_series=True), None, None
    return sweep_figures(overall, times[0].size, cap, with_series=True), per_job, spans


def _model_codes(fr: Frame) -> tuple[np.ndarray, list[str]]:
    """Group codes once (bounded: ``columns.top``); the model and job strings are read by nothing else."""
    labelled = fr.model.labelled()
    fr.drop_columns("model", "job")
    return labelled


def _slice_cut(fr: Frame, model_codes: tuple) -> dict | None:
    """How ``by_model`` and ``by_job`` were bounded (None when every model and job has its own row)."""
    out = {}
    for key, c in (("by_model", fr.model), ("by_job", fr.job)):
        if c.merged:
            out[key] = {"top": len(c.names) - 1, "groups": len(c.names) - 1 + c.merged, "groups_merged": c.merged,
                        "rows_merged": c.merged_rows, "others": c.names[-1]}
    return out or None


def _starts(fr: Frame, times: tuple, model_codes: tuple) -> tuple:
    # One sort of all starts serves the overall pass and, partitioned, every per-run pass.
    return sorted_starts(times[0], [model_codes[0]] + ([fr.job.codes] if fr.job.names else []))


def _model_steps(times: tuple, model_codes: tuple, starts: tuple) -> dict[str, dict]:
    # The row grouping is built when the pass starts, not held while others run (8 bytes a row).
    codes, names = model_codes
    s_all, parts = starts
    start_us, finish_us = times
    return measure_grouped_steps(start_us, finish_us, group_rows(codes, len(names)), names, (s_all, parts[0]))


def _all_starts_steps(times: tuple, starts: tuple) -> dict:
    return measure_steps(*times, starts_sorted=starts[0])


def _job_rows(fr: Frame):
    return group_rows(fr.job.codes, len(fr.job.names)) if fr.job.names else None


def _job_steps(fr: Frame, times: tuple, job_rows, starts: tuple) -> dict[str, dict]:
    s_all, parts = starts
    start_us, finish_us = times
    return measure_grouped_steps(start_us, finish_us, job_rows, fr.job.names, (s_all, parts[1])) if job_rows else {}


def _concurrency(sweep: tuple) -> dict:
    overall = sweep[0]
    overall.update(effective_cap_figures(overall))
    return overall


def _fleet_cap(t: Telemetry, times: tuple, cap: tuple[int | None, FleetCap | None], jobs: dict,
               concurrency: dict) -> dict:
    """The overall figures with the fleet's cap when jobs overlap (the sum of the running jobs' caps,
    judged against each job's own cap; a second sweep, only then: few jobs record caps), or with
    the basis of a stated cap (each stated job's too)."""
    for name, source in t.stated_jobs.items():
        conc = concurrency if name is None else (jobs.get(name) or {}).get("concurrency")
        if conc is not None and conc.get("configured_cap") is not None:
            conc["configured_cap_basis"] = stated_cap_basis(conc, source)
            if name is not None:  # the fleet's cap_basis is written after this (``_peak``)
                conc["cap_basis"] = conc["configured_cap_basis"]
    fc = cap[1]
    if fc is None:
        return concurrency
    from sandbox_fleet.measure.concurrency import sweep

    detected = {name: job.get("cap_detected") for name, job in jobs.items()}
    sw = sweep(*times)
    concurrency.update(fleet_cap_figures(sw, fc, detected))
    # a plateau is under the cap of the jobs running while the fleet sat at its peak
    concurrency.update(effective_cap_figures({**concurrency, "configured_cap": summed_cap_at_peak(sw, fc)}))
    return concurrency


def _others(slice_cut: dict | None, key: str) -> str | None:
    return (slice_cut or {}).get(key, {}).get("others")


def _jobs(fr: Frame, t: Telemetry, job_rows, job_steps: dict, sweep: tuple, slice_cut: dict | None,
          pass_threshold: float) -> dict:
    jobs = by_job(fr, pass_threshold, t.caps, job_rows, concurrency=sweep[1])
    for name, st in job_steps.items():
        if name != _others(slice_cut, "by_job"):  # merged jobs' starts are no one run's steps
            jobs[name]["steps"] = st
    for job in jobs.values():
        if job.get("concurrency") is not None:
            job["concurrency"] = classify_peak(job["concurrency"], job.get("steps"), {})
            job["cap_detected"] = job["concurrency"]["cap_detected"]
    return jobs


def _span(times: tuple) -> tuple[int, int]:
    return int(times[0].min()), int(times[1].max())


def _holds_only(fr: Frame) -> None:
    """Keep the holds, drop the raw times from the frame: no later pass reads them there (the
    time passes still running hold their own references, freed when the last is done)."""
    _ = fr.hold_us
    fr.release("start_us", "finish_us")


def _masks(fr: Frame, pass_threshold: float) -> None:
    """The masks the last passes share, built once before any of them starts."""
    _ = (fr.has_exception.values, fr.has_exception.valid, fr.exception, fr.hit_limit, fr.rewarded,
         fr.passed(pass_threshold), fr.zero_tokens, fr.has_tokens)


def _holds(fr: Frame, pass_threshold: float) -> dict:
    return measure_holds(fr, outcome_codes(fr, pass_threshold))


def _runs_by(job_steps: dict) -> str:
    """Runs are jobs when the input has two or more, else models (one synchronous run per model, as
    in a release that only names models): the steps' runs, and the rollout groups'."""
    return "job" if len(job_steps) >= 2 else "model"


def _run_overlap(fr: Frame, times: tuple, model_codes: tuple, job_steps: dict, sweep: tuple) -> bool | None:
    """Whether the runs overlap in time: the jobs' spans off their sweeps when made, else one pass."""
    by_job = _runs_by(job_steps) == "job"
    if by_job and sweep[2] is not None:
        first, last = (np.array(v, dtype=np.int64) for v in zip(*sweep[2])) if sweep[2] else (np.zeros(0, np.int64),) * 2
        return spans_overlap(first, last)
    codes, names = (fr.job.codes, fr.job.names) if by_job else model_codes
    start_us, finish_us = times
    return runs_overlap(start_us, finish_us, codes, len(names))


def _steps_figures(all_starts_steps: dict, job_steps: dict, model_steps: dict, run_overlap: bool | None) -> dict:
    """The top level notes a mix of runs (``_runs_by``) that overlap in time."""
    runs_by = _runs_by(job_steps)
    return overall_steps(all_starts_steps, job_steps if runs_by == "job" else model_steps, runs_by, run_overlap)


def _models(by_model: dict, model_steps: dict, slice_cut: dict | None) -> dict:
    for name, st in model_steps.items():
        if name != _others(slice_cut, "by_model"):  # merged models' starts are no one run's steps
            by_model[name]["steps"] = st
    return by_model


def _peak(fleet_cap: dict, steps: dict, job_steps: dict, model_steps: dict) -> dict:
    return classify_peak(fleet_cap, steps, job_steps if steps.get("runs_by") == "job" else model_steps)


def _passes(pass_threshold: float, seed: int, min_turn_rows: int, group_size: int | None = None) -> list[Pass]:
    """Every pass of ``measure``, in the order ``run_plan`` starts them: what each computes and reads.
    Adding a figure is adding one here; the summary reads the values named in ``SUMMARY_VALUES``."""
    pt = pass_threshold
    return [
        Pass("health_table", lambda table: table.select(["task_id", "has_exception", "exception_type"]), ("table",)),
        Pass("usage", _usage, ("table", "t")),
        Pass("by_node", _by_node, ("table",), label="nodes"),
        Pass("signal_table", lambda table: table.select(list(RL_GROUP_COLUMNS)), ("table",)),
        Pass("frame", _frame, ("table",)),
        Pass("times", _times, ("frame",)),
        Pass("by_task", lambda health, times: measure_task_health(health, times=times), ("health_table", "times"),
             label="exceptions per task"),
        Pass("cap", _cap, ("frame", "t", "times")),
        Pass("sweep", _sweep, ("frame", "t", "times", "cap")),
        Pass("model_codes", _model_codes, ("frame",), after=("cap",)),
        Pass("slice_cut", _slice_cut, ("frame", "model_codes")),
        Pass("starts", _starts, ("frame", "times", "model_codes")),
        Pass("all_starts_steps", _all_starts_steps, ("times", "starts")),
        Pass("job_rows", _job_rows, ("frame",)),
        Pass("job_steps", _job_steps, ("frame", "times", "job_rows", "starts")),
        # After the sweep: its buffers and the per-model step passes' never coexist (peak memory).
        Pass("model_steps", _model_steps, ("times", "model_codes", "starts"), after=("sweep",)),
        Pass("run_overlap", _run_overlap, ("frame", "times", "model_codes", "job_steps", "sweep")),
        Pass("concurrency", _concurrency, ("sweep",), label="concurrency"),
        Pass("jobs", partial(_jobs, pass_threshold=pt), ("frame", "t", "job_rows", "job_steps", "sweep", "slice_cut"),
             label="jobs"),
        Pass("fleet_cap", _fleet_cap, ("t", "times", "cap", "jobs", "concurrency")),
        Pass("span", _span, ("times",)),
        Pass("holds_only", _holds_only, ("frame",), after=("jobs", "span")),
        Pass("masks", partial(_masks, pass_threshold=pt), ("frame",), after=("holds_only",)),
        # the per-model counts and sums (blockwise: small buffers)
        Pass("model_table", partial(model_table, threshold=pt), ("frame",), after=("masks",)),
        Pass("exceptions", measure_exceptions, ("frame",), after=("masks",)),
        # After the per-model step passes: the hold groupings' buffers and theirs never coexist.
        Pass("holds", partial(_holds, pass_threshold=pt), ("frame",), after=("masks", "model_steps"), label="holds"),
        Pass("phases", measure_phases, ("frame",), after=("masks",), label="phases"),
        Pass("tokens", partial(measure_tokens, min_turn_rows=min_turn_rows), ("frame",), after=("masks",), label="tokens"),
        Pass("outcomes", partial(measure_outcomes, threshold=pt, seed=seed), ("frame",), after=("masks",), label="outcomes"),
        Pass("coverage", measure_coverage, ("frame", "rejected"), after=("masks",), label="coverage"),
        Pass("trajectories", lambda fr: measure_trajectories(fr.table), ("frame",), after=("masks",)),
        Pass("by_model_counts", lambda fr, table: by_model(fr, pt, table=table), ("frame", "model_table"),
             after=("model_codes",)),
        Pass("steps", _steps_figures, ("all_starts_steps", "job_steps", "model_steps", "run_overlap"), label="steps"),
        Pass("models", _models, ("by_model_counts", "model_steps", "slice_cut"), label="models"),
        Pass("peak", _peak, ("fleet_cap", "steps", "job_steps", "model_steps")),
        Pass("tasks", lambda t, usage: measure_tasks(t.tasks, usage), ("t", "usage"), label="tasks"),
        Pass("limits", partial(measure_limits, threshold=pt), ("frame", "times", "concurrency"), after=("masks",),
             label="limits"),
        Pass("rl_groups", partial(_rl_groups, threshold=pt, group_size=group_size),
             ("signal_table", "times", "job_steps", "model_steps"), label="groups"),
    ]


def _rl_groups(table: pa.Table, times: tuple, job_steps: dict, model_steps: dict, *, threshold: float,
               group_size: int | None) -> dict:
    runs_by = _runs_by(job_steps)
    return measure_rl_groups(table, times, runs_by, job_steps if runs_by == "job" else model_steps,
                             threshold=threshold, group_size=group_size)


#: The values the summary reads.
SUMMARY_VALUES = ("span", "peak", "holds", "phases", "steps", "tokens", "trajectories", "outcomes",
                  "exceptions", "coverage", "models", "jobs", "by_task", "by_node", "tasks", "limits", "rl_groups", "slice_cut")


def measure_telemetry(t: Telemetry, *, pass_threshold: float = 1.0, seed: int = 0,
                      progress: bool = False, min_turn_rows: int = MIN_TURN_ROWS,
                      group_size: int | None = None) -> MeasureSummary:
    """Every measurement over ``t.rollouts`` (canonical), as a ``MeasureSummary`` (``.to_json()``: its JSON).

    ``seed`` drives the bootstrap intervals only; the same input and seed give the same bytes.
    Raises InputError when no usable rollout is left. ``group_size``: the G of ``rl_groups``'
    expected shares (default: the median recorded group, else ``rl_groups.DEFAULT_GROUP_SIZE``).
    """
    with session():
        return _measure(t, pass_threshold=pass_threshold, seed=seed, progress=progress, owned=False,
                        min_turn_rows=min_turn_rows, group_size=group_size)


def rejected_warnings(rejected: dict[str, int]) -> list[str]:
    """One line per rejection reason with its count, so none hides in the JSON alone."""
    return [f"rejected {n:,} row(s): {reason}" for reason, n in sorted(rejected.items()) if n]


def _measure(t: Telemetry, *, pass_threshold: float, seed: int, progress: bool, owned: bool,
             min_turn_rows: int = MIN_TURN_ROWS, group_size: int | None = None) -> MeasureSummary:
    """``measure_telemetry``; ``owned``: the caller hands ``t`` over, so its columns are freed as they are used."""
    rejected = dict(t.rejected)
    # Task ids, models, jobs and exception types as one dictionary each (a reader asked for
    # ``coded`` already gave them so): every figure reads their codes, never the strings.
    table = conform_rollouts(t.rollouts, ", ".join(t.sources) or "<rollouts>", columns=MEASURED_COLUMNS, coded=True)
    table = _usable(table.unify_dictionaries(), rejected)
    if owned:  # the caller handed ``t`` over: ``table`` alone holds the rows now, so what it drops is freed
        t.rollouts = t.rollouts.schema.empty_table()
    rows = table.num_rows
    if rows == 0:
        where = ", ".join(t.sources) or "input"
        raise InputError(f"{where}: no rollouts left to measure (empty, all rejected, or filtered out)")
    passes = _passes(pass_threshold, seed, min_turn_rows, group_size)
    inputs = {"table": table, "t": t, "rejected": rejected}
    del table  # the plan holds the rows now: each value goes once its last pass is done
    from sandbox_fleet.telemetry.progress import steps

    with steps(progress and rows >= BAR_ROWS, "measuring", sum(p.label is not None for p in passes)) as advance:
        got = run_plan(passes, inputs, SUMMARY_VALUES, advance, workers=2 if rows <= TWO_LANES_ROWS else 1)
    del inputs
    return _summary(t, got, rows, rejected, pass_threshold, seed)


def _summary(t: Telemetry, got: dict, rows: int, rejected: dict[str, int], pass_threshold: float, seed: int) -> MeasureSummary:
    """The summary (its model) from the passes' values, with every warning."""
    tokens, conc = got["tokens"], got["peak"]
    first_start, last_finish = got["span"]
    warnings = list(t.warnings)
    added = {k: v - t.rejected.get(k, 0) for k, v in rejected.items() if v != t.rejected.get(k, 0)}
    if added:
        warnings.append("measure rejected rows without a usable interval: "
                        + ", ".join(f"{k}: {v}" for k, v in sorted(added.items())))
    warnings.extend(w for w in rejected_warnings(rejected) if w not in warnings)
    fractional = fractional_warning(got["outcomes"], pass_threshold)
    if fractional:
        warnings.append(fractional)
    for key, cut in (got["slice_cut"] or {}).items():
        what = key.removeprefix("by_") + "s"
        warnings.append(f"{cut['groups']:,} distinct {what}: {key} lists the {cut['top']} with the most rollouts; "
                        f"the other {cut['groups_merged']:,} ({cut['rows_merged']:,} rollouts) are one row, "
                        f"{cut['others']!r} (slice_cut.{key})")
    if tokens.get("zero_token_rows"):
        warnings.append(f"{tokens['zero_token_rows']:,} row(s) report 0 input and 0 output tokens (an agent that "
                        "does not count them): left out of the token figures as not measured")
    return summary_of(list(t.sources), rows, (first_start, last_finish), conc, pass_threshold, seed, {
        "hold_s": got["holds"],
        "phases": got["phases"],
        "steps": got["steps"],
        "tokens": tokens,
        "trajectories": got["trajectories"],
        "outcomes": got["outcomes"],
        "exceptions": got["exceptions"],
        "coverage": got["coverage"],
        "by_model": got["models"],
        "by_job": got["jobs"],
        "by_task": got["by_task"],
        "by_node": got["by_node"],
        "tasks": got["tasks"],
        "warnings": warnings,
        "limits": got["limits"],
        "rl_groups": got["rl_groups"],
        "slice_cut": got["slice_cut"],
    })


def summary_of(sources: list[str], rows: int, span_us: tuple[int, int], conc: dict, pass_threshold: float, seed: int,
               blocks: dict) -> MeasureSummary:
    """The summary from its head (sources, rows, first start and last finish, the concurrency block
    and its sums) and the other ``blocks``; in memory and out of core alike."""
    return MeasureSummary.build(**to_jsonable({
        "source": sources, "rows": rows, "first_started_at": _iso(span_us[0]), "last_finished_at": _iso(span_us[1]),
        "span_s": conc["span_s"], "sandbox_s": conc["sandbox_s"], "sandbox_hours": conc["sandbox_s"] / 3600,
        "pass_threshold": pass_threshold, "seed": seed, "concurrency": conc, **blocks}))


def measure_paths(paths, *, tasks=None, read: ReadOptions | None = None, models=None, since=None, until=None,
                  pass_threshold: float = 1.0, progress: bool = True, cache_dir: str | None = None,
                  min_turn_rows: int = MIN_TURN_ROWS, cap: int | None = None, group_size: int | None = None,
                  out_of_core: bool | None = None, memory_budget_gb: float | None = None,
                  temp_parent: str | None = None) -> MeasureSummary:
    """Read telemetry from ``paths`` (any supported format), filter, and measure it.

    Arguments mirror ``sandbox-fleet measure``; ``read``: the reader flags (``ReadOptions``, made by
    ``sandbox_fleet.telemetry.options.make_options``; default: sniff the format, UTC, ``reward``),
    see ``sandbox_fleet.telemetry.load_telemetry``. ``progress=False`` draws no bar anywhere
    (reading, task parsing, measuring). ``cap``: the fleet's concurrency cap, when known (a
    harness's worker count): reported as stated, checked by the touches rule (``--cap``).
    ``out_of_core``: True forces, False forbids, None (default) chooses the out-of-core path when the
    input is over the memory budget (``memory_budget_gb``, default ``limits.memory_limit_bytes``);
    its temp folder goes under ``temp_parent`` (see ``measure/out_of_core.py``).
    """
    from sandbox_fleet.limits import check_range
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry
    from sandbox_fleet.telemetry.stated import flag_cap

    check_range("`pass_threshold`", pass_threshold, minimum=-math.inf)
    check_range("`min_turn_rows`", min_turn_rows, minimum=1, whole=True)
    check_range("`group_size`", group_size, minimum=2, whole=True)
    check_range("`memory_budget_gb`", memory_budget_gb, minimum=0, above=True)
    from sandbox_fleet.measure import out_of_core as ooc

    if out_of_core or (out_of_core is None and ooc.needs_out_of_core(paths, memory_budget_gb)):
        return ooc.measure_out_of_core(paths, read=read, models=models, since=since, until=until,
                                       pass_threshold=pass_threshold, progress=progress, cap=cap,
                                       memory_budget_gb=memory_budget_gb, temp_parent=temp_parent)
    prefer_returning_pool()
    t = load_telemetry(paths, tasks=tasks, read=read, progress=progress,
                       cache_dir=cache_dir, coded=True)
    if models or since or until:
        t = filter_rollouts(t, models=models, since=since, until=until)
    flag_cap(t, cap)
    # Nothing else holds this table: dropping the columns measure never reads frees them
    # (~240 MB of id strings at 10M rows) before the measurements allocate.
    t.rollouts = t.rollouts.select([c for c in MEASURED_COLUMNS if c in t.rollouts.column_names])
    with session():
        return _measure(t, pass_threshold=pass_threshold, seed=0, progress=progress, owned=True,
                        min_turn_rows=min_turn_rows, group_size=group_size)

"""Readable terminal summary of a measure result (rounding happens here and only here).

The summary is read through its model (``MeasureSummary``); a block or figure that is null
(not measured) prints as "-" or is left out, never as zero. Tables are drawn in the terminal's one
style (``termtable``), shares as percentages by ``numfmt.percent`` (as the report prints them).
"""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape

from sandbox_fleet.measure.model import (
    ByNode,
    ByOutcome,
    ByTask,
    Concurrency,
    Coverage,
    Exceptions,
    Holds,
    MeasureSummary,
    Outcomes,
    RlGroups,
    Slice,
    Steps,
    Tokens,
    Trajectories,
)
from sandbox_fleet.measure.slice_sums import reported
from sandbox_fleet.numfmt import percent
from sandbox_fleet.termtable import grid, show
from sandbox_fleet.termtable import pairs as _kv
from sandbox_fleet.textout import number


def _num(v, digits: int = 1) -> str:
    if isinstance(v, bool):
        return "yes" if v else "no"
    # a small non-zero figure should not print as 0.0
    return number(v, "," if isinstance(v, int) else f",.{digits}f", small=".3g", below=0.5 * 10.0**-digits)


def _sec(v) -> str:
    """Seconds: one decimal below 1,000 s, whole seconds above (keeps tables narrow)."""
    return _num(v, 1 if v is not None and abs(v) < 1000 else 0)


def _pct(v) -> str:
    return "-" if v is None else percent(v)


def _ci(v) -> str:
    return "" if not v else f" [{percent(v[0])}, {percent(v[1])}]"


def _days(span_s) -> str:
    return number(None if span_s is None else span_s / 86400, ".2f")


def render_summary(s: MeasureSummary, console: Console) -> None:
    """Print the headline figures of a measure result as Rich tables."""
    console.print(_kv("Fleet", [
        ("rollouts", _num(s.rows)),
        ("span", f"{_num(s.span_s)} s ({_days(s.span_s)} d)"),
        ("sandbox time", f"{_num(s.sandbox_s, 0)} s ({_num(s.sandbox_hours, 0)} h)"),
        ("from", s.first_started_at),
        ("to", s.last_finished_at),
    ]))
    _concurrency(console, s.concurrency or Concurrency())
    _holds(console, s.hold_s or Holds())
    if s.phases:
        ph = grid("Phases", ("phase", "rows", "median s", "p99 s", "share of hold"))
        for name, p in s.phases.items():
            ph.add_row(name, _num(p.rows), _num(p.median_s), _num(p.p99_s), _pct(p.share_of_hold))
        show(console, ph)
    # An out-of-core run leaves these null on purpose: one "not measured" table says why, at the end.
    skip = set((s.coverage.not_measured or {}) if s.coverage else ())
    if "steps" not in skip:
        _steps(console, s)
    if "tokens" not in skip:
        _tokens(console, s.tokens or Tokens())
    if "outcomes" not in skip:
        _outcomes(console, s.outcomes or Outcomes())
    if "exceptions" not in skip:
        _exceptions(console, s.exceptions or Exceptions())
    _task_health(console, s.by_task)
    _node_health(console, s.by_node)
    if "by_model" not in skip:
        _groups(console, "By model", s.by_model or {})
    if s.by_job:
        _groups(console, "By job", s.by_job)
        _job_concurrency(console, s.by_job)
    cov = s.coverage or Coverage()
    if skip:
        console.print(_kv("Not measured (out of core: see coverage.not_measured)", sorted((cov.not_measured or {}).items())))
    console.print(_kv("Coverage (rows)", [
        ("missing reward", _num(cov.missing_reward)), ("missing tokens", _num(cov.missing_tokens)),
        ("missing turns", _num(cov.missing_turns)), ("missing trajectory", _num(cov.missing_trajectory)),
        *[(f"rejected: {k}", _num(v)) for k, v in (cov.rejected or {}).items()],
    ]))
    traj = s.trajectories or Trajectories()
    if traj.rows:
        console.print(_kv(f"Trajectory records ({_num(traj.rows)} rows)", [
            ("bytes median / mean / max", f"{_num(traj.bytes_median)} / {_num(traj.bytes_mean)} / {_num(traj.bytes_max)}"),
        ]))
    if s.tasks:
        tt = grid(f"Task requests ({_num(s.tasks.count)} tasks)", ("cpus", "memory MB", "storage MB", "gpus", "tasks"),
                  left=())
        for r in (s.tasks.requests or [])[:10]:
            tt.add_row(*(_num(v, 2) if isinstance(v, float) else _num(v)
                         for v in (r.cpus, r.memory_mb, r.storage_mb, r.gpus, r.tasks)))
        show(console, tt)
        if s.tasks.images:
            top = s.tasks.images[:3]
            rows: list[tuple[str, str | None]] = [(escape(im.image or "-"), _pct(im.share)) for im in top]
            if len(s.tasks.images) > 3:
                rows.append(("others", _pct(1 - sum(im.share or 0.0 for im in top))))
            console.print(_kv(f"Base images ({_num(s.tasks.distinct_images)} distinct over "
                              f"{_num(s.tasks.image_rows)} tasks)", rows))
    _provider_limits(console, s)
    _rl_groups(console, s.rl_groups)
    for w in s.warnings or []:
        console.print(f"[yellow]warning:[/yellow] {escape(w)}", highlight=False)


def _provider_limits(console: Console, s: MeasureSummary) -> None:
    """The limits the history shows (``limits``), each with its evidence; nothing when none is shown."""
    lim = s.limits
    if lim is None:
        return
    rows: list[tuple[str, str | None]] = []
    if lim.creation is not None and lim.creation.detected:
        rows.append(("creation rate", escape(lim.creation.basis or "")))
    if lim.starting is not None and lim.starting.detected:
        rows.append(("starting at once", escape(lim.starting.basis or "")))
    for of, spikes in (lim.spikes or {}).items():
        rows += [(f"{of} at {sp.value_s:,.0f} s", escape(sp.basis or "")) for sp in spikes]
    if rows:
        console.print(_kv("Limits the history shows", rows))


def _concurrency(console: Console, c: Concurrency) -> None:
    console.print(_kv("Concurrency", [
        ("mean (Little's law)", f"{_num(c.mean)} ({_num(c.mean_littles_law)})"),
        ("peak", _num(c.peak)),
        ("duty (mean/peak)", _pct(c.duty)),
        ("touches at peak", _num(c.touches)),
        ("time at peak", f"{_num(c.time_at_peak_s)} s ({_pct(c.time_at_peak_share)} of span)"),
        ("configured cap", _num(c.configured_cap)),
        ("cap detected", f"{_num(c.cap_detected)} ({c.cap_rule})"),
        *([("configured cap basis", c.configured_cap_basis)] if c.configured_cap_basis else []),
        *([("effective cap (below configured)", _num(c.effective_cap))] if c.effective_cap is not None else []),
        *([("cap or batch", c.cap_basis)] if c.peak_is_batch is not None else []),
        *([("effective cap", c.effective_cap_note)] if c.effective_cap_note else []),
    ]))


def _holds(console: Console, h: Holds) -> None:
    console.print(_kv(f"Hold time (s, {_num(h.rows)} rows)", [
        ("min / median / mean", f"{_sec(h.min)} / {_sec(h.median)} / {_sec(h.mean)}"),
        ("p90 / p99 / max", f"{_sec(h.p90)} / {_sec(h.p99)} / {_sec(h.max)}"),
        (f"mean, {_num(h.rows_with_tokens)} rows with tokens", _sec(h.mean_with_tokens)),
    ]))
    table = grid("Hold by slice (s; * = under 100 rows)", ("slice", "rows", "median", "p90", "p99", "max"))
    outcomes = h.by_outcome or ByOutcome()
    slices = [("outcome", name, getattr(outcomes, name)) for name in ByOutcome.model_fields]
    slices += [("model", name, g) for name, g in (h.by_model or {}).items()]
    for kind, name, g in slices:
        if g is None:  # an outcome not measured: no row rather than a row of dashes
            continue
        flag = " *" if g.small_sample else ""
        table.add_row(f"{kind}: {name}{flag}", _num(g.rows), *(_sec(v) for v in (g.median, g.p90, g.p99, g.max)))
    show(console, table)


def _tokens(console: Console, tok: Tokens) -> None:
    console.print(_kv(f"Tokens (over {_num(tok.rows)} rows that report them)", [
        ("prefill per sandbox-second", _num(tok.prefill_per_sandbox_s, 2)),
        ("decode per sandbox-second", _num(tok.decode_per_sandbox_s, 2)),
        ("prefill : decode", _num(tok.prefill_decode_ratio, 2)),
        ("cached fraction", _pct(tok.cached_fraction) if tok.cached_fraction is not None else "not reported"),
        ("turn increment c", f"{_num(tok.turn_tokens, 0)} tokens (R2 {_num(tok.r2_quadratic, 4)}, "
                             f"linear {_num(tok.r2_linear, 4)})"),
        ("turns median / p90", f"{_num(tok.turns_median, 0)} / {_num(tok.turns_p90, 0)}"),
        *([("rows reporting 0 tokens (left out)", _num(tok.zero_token_rows))] if tok.zero_token_rows else []),
    ]))


def _outcomes(console: Console, o: Outcomes) -> None:
    console.print(_kv("Outcomes", [
        ("exception rate", _pct(o.exception_rate) + _ci(o.exception_rate_ci95)),
        ("rewarded / passed", f"{_num(o.rewarded)} / {_num(o.passed)}"),
        ("pass rate (of rewarded)", _pct(o.pass_rate) + _ci(o.pass_rate_ci95)),
        ("clean rollouts passing", _pct(o.pass_rate_clean) + _ci(o.pass_rate_clean_ci95)),
        ("exception rollouts passing", _pct(o.pass_rate_exception) + _ci(o.pass_rate_exception_ci95)),
        ("sandbox-hours per pass", _num(o.sandbox_hours_per_pass, 2)),
        ("sandbox-hours on exceptions", _num(o.exception_sandbox_hours, 1)),
        *([("ended by a limit (no exception)", _limits(o))] if o.limits else []),
        *(_fractional(o) if o.reward_fractional_rows else []),
    ]))


def _fractional(o: Outcomes) -> list[tuple[str, str]]:
    q = o.reward_quantiles or {}
    return [
        ("fractional rewards", f"{_num(o.reward_fractional_rows)} of {_num(o.rewarded)} ({_num(o.reward_distinct)} distinct)"),
        ("reward min / p25 / median", " / ".join(_num(q.get(k), 3) for k in ("min", "p25", "median"))),
        ("reward p75 / p90 / max", " / ".join(_num(q.get(k), 3) for k in ("p75", "p90", "max"))),
        ("suggested --pass-threshold", f"{_num(o.suggested_pass_threshold, 4)} (natural break; pass rate "
                                       f"{_pct(o.suggested_pass_rate)})"),
    ]


def _rl_groups(console: Console, g: RlGroups | None) -> None:
    """Rollout groups as group-based RL counts them (``rl_groups``)."""
    if g is None or g.groups is None:
        return
    shares = (f"{_pct(g.informative_share)} informative; all fail {_pct(g.all_fail_share)}, all pass "
              f"{_pct(g.all_pass_share)}, too few valid {_pct(g.too_few_valid_share)}") if g.recorded else escape(g.note or "")
    console.print(_kv(f"Rollout groups ({_num(g.groups)} groups, sizes {_num(g.group_size_min)}..{_num(g.group_size_max)})", [
        ("grouped by", escape(g.grouped_by or "")),
        ("valid rollouts", f"{_num(g.valid)} of {_num(g.rows)} ({_num(g.exceptions)} exceptions, "
                           f"{_num(g.no_reward)} without a reward)"),
        ("measured", shares),
        (f"expected at G = {g.group_size}", f"{_pct(g.expected_informative_share)} informative "
                                             f"({escape(g.group_size_basis or '')})"),
        ("exceptions scored as failures", f"{_num(g.exceptions_scored_zero)} ({_pct(g.exceptions_scored_zero_share)} "
                                          f"of rewarded rows); every exception as 0 would flip "
                                          f"{_pct(g.flipped_share if g.recorded else g.expected_flipped_share)} of groups"),
        ("tasks almost never / always passing", f"{_num(g.tasks_almost_never)} / {_num(g.tasks_almost_always)} "
                                                f"of {_num(g.task_units)} (task, run) pairs"),
        ("prior", escape(g.prior_basis or "")),
    ]))


def _limits(o: Outcomes) -> str:
    kinds = ", ".join(f"{k} {_num(n)}" for k, n in (o.limits_by_type or {}).items())
    return (f"{_num(o.limits)} ({_pct(o.limit_rate)} of rows; {kinds}), {_pct(o.pass_rate_limit)} passing"
            f"{_ci(o.pass_rate_limit_ci95)}")


def _exceptions(console: Console, exc: Exceptions) -> None:
    if not exc.by_type:
        return
    hours = exc.sandbox_hours_by_type or {}
    table = grid("Exceptions by type", ("type", "rows", "sandbox-hours"))
    for name, n in list(exc.by_type.items())[:15]:
        table.add_row(name, _num(n), _num(hours.get(name)))
    show(console, table)


def _task_health(console: Console, bt: ByTask | None) -> None:
    """Per-task exception counts and the first few worst tasks (``by_task``)."""
    if not bt:
        return
    console.print(_kv(f"Exceptions per task ({_num(bt.tasks)} tasks)", [
        (f"judged ({bt.min_rows}+ rollouts)", _num(bt.tasks_judged)),
        (f"at {_pct(bt.broken_rate)}+ exceptions", _num(bt.tasks_broken)),
        ("every rollout raised", f"{_num(bt.tasks_all_exceptions)} "
                                 f"({_pct(bt.tasks_all_exceptions_share)} of exception hours)"),
        ("rollouts without a task id", _num(bt.rows_without_task)),
    ]))
    if bt.worst:
        wt = grid("Tasks with the most exceptions",
                  ("task", "rollouts", "exceptions", "rate", "most frequent type", "sandbox-hours"),
                  left=("task", "most frequent type"))
        for w in bt.worst[:10]:
            wt.add_row(w.task_id, _num(w.rows), _num(w.exceptions), _pct(w.exception_rate),
                       f"{w.top_exception_type or '-'} ({_num(w.top_exception_count)})",
                       _num(w.exception_sandbox_hours))
        show(console, wt)


def _node_health(console: Console, bn: ByNode | None, limit: int = 10) -> None:
    """The nodes with the highest exception rates (``by_node``); ``check`` judges them against chance."""
    if not bn or not bn.per_node:
        return
    table = grid(f"Exceptions per node ({_num(bn.nodes)} nodes)", ("node", "rollouts", "exceptions", "rate"))
    ranked = sorted(bn.per_node, key=lambda e: (-(e.exception_rate or 0.0), -(e.exceptions or 0), e.node or ""))
    for e in ranked[:limit]:
        table.add_row(e.node, _num(e.rows), _num(e.exceptions), _pct(e.exception_rate))
    notes = [f"highest {limit} rates of {len(ranked)}"] if len(ranked) > limit else []
    if bn.rows_without_node:
        notes.append(f"{_num(bn.rows_without_node)} rollout(s) on no node")
    table.caption = "; ".join(notes) or None
    show(console, table)


def _groups(console: Console, title: str, groups: dict[str, Slice], limit: int = 20) -> None:
    # then a column for each count or sum ``slice_sums`` reports with a title
    extra = {key: s.title for key, s in reported().items() if s.title}
    table = grid(title, ("name", "rows", "exc", "hold p50", "hold p99", "pass", "decode/s", *extra.values()))
    for name, g in list(groups.items())[:limit]:
        table.add_row(name, _num(g.rows), _pct(g.exception_rate), _sec(g.hold_median_s),
                      _sec(g.hold_p99_s), _pct(g.pass_rate), _num(g.decode_per_sandbox_s, 2),
                      *(_num(getattr(g, key)) for key in extra))
    if len(groups) > limit:
        table.caption = f"first {limit} of {len(groups)}"
    show(console, table)


def _job_concurrency(console: Console, jobs: dict[str, Slice], limit: int = 20) -> None:
    table = grid("Concurrency by job", ("job", "mean", "peak", "duty", "touches", "at peak s", "cap"))
    for name, g in list(jobs.items())[:limit]:
        cap = g.configured_cap
        table.add_row(name, _num(g.mean), _num(g.peak), _pct(g.duty), _num(g.touches),
                      _num(g.time_at_peak_s),
                      ("hit" if g.cap_detected else "no") + (f" ({cap})" if cap is not None else ""))
    if len(jobs) > limit:
        table.caption = f"first {limit} of {len(jobs)}"
    show(console, table)


def _steps(console: Console, s: MeasureSummary) -> None:
    st = s.steps or Steps()
    if st.mixed:
        by = st.runs_by or "run"
        runs = (s.by_job if by == "job" else s.by_model) or {}
        table = grid(f"Synchronous steps per run (by {by}, times in s; the runs interleave)",
                     (by, "steps", "batch", "burst", "period", "makespan", "tail"))
        for name, g in runs.items():
            r = g.steps or Steps()
            if r.detected:
                table.add_row(name, _num(r.steps), _num(r.batch_size, 0), _num(r.burst_size, 0),
                              _sec(r.step_period_s), _sec(r.step_makespan_s), _sec(r.straggler_tail_s))
            else:
                table.add_row(name, "-", "-", "-", "-", "-", "-")
        show(console, table)
    elif st.detected:
        console.print(_kv("Synchronous steps", [
            ("steps", _num(st.steps)), ("batch size (median)", _num(st.batch_size, 0)),
            ("opening burst (median)", _num(st.burst_size, 0)),
            ("step period", f"{_num(st.step_period_s)} s"),
            ("straggler tail", f"{_num(st.straggler_tail_s)} s"),
        ]))
        if st.note:
            console.print(st.note, highlight=False)
    else:
        console.print(f"steps: no burst structure ({st.reason})", highlight=False)
        if st.note:
            console.print(st.note, highlight=False)

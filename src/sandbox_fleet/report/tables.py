"""HTML tables for the report: checks, headline figures, slices, plan and simulation summaries.

Every value passes through :func:`fmt`, which escapes text and shows a missing value as
"not measured" so a gap in the telemetry stays visible.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, TypeVar

from pydantic import BaseModel

from sandbox_fleet.measure.model import (
    ByOutcome,
    Concurrency,
    Holds,
    MeasureSummary,
    Outcomes,
    Slice,
    Steps,
    TaskHealth,
    Tokens,
)
from sandbox_fleet.numfmt import figure
from sandbox_fleet.report.check_kinds import CHECK_KINDS
from sandbox_fleet.report.checks import CheckResult
from sandbox_fleet.report.fields import as_num, turn_keyed
from sandbox_fleet.textout import html_escape as escape
from sandbox_fleet.textout import number

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary
    from sandbox_fleet.simulate.model import SimulateSummary

MISSING = '<span class="na">not measured</span>'


def fmt(value: Any, kind: str = "num") -> str:
    """Format one table cell; ``kind``: num, int, f1..f4, pct, usd, s, h (seconds as hours), bool, text or
    times_by_turns."""
    if value is None:
        return MISSING
    if isinstance(value, BaseModel):  # a block shown whole (a node's stranded resources): its figures in order
        value = value.model_dump(mode="json")
    if kind == "bool" or isinstance(value, bool):
        return "yes" if value is True else "no" if value is False else escape(str(value))
    if kind == "text" or isinstance(value, str):
        return escape(str(value))
    if kind == "times_by_turns" and isinstance(value, dict):
        parts = [f"{n} turns {_plain(v)}x" for n, v in turn_keyed(value)]
        return escape(", ".join(parts)) or MISSING
    if isinstance(value, dict):
        return escape(", ".join(f"{k} {_plain(v)}" for k, v in value.items())) or MISSING
    if isinstance(value, list):
        return escape(", ".join(_plain(v) for v in value)) or MISSING
    x = as_num(value)
    if x is None:
        return MISSING
    return escape(figure(x, kind))  # as the terminal prints it (numfmt)


def _plain(v: Any) -> str:
    x = as_num(v)
    if x is None:
        return "n/a" if v is None else str(v)
    return number(x, ",.4g", whole=",.0f")  # below 1, ,.4g prints a whole number (0) as ,.0f would


def kv_table(rows: Iterable[tuple[str, Any, str]], cls: str = "kv", figures: dict[str, str] | None = None) -> str:
    """Label/value table; rows are (label, value, kind). ``figures``: label -> the shared figure
    (``report.figures``) a row shows, marked so the sections can be checked against the decision block."""
    from sandbox_fleet.report.figures import attrs

    tags = figures or {}
    body = "".join(f"<tr><th>{escape(label)}</th><td{attrs(tags[label], value) if label in tags else ''}>"
                   f"{fmt(value, kind)}</td></tr>" for label, value, kind in rows)
    return f'<table class="{cls}">{body}</table>'


def grid_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of already formatted cells."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    labels = [escape(h, quote=True) for h in header]
    # each cell names its column, so a narrow page folds a row into "column: value" lines (html.py's CSS)
    body = "".join("<tr>" + "".join(f'<td data-label="{labels[i] if i < len(labels) else ""}">{c}</td>'
                                    for i, c in enumerate(row)) + "</tr>" for row in rows)
    return f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


#: Gates whose value is a figure the decision block's cards show (``report.figures``).
CHECK_FIGURES = {"exception_rate": "exception_rate", "duty_cycle": "duty"}


def checks_table(results: list[CheckResult]) -> str:
    from sandbox_fleet.report.figures import attrs

    def cell(x: float | None, name: str) -> str:
        return "" if x is None else fmt(x, CHECK_KINDS.get(name, "num"))

    def value(r: CheckResult) -> str:  # a gate reading a shared figure is marked as the figure
        figure = CHECK_FIGURES.get(r.name)
        return f"<span{attrs(figure, r.value)}>{cell(r.value, r.name)}</span>" if figure and r.value is not None \
            else cell(r.value, r.name)

    rows = [[f'<span class="badge {r.status}">{r.status}</span>', escape(r.name),
             value(r), cell(r.threshold, r.name), escape(r.message)] for r in results]
    return grid_table(["status", "check", "value", "threshold", "message"], rows)


_M = TypeVar("_M")
#: A table line: its label, how to read its value off the model ``_M``, and how to format it (see ``fmt``).
Row = tuple[str, Callable[[_M], Any], str]


def _conc(m: MeasureSummary) -> Concurrency:
    return m.concurrency or Concurrency()


def _hold(m: MeasureSummary) -> Holds:
    return m.hold_s or Holds()


def _tok(m: MeasureSummary) -> Tokens:
    return m.tokens or Tokens()


def _out(m: MeasureSummary) -> Outcomes:
    return m.outcomes or Outcomes()


def _per(value: float | None, unit: float) -> float | None:
    x = as_num(value)
    return x / unit if x is not None else None


def _r2_pair(t: Tokens) -> str | None:
    q, lin = as_num(t.r2_quadratic), as_num(t.r2_linear)
    return None if q is None and lin is None else f"{_r2(q)} / {_r2(lin)}"


HEADLINE: tuple[Row[MeasureSummary], ...] = (
    ("rollouts", lambda m: m.rows, "int"),
    ("span (days)", lambda m: _per(m.span_s, 86400), "f2"),
    ("sandbox-hours", lambda m: _per(m.sandbox_s, 3600), "int"),
    ("mean concurrency", lambda m: _conc(m).mean, "f1"),
    ("mean concurrency (Little's law)", lambda m: _conc(m).mean_littles_law, "f1"),
    ("peak concurrency", lambda m: _conc(m).peak, "int"),
    ("duty (mean / peak)", lambda m: _conc(m).duty, "pct"),
    ("separate stretches at peak", lambda m: _conc(m).touches, "int"),
    ("time at peak", lambda m: _conc(m).time_at_peak_s, "s"),
    ("cap detected", lambda m: _conc(m).cap_detected, "bool"),
    ("configured cap", lambda m: _conc(m).configured_cap, "int"),
    ("hold min", lambda m: _hold(m).min, "s"),
    ("hold median", lambda m: _hold(m).median, "s"),
    ("hold mean (all rows)", lambda m: _hold(m).mean, "s"),
    ("hold mean (rows with tokens)", lambda m: _tok(m).hold_mean_s, "s"),
    ("hold p90", lambda m: _hold(m).p90, "s"),
    ("hold p99", lambda m: _hold(m).p99, "s"),
    ("hold max", lambda m: _hold(m).max, "s"),
    ("rows with token counts", lambda m: _tok(m).rows, "int"),
    ("prefill tokens per sandbox-second", lambda m: _tok(m).prefill_per_sandbox_s, "f1"),
    ("decode tokens per sandbox-second", lambda m: _tok(m).decode_per_sandbox_s, "f2"),
    ("prefill : decode", lambda m: _tok(m).prefill_decode_ratio, "f1"),
    ("cached fraction of input", lambda m: _tok(m).cached_fraction, "pct"),
    ("per-turn context increment (tokens)", lambda m: _tok(m).turn_tokens, "f1"),
    ("R² quadratic / linear", lambda m: _r2_pair(_tok(m)), "text"),
    ("exception rate", lambda m: _out(m).exception_rate, "pct"),
    ("rewarded rows", lambda m: _out(m).rewarded, "int"),
    ("passed", lambda m: _out(m).passed, "int"),
    ("pass rate (of rewarded)", lambda m: _out(m).pass_rate, "pct"),
    ("clean rollouts passing", lambda m: _out(m).pass_rate_clean, "pct"),
    ("exception rollouts passing", lambda m: _out(m).pass_rate_exception, "pct"),
    ("sandbox-hours per passing rollout", lambda m: _out(m).sandbox_hours_per_pass, "f2"),
    ("sandbox-hours on exception rows", lambda m: _out(m).exception_sandbox_hours, "int"),
    ("tasks", lambda m: m.tasks.count if m.tasks is not None else None, "int"),
)


#: Headline rows that show a figure of the decision block's cards.
HEADLINE_FIGURES = {"peak concurrency": "peak", "duty (mean / peak)": "duty", "exception rate": "exception_rate"}


def headline_table(m: MeasureSummary) -> str:
    return kv_table(((label, read(m), kind) for label, read, kind in HEADLINE), figures=HEADLINE_FIGURES)


def _r2(x: float | None) -> str:
    return number(x, ".4f", none="n/a")


def requests_table(m: MeasureSummary) -> str | None:
    reqs = m.tasks.requests if m.tasks is not None else None
    if not reqs:
        return None
    rows = [[fmt(r.cpus), fmt(r.memory_mb), fmt(r.storage_mb), fmt(r.gpus), fmt(r.tasks)] for r in reqs]
    return grid_table(["cpus", "memory (MB)", "storage (MB)", "gpus", "tasks"], rows)


def _either(value: Any, fallback: Any) -> Any:
    return value if value is not None else fallback


def _sc(s: Slice) -> Concurrency:
    """A job slice's own concurrency block (empty for a model slice)."""
    return s.concurrency or Concurrency()


#: A slice column reads the slice's figure, else the same figure of its nested ``concurrency``.
MODEL_COLS: tuple[Row[Slice], ...] = (
    ("rows", lambda s: _either(s.rows, _sc(s).rows), "int"),
    ("exception rate", lambda s: s.exception_rate, "pct"),
    ("hold median", lambda s: s.hold_median_s, "s"),
    ("hold p99", lambda s: s.hold_p99_s, "s"),
    ("pass rate", lambda s: s.pass_rate, "pct"),
    ("prefill / sandbox-s", lambda s: s.prefill_per_sandbox_s, "f1"),
    ("decode / sandbox-s", lambda s: s.decode_per_sandbox_s, "f2"),
)

JOB_COLS: tuple[Row[Slice], ...] = (
    ("rows", lambda s: _either(s.rows, _sc(s).rows), "int"),
    ("exception rate", lambda s: s.exception_rate, "pct"),
    ("hold median", lambda s: s.hold_median_s, "s"),
    ("pass rate", lambda s: s.pass_rate, "pct"),
    ("mean concurrency", lambda s: _either(s.mean, _sc(s).mean), "f1"),
    ("peak", lambda s: _either(s.peak, _sc(s).peak), "int"),
    ("duty", lambda s: _either(s.duty, _sc(s).duty), "pct"),
    ("touches", lambda s: _either(s.touches, _sc(s).touches), "int"),
    ("time at peak", lambda s: _either(s.time_at_peak_s, _sc(s).time_at_peak_s), "s"),
    ("cap detected", lambda s: _either(s.cap_detected, _sc(s).cap_detected), "bool"),
    ("configured cap", lambda s: _either(s.configured_cap, _sc(s).configured_cap), "int"),
)


def slice_table(slices: dict[str, Slice] | None, cols: tuple[Row[Slice], ...]) -> str | None:
    """One row per slice (by name); a column shows only if some slice carries it."""
    if not slices:
        return None
    names = sorted(slices, key=str)
    used = [c for c in cols if any(c[1](slices[n]) is not None for n in names)]
    rows = [[escape(str(n))] + [fmt(read(slices[n]), kind) for _, read, kind in used] for n in names]
    return grid_table(["slice"] + [label for label, _, _ in used], rows)


#: Turn counts the source document quotes; the report's short context table shows these.
CONTEXT_KEY_TURNS = frozenset({1, 2, 5, 11, 20, 21, 50, 100})
CONTEXT_ROWS_SHOWN = 12


def context_table(m: MeasureSummary) -> str | None:
    tok = _tok(m)
    medians = dict(turn_keyed(tok.median_input_by_turns))
    errors = dict(turn_keyed(tok.model_error_by_turns))
    c = as_num(tok.turn_tokens)
    turns = sorted(set(medians) | set(errors))
    if not turns:
        return None
    header = ["turns", "median input tokens", "model c·n(n+1)/2", "model error"]

    def row(n: int) -> list[str]:
        model = c * n * (n + 1) / 2 if c is not None else None
        return [fmt(n, "int"), fmt(medians.get(n), "int"), fmt(model, "int"), fmt(errors.get(n), "pct")]

    if len(turns) <= CONTEXT_ROWS_SHOWN:
        return grid_table(header, [row(n) for n in turns])
    # A long tail of turn counts would bury the page: show the document's reference points
    # (and the largest count), with every row one click away.
    picked = [n for n in turns if n in CONTEXT_KEY_TURNS or n == turns[-1]]
    full = grid_table(header, [row(n) for n in turns])
    return (grid_table(header, [row(n) for n in picked])
            + f"<details><summary>all {len(turns)} turn counts</summary>{full}</details>")


TASK_COLS: tuple[Row[TaskHealth], ...] = (
    ("rollouts", lambda w: w.rows, "int"),
    ("exceptions", lambda w: w.exceptions, "int"),
    ("exception rate", lambda w: w.exception_rate, "pct"),
    ("most frequent exception", lambda w: w.top_exception_type, "text"),
    ("its count", lambda w: w.top_exception_count, "int"),
    ("sandbox-hours on exceptions", lambda w: w.exception_sandbox_hours, "f2"),
)


def task_health_table(m: MeasureSummary) -> str | None:
    """Per-task exception health: the counts, then the worst tasks (``by_task.worst``)."""
    bt = m.by_task
    if bt is None:
        return None
    at, least = bt.broken_rate, bt.min_rows
    looks = (f"tasks at {fmt(at, 'pct')}+ exceptions (of those with {fmt(least, 'int')}+ rollouts)"
             if as_num(at) is not None and as_num(least) is not None else "tasks that look broken")
    summary = kv_table([
        ("tasks with rollouts", bt.tasks, "int"),
        ("rollouts without a task id", bt.rows_without_task, "int"),
        ("tasks judged", bt.tasks_judged, "int"),
        (looks, bt.tasks_broken, "int"),
        ("highest task exception rate", bt.max_exception_rate, "pct"),
        ("tasks where every rollout raised", bt.tasks_all_exceptions, "int"),
        ("their share of exception sandbox-hours", bt.tasks_all_exceptions_share, "pct"),
    ])
    worst: list[TaskHealth] = bt.worst or []
    if not worst:
        return summary + '<p class="na">no task looks broken</p>'
    rows = [[escape(str(w.task_id))] + [fmt(read(w), kind) for _, read, kind in TASK_COLS] for w in worst]
    return summary + grid_table(["task"] + [label for label, _, _ in TASK_COLS], rows)


def rejected_table(m: MeasureSummary) -> str | None:
    rejected = m.coverage.rejected if m.coverage is not None else None
    if not rejected:
        return None
    return grid_table(["reason", "rows rejected"], [[escape(str(k)), fmt(v, "int")] for k, v in sorted(rejected.items())])


def _of(block: Any, read: Callable[[Any], Any]) -> Any:
    """A figure of an optional block: None when the block itself is absent."""
    return read(block) if block is not None else None


def _sized(value: Any) -> Any:
    """A plan figure, or "not sized" (the plan had no input to size it from; nothing was measured missing)."""
    return "not sized" if value is None else value


def _stranded(p: PlanSummary) -> str | None:
    """Stranded resources in the CLI's units: cores and GiB."""
    sd = p.nodes.stranded
    if sd is None:
        return None
    parts = [(f"{sd.cpu:,.1f} cpu" if sd.cpu is not None else None),
             (f"{sd.memory_mb / 1024:,.0f} GiB memory" if sd.memory_mb is not None else None),
             (f"{sd.disk_mb / 1024:,.0f} GiB disk" if sd.disk_mb is not None else None)]
    return ", ".join(x for x in parts if x) or None


def _hours_per_group_and_pass(g: Any) -> str | None:
    if g.sandbox_hours_per_informative_group is None:
        return None
    return f"{number(g.sandbox_hours_per_informative_group, ',.2f')} / {number(g.sandbox_hours_per_pass, ',.2f', none='n/a')}"


def _censored_line(line: str) -> Callable[[PlanSummary], str | None]:
    """A censored plan's line (``cap`` or ``demand``) as the order prices it: its nodes, the mixed split
    (R reserved + up to B burst, ``plan/censored_order.py``) when the order is mixed, and its $/h."""
    def text(p: PlanSummary) -> str | None:
        c = p.target.censored
        if c is None:
            return None
        nodes, usd = getattr(c, f"nodes_at_{line}"), getattr(c, f"usd_per_h_at_{line}")
        r, b = getattr(c, f"reserved_at_{line}"), getattr(c, f"burst_at_{line}")
        if nodes is None and usd is None:
            return None
        split = f" ({r:,} reserved + up to {b:,} burst)" if r is not None and b is not None else ""
        cost = f", ${usd:,.2f}/h" if usd is not None else ""
        return f"{nodes:,} nodes{split}{cost}" if nodes is not None else f"${usd:,.2f}/h"
    return text


def _release(g: Any) -> str | None:
    """The signal block's release: N x G rollouts at once against B x G, with the informative share."""
    if g.release_rollouts is None:
        return None
    return (f"{g.release_rollouts:,} rollouts ({g.groups_released:,} groups of {g.group_size}, "
            f"{g.oversampling_factor:.2f}x) for {g.groups_per_batch:,} informative groups at "
            f"{g.confidence:.0%} confidence; {g.informative_share:.1%} of groups informative; "
            f"{g.nodes_release:,} nodes vs {g.nodes_without:,} without over-sampling")


PLAN_ROWS: tuple[Row[PlanSummary], ...] = (
    ("target concurrency", lambda p: p.target.concurrency, "int"),
    ("target from", lambda p: p.target.source, "text"),
    ("binding cap (the measured peak)", lambda p: _of(p.target.censored, lambda c: c.cap), "int"),
    ("demand behind the cap", lambda p: _of(p.target.censored, lambda c: c.demand), "int"),
    ("mean step at the cap (s)", lambda p: _of(p.target.censored, lambda c: c.step_s_at_cap), "int"),
    ("mean step at the demand (s)", lambda p: _of(p.target.censored, lambda c: c.step_s_at_demand), "int"),
    ("bought at the cap", _censored_line("cap"), "text"),
    ("bought at the demand", _censored_line("demand"), "text"),
    ("node type", lambda p: p.nodes.type, "text"),
    ("nodes", lambda p: p.nodes.count, "int"),
    ("binding resource", lambda p: p.nodes.binding, "text"),
    ("slots per node", lambda p: p.nodes.slots_per_node, "num"),
    ("lower bound (nodes)", lambda p: p.nodes.lower_bound, "int"),
    ("stranded across the fleet", _stranded, "text"),
    ("scratch storage (GiB)", lambda p: _of(p.storage, lambda s: s.scratch_gb), "int"),
    ("storage per node (GiB)", lambda p: _of(p.storage, lambda s: s.per_node_gb), "f1"),
    ("prefill tokens/s", lambda p: _of(p.inference, lambda i: i.prefill_tok_s), "int"),
    ("prefill tokens/s with caching", lambda p: _of(p.inference, lambda i: i.prefill_tok_s_cached), "int"),
    ("decode tokens/s", lambda p: _of(p.inference, lambda i: i.decode_tok_s), "int"),
    ("inference GPUs", lambda p: _sized(_of(p.inference, lambda i: i.gpus)), "num"),
    ("inference GPUs with caching", lambda p: _sized(_of(p.inference, lambda i: i.gpus_cached)), "num"),
    ("inference binding side", lambda p: _sized(_of(p.inference, lambda i: i.binding)), "text"),
    ("caching saving on measured turn mix", lambda p: _of(p.caching, lambda c: c.saving_measured_mix), "f2"),
    ("fleet $/h reserved", lambda p: _of(p.cost, lambda c: c.reserved_per_h), "usd"),
    ("fleet $/h on-demand", lambda p: _of(p.cost, lambda c: c.on_demand_per_h), "usd"),
    ("fleet $/h spot", lambda p: _of(p.cost, lambda c: c.spot_per_h), "usd"),
    ("$ per passing trajectory", lambda p: _of(p.cost, lambda c: c.per_passing_trajectory), "usd"),
    ("$ per informative group (group-based RL)", lambda p: _of(p.signal, lambda g: g.usd_per_informative_group), "usd"),
    ("sandbox-hours per informative group / per pass", lambda p: _of(p.signal, _hours_per_group_and_pass), "text"),
    ("over-sampled release (dynamic sampling)", lambda p: _of(p.signal, _release), "text"),
    ("$/h lost to exceptions", lambda p: _of(p.cost, lambda c: c.exception_waste_per_h), "usd"),
)


def plan_table(plan: PlanSummary) -> str:
    return kv_table(((label, read(plan), kind) for label, read, kind in PLAN_ROWS),
                    figures={"target concurrency": "target", "nodes": "nodes"})


_TIER_WORDS = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot"}


def alternatives_table(plan: PlanSummary) -> str | None:
    """The runners-up at the plan's tier (each carries only that tier's price)."""
    alts = plan.nodes.alternatives or []
    if not alts:
        return None
    tier = plan.cost.tier if plan.cost is not None else None
    label = f"$/h {_TIER_WORDS.get(tier or '', 'at the tier')}"

    def price(a: Any) -> str:
        v = {"reserved": a.reserved_per_h, "on_demand": a.on_demand_per_h, "spot": a.spot_per_h}.get(tier or "")
        return '<span class="na">not priced</span>' if v is None else f"${v:,.2f}"

    rows = [[escape(a.type), fmt(a.count, "int"), fmt(a.binding, "text"), fmt(a.per_node, "int"), price(a)] for a in alts]
    return "<h3>Runners-up</h3>" + grid_table(["node type", "nodes", "binding", "sandboxes per node", label], rows)


SIM_ROWS: tuple[Row[SimulateSummary], ...] = (
    ("rollouts", lambda s: s.rollouts, "int"),
    ("completed", lambda s: s.completed, "int"),
    ("dropped", lambda s: s.dropped, "int"),
    ("simulated time", lambda s: s.sim_time_s, "h"),
    ("mean concurrency", lambda s: _of(s.concurrency, lambda c: c.mean), "f1"),
    ("peak concurrency", lambda s: _of(s.concurrency, lambda c: c.peak), "int"),
    ("time at peak", lambda s: _of(s.concurrency, lambda c: c.time_at_peak_s), "s"),
    ("utilisation", lambda s: s.utilisation, "pct"),
    ("queue wait mean", lambda s: _of(s.queue_wait_s, lambda q: q.mean), "s"),
    ("queue wait p50", lambda s: _of(s.queue_wait_s, lambda q: q.p50), "s"),
    ("queue wait p99", lambda s: _of(s.queue_wait_s, lambda q: q.p99), "s"),
    ("hold median", lambda s: _of(s.hold_s, lambda h: h.median), "s"),
    ("hold p99", lambda s: _of(s.hold_s, lambda h: h.p99), "s"),
    ("step mean", lambda s: _of(s.step_s, lambda q: q.mean), "s"),
    ("step p99", lambda s: _of(s.step_s, lambda q: q.p99), "s"),
    ("trainer idle", lambda s: s.trainer_idle_fraction, "pct"),
    ("exception rate", lambda s: _of(s.outcomes, lambda o: o.exception_rate), "pct"),
    ("sandbox-hours", lambda s: s.sandbox_hours, "int"),
    ("sandbox-hours lost to exceptions", lambda s: _of(s.lost_sandbox_hours, lambda x: x.exception), "int"),
    ("sandbox-hours lost to preemption", lambda s: _of(s.lost_sandbox_hours, lambda x: x.preemption), "int"),
    ("events", lambda s: s.events, "int"),
    ("events per second", lambda s: s.events_per_s, "int"),
)


def simulate_table(sim: SimulateSummary) -> str:
    return kv_table((label, read(sim), kind) for label, read, kind in SIM_ROWS)


def phases_table(m: MeasureSummary) -> str | None:
    """Harbor's phases: where the hold goes (build, agent setup, agent, verifier), keyed by phase name."""
    rows = [[escape(str(name)), fmt(p.rows, "int"), fmt(p.median_s, "s"), fmt(p.p99_s, "s"), fmt(p.share_of_hold, "pct")]
            for name, p in (m.phases or {}).items()]
    return grid_table(["phase", "rows", "median", "p99", "share of hold"], rows) if rows else None


def hold_by_outcome_table(m: MeasureSummary) -> str | None:
    bo = _hold(m).by_outcome or ByOutcome()
    groups = (("exception", bo.exception), ("limit", bo.limit), ("passed", bo.passed), ("failed", bo.failed),
              ("no_reward", bo.no_reward))
    rows = [[escape(name), fmt(g.rows, "int"), fmt(g.median, "s"), fmt(g.mean, "s"), fmt(g.p99, "s")]
            for name, g in groups if g is not None]
    return grid_table(["outcome", "rows", "median", "mean", "p99"], rows) if rows else None


STEP_ROWS: tuple[Row[Steps], ...] = (
    ("steps", lambda s: s.steps, "int"),
    ("batch size (median)", lambda s: s.batch_size, "int"),
    ("step period", lambda s: s.step_period_s, "s"),
    ("step makespan", lambda s: s.step_makespan_s, "s"),
    ("straggler tail", lambda s: s.straggler_tail_s, "s"),
)


def steps_table(m: MeasureSummary) -> str | None:
    """Whether batched steps were detected (the decision block's words), the fleet-wide figures, and
    with interleaved runs, each run's own steps (what ``measure`` prints per run)."""
    from sandbox_fleet.report.figures import step_runs, steps_verdict

    steps = m.steps
    if steps is None:
        return None
    runs = step_runs(m)
    rows = [("batched steps detected", steps_verdict(m), "text")]
    if not runs or steps.detected:
        rows += [(label, read(steps), kind) for label, read, kind in STEP_ROWS]
    if steps.reason is not None and not steps.detected:
        rows.append(("over all starts together" if runs else "why not", steps.reason, "text"))
    table = kv_table(rows, figures={"batched steps detected": "steps"})
    if not runs:
        return table
    per_run = [[escape(run), *(fmt(read(st), kind) for _, read, kind in STEP_ROWS)] for run, st in runs]
    return table + f"<h3>Steps of each run (by {escape(steps.runs_by or 'run')})</h3>" + grid_table(
        ["run", *(label for label, _, _ in STEP_ROWS)], per_run)


def warnings_list(m: MeasureSummary) -> str | None:
    warnings = m.warnings
    if not warnings:
        return None
    return "<ul>" + "".join(f"<li>{escape(str(w))}</li>" for w in warnings) + "</ul>"

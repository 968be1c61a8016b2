"""HTML tables for the report: checks, headline figures, slices, plan and simulation summaries.

Every value passes through :func:`fmt`, which escapes text and shows a missing value as
"not measured" so a gap in the telemetry stays visible.
"""

from __future__ import annotations

from html import escape
from typing import Any, Iterable

from sandbox_fleet.report.checks import CheckResult
from sandbox_fleet.report.fields import as_num, get, mapping, turn_keyed

MISSING = '<span class="na">not measured</span>'


def fmt(value: Any, kind: str = "num") -> str:
    """Format one table cell; ``kind``: num, int, f1..f4, pct, s, bool, text or times_by_turns."""
    if value is None:
        return MISSING
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
    if kind == "pct":
        return f"{x:.1%}" if abs(x) >= 0.001 or x == 0 else f"{x:.3%}"
    if kind == "int":
        return f"{x:,.0f}"
    if kind == "s":
        return f"{x:,.1f} s"
    if kind in ("f1", "f2", "f3", "f4"):
        return f"{x:,.{kind[1]}f}"
    return f"{x:,.0f}" if float(x).is_integer() and abs(x) >= 1 else f"{x:,.4g}"


def _plain(v: Any) -> str:
    x = as_num(v)
    if x is None:
        return "n/a" if v is None else str(v)
    return f"{x:,.0f}" if x.is_integer() else f"{x:,.4g}"


def kv_table(rows: Iterable[tuple[str, Any, str]], cls: str = "kv") -> str:
    """Label/value table; rows are (label, value, kind)."""
    body = "".join(f"<tr><th>{escape(label)}</th><td>{fmt(value, kind)}</td></tr>" for label, value, kind in rows)
    return f'<table class="{cls}">{body}</table>'


def grid_table(header: list[str], rows: list[list[str]]) -> str:
    """A table of already formatted cells."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="grid"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


#: How each check's value and threshold read best; checks not listed use plain numbers.
CHECK_KINDS = {
    "small_sample": "int", "prefix_cache_off": "pct", "exception_rate": "pct", "exception_rate_by_model": "pct",
    "exception_rate_by_job": "pct", "exception_rate_by_task": "pct", "missing_reward": "pct", "missing_tokens": "pct", "missing_turns": "pct",
    "missing_trajectory": "pct", "rejected_rows": "pct", "cap_binding": "pct", "cap_recorded": "int",
    "cap_below_configured": "pct",
    "duty_cycle": "pct", "hold_tail": "f1", "sandbox_hours_per_pass": "f2", "build_share": "pct",
    "plan_covers_peak": "int",
}


def checks_table(results: list[CheckResult]) -> str:
    def cell(x: float | None, name: str) -> str:
        return "" if x is None else fmt(x, CHECK_KINDS.get(name, "num"))

    rows = [[f'<span class="badge {r.status}">{r.status}</span>', escape(r.name),
             cell(r.value, r.name), cell(r.threshold, r.name), escape(r.message)] for r in results]
    return grid_table(["status", "check", "value", "threshold", "message"], rows)


HEADLINE: tuple[tuple[str, str, str], ...] = (
    ("rollouts", "rows", "int"),
    ("span (days)", "span_days", "f2"),
    ("sandbox-hours", "sandbox_hours", "int"),
    ("mean concurrency", "concurrency.mean", "f1"),
    ("mean concurrency (Little's law)", "concurrency.mean_littles_law", "f1"),
    ("peak concurrency", "concurrency.peak", "int"),
    ("duty (mean / peak)", "concurrency.duty", "pct"),
    ("separate stretches at peak", "concurrency.touches", "int"),
    ("time at peak", "concurrency.time_at_peak_s", "s"),
    ("cap detected", "concurrency.cap_detected", "bool"),
    ("configured cap", "concurrency.configured_cap", "int"),
    ("hold min", "hold_s.min", "s"),
    ("hold median", "hold_s.median", "s"),
    ("hold mean (all rows)", "hold_s.mean", "s"),
    ("hold mean (rows with tokens)", "tokens.hold_mean_s", "s"),
    ("hold p90", "hold_s.p90", "s"),
    ("hold p99", "hold_s.p99", "s"),
    ("hold max", "hold_s.max", "s"),
    ("rows with token counts", "tokens.rows", "int"),
    ("prefill tokens per sandbox-second", "tokens.prefill_per_sandbox_s", "f1"),
    ("decode tokens per sandbox-second", "tokens.decode_per_sandbox_s", "f2"),
    ("prefill : decode", "tokens.prefill_decode_ratio", "f1"),
    ("cached fraction of input", "tokens.cached_fraction", "pct"),
    ("per-turn context increment (tokens)", "tokens.turn_tokens", "f1"),
    ("R² quadratic / linear", "r2", "text"),
    ("exception rate", "outcomes.exception_rate", "pct"),
    ("rewarded rows", "outcomes.rewarded", "int"),
    ("passed", "outcomes.passed", "int"),
    ("pass rate (of rewarded)", "outcomes.pass_rate", "pct"),
    ("clean rollouts passing", "outcomes.pass_rate_clean", "pct"),
    ("exception rollouts passing", "outcomes.pass_rate_exception", "pct"),
    ("sandbox-hours per passing rollout", "outcomes.sandbox_hours_per_pass", "f2"),
    ("sandbox-hours on exception rows", "outcomes.exception_sandbox_hours", "int"),
    ("tasks", "tasks.count", "int"),
)


def headline_table(m: dict) -> str:
    derived: dict[str, Any] = {}
    span, sandbox = as_num(get(m, "span_s")), as_num(get(m, "sandbox_s"))
    derived["span_days"] = span / 86400 if span is not None else None
    derived["sandbox_hours"] = sandbox / 3600 if sandbox is not None else None
    q, lin = as_num(get(m, "tokens.r2_quadratic")), as_num(get(m, "tokens.r2_linear"))
    derived["r2"] = None if q is None and lin is None else f"{_r2(q)} / {_r2(lin)}"
    rows = [(label, derived[path] if path in derived else get(m, path), kind) for label, path, kind in HEADLINE]
    return kv_table(rows)


def _r2(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def requests_table(m: dict) -> str | None:
    reqs = get(m, "tasks.requests")
    if not isinstance(reqs, list) or not reqs:
        return None
    cols = ["cpus", "memory_mb", "storage_mb", "gpus", "tasks"]
    rows = [[fmt(r.get(c)) for c in cols] for r in reqs if isinstance(r, dict)]
    return grid_table(["cpus", "memory (MB)", "storage (MB)", "gpus", "tasks"], rows)


MODEL_COLS = (
    ("rows", "rows", "int"),
    ("exception rate", "exception_rate", "pct"),
    ("hold median", "hold_median_s", "s"),
    ("hold p99", "hold_p99_s", "s"),
    ("pass rate", "pass_rate", "pct"),
    ("prefill / sandbox-s", "prefill_per_sandbox_s", "f1"),
    ("decode / sandbox-s", "decode_per_sandbox_s", "f2"),
)

JOB_COLS = (
    ("rows", "rows", "int"),
    ("exception rate", "exception_rate", "pct"),
    ("hold median", "hold_median_s", "s"),
    ("pass rate", "pass_rate", "pct"),
    ("mean concurrency", "mean", "f1"),
    ("peak", "peak", "int"),
    ("duty", "duty", "pct"),
    ("touches", "touches", "int"),
    ("time at peak", "time_at_peak_s", "s"),
    ("cap detected", "cap_detected", "bool"),
    ("configured cap", "configured_cap", "int"),
)


def slice_table(slices: dict, cols: tuple[tuple[str, str, str], ...]) -> str | None:
    """One row per slice; a column shows only if some slice carries it (nested 'concurrency' too)."""
    if not slices:
        return None

    def cell(entry: Any, key: str) -> Any:
        value = get(entry, key)
        return value if value is not None else get(entry, f"concurrency.{key}")

    names = sorted(slices, key=str)
    used = [c for c in cols if any(cell(slices[n], c[1]) is not None for n in names)]
    rows = [[escape(str(n))] + [fmt(cell(slices[n], key), kind) for _, key, kind in used] for n in names]
    return grid_table(["slice"] + [label for label, _, _ in used], rows)


#: Turn counts the source document quotes; the report's short context table shows these.
CONTEXT_KEY_TURNS = frozenset({1, 2, 5, 11, 20, 21, 50, 100})
CONTEXT_ROWS_SHOWN = 12


def context_table(m: dict) -> str | None:
    medians = dict(turn_keyed(get(m, "tokens.median_input_by_turns")))
    errors = dict(turn_keyed(get(m, "tokens.model_error_by_turns")))
    c = as_num(get(m, "tokens.turn_tokens"))
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


TASK_COLS: tuple[tuple[str, str, str], ...] = (
    ("rollouts", "rows", "int"),
    ("exceptions", "exceptions", "int"),
    ("exception rate", "exception_rate", "pct"),
    ("most frequent exception", "top_exception_type", "text"),
    ("its count", "top_exception_count", "int"),
    ("sandbox-hours on exceptions", "exception_sandbox_hours", "f2"),
)


def task_health_table(m: dict) -> str | None:
    """Per-task exception health: the counts, then the worst tasks (``by_task.worst``)."""
    bt = mapping(m, "by_task")
    if not bt:
        return None
    at, least = get(bt, "broken_rate"), get(bt, "min_rows")
    looks = (f"tasks at {fmt(at, 'pct')}+ exceptions (of those with {fmt(least, 'int')}+ rollouts)"
             if as_num(at) is not None and as_num(least) is not None else "tasks that look broken")
    summary = kv_table([
        ("tasks with rollouts", get(bt, "tasks"), "int"),
        ("rollouts without a task id", get(bt, "rows_without_task"), "int"),
        ("tasks judged", get(bt, "tasks_judged"), "int"),
        (looks, get(bt, "tasks_broken"), "int"),
        ("highest task exception rate", get(bt, "max_exception_rate"), "pct"),
        ("tasks where every rollout raised", get(bt, "tasks_all_exceptions"), "int"),
        ("their share of exception sandbox-hours", get(bt, "tasks_all_exceptions_share"), "pct"),
    ])
    worst = [w for w in (get(bt, "worst") or []) if isinstance(w, dict)]
    if not worst:
        return summary + '<p class="na">no task looks broken</p>'
    rows = [[escape(str(w.get("task_id")))] + [fmt(w.get(key), kind) for _, key, kind in TASK_COLS] for w in worst]
    return summary + grid_table(["task"] + [label for label, _, _ in TASK_COLS], rows)


def rejected_table(m: dict) -> str | None:
    rejected = mapping(m, "coverage.rejected")
    if not rejected:
        return None
    return grid_table(["reason", "rows rejected"], [[escape(str(k)), fmt(v, "int")] for k, v in sorted(rejected.items())])


PLAN_ROWS: tuple[tuple[str, str, str], ...] = (
    ("target concurrency", "target.concurrency", "int"),
    ("target from", "target.source", "text"),
    ("node type", "nodes.type", "text"),
    ("nodes", "nodes.count", "int"),
    ("binding resource", "nodes.binding", "text"),
    ("slots per node", "nodes.slots_per_node", "num"),
    ("lower bound (nodes)", "nodes.lower_bound", "int"),
    ("stranded", "nodes.stranded", "num"),
    ("scratch storage (GB)", "storage.scratch_gb", "int"),
    ("storage per node (GB)", "storage.per_node_gb", "f1"),
    ("prefill tokens/s", "inference.prefill_tok_s", "int"),
    ("prefill tokens/s with caching", "inference.prefill_tok_s_cached", "int"),
    ("decode tokens/s", "inference.decode_tok_s", "int"),
    ("inference GPUs", "inference.gpus", "num"),
    ("inference GPUs with caching", "inference.gpus_cached", "num"),
    ("inference binding side", "inference.binding", "text"),
    ("caching saving on measured turn mix", "caching.saving_measured_mix", "f2"),
    ("fleet $/h reserved", "cost.reserved_per_h", "f2"),
    ("fleet $/h on-demand", "cost.on_demand_per_h", "f2"),
    ("fleet $/h spot", "cost.spot_per_h", "f2"),
    ("$ per passing trajectory", "cost.per_passing_trajectory", "f3"),
    ("$/h lost to exceptions", "cost.exception_waste_per_h", "f2"),
)


def plan_table(plan: dict) -> str:
    return kv_table((label, get(plan, path), kind) for label, path, kind in PLAN_ROWS)


def alternatives_table(plan: dict) -> str | None:
    alts = [a for a in (get(plan, "nodes.alternatives") or []) if isinstance(a, dict)]
    if not alts:
        return None
    keys: list[str] = []
    for a in alts:
        keys += [k for k, v in a.items() if k not in keys and not isinstance(v, (dict, list))]
    keys = [k for k in keys if any(a.get(k) is not None for a in alts)]  # the other tiers' prices are null
    return grid_table(keys, [[fmt(a.get(k)) for k in keys] for a in alts])


SIM_ROWS: tuple[tuple[str, str, str], ...] = (
    ("rollouts", "rollouts", "int"),
    ("completed", "completed", "int"),
    ("dropped", "dropped", "int"),
    ("simulated time", "sim_time_s", "s"),
    ("mean concurrency", "concurrency.mean", "f1"),
    ("peak concurrency", "concurrency.peak", "int"),
    ("time at peak", "concurrency.time_at_peak_s", "s"),
    ("utilisation", "utilisation", "pct"),
    ("queue wait mean", "queue_wait_s.mean", "s"),
    ("queue wait p50", "queue_wait_s.p50", "s"),
    ("queue wait p99", "queue_wait_s.p99", "s"),
    ("hold median", "hold_s.median", "s"),
    ("hold p99", "hold_s.p99", "s"),
    ("step mean", "step_s.mean", "s"),
    ("step p99", "step_s.p99", "s"),
    ("trainer idle", "trainer_idle_fraction", "pct"),
    ("exception rate", "outcomes.exception_rate", "pct"),
    ("sandbox-hours", "sandbox_hours", "int"),
    ("sandbox-hours lost to exceptions", "lost_sandbox_hours.exception", "int"),
    ("sandbox-hours lost to preemption", "lost_sandbox_hours.preemption", "int"),
    ("events", "events", "int"),
    ("events per second", "events_per_s", "int"),
)


def simulate_table(sim: dict) -> str:
    return kv_table((label, get(sim, path), kind) for label, path, kind in SIM_ROWS)


def phases_table(m: dict) -> str | None:
    """Harbor's phases: where the hold goes (build, agent setup, agent, verifier)."""
    phases = mapping(m, "phases")
    rows = [[escape(str(name)), fmt(get(p, "rows"), "int"), fmt(get(p, "median_s"), "s"), fmt(get(p, "p99_s"), "s"),
             fmt(get(p, "share_of_hold"), "pct")]
            for name, p in phases.items() if isinstance(p, dict)]
    return grid_table(["phase", "rows", "median", "p99", "share of hold"], rows) if rows else None


def hold_by_outcome_table(m: dict) -> str | None:
    groups = mapping(m, "hold_s.by_outcome")
    rows = [[escape(str(name)), fmt(get(g, "rows"), "int"), fmt(get(g, "median"), "s"), fmt(get(g, "mean"), "s"),
             fmt(get(g, "p99"), "s")] for name, g in groups.items() if isinstance(g, dict)]
    return grid_table(["outcome", "rows", "median", "mean", "p99"], rows) if rows else None


STEP_ROWS: tuple[tuple[str, str, str], ...] = (
    ("batched steps detected", "detected", "bool"),
    ("steps", "steps", "int"),
    ("batch size (median)", "batch_size", "int"),
    ("step period", "step_period_s", "s"),
    ("step makespan", "step_makespan_s", "s"),
    ("straggler tail", "straggler_tail_s", "s"),
)


def steps_table(m: dict) -> str | None:
    steps = mapping(m, "steps")
    if not steps:
        return None
    rows = [(label, get(steps, key), kind) for label, key, kind in STEP_ROWS]
    reason = get(steps, "reason")
    if isinstance(reason, str) and not get(steps, "detected"):
        rows.append(("why not", reason, "text"))
    return kv_table(rows)


def warnings_list(m: dict) -> str | None:
    warnings = get(m, "warnings")
    if not isinstance(warnings, list) or not warnings:
        return None
    return "<ul>" + "".join(f"<li>{escape(str(w))}</li>" for w in warnings) + "</ul>"

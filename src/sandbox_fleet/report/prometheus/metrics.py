"""The measured figures as Prometheus gauges, in the text exposition format.

For the node-exporter textfile collector or a Pushgateway. Names are ``sandbox_fleet_*`` in base
units (``_seconds``, ``_ratio``, ``_total``); quantiles are separate gauges; slices carry a
``model`` or ``job`` label on their own metric names (``sandbox_fleet_model_*``, ``sandbox_fleet_job_*``)
so a fleet-wide rule never matches a slice. Timestamps are data time
(``sandbox_fleet_last_finished_timestamp_seconds``), so the same summary gives the same bytes.
A figure the summary does not carry is left out, never written as 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import datetime

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.report.checks.exceptions import tasks_at_or_above
from sandbox_fleet.report.checks.result import CheckResult
from sandbox_fleet.report.fields import as_num, flag, get, num
from sandbox_fleet.report.thresholds import Thresholds

PREFIX = "sandbox_fleet_"
HOLD_QUANTILES = (("min", "min"), ("median", "median"), ("p90", "p90"), ("p99", "p99"), ("max", "max"), ("mean", "mean"))
MISSING_FIELDS = ("reward", "tokens", "turns", "trajectory")


@dataclass
class Family:
    """One metric name: its help text, type and samples (labels -> value)."""

    name: str
    help: str
    type: str = "gauge"
    samples: list[tuple[tuple[tuple[str, str], ...], float]] = field(default_factory=list)


class Registry:
    """Metric families in insertion order; a value of None is not measured and is skipped."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}

    def add(self, name: str, help_text: str, value: float | None, labels: dict[str, str] | None = None,
            kind: str = "gauge") -> None:
        if value is None:
            return
        full = PREFIX + name
        fam = self.families.setdefault(full, Family(full, help_text, kind))
        fam.samples.append((tuple(sorted((labels or {}).items())), float(value)))

    def names(self) -> set[str]:
        return set(self.families)


def _timestamp_s(value: object) -> float | None:
    """An ISO-8601 time (``...Z`` allowed) as Unix seconds, else None."""
    if not isinstance(value, str):
        return None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed.timestamp() if parsed.tzinfo is not None else None


def _fleet(reg: Registry, m: dict) -> None:
    reg.add("rollouts_total", "Rollouts measured (rows of telemetry).", num(m, "rows"), kind="counter")
    reg.add("first_started_timestamp_seconds", "Start of the first rollout measured, Unix seconds (data time).",
            _timestamp_s(get(m, "first_started_at")))
    reg.add("last_finished_timestamp_seconds", "Finish of the last rollout measured, Unix seconds (data time).",
            _timestamp_s(get(m, "last_finished_at")))
    reg.add("span_seconds", "Span of the telemetry, first start to last finish.", num(m, "span_s"))
    reg.add("sandbox_seconds_total", "Sandbox time held by all rollouts.", num(m, "sandbox_s"), kind="counter")
    reg.add("concurrency_mean", "Time-weighted mean of concurrent sandboxes.", num(m, "concurrency.mean"))
    reg.add("concurrency_peak", "Peak concurrent sandboxes.", num(m, "concurrency.peak"))
    duty = num(m, "concurrency.duty")
    if duty is None and num(m, "concurrency.mean") is not None and num(m, "concurrency.peak"):
        duty = num(m, "concurrency.mean") / num(m, "concurrency.peak")  # type: ignore[operator]
    reg.add("duty_cycle_ratio", "Mean over peak concurrency.", duty)
    detected = flag(m, "concurrency.cap_detected")
    reg.add("cap_detected", "1 when the peak behaves like a concurrency cap (reached many separate times).",
            None if detected is None else float(detected))
    reg.add("configured_cap", "Configured concurrency cap recorded in the telemetry.", num(m, "concurrency.configured_cap"))
    reg.add("cap_binding_ratio", "Share of the span spent at a detected cap (0 when no cap is detected).",
            _binding(detected, num(m, "concurrency.time_at_peak_s"), num(m, "span_s")))
    reg.add("peak_time_ratio", "Share of the span spent at the peak concurrency (cap detected or not).",
            _share(num(m, "concurrency.time_at_peak_s"), num(m, "span_s")))
    for key, label in HOLD_QUANTILES:
        reg.add(f"hold_{label}_seconds", f"Hold time per rollout, {label}.", num(m, f"hold_s.{key}"))


def _binding(detected: bool | None, at_peak_s: float | None, span_s: float | None) -> float | None:
    if detected is False:
        return 0.0
    if detected is True and at_peak_s is not None and span_s:
        return at_peak_s / span_s
    return None


def _share(at_peak_s: float | None, span_s: float | None) -> float | None:
    return at_peak_s / span_s if at_peak_s is not None and span_s else None


def _outcomes(reg: Registry, m: dict) -> None:
    reg.add("exception_ratio", "Share of rollouts that raised an exception.", num(m, "outcomes.exception_rate"))
    reg.add("exceptions_total", "Rollouts that raised an exception.", num(m, "outcomes.exceptions"), kind="counter")
    hours = num(m, "outcomes.exception_sandbox_hours")
    reg.add("exception_sandbox_seconds_total", "Sandbox time held by rollouts that raised an exception.",
            hours * 3600.0 if hours is not None else None, kind="counter")
    reg.add("pass_ratio", "Share of rewarded rollouts that passed.", num(m, "outcomes.pass_rate"))
    reg.add("passed_total", "Rollouts that passed.", num(m, "outcomes.passed"), kind="counter")
    reg.add("rewarded_total", "Rollouts with a reward.", num(m, "outcomes.rewarded"), kind="counter")
    per_pass = num(m, "outcomes.sandbox_hours_per_pass")
    reg.add("sandbox_time_per_pass_seconds", "Sandbox time spent per passing rollout.",
            per_pass * 3600.0 if per_pass is not None else None)


def _tokens(reg: Registry, m: dict) -> None:
    reg.add("token_rollouts_total", "Rollouts that report token counts.", num(m, "tokens.rows"), kind="counter")
    reg.add("input_tokens_total", "Input (prefill) tokens across rollouts.", num(m, "tokens.input"), kind="counter")
    reg.add("output_tokens_total", "Output (decode) tokens across rollouts.", num(m, "tokens.output"), kind="counter")
    reg.add("cached_tokens_total", "Input tokens served from the prefix cache.", num(m, "tokens.cached"), kind="counter")
    frac, cached, inp = num(m, "tokens.cached_fraction"), num(m, "tokens.cached"), num(m, "tokens.input")
    if frac is None and cached is not None and inp:
        frac = cached / inp
    reg.add("prefix_cache_hit_ratio", "Share of input tokens served from the prefix cache.", frac)


def _coverage(reg: Registry, m: dict) -> None:
    rows = num(m, "rows")
    for name in MISSING_FIELDS:
        count = num(m, f"coverage.missing_{name}")
        if count is None or not rows:
            continue
        if name == "trajectory" and num(m, "coverage.unknown_trajectory") == rows:
            continue  # the telemetry does not say: not measured
        reg.add("missing_ratio", "Share of rollouts missing a field.", count / rows, {"field": name})
    reasons = get(m, "coverage.rejected")
    if isinstance(reasons, dict) and rows is not None:
        counts = {str(k): as_num(v) or 0.0 for k, v in reasons.items()}
        for reason in sorted(counts):
            reg.add("rejected_rows_total", "Input rows rejected by the readers, by reason.", counts[reason],
                    {"reason": reason}, kind="counter")
        total = sum(counts.values())
        reg.add("rejected_ratio", "Share of input rows rejected by the readers.",
                total / (rows + total) if rows + total else 0.0)
    share = num(m, "phases.environment_setup.share_of_hold")
    reg.add("build_share_ratio", "Share of the hold spent in environment setup (image build).", share)


def _slices(reg: Registry, ms: MeasureSummary) -> None:
    """Per-model and per-job gauges, read from measure's model (``Slice``)."""
    holds_by_model = (ms.hold_s.by_model if ms.hold_s else None) or {}
    for model, entry in sorted((ms.by_model or {}).items()):
        labels = {"model": model}
        reg.add("model_rollouts_total", "Rollouts per model.", entry.rows, labels, kind="counter")
        reg.add("model_exception_ratio", "Share of a model's rollouts that raised an exception.",
                entry.exception_rate, labels)
        reg.add("model_pass_ratio", "Share of a model's rewarded rollouts that passed.", entry.pass_rate, labels)
        holds = holds_by_model.get(model)  # model names hold dots: no dotted path
        for key, label in HOLD_QUANTILES:
            value = getattr(holds, key) if holds is not None else None
            if value is None and key in ("median", "p99", "mean"):
                value = getattr(entry, f"hold_{key}_s")
            reg.add(f"model_hold_{label}_seconds", f"Hold time per rollout of a model, {label}.", value, labels)
    for job, entry in sorted((ms.by_job or {}).items()):
        labels = {"job": job}
        reg.add("job_rollouts_total", "Rollouts per job.", entry.rows, labels, kind="counter")
        reg.add("job_exception_ratio", "Share of a job's rollouts that raised an exception.", entry.exception_rate, labels)
        conc = entry.concurrency
        detected = conc.cap_detected if conc is not None else entry.cap_detected
        at_peak = conc.time_at_peak_s if conc is not None else entry.time_at_peak_s
        reg.add("job_cap_binding_ratio", "Share of a job's span spent at a detected cap.",
                _binding(detected, at_peak, conc.span_s if conc is not None else None), labels)
        reg.add("job_concurrency_peak", "Peak concurrent sandboxes of a job.", conc.peak if conc is not None else None, labels)
        reg.add("job_configured_cap", "Configured concurrency cap recorded for a job.",
                conc.configured_cap if conc is not None else None, labels)
        reg.add("job_peak_time_ratio", "Share of a job's span spent at its peak concurrency.",
                _share(conc.time_at_peak_s, conc.span_s) if conc is not None else None, labels)


def _from_checks(reg: Registry, m: dict, results: list[CheckResult], t: Thresholds) -> None:
    """Figures only ``check`` can compute: the per-task chance filter and the sweep verdict."""
    status = {r.name: r.status for r in results}
    if status.get("exception_rate_by_task") in ("pass", "warn", "fail"):
        cfg = t.exception_rate_by_task
        reg.add("tasks_failing", "Tasks whose exception rate is at or above the fail rate and beyond chance "
                f"(computed by check: min_rows {cfg.min_rows}, fail_at_or_above {cfg.fail_at_or_above:g}).",
                float(len(tasks_at_or_above(m, cfg, cfg.fail_at_or_above))))
        reg.add("tasks_warning", "Tasks whose exception rate is at or above the warn rate and beyond chance "
                f"(computed by check: min_rows {cfg.min_rows}, warn_at_or_above {cfg.warn_at_or_above:g}).",
                float(len(tasks_at_or_above(m, cfg, cfg.warn_at_or_above))))
    if status.get("sweep_self_check") in ("pass", "fail"):
        reg.add("sweep_self_check_ok", "1 when the area under the concurrency curve equals the sum of holds.",
                1.0 if status["sweep_self_check"] == "pass" else 0.0)


def build_registry(m: dict, plan: dict | None, results: list[CheckResult], t: Thresholds) -> Registry:
    """Every metric ``--metrics-out`` writes for a summary (and plan), in a fixed order."""
    reg = Registry()
    _fleet(reg, m)
    _outcomes(reg, m)
    _tokens(reg, m)
    _coverage(reg, m)
    _slices(reg, MeasureSummary.model_validate(m))
    _from_checks(reg, m, results, t)
    if isinstance(plan, dict):
        reg.add("plan_target_concurrency", "Concurrent sandboxes the plan buys for.", num(plan, "target.concurrency"))
    return reg


def _escape_label(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return text.replace("\\", "\\\\").replace("\n", "\\n")


def format_value(x: float) -> str:
    """A sample value: integers without a fraction, others at full (round-trip) precision."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "+Inf" if x > 0 else "-Inf"
    if x.is_integer() and abs(x) < 1e15:
        return str(int(x))
    return repr(x)


def exposition(reg: Registry) -> str:
    """The registry in the Prometheus text exposition format (HELP and TYPE on every metric)."""
    lines: list[str] = []
    for fam in reg.families.values():
        lines.append(f"# HELP {fam.name} {_escape_help(fam.help)}")
        lines.append(f"# TYPE {fam.name} {fam.type}")
        for labels, value in fam.samples:
            body = ",".join(f'{k}="{_escape_label(v)}"' for k, v in labels)
            lines.append(f"{fam.name}{{{body}}} {format_value(value)}" if body else f"{fam.name} {format_value(value)}")
    return "\n".join(lines) + "\n"

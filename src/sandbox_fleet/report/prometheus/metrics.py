"""The measured figures as Prometheus gauges, in the text exposition format.

For the node-exporter textfile collector or a Pushgateway. Names are ``sandbox_fleet_*`` in base
units (``_seconds``, ``_ratio``); every figure is a gauge, counts included: each file is a snapshot
of one summary, and the next summary (another window, another corpus) may hold fewer rollouts, which
a counter must never show (``rate()`` would read a drop as a reset). No sample carries a timestamp:
node-exporter's textfile collector and the Pushgateway both refuse client-side timestamps, so data
time is a gauge of its own (``sandbox_fleet_last_finished_timestamp_seconds``) and the same summary
gives the same bytes. Quantiles are separate gauges; slices carry a ``model``, ``rl_job`` or
``sandbox_node`` label on their own metric names (``sandbox_fleet_model_*``, ``sandbox_fleet_job_*``,
``sandbox_fleet_node_*``) so a fleet-wide rule never matches a slice. No label this module writes is one Prometheus reserves or sets on a target
(``job``, ``instance``, ``le``, ``quantile``, ``__*``; see ``RESERVED_LABELS``): a per-RL-job label
named ``job`` is overwritten by the scrape (or renamed ``exported_job``) and collides on a push.
A figure the summary does not carry (null, or not a finite number) is left out, never written as 0
or NaN: fleet-wide and per-model/per-job series alike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from sandbox_fleet.measure.batchcap import time_at_cap
from sandbox_fleet.measure.model import Concurrency, Coverage, Holds, HoldStats, MeasureSummary, Outcomes, Tokens
from sandbox_fleet.report.checks.capacity import hidden_demand
from sandbox_fleet.report.checks.exceptions import node_chance, tasks_at_or_above
from sandbox_fleet.report.checks.result import CheckResult
from sandbox_fleet.report.checks.signal import informative_share
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import Thresholds
from sandbox_fleet.safeparse import iso_instant
from sandbox_fleet.textout import printable

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary

PREFIX = "sandbox_fleet_"
#: The per-RL-job label: not ``job``, which Prometheus owns as the scrape target's (and a push group's) label.
JOB_LABEL = "rl_job"
#: The per-node label: not ``node``, which Kubernetes service discovery and node-exporter relabelling set.
NODE_LABEL = "sandbox_node"
#: Labels a scrape, a push, a histogram or an alert sets itself, plus the names a scrape renames them to.
RESERVED_LABELS = frozenset({"job", "instance", "le", "quantile", "exported_job", "exported_instance",
                             "alertname", "alertstate", "severity", "node"})


@dataclass
class Family:
    """One metric name: its help text, type and samples (labels -> value)."""

    name: str
    help: str
    type: str = "gauge"
    samples: list[tuple[tuple[tuple[str, str], ...], float]] = field(default_factory=list)


class Registry:
    """Metric families in insertion order; a value that is None or not a finite number is not
    measured and is skipped (``as_num``), whichever figure, fleet-wide or per slice, it is."""

    def __init__(self) -> None:
        self.families: dict[str, Family] = {}

    def add(self, name: str, help_text: str, value: float | None, labels: dict[str, str] | None = None,
            kind: str = "gauge") -> None:
        value = as_num(value)
        if value is None:
            return
        clash = [k for k in (labels or {}) if k in RESERVED_LABELS or k.startswith("__")]
        if clash:
            raise ValueError(f"label {clash[0]!r} of {name} is reserved by Prometheus (RESERVED_LABELS)")
        full = PREFIX + name
        fam = self.families.setdefault(full, Family(full, help_text, kind))
        fam.samples.append((tuple(sorted((labels or {}).items())), value))

    def names(self) -> set[str]:
        return set(self.families)


def _timestamp_s(value: object) -> float | None:
    """A summary's ISO-8601 time as Unix seconds; None when absent or without its offset."""
    parsed = iso_instant(value, naive_is_utc=False)
    return parsed.timestamp() if parsed is not None else None


def _fleet(reg: Registry, m: MeasureSummary) -> None:
    conc = m.concurrency or Concurrency()
    reg.add("rollouts", "Rollouts measured (rows of telemetry).", as_num(m.rows))
    reg.add("first_started_timestamp_seconds", "Start of the first rollout measured, Unix seconds (data time).",
            _timestamp_s(m.first_started_at))
    reg.add("last_finished_timestamp_seconds", "Finish of the last rollout measured, Unix seconds (data time).",
            _timestamp_s(m.last_finished_at))
    reg.add("span_seconds", "Span of the telemetry, first start to last finish.", as_num(m.span_s))
    reg.add("sandbox_seconds", "Sandbox time held by all rollouts.", as_num(m.sandbox_s))
    mean, peak = as_num(conc.mean), as_num(conc.peak)
    reg.add("concurrency_mean", "Time-weighted mean of concurrent sandboxes.", mean)
    reg.add("concurrency_peak", "Peak concurrent sandboxes.", peak)
    duty = as_num(conc.duty)
    if duty is None and mean is not None and peak:
        duty = mean / peak
    reg.add("duty_cycle_ratio", "Mean over peak concurrency.", duty)
    detected = conc.cap_detected
    reg.add("cap_detected", "1 when the peak behaves like a concurrency cap (reached many separate times).",
            None if detected is None else float(detected))
    reg.add("configured_cap", "Configured concurrency cap recorded in the telemetry.", as_num(conc.configured_cap))
    reg.add("cap_binding_ratio", "Share of the span spent at a detected cap (0 when no cap is detected).",
            _binding(detected, as_num(time_at_cap(conc)[0]), as_num(m.span_s)))
    reg.add("peak_time_ratio", "Share of the span spent at the peak concurrency (cap detected or not).",
            _share(as_num(conc.time_at_peak_s), as_num(m.span_s)))
    for label, value in _hold_figures(m.hold_s or Holds()):
        reg.add(f"hold_{label}_seconds", f"Hold time per rollout, {label}.", as_num(value))


def _hold_figures(h: HoldStats) -> tuple[tuple[str, float | None], ...]:
    """(label, seconds) of each hold quantile gauge, in exposition order."""
    return (("min", h.min), ("median", h.median), ("p90", h.p90), ("p99", h.p99), ("max", h.max), ("mean", h.mean))


def _binding(detected: bool | None, at_peak_s: float | None, span_s: float | None) -> float | None:
    if detected is False:
        return 0.0
    if detected is True and at_peak_s is not None and span_s:
        return at_peak_s / span_s
    return None


def _share(at_peak_s: float | None, span_s: float | None) -> float | None:
    return at_peak_s / span_s if at_peak_s is not None and span_s else None


def _outcomes(reg: Registry, m: MeasureSummary) -> None:
    out = m.outcomes or Outcomes()
    reg.add("exception_ratio", "Share of rollouts that raised an exception.", as_num(out.exception_rate))
    reg.add("exceptions", "Rollouts that raised an exception.", as_num(out.exceptions))
    hours = as_num(out.exception_sandbox_hours)
    reg.add("exception_sandbox_seconds", "Sandbox time held by rollouts that raised an exception.",
            hours * 3600.0 if hours is not None else None)
    reg.add("pass_ratio", "Share of rewarded rollouts that passed.", as_num(out.pass_rate))
    reg.add("passed", "Rollouts that passed.", as_num(out.passed))
    reg.add("rewarded", "Rollouts with a reward.", as_num(out.rewarded))
    per_pass = as_num(out.sandbox_hours_per_pass)
    reg.add("sandbox_time_per_pass_seconds", "Sandbox time spent per passing rollout.",
            per_pass * 3600.0 if per_pass is not None else None)


def _signal(reg: Registry, m: MeasureSummary) -> None:
    """The two signal gates' figures (report/checks/signal.py), as check reads them."""
    rg = m.rl_groups
    if rg is None:
        return
    reg.add("informative_group_ratio", "Share of rollout groups whose valid rewards differ (measured where groups "
            "are recorded, else expected at the group size).", informative_share(rg)[0])
    reg.add("exceptions_scored_zero_ratio", "Exception rows carrying a failing reward, over the rows with a reward.",
            as_num(rg.exceptions_scored_zero_share))


def _tokens(reg: Registry, m: MeasureSummary) -> None:
    tok = m.tokens or Tokens()
    reg.add("token_rollouts", "Rollouts that report token counts.", as_num(tok.rows))
    reg.add("input_tokens", "Input (prefill) tokens across rollouts.", as_num(tok.input))
    reg.add("output_tokens", "Output (decode) tokens across rollouts.", as_num(tok.output))
    reg.add("cached_tokens", "Input tokens served from the prefix cache.", as_num(tok.cached))
    frac, cached, inp = as_num(tok.cached_fraction), as_num(tok.cached), as_num(tok.input)
    if frac is None and cached is not None and inp:
        frac = cached / inp
    reg.add("prefix_cache_hit_ratio", "Share of input tokens served from the prefix cache.", frac)


def _coverage(reg: Registry, m: MeasureSummary) -> None:
    rows = as_num(m.rows)
    cov = m.coverage or Coverage()
    for name, missing in (("reward", cov.missing_reward), ("tokens", cov.missing_tokens),
                          ("turns", cov.missing_turns), ("trajectory", cov.missing_trajectory)):
        count = as_num(missing)
        if count is None or not rows:
            continue
        if name == "trajectory" and as_num(cov.unknown_trajectory) == rows:
            continue  # the telemetry does not say: not measured
        reg.add("missing_ratio", "Share of rollouts missing a field.", count / rows, {"field": name})
    reasons = cov.rejected
    if reasons is not None and rows is not None:
        counts = {str(k): as_num(v) or 0.0 for k, v in reasons.items()}
        for reason in sorted(counts):
            reg.add("rejected_rows", "Input rows rejected by the readers, by reason.", counts[reason],
                    {"reason": reason})
        total = sum(counts.values())
        reg.add("rejected_ratio", "Share of input rows rejected by the readers.",
                total / (rows + total) if rows + total else 0.0)
    build = (m.phases or {}).get("environment_setup")  # phases are keyed by Harbor's phase name
    share = as_num(build.share_of_hold) if build is not None else None
    reg.add("build_share_ratio", "Share of the hold spent in environment setup (image build).", share)


def _slices(reg: Registry, ms: MeasureSummary) -> None:
    """Per-model and per-job gauges, read from measure's model (``Slice``)."""
    holds_by_model = (ms.hold_s.by_model if ms.hold_s else None) or {}
    for model, entry in sorted((ms.by_model or {}).items()):
        labels = {"model": model}
        reg.add("model_rollouts", "Rollouts per model.", entry.rows, labels)
        reg.add("model_exception_ratio", "Share of a model's rollouts that raised an exception.",
                entry.exception_rate, labels)
        reg.add("model_pass_ratio", "Share of a model's rewarded rollouts that passed.", entry.pass_rate, labels)
        # the slice's own median / p99 / mean stand in where hold_s.by_model lacks the model
        fallback = {"median": entry.hold_median_s, "p99": entry.hold_p99_s, "mean": entry.hold_mean_s}
        for label, value in _hold_figures(holds_by_model.get(model) or HoldStats()):
            if value is None:
                value = fallback.get(label)
            reg.add(f"model_hold_{label}_seconds", f"Hold time per rollout of a model, {label}.", value, labels)
    for job, entry in sorted((ms.by_job or {}).items()):
        labels = {JOB_LABEL: job}
        reg.add("job_rollouts", "Rollouts per job.", entry.rows, labels)
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


def _nodes(reg: Registry, m: MeasureSummary) -> None:
    """Per-node gauges, read from measure's ``by_node``."""
    for entry in (m.by_node.per_node if m.by_node else None) or []:
        if entry.node is None:
            continue
        labels = {NODE_LABEL: entry.node}
        reg.add("node_rollouts", "Rollouts per node.", entry.rows, labels)
        reg.add("node_exception_ratio", "Share of a node's rollouts that raised an exception.",
                entry.exception_rate, labels)


def _node_chance(reg: Registry, m: MeasureSummary, t: Thresholds) -> None:
    cfg = t.exception_rate_by_node
    for node, beyond in sorted((node_chance(m, cfg) or {}).items()):
        reg.add("node_beyond_chance", "1 when a node's exceptions are more than the fleet's rate explains by chance "
                f"(computed by check: binomial tail times nodes judged below max_chance {cfg.max_chance:g}, "
                f"min_rows {cfg.min_rows}).", 1.0 if beyond else 0.0, {NODE_LABEL: node})


def _from_checks(reg: Registry, m: MeasureSummary, results: list[CheckResult], t: Thresholds) -> None:
    """Figures only ``check`` can compute: the per-task and per-node chance filters and the sweep verdict."""
    status = {r.name: r.status for r in results}
    if status.get("exception_rate_by_node") in ("pass", "warn", "fail"):
        _node_chance(reg, m, t)
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


def build_registry(m: MeasureSummary, plan: PlanSummary | None, results: list[CheckResult], t: Thresholds) -> Registry:
    """Every metric ``--metrics-out`` writes for a summary (and plan), in a fixed order."""
    reg = Registry()
    _fleet(reg, m)
    _outcomes(reg, m)
    _signal(reg, m)
    _tokens(reg, m)
    _coverage(reg, m)
    _slices(reg, m)
    _nodes(reg, m)
    _from_checks(reg, m, results, t)
    if plan is not None:
        reg.add("plan_target_concurrency", "Concurrent sandboxes the plan buys for.", as_num(plan.target.concurrency))
        demand = hidden_demand(m, plan)
        if demand is not None:  # the peak is a binding cap: the plan must cover the demand behind it
            reg.add("plan_demand_concurrency", "Concurrent sandboxes the demand behind a binding cap needs "
                    "(the plan's estimate, else the release the cap cut).", demand[0])
    return reg


def _escape_label(value: str) -> str:
    # The text format escapes only backslash, quote and newline: other control characters
    # (a model name's terminal escapes) are shown as text (\x1b) before that escaping.
    return printable(value).replace("\\", "\\\\").replace('"', '\\"')


def _escape_help(text: str) -> str:
    return printable(text).replace("\\", "\\\\")


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

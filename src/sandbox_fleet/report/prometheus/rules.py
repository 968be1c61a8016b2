"""The check gates as Prometheus alerting rules, on the metrics ``--metrics-out`` writes.

One alert per gate and severity: ``warning`` at the gate's warn threshold, ``critical`` at its
fail threshold (``data/checks.toml`` or ``--thresholds``), ``for:`` from the gate's ``for_s``.
Each expression fires exactly when ``check`` would give that status on the exported figures
(tests hold the two against each other through ``promtool test rules``); warning expressions
exclude the critical band so one series is in one state. Gates that PromQL cannot express from a
single exported figure (the per-task chance filter, the sweep tolerance) are exported as figures
``check`` computes and named in the file's header comment.

Binary operators match on all labels (PromQL's default), never ``on()`` or ``on(<slice label>)``:
every series of one summary comes from one file with one label set, so each source pairs with
itself however it reached Prometheus (textfile collector, a Pushgateway scraped with
``honor_labels`` true or false) and however many sources there are.
"""

from __future__ import annotations

from dataclasses import dataclass

from sandbox_fleet.report.prometheus.metrics import JOB_LABEL, NODE_LABEL, PREFIX
from sandbox_fleet.report.thresholds import Above, Below, Section, Thresholds
from sandbox_fleet.textout import one_line

GROUP = "sandbox-fleet"
#: The label each slice's metrics carry (metrics.py writes them).
SLICE_LABEL = {"model": "model", "job": JOB_LABEL}


class _Names(dict):
    """``M["exception_ratio"]`` -> ``sandbox_fleet_exception_ratio`` (the names metrics.py writes)."""

    def __missing__(self, key: str) -> str:
        return PREFIX + key


M = _Names()


@dataclass(frozen=True)
class Rule:
    gate: str
    alert: str
    severity: str  # "warning" | "critical"
    expr: str
    for_s: float
    summary: str
    description: str


def _n(x: float) -> str:
    """A PromQL number literal."""
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else repr(float(x))


def _above(x: str, band: Above, scale: float = 1.0) -> tuple[str | None, str | None]:
    """(warning, critical) expressions for ``x`` against an upper band (scaled into base units)."""
    warn = band.warn_above * scale if band.warn_above is not None else None
    fail = band.fail_above * scale if band.fail_above is not None else None
    critical = f"{x} > {_n(fail)}" if fail is not None else None
    if warn is None:
        return None, critical
    warning = f"{x} > {_n(warn)}" + (f" <= {_n(fail)}" if fail is not None else "")
    return warning, critical


def _below(x: str, band: Below) -> tuple[str | None, str | None]:
    critical = f"{x} < {_n(band.fail_below)}" if band.fail_below is not None else None
    if band.warn_below is None:
        return None, critical
    warning = f"{x} < {_n(band.warn_below)}" + (f" >= {_n(band.fail_below)}" if band.fail_below is not None else "")
    return warning, critical


def _pair(gate: str, alert: str, cfg: Section, exprs: tuple[str | None, str | None], summary: tuple[str, str],
          description: str) -> list[Rule]:
    """Rules for a (warning, critical) expression pair; ``summary`` is (warning text, critical text)."""
    out = []
    for severity, expr, text in (("warning", exprs[0], summary[0]), ("critical", exprs[1], summary[1])):
        if expr is not None:
            out.append(Rule(gate, alert, severity, expr, cfg.for_s, text, description))
    return out


def _slice(gate: str, alert: str, cfg, kind: str) -> list[Rule]:
    """A per-model / per-job rate: small slices (fewer than ``min_rows``) may warn but not fail.

    The guards match on every label (PromQL's default), not ``on(<slice label>)``: each slice is
    paired with its own row count from the same source whatever target labels a scrape or push
    added (``job``, ``instance``, ``exported_job``), so one small job silences only itself.
    """
    label = SLICE_LABEL[kind]
    rate, rows = M[f"{kind}_exception_ratio"], M[f"{kind}_rollouts"]
    small = f"{rows} < {cfg.min_rows}"
    critical = (f"({rate} > {_n(cfg.fail_above)}) unless ({small})"
                if cfg.fail_above is not None else None)
    warning = None
    if cfg.warn_above is not None:
        warning = f"{rate} > {_n(cfg.warn_above)}" + (f" unless ({critical})" if critical else "")
    what = f"{{{{ $labels.{label} }}}}: {{{{ $value | humanizePercentage }}}} of rollouts raise an exception"
    advice = {"model": "filter the corpus by model before training on it",
              "job": "look for a bad image or a full disk in that job first"}[kind]
    return _pair(gate, alert, cfg, (warning, critical),
                 (f"{what} (warn above {cfg.warn_above:.0%})" if cfg.warn_above is not None else what,
                  f"{what} (fail above {cfg.fail_above:.0%}, {cfg.min_rows}+ rollouts)" if cfg.fail_above is not None else what),
                 f"{kind.capitalize()} exception rate over budget: {advice}; exceptions almost never pass and "
                 "their sandbox-hours are lost.")


def _prefix_cache(t: Thresholds) -> list[Rule]:
    cfg = t.prefix_cache_off
    ratio, inp, rows = M["prefix_cache_hit_ratio"], M["input_tokens"], M["token_rollouts"]
    guard = f"({inp} > 0 unless {rows} == 0)"
    unreported = f"{guard} unless {ratio}"
    zero = f"({ratio} == 0) and {guard}"
    warning = f"({ratio} > 0 < {_n(cfg.warn_below_cached_fraction)}) and {guard}"
    desc = ("Every turn re-sends the whole transcript when the prefix cache misses: caching is worth "
            "(turns+1)/2 on prefill. Check the serving pool's cache hit counter; the harness may break the "
            "prefix (timestamps, reordered tools, front truncation).")
    rules = [Rule("prefix_cache_off", "SandboxFleetPrefixCacheOff", "critical", zero, cfg.for_s,
                  "0 cached tokens across rollouts with input tokens: prefix caching is off", desc),
             Rule("prefix_cache_off", "SandboxFleetPrefixCacheOff", "warning", warning, cfg.for_s,
                  "only {{ $value | humanizePercentage }} of input tokens cached "
                  f"(warn below {cfg.warn_below_cached_fraction:.0%})", desc)]
    if cfg.unreported != "pass":
        sev = "critical" if cfg.unreported == "fail" else "warning"
        idx = 0 if sev == "critical" else 1
        r = rules[idx]
        rules[idx] = Rule(r.gate, r.alert, r.severity, f"({r.expr}) or ({unreported})", r.for_s,
                          r.summary + " (or cached tokens are not reported at all)", r.description)
    return rules


def _tasks(t: Thresholds) -> list[Rule]:
    cfg = t.exception_rate_by_task
    failing, warning = M["tasks_failing"], M["tasks_warning"]
    desc = ("A task that raises whatever the model does is a bad image or a full disk: rule out a model that "
            "raises everywhere, then fix or drop the task (sandbox-fleet check names the worst tasks).")
    return [
        Rule("exception_rate_by_task", "SandboxFleetTasksFailing", "warning",
             f"{warning} > 0 unless {failing} > 0", cfg.for_s,
             f"{{{{ $value }}}} task(s) raise on {cfg.warn_at_or_above:.0%}+ of their rollouts beyond chance", desc),
        Rule("exception_rate_by_task", "SandboxFleetTasksFailing", "critical", f"{failing} > 0", cfg.for_s,
             f"{{{{ $value }}}} task(s) raise on {cfg.fail_at_or_above:.0%}+ of their rollouts beyond chance", desc),
    ]


def _nodes(t: Thresholds) -> list[Rule]:
    """A node above the rate band whose exceptions check found beyond chance at the fleet's rate.

    ``node_beyond_chance`` is written only for the nodes check judged (``min_rows``), so it is
    the rows guard too; ``and`` keeps the rate as the alert's value.
    """
    cfg = t.exception_rate_by_node
    rate, beyond = M["node_exception_ratio"], f"{M['node_beyond_chance']} == 1"
    critical = f"({rate} > {_n(cfg.fail_above)}) and ({beyond})" if cfg.fail_above is not None else None
    warning = None
    if cfg.warn_above is not None:
        warning = f"({rate} > {_n(cfg.warn_above)}) and ({beyond})" + (f" unless ({critical})" if critical else "")
    what = (f"{{{{ $labels.{NODE_LABEL} }}}}: {{{{ $value | humanizePercentage }}}} of its rollouts raise an "
            "exception, beyond chance at the fleet's rate")
    return _pair("exception_rate_by_node", "SandboxFleetNodeExceptionRate", cfg, (warning, critical),
                 (f"{what} (warn above {cfg.warn_above:.0%})" if cfg.warn_above is not None else what,
                  f"{what} (fail above {cfg.fail_above:.0%})" if cfg.fail_above is not None else what),
                 "A node that raises whatever it hosts has a bad disk, container runtime or image cache: drain "
                 "it and compare with the per-task alerts (sandbox-fleet check names the worst nodes).")


_MISSING_WHY = {
    "reward": "completion is not success, so these rollouts cannot count as useful",
    "tokens": "token rates describe the other rows only",
    "turns": "the context-growth fit describes the other rows only",
    "trajectory": "these rollouts cannot be inspected or trained on",
}


def _missing(t: Thresholds, field: str) -> list[Rule]:
    cfg: Above = getattr(t, f"missing_{field}")
    x = f'{M["missing_ratio"]}{{field="{field}"}}'
    text = f"{{{{ $value | humanizePercentage }}}} of rollouts carry no {field}"
    return _pair(f"missing_{field}", f"SandboxFleetMissing{field.capitalize()}", cfg, _above(x, cfg), (text, text),
                 f"Telemetry gap: {_MISSING_WHY[field]}. Fix the exporter or the harness that drops the field.")


def _sample_and_exceptions(t: Thresholds) -> list[Rule]:
    out: list[Rule] = []
    out.append(Rule("small_sample", "SandboxFleetSmallSample", "warning",
                    f"{M['rollouts']} < {t.small_sample.min_rows}", t.small_sample.for_s,
                    f"only {{{{ $value }}}} rollouts measured (fewer than {t.small_sample.min_rows})",
                    "Percentiles and rates over this few rollouts are noise: wait for more data before acting on other alerts."))
    out += _prefix_cache(t)
    er = t.exception_rate
    out += _pair("exception_rate", "SandboxFleetExceptionRate", er, _above(M["exception_ratio"], er),
                 ("{{ $value | humanizePercentage }} of rollouts raised an exception",) * 2,
                 "Exception rollouts almost never pass and their sandbox-hours are lost: alert per task and per "
                 "node, and look at the per-model and per-task alerts for where they come from.")
    out += _slice("exception_rate_by_model", "SandboxFleetModelExceptionRate", t.exception_rate_by_model, "model")
    out += _slice("exception_rate_by_job", "SandboxFleetJobExceptionRate", t.exception_rate_by_job, "job")
    return out + _tasks(t) + _nodes(t)


def _coverage(t: Thresholds) -> list[Rule]:
    out: list[Rule] = []
    for field in ("reward", "tokens", "turns", "trajectory"):
        out += _missing(t, field)
    rr = t.rejected_rows
    out += _pair("rejected_rows", "SandboxFleetRejectedRows", rr, _above(M["rejected_ratio"], rr),
                 ("{{ $value | humanizePercentage }} of input rows rejected",) * 2,
                 "Rows the readers could not use (unparsable time, finish before start, duplicates): see "
                 "sandbox_fleet_rejected_rows by reason and fix the exporter.")
    return out


def _capacity(t: Thresholds) -> list[Rule]:
    out: list[Rule] = []
    cb = t.cap_binding
    binding = f"({M['cap_binding_ratio']} or {M['job_cap_binding_ratio']})"
    out += _pair("cap_binding", "SandboxFleetCapBinding", cb, _above(binding, cb),
                 ("the concurrency cap held for {{ $value | humanizePercentage }} of the span",) * 2,
                 "Each time the fleet sits at its cap a released batch waits for slots, so the RL step waits: "
                 "raise the cap or buy the nodes the plan asks for.")
    out.append(Rule("cap_recorded", "SandboxFleetCapNotRecorded", "warning",
                    f"{M['cap_detected']} == 1 unless {M['configured_cap']}", t.cap_recorded.for_s,
                    "the peak behaves like a cap but no configured cap is recorded",
                    "Write the configured cap into the telemetry, or it becomes an unexplained throughput plateau."))
    plateau = t.cap_binding.warn_above
    # a loaded file always has it (the defaults set it, TOML has no null); a built Thresholds may not
    if plateau is not None:
        share = _n(plateau)
        out.append(Rule("cap_below_configured", "SandboxFleetCapBelowConfigured", "warning",
                        f"({M['concurrency_peak']} < {M['configured_cap']} and {M['peak_time_ratio']} >= {share}) "
                        f"or ({M['job_concurrency_peak']} < {M['job_configured_cap']} and {M['job_peak_time_ratio']} >= {share})",
                        t.cap_below_configured.for_s,
                        "concurrency plateaus at {{ $value }}, below the configured cap",
                        "Another limit binds before the configured cap (per-agent caps, hosts or the inference pool): "
                        "find it before buying capacity for the configured cap, which would idle."))
    dc = t.duty_cycle
    out += _pair("duty_cycle", "SandboxFleetLowDutyCycle", dc, _below(M["duty_cycle_ratio"], dc),
                 ("mean concurrency is {{ $value | humanizePercentage }} of peak",) * 2,
                 "Capacity bought at peak idles most of the time: buy the peak on spot/preemptible capacity, "
                 "not reserved, and never size the pool to the mean.")
    ht = t.hold_tail
    tail = f"{M['hold_p99_seconds']} / ({M['hold_median_seconds']} > 0)"
    out += _pair("hold_tail", "SandboxFleetHoldTail", ht, _above(f"({tail})", ht),
                 ("hold p99 is {{ $value | printf \"%.1f\" }}x the median",) * 2,
                 "Admission tuned to the median stalls batches behind long holds: admit against the timeout "
                 "ceiling and reclaim early.")
    sp = t.sandbox_hours_per_pass
    warning, critical = _above(M["sandbox_time_per_pass_seconds"], sp, scale=3600.0)
    none_passed = (f"({M['passed']} == 0 and {M['rewarded']} > 0) "
                   f"unless {M['sandbox_time_per_pass_seconds']}")
    critical = f"({critical}) or ({none_passed})" if critical else none_passed
    out += _pair("sandbox_hours_per_pass", "SandboxFleetSandboxHoursPerPass", sp, (warning, critical),
                 ("{{ $value | humanizeDuration }} of sandbox time per passing rollout",
                  "{{ $value | humanizeDuration }} of sandbox time per passing rollout (or none passed)"),
                 "Each passing trajectory costs this much sandbox time: cut exceptions and hopeless tasks first.")
    bs = t.build_share
    out += _pair("build_share", "SandboxFleetBuildShare", bs, _above(M["build_share_ratio"], bs),
                 ("environment setup takes {{ $value | humanizePercentage }} of the hold",) * 2,
                 "Image builds eat the hold: pin base images and pre-pull them on every node.")
    return out


def _plan_and_health(t: Thresholds) -> list[Rule]:
    target, mean, peak = M["plan_target_concurrency"], M["concurrency_mean"], M["concurrency_peak"]
    below_mean = f"{target} < {mean}"
    # the demand a binding cap hid replaces the peak when it is known (set `or` keeps the left side)
    need = f"({M['plan_demand_concurrency']} or {peak})"
    out = _pair("plan_covers_peak", "SandboxFleetPlanBelowPeak", t.plan_covers_peak,
                 (f"({target} < {need}) unless ({below_mean})", below_mean),
                 ("planned concurrency {{ $value }} is below the measured peak (or the demand a binding cap hid)",
                  "planned concurrency {{ $value }} is below the measured mean"),
                 "A pool built below peak turns every batched step into a queue, and one built at a binding cap "
                 "buys the old queue; below the mean it cannot keep up: re-plan.")
    out.append(Rule("sweep_self_check", "SandboxFleetSweepSelfCheck", "critical", f"{M['sweep_self_check_ok']} == 0",
                    t.sweep_self_check.for_s, "area under the concurrency curve differs from the sum of holds",
                    "A sandbox-fleet measurement bug: report it with the telemetry that produced it."))
    ts = t.telemetry_stale
    age = f"(time() - {M['last_finished_timestamp_seconds']})"
    stale = _above(age, Above(for_s=ts.for_s, warn_above=ts.warn_above_s, fail_above=ts.fail_above_s))
    out += _pair("telemetry_stale", "SandboxFleetTelemetryStale", ts, stale,
                 ("no rollout has finished for {{ $value | humanizeDuration }}",) * 2,
                 "The exported telemetry stopped: the exporter, the trainer or the fleet is down. Check the job "
                 "that runs sandbox-fleet check --metrics-out, then the trainer.")
    out.append(Rule("metrics_absent", "SandboxFleetMetricsAbsent", "critical", f"absent({M['rollouts']})",
                    t.metrics_absent.for_s, "no sandbox_fleet metrics reach Prometheus",
                    "Every other sandbox-fleet alert is silent while the metrics are missing: check that the "
                    "textfile is in the collector's folder, that the Pushgateway still holds the group, and that "
                    "the target is scraped (up == 1)."))
    return out


def _signal(t: Thresholds) -> list[Rule]:
    ig, es = t.informative_groups, t.exceptions_scored_as_rewards
    out = _pair("informative_groups", "SandboxFleetInformativeGroups", ig, _below(M["informative_group_ratio"], ig),
                ("{{ $value | humanizePercentage }} of rollout groups carry a learning signal",) * 2,
                "Groups whose rollouts all pass, all fail or mostly raise teach a group-based RL step nothing, and "
                "dynamic sampling re-samples them: drop tasks that never or always pass, and fix what raises.")
    out += _pair("exceptions_scored_as_rewards", "SandboxFleetExceptionsScoredAsRewards", es,
                 _above(M["exceptions_scored_zero_ratio"], es),
                 ("{{ $value | humanizePercentage }} of rewarded rollouts are exceptions scored as failures",) * 2,
                 "Preemptions and infrastructure failures fed to the trainer as zero rewards bias the update: "
                 "mask them out of the group instead.")
    return out


NOT_EXPRESSED = (
    ("exception_rate_by_task", "needs per-task rates, min_rows and a binomial chance filter (max_chance) over "
     "thousands of tasks: check computes it and exports sandbox_fleet_tasks_failing / sandbox_fleet_tasks_warning"),
    ("exception_rate_by_node", "the rate band is PromQL, the binomial chance filter (max_chance over the nodes "
     "judged) is not: check computes it and exports sandbox_fleet_node_beyond_chance"),
    ("sweep_self_check", "compares two figures against rel_tolerance inside one measurement: check computes it "
     "and exports sandbox_fleet_sweep_self_check_ok"),
    ("backtest_drift", "reads a backtest summary (check --backtest), a one-off study of the history rather than "
     "a live series: no metric and no alert"),
    ("lifetime_below_budget", "reads the plan's lifetime lint (plan --budgets), configuration rather than a live "
     "series: no metric and no alert"),
    ("creation_rate_saturated", "reads measure's creation-rate plateau and the plan's creation ramp, a study of the "
     "history rather than a live series: no metric and no alert"),
)


def rules(t: Thresholds) -> list[Rule]:
    """Every alerting rule for the thresholds, in gate order (disabled gates left out)."""
    out = _sample_and_exceptions(t) + _coverage(t) + _capacity(t) + _plan_and_health(t) + _signal(t)
    return [r for r in out if getattr(t, r.gate).enabled]


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON string syntax is valid YAML)."""
    import json

    return json.dumps(text, ensure_ascii=False)


#: Prometheus's duration units, largest first; y and w only when they divide the duration exactly (as
#: Prometheus's own ``model.Duration.String`` writes them: 90d, not 12w6d)
_UNITS = (("y", 365 * 86_400_000, True), ("w", 7 * 86_400_000, True), ("d", 86_400_000, False),
          ("h", 3_600_000, False), ("m", 60_000, False), ("s", 1000, False), ("ms", 1, False))


def duration(seconds: float) -> str:
    """``seconds`` as Prometheus writes a duration: 900 -> ``15m``, 5400 -> ``1h30m``, 1.5 -> ``1s500ms``."""
    ms = round(seconds * 1000)
    if ms == 0:
        return "0s"
    out = ""
    for unit, size, exact in _UNITS:
        if (exact and ms % size) or ms < size:
            continue
        out += f"{ms // size}{unit}"
        ms %= size
    return out


#: where each alert's runbook is: a heading of this page named after the alert (its GitHub anchor)
RUNBOOK_PAGE = "docs/operate.md"


def runbook_url(alert: str, base: str = "") -> str:
    """The alert's runbook: ``docs/operate.md#<alert in lower case>``, after ``base`` (where the
    repository's docs are served; empty: a path relative to the repository)."""
    return f"{base.rstrip('/') + '/' if base else ''}{RUNBOOK_PAGE}#{alert.lower()}"


def _group_lines(name: str, group: list[Rule], runbook_base: str = "") -> list[str]:
    lines = [f"  - name: {_q(name)}", "    rules:"]
    for r in group:
        lines += [
            f"      - alert: {r.alert}",
            f"        expr: {_q(r.expr)}",
            f"        for: {duration(r.for_s)}",
            "        labels:",
            f"          severity: {r.severity}",
            f"          gate: {r.gate}",
            "        annotations:",
            f"          summary: {_q(r.summary)}",
            f"          description: {_q(r.description)}",
            f"          runbook_url: {_q(runbook_url(r.alert, runbook_base))}",
        ]
    return lines


def rules_yaml(t: Thresholds, source: str = "sandbox_fleet/data/checks.toml",
               serving: tuple[str, list[Rule], str] | None = None, runbook_base: str = "") -> str:
    """The rules file: a header comment, then the group of alerting rules on sandbox-fleet's own
    metrics, and with ``serving`` = (group name, rules, basis) a group on the serving pool's. Each rule's
    ``runbook_url`` is its heading in ``docs/operate.md``, after ``runbook_base`` when given."""
    disabled = [name for name in Thresholds.model_fields if not getattr(t, name).enabled]
    head = [
        "# Prometheus alerting rules for the sandbox fleet, written by `sandbox-fleet check --prometheus-rules`.",
        f"# Thresholds and `for:` from {one_line(source)}; severity warning = the gate's warn threshold, critical = fail.",
        "# Every metric used here is written by `sandbox-fleet check --metrics-out` (textfile collector / Pushgateway).",
        f"# runbook_url: each alert's heading in {RUNBOOK_PAGE}"
        + (f" under {one_line(runbook_base)}" if runbook_base else " of the sandbox-fleet repository (relative: "
           "prefix it with where its docs are served)") + ".",
        "# Gates not expressed as a PromQL threshold (exported as a figure check computes instead):",
    ]
    head += [f"#   {gate}: {why}" for gate, why in NOT_EXPRESSED]
    if disabled:
        head.append("# Disabled in the thresholds (no rule): " + ", ".join(disabled))
    if serving is not None:
        head.append(f"# Group {serving[0]}: the serving pool's vLLM / SGLang metrics against the plan ({one_line(serving[2])}).")
    lines = head + ["groups:"] + _group_lines(GROUP, rules(t), runbook_base)
    if serving is not None:
        lines += _group_lines(serving[0], serving[1], runbook_base)
    return "\n".join(lines) + "\n"

"""The check gates for the people who run the fleet: metrics to scrape and alerting rules.

``metrics_text`` writes the measured figures in the Prometheus text exposition format;
``rules_yaml`` writes one alerting rule per gate and severity on exactly those metrics;
``grafana.dashboard_json`` writes a Grafana dashboard over those metrics;
``write_outputs`` writes any of them atomically (what ``check --metrics-out/--prometheus-rules/--grafana-dashboard`` call).
"""

from __future__ import annotations

from pathlib import Path

from sandbox_fleet import atomic
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.checks import CheckResult
from sandbox_fleet.report.prometheus.metrics import build_registry, exposition
from sandbox_fleet.report.prometheus.rules import Rule, rules, rules_yaml
from sandbox_fleet.report.prometheus.serving import GROUP as SERVING_GROUP
from sandbox_fleet.report.prometheus.serving import serving_basis
from sandbox_fleet.report.prometheus.serving import serving_rules as serving_rule_list
from sandbox_fleet.report.thresholds import Thresholds

__all__ = ["Rule", "metrics_text", "rules", "rules_yaml", "serving_basis", "serving_rule_list", "write_outputs"]


def metrics_text(measure: MeasureSummary, plan: PlanSummary | None, results: list[CheckResult],
                 thresholds: Thresholds) -> str:
    """The summary's figures (and the check-computed ones) as Prometheus text exposition."""
    return exposition(build_registry(measure, plan, results, thresholds))


def write_outputs(
    measure: MeasureSummary,
    plan: PlanSummary | None,
    results: list[CheckResult],
    thresholds: Thresholds,
    *,
    metrics_out: str | Path | None = None,
    rules_out: str | Path | None = None,
    thresholds_source: str = "sandbox_fleet/data/checks.toml",
    serving_rules: bool = False,
    dashboard_out: str | Path | None = None,
) -> list[Path]:
    """Write the metrics, rules and/or dashboard files (each atomically); returns the paths written.

    ``serving_rules`` adds the serving-pool group (:mod:`.serving`) to the rules, from ``plan``.
    """
    serving = None
    if serving_rules:
        if plan is None or rules_out is None:
            raise InputError("`serving_rules` needs `plan` (its thresholds) and `prometheus_rules` (the file)")
        serving = (SERVING_GROUP, serving_rule_list(plan), serving_basis(plan).basis)
    written = []
    if metrics_out is not None:
        written.append(atomic.write_text(metrics_out, metrics_text(measure, plan, results, thresholds)))
    if rules_out is not None:
        written.append(atomic.write_text(rules_out, rules_yaml(thresholds, thresholds_source, serving)))
    if dashboard_out is not None:
        from sandbox_fleet.report.prometheus.grafana import dashboard_json

        written.append(atomic.write_text(dashboard_out, dashboard_json(thresholds)))
    return written

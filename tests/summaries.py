"""Test-side adapters between the stages' models and the JSON dicts tests build and compare.

The stages hand each other models (``MeasureSummary``, ``PlanSummary``...); many tests edit a JSON
document (drop a figure, change a count) or compare JSON values, so these take either form and give
the one the test needs. Parsing goes through ``contract.parse``, as a file read at the edge would.
"""

from __future__ import annotations

from typing import Any

from sandbox_fleet import contract


def as_measure(doc: Any):
    """``doc`` (a measure summary's JSON dict, or the model) as ``MeasureSummary``."""
    from sandbox_fleet.measure.model import MeasureSummary

    return contract.parse(MeasureSummary, doc, "test measure summary")


def as_plan(doc: Any):
    """``doc`` (a plan's JSON dict, or the model) as ``PlanSummary``; None stays None."""
    from sandbox_fleet.plan.model import PlanSummary

    return None if doc is None else contract.parse(PlanSummary, doc, "test plan")


def as_simulate(doc: Any):
    from sandbox_fleet.simulate.model import SimulateSummary

    return None if doc is None else contract.parse(SimulateSummary, doc, "test simulate summary")


def as_backtest(doc: Any):
    from sandbox_fleet.backtest.model import BacktestSummary

    return None if doc is None else contract.parse(BacktestSummary, doc, "test backtest summary")


def measure_json(telemetry, **options) -> dict:
    """``measure_telemetry`` as the JSON ``measure --json`` writes."""
    from sandbox_fleet.measure import measure_telemetry

    return measure_telemetry(telemetry, **options).to_json()


def paths_json(paths, **options) -> dict:
    """``measure_paths`` as the JSON ``measure --json`` writes (reader flags as ``make_options`` takes them)."""
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.telemetry.options import make_options

    flags = {k: options.pop(k) for k in ("fmt", "column_map", "time_unit", "assume_tz", "reward_key", "score",
                                         "latest_time", "allow_any_time") if k in options}
    return measure_paths(paths, read=make_options(**flags) if flags else None, **options).to_json()


def plan_json(summary, opts=None, **kw) -> dict:
    """``make_plan`` of a measure summary (dict or model) as the JSON ``plan --json`` writes."""
    from sandbox_fleet.plan import make_plan

    return make_plan(as_measure(summary), opts, **kw).to_json()


def checks_of(measure, plan=None, thresholds=None, backtest=None, simulate=None):
    """``run_checks`` on summaries given as dicts or models."""
    from sandbox_fleet.report.checks import run_checks

    return run_checks(as_measure(measure), as_plan(plan), thresholds, as_backtest(backtest), simulate=as_simulate(simulate))


def _parsed(measure, plan=None, simulate=None, optimize=None, backtest=None, previous=None) -> dict:
    from sandbox_fleet.optimize.model import OptimizeSummary

    return {"measure": as_measure(measure), "plan": as_plan(plan), "simulate": as_simulate(simulate),
            "optimize": None if optimize is None else contract.parse(OptimizeSummary, optimize, "test optimize summary"),
            "backtest": as_backtest(backtest), "previous": as_plan(previous)}


def report_html(measure, plan=None, simulate=None, title=None, thresholds=None, optimize=None, backtest=None,
                previous=None) -> str:
    """``build_report`` on summaries given as dicts or models."""
    from sandbox_fleet.report.html import DEFAULT_TITLE, build_report

    return build_report(**_parsed(measure, plan, simulate, optimize, backtest, previous),
                        title=DEFAULT_TITLE if title is None else title, thresholds=thresholds)


def report_file(path, measure, plan=None, simulate=None, title=None, thresholds=None, optimize=None, backtest=None,
                previous=None):
    """``write_report`` on summaries given as dicts or models."""
    from sandbox_fleet.report.html import DEFAULT_TITLE, write_report

    return write_report(path, **_parsed(measure, plan, simulate, optimize, backtest, previous),
                        title=DEFAULT_TITLE if title is None else title, thresholds=thresholds)


def metrics_of(measure, plan, results, thresholds) -> str:
    """``prometheus.metrics_text`` on summaries given as dicts or models."""
    from sandbox_fleet.report.prometheus import metrics_text

    return metrics_text(as_measure(measure), as_plan(plan), results, thresholds)


def outputs_of(measure, plan, results, thresholds, **kw):
    """``prometheus.write_outputs`` on summaries given as dicts or models."""
    from sandbox_fleet.report.prometheus import write_outputs

    return write_outputs(as_measure(measure), as_plan(plan), results, thresholds, **kw)

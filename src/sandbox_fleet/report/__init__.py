"""report stage: a self-contained HTML report and CI gates on `measure --json` summaries.

- :func:`build_report` / :func:`write_report`: one offline HTML page with Plotly charts.
- :func:`run_checks`: named checks for the source document's failure modes, with thresholds
  from ``sandbox_fleet/data/checks.toml`` (overridable with :func:`load_thresholds`).
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "CHECKS": "sandbox_fleet.report.checks",
    "CheckResult": "sandbox_fleet.report.checks",
    "exit_code": "sandbox_fleet.report.checks",
    "run_checks": "sandbox_fleet.report.checks",
    "worst_status": "sandbox_fleet.report.checks",
    "DEFAULT_TITLE": "sandbox_fleet.report.html",
    "build_report": "sandbox_fleet.report.html",
    "write_report": "sandbox_fleet.report.html",
    "load_measure": "sandbox_fleet.report.inputs",
    "load_plan": "sandbox_fleet.report.inputs",
    "load_simulate": "sandbox_fleet.report.inputs",
    "Thresholds": "sandbox_fleet.report.thresholds",
    "load_thresholds": "sandbox_fleet.report.thresholds",
}

__all__ = [
    "CHECKS",
    "DEFAULT_TITLE",
    "CheckResult",
    "Thresholds",
    "build_report",
    "exit_code",
    "load_measure",
    "load_plan",
    "load_simulate",
    "load_thresholds",
    "run_checks",
    "worst_status",
    "write_report",
]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

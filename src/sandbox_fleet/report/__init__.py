"""report stage: a self-contained HTML report and CI gates on `measure --json` summaries.

- :func:`build_report` / :func:`write_report`: one offline HTML page with Plotly charts.
- :func:`run_checks`: named checks for the source document's failure modes, with thresholds
  from ``sandbox_fleet/data/checks.toml`` (overridable with :func:`load_thresholds`).
"""

from sandbox_fleet.report.checks import CHECKS, CheckResult, exit_code, run_checks, worst_status
from sandbox_fleet.report.html import DEFAULT_TITLE, build_report, write_report
from sandbox_fleet.report.inputs import load_measure, load_plan, load_simulate
from sandbox_fleet.report.thresholds import Thresholds, load_thresholds

__all__ = [
    "CHECKS",
    "CheckResult",
    "DEFAULT_TITLE",
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

"""CI gates on a `measure --json` summary: one named check per failure mode of the source document.

Each check reads the figures it needs off the models; when they are not measured (None) it reports ``skip`` with the
reason, so a partial summary still gates on what it does carry. The checks live by theme in
``coverage``, ``cache``, ``exceptions`` and ``capacity``; ``result`` holds what they return.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.report.checks.cache import prefix_cache_off
from sandbox_fleet.report.checks.capacity import (
    build_share,
    cap_below_configured,
    cap_binding,
    cap_recorded,
    duty_cycle,
    hold_tail,
    plan_covers_peak,
    sandbox_hours_per_pass,
    sweep_self_check,
)
from sandbox_fleet.report.checks.coverage import (
    missing_reward,
    missing_tokens,
    missing_trajectory,
    missing_turns,
    rejected_rows,
    small_sample,
)
from sandbox_fleet.report.checks.exceptions import (
    TASKS_NAMED,
    binomial_tail,
    exception_rate,
    exception_rate_by_job,
    exception_rate_by_model,
    exception_rate_by_node,
    exception_rate_by_task,
)
from sandbox_fleet.report.checks.limits import creation_rate_saturated, lifetime_below_budget
from sandbox_fleet.report.checks.result import (
    Check,
    CheckResult,
    Status,
    exit_code,
    worst_status,
)
from sandbox_fleet.report.checks.signal import exceptions_scored_as_rewards, informative_groups
from sandbox_fleet.report.checks.simulation import simulation_steady
from sandbox_fleet.report.thresholds import Section, Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.backtest.model import BacktestSummary
    from sandbox_fleet.plan.model import PlanSummary
    from sandbox_fleet.simulate.model import SimulateSummary

__all__ = [
    "CHECKS", "TASKS_NAMED", "Check", "CheckResult", "Status", "binomial_tail", "build_share",
    "cap_below_configured", "cap_binding", "cap_recorded", "duty_cycle", "exception_rate", "exception_rate_by_job",
    "exception_rate_by_model", "exception_rate_by_node", "exception_rate_by_task", "exceptions_scored_as_rewards",
    "exit_code", "hold_tail", "informative_groups", "missing_reward",
    "missing_tokens", "missing_trajectory", "missing_turns", "plan_covers_peak", "prefix_cache_off",
    "rejected_rows", "run_checks", "sandbox_hours_per_pass", "simulation_steady", "small_sample", "sweep_self_check",
    "worst_status",
]

#: Every check, in report order; the thresholds section of each has the same name.
CHECKS: tuple[Check, ...] = (
    small_sample,
    prefix_cache_off,
    exception_rate,
    exception_rate_by_model,
    exception_rate_by_job,
    exception_rate_by_task,
    exception_rate_by_node,
    missing_reward,
    missing_tokens,
    missing_turns,
    missing_trajectory,
    rejected_rows,
    cap_binding,
    cap_recorded,
    cap_below_configured,
    duty_cycle,
    hold_tail,
    sandbox_hours_per_pass,
    build_share,
    plan_covers_peak,
    sweep_self_check,
    lifetime_below_budget,
    creation_rate_saturated,
    informative_groups,
    exceptions_scored_as_rewards,
)


def run_checks(measure: MeasureSummary, plan: PlanSummary | None = None,
               thresholds: Thresholds | None = None, backtest: BacktestSummary | None = None,
               simulate: SimulateSummary | None = None) -> list[CheckResult]:
    """Run every check on a measure summary (and a plan if given), as their models.

    A figure a summary does not carry gives ``skip``, never an exception; a check disabled in the
    thresholds also skips. ``backtest`` (a backtest summary) adds the drift gate last.
    With a simulate summary, ``simulation_steady`` follows: an unstable run fails.
    """
    t = thresholds if thresholds is not None else Thresholds.default()
    results = []
    for check in CHECKS:
        section: Section = getattr(t, check.__name__)
        if not section.enabled:
            results.append(CheckResult(check.__name__, "skip", None, None, "disabled in thresholds"))
        else:
            results.append(check(measure, plan, t))
    if backtest is not None:
        from sandbox_fleet.report.checks.backtest import backtest_drift

        results.append(backtest_drift(backtest, t))
    if simulate is not None:
        results.append(simulation_steady(simulate))
    return results

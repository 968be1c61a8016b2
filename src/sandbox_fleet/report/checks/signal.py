"""Signal gates (issue 40): the share of rollout groups a group-based RL step can learn from, and
exceptions the harness scored as rewards (measure's ``rl_groups``; docs/measure.md#rollout-groups-and-signal)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_fleet.measure.model import MeasureSummary, RlGroups
from sandbox_fleet.report.checks.result import CheckResult, band_above, band_below, pct, skipped
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def informative_share(rg: RlGroups) -> tuple[float | None, str]:
    """The share the gate reads and what it is: the recorded groups' when any are recorded, else the
    binomial expression's at ``rl_groups.group_size`` (one rule for check and its exported metric)."""
    if rg.recorded and as_num(rg.informative_share) is not None:
        return as_num(rg.informative_share), f"of {rg.groups:,} recorded groups"
    return as_num(rg.expected_informative_share), f"expected for groups of {rg.group_size} (none recorded)"


def informative_groups(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "informative_groups"
    rg = m.rl_groups
    if rg is None:
        return skipped(name, "no 'rl_groups' (a summary older than schema 7)")
    share, what = informative_share(rg)
    if share is None:
        return skipped(name, "no groups and no per-task pass probabilities ('rl_groups')")
    status, bound = band_below(share, t.informative_groups)
    parts = [f"{pct(share)} of groups carry signal ({what})"]
    if share > 0:
        parts.append(f"dynamic sampling draws {1 / share:.2f} groups per informative one")
    if rg.recorded and rg.all_fail_share is not None:
        parts.append(f"all fail {pct(rg.all_fail_share)}, all pass {pct(rg.all_pass_share or 0.0)}, "
                     f"too few valid {pct(rg.too_few_valid_share or 0.0)}")
    advice = "; drop tasks that never or always pass, and fix what raises" if status != "pass" else ""
    return CheckResult(name, status, share, bound, "; ".join(parts) + advice)


def exceptions_scored_as_rewards(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "exceptions_scored_as_rewards"
    rg = m.rl_groups
    share = as_num(rg.exceptions_scored_zero_share) if rg is not None else None
    if rg is None or share is None:
        return skipped(name, "no 'rl_groups.exceptions_scored_zero_share' (no row carries a reward)")
    status, bound = band_above(share, t.exceptions_scored_as_rewards)
    text = (f"{rg.exceptions_scored_zero:,} exception rows carry a failing reward ({pct(share)} of rewarded rows): "
            "a trainer fed them learns from crashes, not from the policy")
    if status != "pass":
        text += "; mask exceptions and preemptions out of the group instead of scoring them 0"
    return CheckResult(name, status, share, bound, text)

"""Coverage checks: enough rows, and how many rows lack a field or were rejected on input."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from sandbox_fleet.measure.model import Coverage, MeasureSummary
from sandbox_fleet.report.checks.result import (
    Check,
    CheckResult,
    band_above,
    pct,
    skipped,
)
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def small_sample(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name, rows = "small_sample", as_num(m.rows)
    if rows is None:
        return skipped(name, "no row count ('rows')")
    limit = t.small_sample.min_rows
    if rows < limit:
        return CheckResult(name, "warn", rows, limit,
                           f"only {rows:,.0f} rows: percentiles and rates over fewer than {limit} rows are noise")
    return CheckResult(name, "pass", rows, limit, f"{rows:,.0f} rows measured")


_MISSING_LABEL = {"reward": "reward", "tokens": "token counts", "turns": "turn count", "trajectory": "trajectory"}
_MISSING_WHY = {
    "reward": "completion is not success, so these rollouts cannot count as useful",
    "tokens": "token rates describe the other rows only",
    "turns": "the context-growth fit describes the other rows only",
    "trajectory": "these rollouts cannot be inspected or trained on",
}

#: each ``missing_<field>`` check's count, read off the coverage block
_MISSING_COUNT: dict[str, Callable[[Coverage], int | None]] = {
    "reward": lambda c: c.missing_reward,
    "tokens": lambda c: c.missing_tokens,
    "turns": lambda c: c.missing_turns,
    "trajectory": lambda c: c.missing_trajectory,
}


def _missing(field: str) -> Check:
    """The check that ``field`` is present on enough rows, named ``missing_<field>``."""
    def check(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
        name = f"missing_{field}"
        cov = m.coverage or Coverage()
        count, rows = as_num(_MISSING_COUNT[field](cov)), as_num(m.rows)
        if count is None or not rows:
            return skipped(name, f"no 'coverage.missing_{field}' or row count")
        if field == "trajectory" and as_num(cov.unknown_trajectory) == rows:
            return skipped(name, "the telemetry does not say whether a trajectory is attached")
        share = count / rows
        status, bound = band_above(share, getattr(t, name))
        return CheckResult(name, status, share, bound,
                           f"{count:,.0f} of {rows:,.0f} rows ({pct(share)}) carry no {_MISSING_LABEL[field]}"
                           + (f": {_MISSING_WHY[field]}" if status != "pass" else ""))

    check.__name__ = f"missing_{field}"
    return check


missing_reward = _missing("reward")
missing_tokens = _missing("tokens")
missing_turns = _missing("turns")
missing_trajectory = _missing("trajectory")


def rejected_rows(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "rejected_rows"
    reasons = m.coverage.rejected if m.coverage is not None else None
    rows = as_num(m.rows)
    if reasons is None or rows is None:
        return skipped(name, "no 'coverage.rejected' or row count")
    counts = {str(k): as_num(v) or 0.0 for k, v in reasons.items()}
    total = sum(counts.values())
    share = total / (rows + total) if rows + total else 0.0
    status, bound = band_above(share, t.rejected_rows)
    detail = ", ".join(f"{k} {v:,.0f}" for k, v in sorted(counts.items()) if v)
    return CheckResult(name, status, share, bound,
                       f"{total:,.0f} input rows rejected ({pct(share)})" + (f": {detail}" if detail else ""))

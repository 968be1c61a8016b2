"""What a check returns, how results combine into an exit code, and the helpers every check shares."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Literal, Optional

from sandbox_fleet.report.thresholds import Above, Below, Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.plan.model import PlanSummary

Status = Literal["pass", "warn", "fail", "skip"]
#: Severity order of the statuses; the worst one decides a group's status.
RANK: dict[Status, int] = {"skip": 0, "pass": 1, "warn": 2, "fail": 3}


@dataclass(frozen=True)
class CheckResult:
    """Outcome of one check: the value read, the bound it was held to, and what to do about it."""

    name: str
    status: Status
    value: float | None
    threshold: float | None
    message: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: A check reads a measure summary, an optional plan summary (both as their models) and the thresholds.
Check = Callable[["MeasureSummary", "Optional[PlanSummary]", Thresholds], CheckResult]


def pct(x: float) -> str:
    return f"{x:.1%}"


def hours(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:.3g}"


def band_above(value: float, band: Above) -> tuple[Status, float | None]:
    """Status of ``value`` against an upper band and the bound that decided it. A figure that is not
    a finite number fails (NaN compares false with every bound: a gate must never pass on it)."""
    if not math.isfinite(value):
        return "fail", band.fail_above if band.fail_above is not None else band.warn_above
    if band.fail_above is not None and value > band.fail_above:
        return "fail", band.fail_above
    if band.warn_above is not None and value > band.warn_above:
        return "warn", band.warn_above
    return "pass", band.warn_above if band.warn_above is not None else band.fail_above


def band_below(value: float, band: Below) -> tuple[Status, float | None]:
    """Status of ``value`` against a lower band; a figure that is not a finite number fails."""
    if not math.isfinite(value):
        return "fail", band.fail_below if band.fail_below is not None else band.warn_below
    if band.fail_below is not None and value < band.fail_below:
        return "fail", band.fail_below
    if band.warn_below is not None and value < band.warn_below:
        return "warn", band.warn_below
    return "pass", band.warn_below if band.warn_below is not None else band.fail_below


def skipped(name: str, why: str) -> CheckResult:
    return CheckResult(name, "skip", None, None, f"not measured: {why}")


def exit_code(results: list[CheckResult], strict: bool = False) -> int:
    """0 when nothing fails (warnings allowed unless ``strict``), else 1."""
    statuses = {r.status for r in results}
    if "fail" in statuses or (strict and "warn" in statuses):
        return 1
    return 0


def worst_status(results: list[CheckResult]) -> Status:
    """The most severe status among ``results`` (``skip`` when empty)."""
    return max((r.status for r in results), key=RANK.__getitem__, default="skip")

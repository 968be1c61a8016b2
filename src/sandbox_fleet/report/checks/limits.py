"""Provider and harness limit gates: a lifetime below the budget, a saturated creation rate (docs/providers.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.report.checks.result import CheckResult, band_above, pct, skipped
from sandbox_fleet.report.thresholds import Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import CreationRampFit, PlanSummary


def lifetime_below_budget(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    """The plan's lifetime lint (``plan --budgets``): fail on a failure shape, warn on headroom alone.

    The value is the budget in the lifetime, with headroom, over the lifetime (above 1: it does not fit).
    """
    name = "lifetime_below_budget"
    lint = plan.limits.lifetime if plan is not None and plan.limits is not None else None
    if lint is None:
        return skipped(name, "no lifetime lint: plan with --budgets FILE")
    if lint.lifetime_s is None:
        return skipped(name, "no sandbox lifetime: set lifetime_s in the budgets file or name a provider with one")
    ratio = float(lint.in_lifetime_s or 0.0) * (1.0 + float(lint.headroom or 0.0)) / lint.lifetime_s
    findings = lint.findings or []
    failing = [f for f in findings if f.severity == "fail"]
    if failing:
        shapes = ", ".join(dict.fromkeys(f.shape or "?" for f in failing))
        return CheckResult(name, "fail", ratio, 1.0, f"{shapes}: {failing[0].message}")
    if findings:
        return CheckResult(name, "warn", ratio, 1.0, findings[0].message or "")
    return CheckResult(name, "pass", ratio, 1.0, f"start to verifier fit the {lint.lifetime_s:,.0f}-s lifetime with "
                                                 f"{float(lint.headroom or 0):.0%} headroom, and the rollout timeout covers boot")


def _ramp_share(r: CreationRampFit) -> Optional[float]:
    """The step share a ramp is judged on: the expected lengthening where the plan fitted holds."""
    return r.expected_step_share if r.expected_step_share is not None else r.mean_step_share


def creation_rate_saturated(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    """A creation-rate ceiling the history shows (warn), or a plan whose best priced provider's creation
    ramp lengthens the step by more than the band: its expected lengthening over the fitted holds as a
    share of the step, or, without a hold fit, its mean start delay (the lengthening if the step's last
    finisher were any rollout alike)."""
    name = "creation_rate_saturated"
    band = t.creation_rate_saturated
    creation = m.limits.creation if m.limits is not None else None
    ramps: list[tuple[float, str | None, str | None]] = []
    if plan is not None and plan.limits is not None:
        priced = set((plan.cost.rent or {}) if plan.cost is not None else {})
        shares = [(_ramp_share(f.ramp), f.provider, f.ramp.basis) for f in plan.limits.fits or []
                  if f.ramp is not None and (not priced or f.provider in priced)]
        ramps = [(sh, pv, bs) for sh, pv, bs in shares if sh is not None]
    if ramps:
        share, provider, basis = min(ramps, key=lambda r: (r[0], str(r[1])))
        status, bound = band_above(share, band)
        if status == "pass" and creation is not None and creation.detected:
            return CheckResult(name, "warn", share, band.warn_above, f"the history shows {creation.basis}")
        return CheckResult(name, status, share, bound,
                           f"best priced provider {provider}: {basis}" if status != "pass" else
                           f"{provider}'s creation ramp adds {pct(share)} of the step, expected")
    if creation is None or creation.detected is None:
        return skipped(name, "no 'limits.creation' in the summary and no creation ramp in a plan")
    if creation.detected:
        return CheckResult(name, "warn", creation.rate_per_s, None,
                           f"{creation.basis}: every start beyond it waits, and a released batch ramps at that rate")
    return CheckResult(name, "pass", None, None, "no creation-rate ceiling in the history")

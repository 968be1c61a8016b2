"""Capacity checks: concurrency caps, duty cycle, hold tail, cost per pass, build time, plan vs peak."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_fleet.measure.batchcap import cut_release, time_at_cap
from sandbox_fleet.measure.model import Concurrency, Holds, MeasureSummary, Outcomes, SelfCheck
from sandbox_fleet.report.checks.result import (
    RANK,
    CheckResult,
    band_above,
    band_below,
    hours,
    pct,
    skipped,
)
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def _scopes(m: MeasureSummary) -> list[tuple[str, Concurrency, float | None]]:
    """(label, concurrency block, span) for the fleet, then each job (``by_job.NAME.concurrency``) by name."""
    scopes = [("fleet", m.concurrency or Concurrency(), as_num(m.span_s))]
    for job, entry in sorted((m.by_job or {}).items(), key=lambda kv: str(kv[0])):
        conc = entry.concurrency or Concurrency()
        scopes.append((f"job {job}", conc, as_num(conc.span_s)))
    return scopes


def cap_binding(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "cap_binding"
    scopes = _scopes(m)
    found: list[tuple[int, float, str, float, float | None]] = []
    for label, conc, span in scopes:
        detected = conc.cap_detected
        at_peak, cap = (as_num(v) for v in time_at_cap(conc))  # jobs overlapping: their summed cap
        if detected is not True or at_peak is None or not span:
            continue
        share = at_peak / span
        status, _ = band_above(share, t.cap_binding)
        found.append((RANK[status], share, label, cap or 0.0, as_num(conc.touches)))
    if not found:
        if not any(conc.cap_detected is not None for _, conc, _ in scopes):
            return skipped(name, "no 'concurrency.cap_detected'")
        if not any(conc.cap_detected is True for _, conc, _ in scopes):
            return CheckResult(name, "pass", None, t.cap_binding.warn_above, "no cap detected: the fleet never sat at a ceiling")
        return skipped(name, "cap detected but time at cap or span not measured")
    worst = max(found, key=lambda s: (s[0], s[1]))
    status = next(k for k, v in RANK.items() if v == worst[0])
    bound = t.cap_binding.fail_above if status == "fail" else t.cap_binding.warn_above
    touches = f", reached {worst[4]:,.0f} separate times" if worst[4] is not None else ""
    msg = f"{worst[2]}: cap of {worst[3]:,.0f} held for {pct(worst[1])} of the span{touches}"
    if status != "pass":
        msg += ": each time a released batch waits for slots, so the RL step waits"
    return CheckResult(name, status, worst[1], bound, msg)


def cap_recorded(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "cap_recorded"
    conc = m.concurrency or Concurrency()
    detected = conc.cap_detected
    if detected is None:
        return skipped(name, "no 'concurrency.cap_detected'")
    peak, cap = as_num(conc.peak), as_num(conc.configured_cap)
    if not detected:
        if conc.peak_is_batch:
            return CheckResult(name, "pass", cap, None, f"no cap detected: {conc.cap_basis}")
        return CheckResult(name, "pass", cap, None, "no cap detected in the data")
    if cap is None:
        return CheckResult(name, "warn", None, None,
                           f"the peak of {peak or 0:,.0f} behaves like a cap but no configured cap is recorded: "
                           "write it down, or it becomes an unexplained throughput plateau")
    return CheckResult(name, "pass", cap, None, f"configured cap {cap:,.0f} recorded")


def cap_below_configured(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    """Warn when the fleet (or a job) plateaus at a peak below its configured cap.

    The plateau counts when the time at the peak is at least ``cap_binding.warn_above`` of
    the span: another limit binds first (per-agent caps, the host, the inference pool), and
    capacity sized to the configured cap would idle. A scope with fewer rollouts than its cap
    could never reach it (one trial peaks at 1): it is too few to tell, never a plateau.
    """
    name = "cap_below_configured"
    bound = t.cap_binding.warn_above
    if bound is None:  # a loaded file always has it (the defaults set it, TOML has no null); a built Thresholds may not
        return skipped(name, "no cap_binding.warn_above to call a plateau")
    scopes = _scopes(m)
    recorded = False
    found: list[tuple[float, str, float, float]] = []
    too_few: list[str] = []
    for label, conc, span in scopes:
        cap, peak, at_peak = as_num(conc.configured_cap), as_num(conc.peak), as_num(conc.time_at_peak_s)
        if cap is None or peak is None:
            continue
        recorded = True
        if conc.effective_cap_note:
            too_few.append(f"{label}: {conc.effective_cap_note}")
            continue
        if at_peak is None or not span or peak >= cap:
            continue
        share = at_peak / span
        if share >= bound:
            found.append((share, label, peak, cap))
    if not recorded:
        return skipped(name, "no configured cap recorded")
    if not found:
        if too_few:
            return skipped(name, "; ".join(too_few[:3]))
        return CheckResult(name, "pass", None, t.cap_binding.warn_above, "no plateau below a configured cap")
    share, label, peak, cap = max(found)
    return CheckResult(name, "warn", share, t.cap_binding.warn_above,
                       f"{label}: effective cap {peak:,.0f} below the configured {cap:,.0f}, held for {pct(share)} "
                       "of the span: another limit binds first (per-agent caps, hosts or inference)")


def duty_cycle(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "duty_cycle"
    conc = m.concurrency or Concurrency()
    duty = as_num(conc.duty)
    mean, peak = as_num(conc.mean), as_num(conc.peak)
    if duty is None and mean is not None and peak:
        duty = mean / peak
    if duty is None:
        return skipped(name, "no 'concurrency.duty'")
    status, bound = band_below(duty, t.duty_cycle)
    msg = f"mean concurrency is {pct(duty)} of peak"
    if mean is not None and peak is not None:
        msg = f"mean concurrency {mean:,.1f} is {pct(duty)} of peak {peak:,.0f}"
    if status != "pass":
        msg += (f": capacity bought at peak idles {pct(1 - duty)} of the time; buy the peak on spot/"
                "preemptible capacity, not reserved, and never size the pool to the mean")
    return CheckResult(name, status, duty, bound, msg)


def hold_tail(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "hold_tail"
    holds = m.hold_s or Holds()
    median, p99 = as_num(holds.median), as_num(holds.p99)
    if median is None or p99 is None or median <= 0:
        return skipped(name, "no 'hold_s.median' / 'hold_s.p99'")
    ratio = p99 / median
    status, bound = band_above(ratio, t.hold_tail)
    msg = f"hold p99 {p99:,.0f} s is {ratio:.1f}x the median {median:,.0f} s"
    if status != "pass":
        msg += ": admission tuned to the median stalls batches; admit against the timeout ceiling and reclaim early"
    return CheckResult(name, status, ratio, bound, msg)


def sandbox_hours_per_pass(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "sandbox_hours_per_pass"
    out = m.outcomes or Outcomes()
    value = as_num(out.sandbox_hours_per_pass)
    if value is None:
        passed, rewarded = as_num(out.passed), as_num(out.rewarded)
        if passed == 0 and rewarded:
            return CheckResult(name, "fail", None, t.sandbox_hours_per_pass.fail_above,
                               f"no rollout passed out of {rewarded:,.0f} rewarded")
        return skipped(name, "no 'outcomes.sandbox_hours_per_pass'")
    status, bound = band_above(value, t.sandbox_hours_per_pass)
    return CheckResult(name, status, value, bound, f"{hours(value)} sandbox-hours per passing rollout")


def build_share(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "build_share"
    build = (m.phases or {}).get("environment_setup")  # phases are keyed by Harbor's phase name
    share = as_num(build.share_of_hold) if build is not None else None
    if share is None:
        return skipped(name, "no phase timings ('phases.environment_setup.share_of_hold')")
    status, bound = band_above(share, t.build_share)
    msg = f"environment setup/build takes {pct(share)} of the hold"
    if status != "pass":
        msg += ": pin base images and pre-pull them"
    return CheckResult(name, status, share, bound, msg)


def plan_covers_peak(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "plan_covers_peak"
    if plan is None:
        return skipped(name, "no plan given")
    target = as_num(plan.target.concurrency)
    conc = m.concurrency or Concurrency()
    peak, mean = as_num(conc.peak), as_num(conc.mean)
    if target is None or peak is None:
        return skipped(name, "no 'target.concurrency' in the plan or no measured peak")
    via = f" ({plan.target.source})"
    if mean is not None and target < mean:
        return CheckResult(name, "fail", target, mean,
                           f"planned concurrency {target:,.0f}{via} is below the measured mean {mean:,.1f}: "
                           "the fleet cannot keep up")
    demand = hidden_demand(m, plan)
    if demand is not None:
        need, what = demand
        if target < need:
            return CheckResult(name, "warn", target, need,
                               f"planned concurrency {target:,.0f}{via} is below {what}: buying the cap buys the "
                               "old queue (every release waits for slots)")
        return CheckResult(name, "pass", target, need, f"planned concurrency {target:,.0f}{via} covers {what}")
    if target < peak:
        return CheckResult(name, "warn", target, peak,
                           f"planned concurrency {target:,.0f}{via} is below the measured peak {peak:,.0f}: a pool "
                           "built below peak turns every batched step into a queue")
    return CheckResult(name, "pass", target, peak, f"planned concurrency {target:,.0f}{via} covers the peak {peak:,.0f}")


def hidden_demand(m: MeasureSummary, plan: PlanSummary) -> tuple[float, str] | None:
    """What a plan must cover when the peak is a binding cap: the plan's own estimate of the demand
    the cap hid, else the release the cap cut (from the steps measure found), else None (the peak)."""
    c = plan.target.censored
    if c is not None and c.demand is not None:
        bound = "at least " if c.demand_is_lower_bound else ""
        release = f", releases of {c.release:,}" if c.release else ""
        if c.demand_below_cap:  # a loose cap hid nothing: the step needs fewer slots than it
            return float(c.demand), f"the demand below the loose cap {c.cap or 0:,} ({c.demand:,}{release})"
        return float(c.demand), f"the demand the cap {c.cap or 0:,} hid ({bound}{c.demand:,}{release})"
    cut = cut_release(m)
    if cut is not None:
        peak = as_num((m.concurrency or Concurrency()).peak) or 0.0
        run = f" of run {cut.run}" if cut.run else ""
        return float(cut.batch), f"the release of {cut.batch:,}{run} that the cap {peak:,.0f} cut (the demand it hid)"
    return None


def sweep_self_check(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name = "sweep_self_check"
    check = (m.concurrency.self_check if m.concurrency is not None else None) or SelfCheck()
    verdict = check.ok
    if verdict is not None:
        return CheckResult(name, "pass" if verdict else "fail", None, None,
                           "area under the concurrency curve equals the sum of holds" if verdict
                           else "area under the concurrency curve differs from the sum of holds: a sweep bug")
    area = as_num(check.area_s)
    holds = as_num(check.sum_of_holds_s)
    if holds is None:
        holds = as_num(m.sandbox_s)
    if area is None or holds is None:
        return skipped(name, "no 'concurrency.self_check' (ok, or area_s with sum_of_holds_s or sandbox_s)")
    rel = abs(area - holds) / max(abs(holds), 1e-12)
    tol = t.sweep_self_check.rel_tolerance
    ok = rel <= tol
    return CheckResult(name, "pass" if ok else "fail", rel, tol,
                       f"area {area:,.1f} s vs sum of holds {holds:,.1f} s (relative difference {rel:.2e})")

"""The check a simulation must pass before its figures are read: it reached a steady state."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_fleet.report.checks.result import CheckResult, skipped

if TYPE_CHECKING:
    from sandbox_fleet.simulate.model import SimulateSummary


def simulation_steady(sim: SimulateSummary) -> CheckResult:
    """Fail an unstable run (its figures grow with the run's length), warn on a short one."""
    name = "simulation_steady"
    st = sim.steady_state
    if st is None or st.stable is None:
        return skipped(name, "no 'steady_state' in the simulate summary (made before schema version 4)")
    load = max((st.offered_load or {}).values(), default=None)
    if st.stable is False:
        return CheckResult(name, "fail", load, 1.0 if load is not None and load >= 1 else None, f"unstable: {st.reason}")
    if st.short_run:
        return CheckResult(name, "warn", st.holds_per_sandbox, float(st.min_holds_per_sandbox or 0),
                           "; ".join(st.warnings or []) or "short run")
    return CheckResult(name, "pass", load, None, st.reason or "stable")

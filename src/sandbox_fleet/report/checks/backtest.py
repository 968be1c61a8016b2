"""``check --backtest FILE``: the drift gate. Fails when a backtest found the constants moved
between the calibration and the predicted part of the history, or when the simulator's makespan
error on that history is beyond the bounds (a plan simulated on these constants would be off too)."""

from __future__ import annotations

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.report.checks.result import RANK, CheckResult, band_above, pct
from sandbox_fleet.report.thresholds import Thresholds

NAME = "backtest_drift"


def backtest_drift(bt: BacktestSummary, t: Thresholds) -> CheckResult:
    cfg = t.backtest_drift
    if not cfg.enabled:
        return CheckResult(NAME, "skip", None, None, "disabled in thresholds")
    moved = [x.quantity + (f" of {x.model}" if x.model else "") for x in bt.drift.tests if x.drifted]
    drift_status = cfg.drifted if bt.drift.detected else "pass"
    drift_txt = f"constants drifted: yes ({', '.join(moved)})" if moved else "constants drifted: no"
    mk = bt.figures.get("makespan_s")
    if mk is None or mk.error is None:  # fails closed: a backtest that could not measure the error vouches for nothing
        return CheckResult(NAME, "fail", None, None, f"{drift_txt}; no makespan error in the backtest, so the "
                           "simulator's error on this history is unknown (rerun backtest with more rows per part)")
    err = abs(mk.error)
    err_status, bound = band_above(err, cfg)
    status = max(drift_status, err_status, key=RANK.__getitem__)
    bound_txt = f" (bound {pct(bound)})" if bound is not None else ""
    return CheckResult(NAME, status, err, bound,
                       f"{drift_txt}; simulator makespan error on this telemetry {mk.error:+.1%}{bound_txt}, "
                       f"calibrated on part A ({bt.split.a_rows:,} of {bt.rows:,} rollouts)")

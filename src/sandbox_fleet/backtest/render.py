"""Readable backtest output: plain lines (the verdict first), so tests read what users see."""

from __future__ import annotations

from sandbox_fleet.backtest.model import BacktestSummary, Figure
from sandbox_fleet.backtest.run import signed_pct
from sandbox_fleet.textout import number


def backtest_lines(s: BacktestSummary) -> list[str]:
    sp = s.split
    how = (f"first {sp.fraction:.0%} of the rollouts in start order" + (" (moved to an RL step boundary)" if sp.moved_to_step else "")
           if sp.by == "fraction" else f"by {sp.by}: A = {', '.join(sp.a_groups)}; B = {', '.join(sp.b_groups)}")
    L = [s.verdict, "",
         f"BACKTEST of {s.rows:,} rollouts: A (calibration) {sp.a_rows:,}, B (prediction) {sp.b_rows:,}; split {how}",
         f"  B replayed on its measured peak, cap {sp.b_cap:,} (A's peak {sp.a_cap:,}); {s.seeds} runs, "
         f"{s.interval_level:.0%} prediction intervals"
         + ("" if s.interval_coverage is None or s.interval_coverage >= s.interval_level
            else f" (covering {s.interval_coverage:.1%} with {s.seeds} runs: give at least 39)")]
    if s.rejected:
        L.append("  rejected rows: " + ", ".join(f"{k} {v:,}" for k, v in sorted(s.rejected.items())))
    L += ["", f"  {'figure':<22}{'actual':>12}{'predicted':>12}{'interval':>24}{'error':>9}{'oracle':>9}"]
    for name, f in s.figures.items():
        o = s.oracle.get(name) or Figure()
        if f.predicted is None and f.actual is None:
            continue
        iv = f"[{_n(f.interval[0])}, {_n(f.interval[1])}]" if f.interval else "-"
        flag = "" if f.within_interval is not False else " *"
        L.append(f"  {name:<22}{_n(f.actual):>12}{_n(f.predicted):>12}{iv:>24}{signed_pct(f.error, '-'):>9}{signed_pct(o.error, '-'):>9}{flag}")
    L.append("  (* actual outside the interval; oracle = the same prediction calibrated on B itself)")
    d = s.drift
    L += ["", f"DRIFT: {'detected' if d.detected else 'none detected'} ({len(d.tests)} tests, {d.correction}, alpha {d.alpha:g})"]
    for t in d.tests:
        where = t.quantity + (f" [{t.model}]" if t.model else "")
        L.append(f"  {where:<28} {t.value_name} {t.a_value:.4g} -> {t.b_value:.4g}; {t.effect_name} {t.effect:+.3f} "
                 f"(floor {t.effect_floor:g}); p {t.p_adjusted:.3g} adjusted{'  DRIFTED' if t.drifted else ''}")
    for why in d.skipped:
        L.append(f"  skipped: {why}")
    L += ["", f"basis: {s.basis}"]
    return L


def _n(x: float | None) -> str:
    return number(x, ",.0f", small=".3g", below=100)

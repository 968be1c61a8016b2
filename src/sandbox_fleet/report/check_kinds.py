"""How each check's value and threshold read, one rule for check's terminal table and the report's
HTML (a share as a percentage in both: the exception rate 0.2937 is "29.4%" on either surface)."""

from __future__ import annotations

from sandbox_fleet.numfmt import figure

#: check name -> its figures' ``numfmt.figure`` kind; checks not listed use plain numbers.
CHECK_KINDS = {
    "small_sample": "int", "prefix_cache_off": "pct", "exception_rate": "pct", "exception_rate_by_model": "pct",
    "exception_rate_by_job": "pct", "exception_rate_by_task": "pct", "missing_reward": "pct", "missing_tokens": "pct", "missing_turns": "pct",
    "missing_trajectory": "pct", "rejected_rows": "pct", "cap_binding": "pct", "cap_recorded": "int",
    "cap_below_configured": "pct",
    "duty_cycle": "pct", "hold_tail": "f1", "sandbox_hours_per_pass": "f2", "build_share": "pct",
    "plan_covers_peak": "int", "lifetime_below_budget": "f2", "creation_rate_saturated": "pct",
    "informative_groups": "pct", "exceptions_scored_as_rewards": "pct", "simulation_steady": "f2",
}


def check_figure(x: float | None, name: str) -> str:
    """Check ``name``'s value or threshold ``x`` as text ("" when it has none)."""
    return "" if x is None else figure(x, CHECK_KINDS.get(name, "num"))

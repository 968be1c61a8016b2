"""The peak rate at which sandboxes are created at the target: what a warm pool and a rental
provider's creation-rate limit must absorb.

A synchronous RL step releases its whole batch within ``steps.release_spread_s``, so the peak
start rate is batch / release spread (measured, or the RL schedule's batch over the measured
spread). An open workload starts sandboxes at its arrival rate, by Little's law
target x duty / mean hold. A batch released with no measured spread starts all at once.
"""

from __future__ import annotations

import math
from typing import Optional

from sandbox_fleet.plan.summary import Figures, get


def _num(value: object) -> Optional[float]:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _measured_steps(summary: dict) -> Optional[tuple[float, float, str]]:
    """(batch, release spread s, where) of the fastest-releasing detected step structure."""
    found = []
    steps = get(summary, "steps")
    if isinstance(steps, dict) and steps.get("detected"):
        found.append((steps.get("batch_size"), steps.get("release_spread_s"), "fleet"))
    by_model = get(summary, "by_model")
    for model, entry in sorted(by_model.items()) if isinstance(by_model, dict) else []:
        st = entry.get("steps") if isinstance(entry, dict) else None
        if isinstance(st, dict) and st.get("detected"):
            found.append((st.get("batch_size"), st.get("release_spread_s"), f"model {model}"))
    usable = [(_num(b), _num(s), w) for b, s, w in found if _num(b) and _num(s) is not None]
    if not usable:
        return None
    # the peak: the largest batch over the shortest spread
    return max(usable, key=lambda x: math.inf if x[1] == 0 else x[0] / x[1])  # type: ignore[operator]


def start_rate(summary: dict, fig: Figures, target: dict, duty: Optional[float]) -> dict:
    """``{"peak_per_s", "batch", "release_spread_s", "basis"}`` at the target concurrency."""
    n = target["concurrency"]
    measured = _measured_steps(summary)
    batch = target.get("batch") if target.get("source") == "rl-schedule" else None
    if batch is not None or measured is not None:
        spread = measured[1] if measured is not None else None
        b = float(batch if batch is not None else measured[0])  # type: ignore[index]
        where = f"measured release spread ({measured[2]})" if measured is not None else "no measured release spread"
        if not spread:
            return {"peak_per_s": math.inf, "batch": b, "release_spread_s": spread,
                    "basis": f"RL step: a batch of {b:,.0f} released at once ({where})"}
        return {"peak_per_s": b / spread, "batch": b, "release_spread_s": spread,
                "basis": f"RL step: batch {b:,.0f} / release spread {spread:,.1f} s ({where})"}
    if fig.hold_mean_s and duty:
        rate = n * duty / fig.hold_mean_s
        return {"peak_per_s": rate, "batch": None, "release_spread_s": None,
                "basis": f"open workload: arrival rate by Little's law, {n:,} x duty {duty:.3f} / mean hold {fig.hold_mean_s:,.0f} s"}
    return {"peak_per_s": None, "batch": None, "release_spread_s": None, "basis": "no duty or mean hold measured"}

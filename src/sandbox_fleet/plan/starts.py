"""The peak rate at which sandboxes are created at the target: what a warm pool and a rental
provider's creation-rate limit must absorb, and the step time a creation ramp is judged against.

A synchronous RL step releases its whole batch within ``steps.release_spread_s``, so the peak
start rate is batch / release spread (measured, or the RL schedule's batch over the measured
spread). An open workload starts sandboxes at its arrival rate, by Little's law
target x duty / mean hold. A batch released with no measured spread starts all at once.

``step_s`` is the synchronous step's duration (the RL schedule's simulated mean step at the cap,
else the measured step period): a provider that creates sandboxes more slowly than the step releases
them ramps the batch up over ``batch / creates per s`` seconds, which costs step time, not feasibility.
"""

from __future__ import annotations

import math
from typing import Optional

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import Starts, Target
from sandbox_fleet.plan.summary import Figures


def _measured_steps(m: MeasureSummary) -> Optional[tuple[float, float, str, Optional[float]]]:
    """(batch, release spread s, where, step period s) of the fastest-releasing detected step structure."""
    found = [(m.steps, "fleet")] if m.steps else []
    found += [(entry.steps, f"model {model}") for model, entry in sorted((m.by_model or {}).items()) if entry.steps]
    usable = [(float(st.batch_size), float(st.release_spread_s), where,
               float(st.step_period_s) if st.step_period_s and math.isfinite(st.step_period_s) else None)
              for st, where in found
              if st.detected and st.batch_size and st.release_spread_s is not None
              and math.isfinite(st.batch_size) and math.isfinite(st.release_spread_s)]
    if not usable:
        return None
    # the peak: the largest batch over the shortest spread
    return max(usable, key=lambda x: math.inf if x[1] == 0 else x[0] / x[1])


def _step_s(target: Target, measured: Optional[tuple]) -> tuple[Optional[float], Optional[str]]:
    """The step time a creation ramp is compared with, and where it came from."""
    if target.source == "rl-schedule" and target.step_s_at_cap:
        return float(target.step_s_at_cap), "the RL schedule's simulated mean step at the cap"
    if measured is not None and measured[3]:
        return measured[3], f"measured step period ({measured[2]})"
    return None, None


def start_rate(fig: Figures, target: Target, duty: Optional[float]) -> Starts:
    """The ``starts`` block: the peak creation rate at the target and what it rests on.

    ``peak_per_s`` is null for a batch released at once (no finite rate: the whole batch starts together).
    """
    n = target.concurrency
    measured = _measured_steps(fig.summary)
    batch = target.batch if target.source == "rl-schedule" else None
    if batch is not None or measured is not None:
        spread = measured[1] if measured is not None else None
        b = float(batch if batch is not None else measured[0])  # type: ignore[index]
        where = f"measured release spread ({measured[2]})" if measured is not None else "no measured release spread"
        step_s, step_basis = _step_s(target, measured)
        if not spread:
            return Starts(peak_per_s=None, batch=b, release_spread_s=spread, step_s=step_s, step_basis=step_basis,
                          basis=f"RL step: a batch of {b:,.0f} released at once ({where})")
        return Starts(peak_per_s=b / spread, batch=b, release_spread_s=spread, step_s=step_s, step_basis=step_basis,
                      basis=f"RL step: batch {b:,.0f} / release spread {spread:,.1f} s ({where})")
    if fig.hold_mean_s and duty:
        rate = n * duty / fig.hold_mean_s
        return Starts(peak_per_s=rate, basis=f"open workload: arrival rate by Little's law, {n:,} x duty {duty:.3f} / "
                                             f"mean hold {fig.hold_mean_s:,.0f} s")
    return Starts(basis="no duty or mean hold measured")

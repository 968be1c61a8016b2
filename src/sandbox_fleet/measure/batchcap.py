"""A batch is not a cap: whether a peak reached again and again is a ceiling or one released batch.

The touches rule (``concurrency.cap_detected``) cannot tell them apart: synchronous RL reaches
its batch size once a step, a cap is reached whenever demand exceeds it. The step structure
(``steps.py``) can, by three signs read from each run's detected steps:

- release spread: a batch that fits starts at once; behind a cap its tail starts as slots free;
- queueing: the starts after a step's opening burst are rollouts that waited for a slot
  (``batch_size - burst_size`` a step); no telemetry field records the wait itself;
- burst share: the share of a step's starts in its opening burst, 1 when nothing queued.

The peak is *one released batch* when it equals the largest release of a run with steps and
every run with steps opens its steps with (nearly) the whole release: median burst share at
least ``BATCH_BURST_SHARE``. A release larger than the peak is the opposite proof: the peak cut
it, so the peak is a cap and the cut rollouts queued. With a configured cap recorded the rule
stays ``peak == configured_cap``: the configuration is the better witness.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.measure.model import Concurrency, MeasureSummary, Slice, Steps

#: a peak reached on at least this many separate stretches is a cap (a chance maximum is reached once
#: or twice); here, without NumPy, so a plan from a summary can apply the rule without loading it
CAP_TOUCHES = 10

#: a step whose opening burst holds this share of its starts released its batch into free slots
BATCH_BURST_SHARE = 0.99


def _runs_with_steps(steps: Optional[dict], runs: dict[str, dict]) -> dict[str, dict]:
    """The detected step structures to judge by: each run's when runs interleave, else the whole's."""
    found = {name: r for name, r in runs.items() if r and r.get("detected")}
    if steps and steps.get("detected") and not steps.get("mixed"):
        return {"(all)": steps}
    return found


def _release(r: dict) -> tuple[int, float, float]:
    """(largest release, median burst share, median release spread s) of one run's steps."""
    return int(r.get("batch_size_max") or 0), float(r.get("burst_share") or 0.0), float(r.get("release_spread_s") or 0.0)


def classify_peak(conc: dict, steps: Optional[dict], runs: dict[str, dict]) -> dict:
    """``conc`` with ``peak_is_batch`` and ``cap_basis`` set, and ``cap_detected`` false for a batch.

    ``steps`` is the top-level steps block, ``runs`` each run's (by job or by model).
    """
    peak, touches = conc.get("peak") or 0, conc.get("touches") or 0
    out = dict(conc)
    judged = _runs_with_steps(steps, runs)
    if conc.get("configured_cap") is not None or not peak or not judged:
        out["peak_is_batch"] = None if not judged else False
        out["cap_basis"] = _plain_basis(conc)
        return out
    releases = {name: _release(r) for name, r in judged.items()}
    out["cap_rule"] = f"{conc.get('cap_rule')} and not one released batch"
    cut = {n: v for n, v in releases.items() if v[0] > peak}
    if cut:
        name, (size, share, spread) = max(cut.items(), key=lambda kv: (kv[1][0], kv[0]))
        out["peak_is_batch"] = False
        out["cap_basis"] = (
            f"a cap: {_who(name)} released {size:,} rollouts in a step, more than the peak of {peak:,}; "
            f"{share:.0%} started in the opening burst, the rest queued over {spread:,.0f} s (median step)")
        return out
    largest = max(v[0] for v in releases.values())
    whole = all(v[1] >= BATCH_BURST_SHARE for v in releases.values())
    if largest == peak and whole:
        out["peak_is_batch"] = True
        out["cap_detected"] = False
        spread = max(v[2] for v in releases.values())
        out["cap_basis"] = (
            f"one released batch, not a cap: the peak {peak:,} is the largest release, and every step opens with "
            f">= {BATCH_BURST_SHARE:.0%} of its release (median spread {spread:,.0f} s): nothing queued; "
            f"reached {touches:,} times because each step reaches it")
        return out
    out["peak_is_batch"] = False
    out["cap_basis"] = _plain_basis(conc) + (
        f"; the steps' releases (largest {largest:,}) do not explain the peak" if largest < peak else
        "; steps do not all open with their whole release (rollouts queued)")
    return out


def _who(name: str) -> str:
    return "the run" if name == "(all)" else f"run {name}"


def _plain_basis(conc: dict) -> str:
    peak, cap = conc.get("peak") or 0, conc.get("configured_cap")
    if conc.get("configured_cap_basis"):
        return str(conc["configured_cap_basis"])
    if cap is not None:
        idle = peak == cap and conc.get("cap_detected") is False
        return (f"configured cap {cap:,}: {'reached' if peak == cap else 'not reached'} (peak {peak:,})"
                + ("; by every rollout at once (no more rollouts than the cap): nothing waited, it did not bind"
                   if idle else ""))
    word = "a cap" if conc.get("cap_detected") else "no cap"
    return f"{word} by touches: the peak {peak:,} was reached {conc.get('touches') or 0:,} separate times"


@dataclass(frozen=True)
class CutRelease:
    """The largest typical release a binding cap cut: what the censored-demand estimate starts from.

    ``batch`` is the run's median release (starts per step, queued ones included), ``train_s`` the
    median gap between a step's last finish and the next release (period less makespan), the hold
    figures the run's own (the whole input's when one run).
    """

    run: Optional[str]
    batch: int
    burst: float
    train_s: float
    step_period_s: float
    hold_quantiles: dict[float, Optional[float]]
    hold_mean_s: Optional[float]
    hold_rows: Optional[float]


def _run_steps(m: MeasureSummary) -> list[tuple[Optional[str], Steps, Optional[Slice]]]:
    st = m.steps
    if st is None:
        return []
    if st.detected and not st.mixed:
        return [(None, st, None)]
    groups = (m.by_job if st.runs_by == "job" else m.by_model) or {}
    return [(name, g.steps, g) for name, g in sorted(groups.items()) if g.steps is not None and g.steps.detected]


def cut_release(m: MeasureSummary) -> Optional[CutRelease]:
    """The run whose median release is largest among those above a detected cap, or None
    (no cap detected, no steps, or every typical release fits under the peak)."""
    c = m.concurrency
    if c is None or not c.cap_detected or not c.peak:
        return None
    cut = [(name, st, g) for name, st, g in _run_steps(m) if (st.batch_size or 0) > c.peak]
    if not cut:
        return None
    name, st, g = max(cut, key=lambda r: (r[1].batch_size or 0, r[0] or ""))
    period, makespan = st.step_period_s or 0.0, st.step_makespan_s or 0.0
    if g is None:
        h = m.hold_s
        quantiles = {q: getattr(h, k) if h else None for q, k in ((0.0, "min"), (0.5, "median"), (0.9, "p90"), (0.99, "p99"), (1.0, "max"))}
        mean, rows = (h.mean, h.rows) if h else (None, None)
    else:
        quantiles = {0.5: g.hold_median_s, 0.99: g.hold_p99_s}
        mean, rows = g.hold_mean_s, g.rows
    return CutRelease(
        run=name, batch=round(st.batch_size or 0), burst=float(st.burst_size or 0.0),
        train_s=max(period - makespan, 0.0), step_period_s=period,
        hold_quantiles=quantiles, hold_mean_s=mean, hold_rows=rows,
    )


def time_at_cap(conc: Concurrency) -> tuple[float | None, float | None]:
    """(seconds at the cap, the cap) of a ``Concurrency`` block, as ``cap_binding`` and its
    Prometheus twin read them (here, without NumPy, for ``check``): the time at the summed cap
    when jobs overlap (``time_at_cap_s``), else the time at the peak."""
    if conc.time_at_cap_s is not None:
        return conc.time_at_cap_s, conc.configured_cap
    return conc.time_at_peak_s, conc.peak

"""The planner's view of its input, a ``MeasureSummary`` (read or measured once, by ``measure.load``).

``Figures`` takes from it the figures the planner uses, deriving one from base figures where the
derivation is exact (mean concurrency = sandbox time / span, and so on) and leaving it None where it
is not measured.
"""

from __future__ import annotations

import math
from typing import Optional, overload

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.batchcap import cut_release
from sandbox_fleet.measure.model import MeasureSummary


@overload
def _figure(value: None, key: str, *, positive: bool = False) -> None: ...
@overload
def _figure(value: float, key: str, *, positive: bool = False) -> float: ...
@overload
def _figure(value: Optional[float], key: str, *, positive: bool = False) -> Optional[float]: ...
def _figure(value: Optional[float], key: str, *, positive: bool = False) -> Optional[float]:
    """``value`` as a float, or None; a negative (or, when required, zero) or non-finite one is an InputError."""
    if value is None:
        return None
    v = float(value)
    if not math.isfinite(v) or v < 0 or (positive and v <= 0):
        raise InputError(f"summary key {key!r}: expected a {'positive' if positive else 'non-negative'} number, got {value!r}")
    return v


def _turn_keyed(raw: Optional[dict[str, float]], key: str) -> dict[int, float]:
    """An object keyed by turn count (as a string) -> numbers, as ints -> floats."""
    out: dict[int, float] = {}
    for k, v in (raw or {}).items():
        try:
            n = int(k)
        except ValueError:
            raise InputError(f"summary key {key!r}: turn count {k!r} is not an integer") from None
        if v is not None:
            out[n] = _figure(v, f"{key}.{k}")
    return out


class Figures:
    """The measured figures the planner uses, derived where exact and None otherwise."""

    def __init__(self, summary: MeasureSummary):
        m = self.summary = summary
        c, h, o, tk = m.concurrency, m.hold_s, m.outcomes, m.tokens
        self.rows = _figure(m.rows, "rows") or 0.0  # None and 0 alike are refused just below
        self.span_s = _figure(m.span_s, "span_s")
        self.sandbox_s = _figure(m.sandbox_s, "sandbox_s")
        self.hold_mean_s = _figure(h.mean if h else None, "hold_s.mean")
        if not self.rows or not (self.sandbox_s or self.hold_mean_s):
            raise InputError("input has no hold times: expected rows > 0 with sandbox_s or hold_s.mean (started_at/finished_at)")
        if self.hold_mean_s is None:
            assert self.sandbox_s is not None  # refused above when both are missing
            self.hold_mean_s = self.sandbox_s / self.rows
        if self.sandbox_s is None:
            self.sandbox_s = self.hold_mean_s * self.rows
        self.concurrency_mean = _figure(c.mean if c else None, "concurrency.mean")
        if self.concurrency_mean is None and self.span_s:
            self.concurrency_mean = self.sandbox_s / self.span_s
        self.peak = _figure(c.peak if c else None, "concurrency.peak")
        self.cap_detected = c.cap_detected if c else None
        self.touches = c.touches if c else None
        tal = c.time_at_level if c else None
        #: (levels, share of the span at or above each) when measure recorded it, else None
        self.time_at_level = (list(tal.levels), list(tal.share_at_or_above)) if tal and tal.levels and tal.share_at_or_above else None
        self.cut = cut_release(m)
        st = m.steps
        # None when the input never measured steps (a published summary): the shape then stays measured
        self.steps_detected = None if st is None or st.detected is None else bool(st.detected or st.runs_with_steps)
        self.duty = _figure(c.duty if c else None, "concurrency.duty")
        if self.duty is None and self.peak and self.concurrency_mean is not None:
            self.duty = self.concurrency_mean / self.peak
        self.pass_rate = _figure(o.pass_rate if o else None, "outcomes.pass_rate")
        self.passed = _figure(o.passed if o else None, "outcomes.passed")
        rewarded = _figure(o.rewarded if o else None, "outcomes.rewarded")
        if self.pass_rate is None and self.passed is not None and rewarded:
            self.pass_rate = self.passed / rewarded
        self.sandbox_hours = self.sandbox_s / 3600.0
        self.sandbox_hours_per_pass = _figure(o.sandbox_hours_per_pass if o else None, "outcomes.sandbox_hours_per_pass")
        if self.sandbox_hours_per_pass is None and self.passed:
            self.sandbox_hours_per_pass = self.sandbox_hours / self.passed
        self.span_days = self.span_s / 86400.0 if self.span_s else None
        self.exception_rate = _figure(o.exception_rate if o else None, "outcomes.exception_rate")
        self.exception_sandbox_hours = _figure(o.exception_sandbox_hours if o else None, "outcomes.exception_sandbox_hours")
        self._tokens(tk)
        self.hold_quantiles = {
            q: _figure(getattr(h, k) if h else None, f"hold_s.{k}")
            for q, k in ((0.0, "min"), (0.5, "median"), (0.9, "p90"), (0.99, "p99"), (1.0, "max"))
        }
        t = m.tasks
        self.requests = list(t.requests or []) if t else []
        self.bundle_median = _figure(t.bundle_bytes_median if t else None, "tasks.bundle_bytes_median")
        self.bundle_max = _figure(t.bundle_bytes_max if t else None, "tasks.bundle_bytes_max")
        self.task_count = _figure(t.count if t else None, "tasks.count")
        # A total over every task is measured; over some of them it is not the store's size.
        complete = t is not None and t.bundle_rows is not None and t.bundle_rows == t.count
        self.bundle_total = _figure(t.bundle_bytes_total, "tasks.bundle_bytes_total") if t is not None and complete else None
        tr = m.trajectories
        self.trajectory_bytes_mean = _figure(tr.bytes_mean if tr else None, "trajectories.bytes_mean")
        self.trajectory_bytes_max = _figure(tr.bytes_max if tr else None, "trajectories.bytes_max")
        self.trajectory_bytes_median = _figure(tr.bytes_median if tr else None, "trajectories.bytes_median")

    def _tokens(self, tk) -> None:
        g = (lambda k: _figure(getattr(tk, k), f"tokens.{k}")) if tk else (lambda k: None)
        tok_s = g("sandbox_s")
        self.input_tokens = g("input")
        self.prefill_per_s = g("prefill_per_sandbox_s")
        self.decode_per_s = g("decode_per_sandbox_s")
        if self.prefill_per_s is None and tok_s and self.input_tokens is not None:
            self.prefill_per_s = self.input_tokens / tok_s
        output = g("output")
        if self.decode_per_s is None and tok_s and output is not None:
            self.decode_per_s = output / tok_s
        self.turn_tokens = g("turn_tokens")
        self.turns_median = g("turns_median")
        self.turns_p90 = g("turns_p90")
        self.cached_fraction = g("cached_fraction")
        self.median_input_by_turns = _turn_keyed(tk.median_input_by_turns if tk else None, "tokens.median_input_by_turns")
        self.turns_histogram = _turn_keyed(tk.turns_histogram if tk else None, "tokens.turns_histogram")

    def measured_block(self) -> dict:
        """The ``measured`` object of the plan: figures carried over from the input."""
        return {
            "concurrency_mean": self.concurrency_mean,
            "peak": self.peak,
            "duty": self.duty,
            "pass_rate": self.pass_rate,
            "sandbox_hours_per_pass": self.sandbox_hours_per_pass,
            "sandbox_hours": self.sandbox_hours,
            "span_days": self.span_days,
            "hold_mean_s": self.hold_mean_s,
            "exception_rate": self.exception_rate,
            "prefill_per_sandbox_s": self.prefill_per_s,
            "decode_per_sandbox_s": self.decode_per_s,
        }

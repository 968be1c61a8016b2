"""The planner's view of its input, a ``MeasureSummary`` (read or measured once, by ``measure.load``).

``Figures`` reads the figures the planner uses from the model's typed blocks, deriving one from base
figures where the derivation is exact (mean concurrency = sandbox time / span, and so on) and leaving
it None where it is not measured. The model types every figure; it does not bound them, so the
figures read here (``READ``) are refused once, in one pass, when negative or not finite. Each is read
as a float (a count such as the peak too): the planner's arithmetic and text take them as numbers.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.batchcap import cut_release
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import Measured

#: what a plan needs before anything else: rows and a hold time (``sandbox_s`` or ``hold_s.mean``)
HOLDS = ("rows", "span_s", "sandbox_s", "hold_s.mean")
#: the other measured figures the planner reads, by their dotted key in the summary, in the order checked
READ = HOLDS + (
    "concurrency.mean", "concurrency.peak", "concurrency.duty",
    "outcomes.pass_rate", "outcomes.passed", "outcomes.rewarded", "outcomes.sandbox_hours_per_pass",
    "outcomes.exception_rate", "outcomes.exception_sandbox_hours",
    "tokens.sandbox_s", "tokens.input", "tokens.prefill_per_sandbox_s", "tokens.decode_per_sandbox_s", "tokens.output",
    "tokens.turn_tokens", "tokens.turns_median", "tokens.turns_p90", "tokens.cached_fraction",
    "hold_s.min", "hold_s.median", "hold_s.p90", "hold_s.p99", "hold_s.max",
    "tasks.bundle_bytes_median", "tasks.bundle_bytes_max", "tasks.count",
    "trajectories.bytes_mean", "trajectories.bytes_max", "trajectories.bytes_median",
)


def _raw(m: MeasureSummary, key: str) -> Any:
    """The figure at dotted ``key`` as the model holds it (None when it or its block is missing)."""
    node: Any = m
    for part in key.split("."):
        node = getattr(node, part, None)
        if node is None:
            return None
    return node


def _refuse_bad(m: MeasureSummary, keys: tuple[str, ...]) -> None:
    """InputError (one line, naming the key) for the first of ``keys`` that is negative or not finite."""
    for key in keys:
        v = _raw(m, key)
        if v is not None:
            _refuse_bad_value(v, key)


def _refuse_bad_value(v: float, key: str) -> None:
    if not (math.isfinite(v) and v >= 0):
        raise InputError(f"summary key {key!r}: expected a non-negative number, got {v!r}")


def _at(m: MeasureSummary, key: str) -> Optional[float]:
    """The (checked) figure at dotted ``key`` as a float, or None."""
    v = _raw(m, key)
    return None if v is None else float(v)


def _turn_keyed(raw: Optional[dict[str, Any]], key: str) -> dict[int, float]:
    """An object keyed by turn count (as a string) -> numbers, as ints -> floats."""
    out: dict[int, float] = {}
    for k, v in (raw or {}).items():
        try:
            n = int(k)
        except ValueError:
            raise InputError(f"summary key {key!r}: turn count {k!r} is not an integer") from None
        if v is not None:
            _refuse_bad_value(v, f"{key}.{k}")
            out[n] = float(v)
    return out


class Figures:
    """The measured figures the planner uses, derived where exact and None otherwise."""

    def __init__(self, summary: MeasureSummary):
        m = self.summary = summary
        _refuse_bad(m, HOLDS)
        self.rows = _at(m, "rows") or 0.0  # None and 0 alike are refused just below
        self.span_s = _at(m, "span_s")
        sandbox_s, hold_mean_s = _at(m, "sandbox_s"), _at(m, "hold_s.mean")
        if not self.rows or not (sandbox_s or hold_mean_s):
            raise InputError("input has no hold times: expected rows > 0 with sandbox_s or hold_s.mean (started_at/finished_at)")
        _refuse_bad(m, READ[len(HOLDS):])
        self.hold_mean_s: float = hold_mean_s if hold_mean_s is not None else sandbox_s / self.rows  # type: ignore[operator]
        self.sandbox_s: float = sandbox_s if sandbox_s is not None else self.hold_mean_s * self.rows
        self._concurrency(m)
        self.cut = cut_release(m)
        st = m.steps
        # None when the input never measured steps (a published summary): the shape then stays measured
        self.steps_detected = None if st is None or st.detected is None else bool(st.detected or st.runs_with_steps)
        self._outcomes(m)
        self.span_days = self.span_s / 86400.0 if self.span_s else None
        self._tokens(m)
        self.hold_quantiles = {q: _at(m, f"hold_s.{k}")
                               for q, k in ((0.0, "min"), (0.5, "median"), (0.9, "p90"), (0.99, "p99"), (1.0, "max"))}
        self._tasks(m)
        self.trajectory_bytes_mean = _at(m, "trajectories.bytes_mean")
        self.trajectory_bytes_max = _at(m, "trajectories.bytes_max")
        self.trajectory_bytes_median = _at(m, "trajectories.bytes_median")

    def _concurrency(self, m: MeasureSummary) -> None:
        c = m.concurrency
        self.concurrency_mean = _at(m, "concurrency.mean")
        if self.concurrency_mean is None and self.span_s:
            self.concurrency_mean = self.sandbox_s / self.span_s
        self.peak = _at(m, "concurrency.peak")
        self.cap_detected = c.cap_detected if c else None
        self.touches = c.touches if c else None
        tal = c.time_at_level if c else None
        #: (levels, share of the span at or above each) when measure recorded it, else None
        self.time_at_level = (list(tal.levels), list(tal.share_at_or_above)) if tal and tal.levels and tal.share_at_or_above else None
        self.duty = _at(m, "concurrency.duty")
        if self.duty is None and self.peak and self.concurrency_mean is not None:
            self.duty = self.concurrency_mean / self.peak

    def _outcomes(self, m: MeasureSummary) -> None:
        self.pass_rate = _at(m, "outcomes.pass_rate")
        self.passed = _at(m, "outcomes.passed")
        rewarded = _at(m, "outcomes.rewarded")
        if self.pass_rate is None and self.passed is not None and rewarded:
            self.pass_rate = self.passed / rewarded
        self.sandbox_hours = self.sandbox_s / 3600.0
        self.sandbox_hours_per_pass = _at(m, "outcomes.sandbox_hours_per_pass")
        if self.sandbox_hours_per_pass is None and self.passed:
            self.sandbox_hours_per_pass = self.sandbox_hours / self.passed
        self.exception_rate = _at(m, "outcomes.exception_rate")
        self.exception_sandbox_hours = _at(m, "outcomes.exception_sandbox_hours")

    def _tokens(self, m: MeasureSummary) -> None:
        tk = m.tokens
        tok_s = _at(m, "tokens.sandbox_s")
        self.input_tokens = _at(m, "tokens.input")
        self.prefill_per_s = _at(m, "tokens.prefill_per_sandbox_s")
        self.decode_per_s = _at(m, "tokens.decode_per_sandbox_s")
        if self.prefill_per_s is None and tok_s and self.input_tokens is not None:
            self.prefill_per_s = self.input_tokens / tok_s
        output = _at(m, "tokens.output")
        if self.decode_per_s is None and tok_s and output is not None:
            self.decode_per_s = output / tok_s
        self.turn_tokens = _at(m, "tokens.turn_tokens")
        self.turns_median = _at(m, "tokens.turns_median")
        self.turns_p90 = _at(m, "tokens.turns_p90")
        self.cached_fraction = _at(m, "tokens.cached_fraction")
        self.median_input_by_turns = _turn_keyed(tk.median_input_by_turns if tk else None, "tokens.median_input_by_turns")
        self.turns_histogram = _turn_keyed(tk.turns_histogram if tk else None, "tokens.turns_histogram")

    def _tasks(self, m: MeasureSummary) -> None:
        t = m.tasks
        self.requests = list(t.requests or []) if t else []
        self.bundle_median = _at(m, "tasks.bundle_bytes_median")
        self.bundle_max = _at(m, "tasks.bundle_bytes_max")
        self.task_count = _at(m, "tasks.count")
        # A total over every task is measured; over some of them it is not the store's size.
        complete = t is not None and t.bundle_rows is not None and t.bundle_rows == t.count
        if complete:
            _refuse_bad(m, ("tasks.bundle_bytes_total",))
        self.bundle_total = _at(m, "tasks.bundle_bytes_total") if complete else None

    def measured_block(self) -> Measured:
        """The ``measured`` block of the plan: figures carried over from the input."""
        return Measured(
            concurrency_mean=self.concurrency_mean,
            peak=self.peak,
            duty=self.duty,
            pass_rate=self.pass_rate,
            sandbox_hours_per_pass=self.sandbox_hours_per_pass,
            sandbox_hours=self.sandbox_hours,
            span_days=self.span_days,
            hold_mean_s=self.hold_mean_s,
            exception_rate=self.exception_rate,
            prefill_per_sandbox_s=self.prefill_per_s,
            decode_per_sandbox_s=self.decode_per_s,
        )

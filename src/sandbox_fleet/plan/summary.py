"""Read the planner's input: a saved ``measure --json`` summary, or telemetry measured on the fly.

Accessors return None for a figure the summary does not carry, deriving it from base figures where
the derivation is exact (mean concurrency = sandbox time / span, and so on).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

from sandbox_fleet.errors import InputError


def load_input(path: str | Path, *, tasks: Optional[str] = None, **measure_options: Any) -> dict:
    """A summary dict from a ``.json`` summary file, else by measuring the telemetry at ``path``."""
    p = Path(path)
    if p.is_file() and p.suffix.lower() == ".json":
        try:
            doc = json.loads(p.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise InputError(f"{p}: not a JSON measure summary ({exc.__class__.__name__}: line {getattr(exc, 'lineno', '?')})") from None
        if not isinstance(doc, dict) or "schema_version" not in doc:
            raise InputError(f"{p}: expected a `measure --json` summary (an object with schema_version)")
        return doc
    if not p.exists():
        raise InputError(f"{p}: input not found; expected a measure summary (.json) or telemetry")
    from sandbox_fleet.measure import measure_paths  # measured on the fly

    return measure_paths([str(p)], tasks=tasks, **measure_options)


def get(summary: dict, dotted: str) -> Any:
    """``summary['a']['b']`` for ``'a.b'``, or None anywhere along the way."""
    node: Any = summary
    for key in dotted.split("."):
        if not isinstance(node, dict):
            return None
        node = node.get(key)
    return node


def num(summary: dict, dotted: str, *, positive: bool = False) -> Optional[float]:
    """A numeric figure or None; a non-number (or a non-positive one when required) is an InputError."""
    v = get(summary, dotted)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise InputError(f"summary key {dotted!r}: expected a number, got {v!r}")
    if v != v or (positive and v <= 0) or v < 0:
        raise InputError(f"summary key {dotted!r}: expected a {'positive' if positive else 'non-negative'} number, got {v!r}")
    return float(v)


def turn_keyed(summary: dict, dotted: str) -> dict[int, float]:
    """An object keyed by turn count (as a string) -> numbers, as ints -> floats."""
    raw = get(summary, dotted)
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InputError(f"summary key {dotted!r}: expected an object keyed by turn count")
    out = {}
    for k, v in raw.items():
        try:
            n = int(k)
        except ValueError:
            raise InputError(f"summary key {dotted!r}: turn count {k!r} is not an integer") from None
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise InputError(f"summary key {dotted}.{k}: expected a non-negative number, got {v!r}")
        out[n] = float(v)
    return out


def require_holds(summary: dict) -> None:
    """The planner needs hold times; a summary without them cannot be planned from."""
    sandbox_s = num(summary, "sandbox_s")
    rows = num(summary, "rows")
    mean = num(summary, "hold_s.mean")
    if not rows or not (sandbox_s or mean):
        raise InputError("input has no hold times: expected rows > 0 with sandbox_s or hold_s.mean (started_at/finished_at)")


class Figures:
    """The measured figures the planner uses, derived where exact and missing otherwise."""

    def __init__(self, summary: dict):
        require_holds(summary)
        s = summary
        self.rows = num(s, "rows")
        self.span_s = num(s, "span_s")
        self.sandbox_s = num(s, "sandbox_s")
        self.hold_mean_s = num(s, "hold_s.mean") or (self.sandbox_s / self.rows if self.sandbox_s else None)
        if self.sandbox_s is None and self.hold_mean_s:
            self.sandbox_s = self.hold_mean_s * self.rows
        self.concurrency_mean = num(s, "concurrency.mean")
        if self.concurrency_mean is None and self.span_s:
            self.concurrency_mean = self.sandbox_s / self.span_s
        self.peak = num(s, "concurrency.peak")
        self.duty = num(s, "concurrency.duty")
        if self.duty is None and self.peak and self.concurrency_mean is not None:
            self.duty = self.concurrency_mean / self.peak
        self.pass_rate = num(s, "outcomes.pass_rate")
        passed = num(s, "outcomes.passed")
        rewarded = num(s, "outcomes.rewarded")
        if self.pass_rate is None and passed is not None and rewarded:
            self.pass_rate = passed / rewarded
        self.passed = passed
        self.sandbox_hours = self.sandbox_s / 3600.0
        self.sandbox_hours_per_pass = num(s, "outcomes.sandbox_hours_per_pass")
        if self.sandbox_hours_per_pass is None and passed:
            self.sandbox_hours_per_pass = self.sandbox_hours / passed
        self.span_days = self.span_s / 86400.0 if self.span_s else None
        self.exception_rate = num(s, "outcomes.exception_rate")
        self.exception_sandbox_hours = num(s, "outcomes.exception_sandbox_hours")
        tok_s = num(s, "tokens.sandbox_s")
        self.prefill_per_s = num(s, "tokens.prefill_per_sandbox_s")
        self.decode_per_s = num(s, "tokens.decode_per_sandbox_s")
        if self.prefill_per_s is None and tok_s and num(s, "tokens.input") is not None:
            self.prefill_per_s = num(s, "tokens.input") / tok_s
        if self.decode_per_s is None and tok_s and num(s, "tokens.output") is not None:
            self.decode_per_s = num(s, "tokens.output") / tok_s
        self.turn_tokens = num(s, "tokens.turn_tokens")
        self.median_input_by_turns = turn_keyed(s, "tokens.median_input_by_turns")
        self.turns_histogram = turn_keyed(s, "tokens.turns_histogram")
        self.turns_median = num(s, "turns.median")
        self.input_tokens = num(s, "tokens.input")
        self.hold_quantiles = {
            q: num(s, f"hold_s.{k}")
            for q, k in ((0.0, "min"), (0.5, "median"), (0.9, "p90"), (0.99, "p99"), (1.0, "max"))
        }
        self.bundle_median = num(s, "tasks.bundle_bytes.median")
        self.bundle_max = num(s, "tasks.bundle_bytes.max")
        self.bundle_total = num(s, "tasks.bundle_bytes.total")
        self.task_count = num(s, "tasks.count")
        self.trajectory_bytes_mean = num(s, "trajectories.bytes_mean")
        self.trajectory_bytes_max = num(s, "trajectories.bytes_max")

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

"""From per-seed simulator summaries to one row per variant: mean and spread per metric.

A metric is a dotted path into the simulator summary (``step_s.mean``,
``workloads.rl.queue_wait_s.p99``); ``lost_sandbox_hours.total`` is the sum of the
``lost_sandbox_hours`` parts. A figure the run does not have (``step_s`` without an
RL workload) is null. The spread ``METRIC:sd`` is the sample standard deviation over
seeds (null with one seed).
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_METRICS = (
    "concurrency.mean",
    "concurrency.peak",
    "queue_wait_s.mean",
    "queue_wait_s.p99",
    "utilisation",
    "step_s.mean",
    "step_s.p99",
    "trainer_idle_fraction",
    "sandbox_hours",
    "lost_sandbox_hours.total",
    "completed",
    "dropped",
)
SD = ":sd"


def metric(summary: dict, key: str) -> float | None:
    """The number at dotted ``key`` in ``summary``, or None when absent or not a number."""
    if key == "lost_sandbox_hours.total":
        parts = summary.get("lost_sandbox_hours")
        return float(math.fsum(parts.values())) if isinstance(parts, dict) else None
    node: Any = summary
    for p in key.split("."):
        if not isinstance(node, dict) or p not in node:
            return None
        node = node[p]
    if isinstance(node, bool) or not isinstance(node, (int, float)):
        return None
    return node


def numeric_keys(summary: dict, prefix: str = "") -> list[str]:
    """Every dotted key of ``summary`` holding a number (for error messages)."""
    out = []
    for k, v in summary.items():
        if isinstance(v, dict):
            out.extend(numeric_keys(v, f"{prefix}{k}."))
        elif isinstance(v, (int, float)) and not isinstance(v, bool):
            out.append(prefix + k)
    return out


def mean_sd(values: list[float | None]) -> tuple[float | None, float | None]:
    """Mean and sample standard deviation of the non-null values (fsum: order-stable)."""
    xs = [float(v) for v in values if v is not None and math.isfinite(v)]
    if not xs:
        return None, None
    m = math.fsum(xs) / len(xs)
    if len(xs) < 2:
        return m, None
    return m, math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def row(settings: dict, summaries: list[dict], metrics: list[str]) -> dict:
    """One output row: the variant's settings, then ``metric`` (mean) and ``metric:sd`` pairs."""
    out: dict[str, Any] = dict(settings)
    for m in metrics:
        out[m], out[m + SD] = mean_sd([metric(s, m) for s in summaries])
    return out


def unstable(summaries: list[dict]) -> int:
    """How many of a variant's runs had no steady state (``steady_state.stable`` false)."""
    return sum(1 for s in summaries if (s.get("steady_state") or {}).get("stable") is False)

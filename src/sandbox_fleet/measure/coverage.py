"""Coverage: how many rows lack each field, and how many rows the readers rejected.

A missing value is null in the canonical record; these counts make it visible instead
of silently averaged away (the document: a quarter of rows carry no reward).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import Frame


def _nulls(fr: Frame, name: str) -> int:
    return fr.null_count(name)


def _count(mask) -> int:
    return int(pc.sum(pc.cast(mask, pa.int64())).as_py() or 0)


def measure_coverage(fr: Frame, rejected: dict[str, int]) -> dict:
    """Counts straight from Arrow (null counts are stored, no column is copied out)."""
    t = fr.table
    reward = t.column("reward")
    no_tokens = pc.or_(pc.is_null(t.column("input_tokens")), pc.is_null(t.column("output_tokens")))
    return {
        "rows": fr.n,
        # A NaN reward is as unusable as a null one.
        "missing_reward": reward.null_count + _count(pc.fill_null(pc.is_nan(reward), False)),
        "missing_tokens": _count(no_tokens),
        "missing_turns": _nulls(fr, "turns"),
        # has_trajectory false = no trajectory; null = the source does not say.
        "missing_trajectory": _count(pc.fill_null(pc.invert(t.column("has_trajectory")), False)),
        "unknown_trajectory": _nulls(fr, "has_trajectory"),
        "missing_cached_tokens": _nulls(fr, "cached_tokens"),
        "missing_exception_flag": _nulls(fr, "has_exception"),
        "missing_model": _nulls(fr, "model"),
        "missing_job": _nulls(fr, "job"),
        "rejected": dict(sorted(rejected.items())),
        "rejected_total": int(sum(rejected.values())),
    }

"""Trajectory record sizes: how much the stored agent trajectories weigh per rollout.

Over the rows that report ``trajectory_bytes`` (Harbor: the size of agent/trajectory.json);
every figure is null when no row reports one (unknown, not zero).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def measure_trajectories(table: pa.Table) -> dict:
    """``{rows, bytes_median, bytes_mean, bytes_max}`` of the ``trajectory_bytes`` column."""
    if "trajectory_bytes" not in table.column_names:
        return {"rows": 0, "bytes_median": None, "bytes_mean": None, "bytes_max": None}
    col = table.column("trajectory_bytes")
    if col.null_count == len(col):
        return {"rows": 0, "bytes_median": None, "bytes_mean": None, "bytes_max": None}
    values = col.drop_null().to_numpy().astype(np.int64)
    return {
        "rows": int(values.size),
        "bytes_median": float(np.median(values)),
        "bytes_mean": float(values.sum() / values.size),
        "bytes_max": int(values.max()),
    }

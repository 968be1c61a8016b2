"""Task resource requests, timeouts and bundle sizes from the tasks table.

Requests are grouped on the exact (cpus, memory_mb, storage_mb, gpus) tuple, a null
field staying null (unknown is not zero); most tasks in a pool share one request, and
the odd ones are what a node plan must still fit.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.sql import HOLD_US, registered
from sandbox_fleet.measure.stats import SMALL_SAMPLE_ROWS, quantile_sorted


def _sorted_valid(col: pa.ChunkedArray) -> np.ndarray:
    return np.sort(np.asarray(col.drop_null().to_numpy(), dtype=np.float64))


def task_usage(rollouts: pa.Table) -> pa.Table | None:
    """Per task id: rollouts and their summed hold (integer microseconds), for ``measure_tasks``;
    None when no rollout names its task (then per-kind usage is unknown, not zero)."""
    if "task_id" not in rollouts.column_names or rollouts.column("task_id").null_count == rollouts.num_rows:
        return None
    with registered(r=rollouts) as con:
        return con.sql(
            f"SELECT task_id, count(*) AS rollouts, sum({HOLD_US})::BIGINT AS hold_us FROM r "
            "WHERE task_id IS NOT NULL GROUP BY task_id ORDER BY task_id"
        ).to_arrow_table()


def measure_tasks(tasks: pa.Table | None, usage: pa.Table | None = None) -> dict | None:
    """None when no tasks table was given. With ``usage`` (``task_usage``), each request kind
    also carries the rollouts that ran its tasks and their sandbox-hours."""
    if tasks is None:
        return None
    known = usage is not None
    if usage is None:
        usage = pa.table({"task_id": pa.array([], pa.string()), "rollouts": pa.array([], pa.int64()), "hold_us": pa.array([], pa.int64())})
    # Rollouts name their task group when the release has groups (RST), else their task: join on that
    # key, splitting a group's rollouts evenly over its tasks so none is counted twice.
    key = "coalesce(task_group_id, task_id)" if "task_group_id" in tasks.column_names else "task_id"
    with registered(r=tasks, u=usage) as con:
        rows = con.execute(
            f"WITH t AS (SELECT *, {key} AS k, count(*) OVER (PARTITION BY {key}) AS g FROM r) "
            "SELECT cpus, memory_mb, storage_mb, gpus, count(*) AS n, coalesce(sum(u.rollouts / g), 0), "
            "coalesce(sum(u.hold_us / g), 0) FROM t LEFT JOIN u ON t.k = u.task_id "
            "GROUP BY ALL ORDER BY n DESC, cpus NULLS LAST, memory_mb NULLS LAST, "
            "storage_mb NULLS LAST, gpus NULLS LAST"
        ).fetchall()
    requests = [
        {"cpus": c, "memory_mb": m, "storage_mb": s, "gpus": g, "tasks": int(n), "rollouts": (int(k) if float(k).is_integer() else float(k)) if known else None,
         "sandbox_hours": float(us) / 3.6e9 if known else None}
        for c, m, s, g, n, k, us in rows
    ]
    bundles = _sorted_valid(tasks.column("bundle_bytes"))
    out: dict = {
        "count": tasks.num_rows,
        "distinct_task_ids": int(pc.count_distinct(tasks.column("task_id")).as_py()),
        "requests": requests,
        "bundle_rows": int(bundles.size),
        "bundle_bytes_median": quantile_sorted(bundles, 0.5),
        "bundle_bytes_max": float(bundles[-1]) if bundles.size else None,
        "bundle_bytes_total": float(bundles.sum()) if bundles.size else None,
        "small_sample": tasks.num_rows < SMALL_SAMPLE_ROWS,
    }
    for name in ("build_timeout_s", "agent_timeout_s", "verifier_timeout_s"):
        vals = _sorted_valid(tasks.column(name))
        out[f"{name}_rows"] = int(vals.size)
        out[f"{name}_median"] = quantile_sorted(vals, 0.5)
    out.update(task_images(tasks))
    return out


def task_images(tasks: pa.Table) -> dict:
    """Distinct base images over the tasks that name one, most tasks first (ties by name), with their
    shares of those tasks; null figures when no task names an image (unknown, not none)."""
    names = [v for v in tasks.column("image").to_pylist() if v is not None] if "image" in tasks.column_names else []
    if not names:
        return {"image_rows": 0, "distinct_images": None, "images": None}
    counts = Counter(names)
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    return {"image_rows": len(names), "distinct_images": len(counts),
            "images": [{"image": k, "tasks": c, "share": c / len(names)} for k, c in ranked]}

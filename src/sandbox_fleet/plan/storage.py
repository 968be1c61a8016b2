"""Storage: sandbox scratch, the disk each node has left for its image/layer cache, record growth."""

from __future__ import annotations

from typing import Optional

MB_PER_GB = 1024.0


def storage_plan(
    *,
    nodes: int,
    per_node_mb: float,
    at_target_mb: float,
    node_disk_mb: float,
    reserve_disk_mb: float,
    rollouts_per_day: Optional[float],
    trajectory_bytes_mean: Optional[float],
    trajectory_bytes_max: Optional[float],
    bundle_median: Optional[float],
    bundle_max: Optional[float],
    bundle_total: Optional[float],
    task_count: Optional[float],
) -> dict:
    """Scratch = slots x storage request; the rest of each disk caches images.

    ``per_node_mb`` is the scratch one node commits (slots x request; for a packed mix, the fullest
    node's), ``at_target_mb`` the scratch the target's sandboxes request together.

    Growth per day counts trajectory records at the target's rollout rate, where a size is known:
    with a mean size that is the estimate; with only a maximum, an upper bound.
    """
    out: dict = {
        "scratch_gb": nodes * per_node_mb / MB_PER_GB,
        "scratch_at_target_gb": at_target_mb / MB_PER_GB,
        "per_node_gb": per_node_mb / MB_PER_GB,
        "cache_gb_per_node": max(node_disk_mb - reserve_disk_mb - per_node_mb, 0.0) / MB_PER_GB,
        "rollouts_per_day": rollouts_per_day,
        "trajectory_gb_per_day": None,
        "trajectory_gb_per_day_upper": None,
        "bundle_store_gb": None,
        "bundle_store_basis": None,
    }
    if rollouts_per_day is not None:
        if trajectory_bytes_mean is not None:
            out["trajectory_gb_per_day"] = rollouts_per_day * trajectory_bytes_mean / 1e9
        if trajectory_bytes_max is not None:
            out["trajectory_gb_per_day_upper"] = rollouts_per_day * trajectory_bytes_max / 1e9
    if bundle_total is not None:
        out["bundle_store_gb"], out["bundle_store_basis"] = bundle_total / 1e9, "measured total"
    elif bundle_median is not None and task_count:
        out["bundle_store_gb"], out["bundle_store_basis"] = bundle_median * task_count / 1e9, "tasks x median bundle (estimate)"
    out["bundle_max_mb"] = bundle_max / 1e6 if bundle_max is not None else None
    return out

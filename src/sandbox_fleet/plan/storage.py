"""Storage: sandbox scratch, the disk each node has left for its image/layer cache, record growth."""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.model import Storage

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
) -> Storage:
    """Scratch = slots x storage request; the rest of each disk caches images.

    ``per_node_mb`` is the scratch one node commits (slots x request; for a packed mix, the fullest
    node's), ``at_target_mb`` the scratch the target's sandboxes request together.

    Growth per day counts trajectory records at the target's rollout rate, where a size is known:
    with a mean size that is the estimate; with only a maximum, an upper bound.
    """
    trajectory_gb = upper_gb = bundle_gb = bundle_basis = None
    if rollouts_per_day is not None:
        if trajectory_bytes_mean is not None:
            trajectory_gb = rollouts_per_day * trajectory_bytes_mean / 1e9
        if trajectory_bytes_max is not None:
            upper_gb = rollouts_per_day * trajectory_bytes_max / 1e9
    if bundle_total is not None:
        bundle_gb, bundle_basis = bundle_total / 1e9, "measured total"
    elif bundle_median is not None and task_count:
        bundle_gb, bundle_basis = bundle_median * task_count / 1e9, "tasks x median bundle (estimate)"
    return Storage(
        scratch_gb=nodes * per_node_mb / MB_PER_GB,
        scratch_at_target_gb=at_target_mb / MB_PER_GB,
        per_node_gb=per_node_mb / MB_PER_GB,
        cache_gb_per_node=max(node_disk_mb - reserve_disk_mb - per_node_mb, 0.0) / MB_PER_GB,
        rollouts_per_day=rollouts_per_day,
        trajectory_gb_per_day=trajectory_gb,
        trajectory_gb_per_day_upper=upper_gb,
        bundle_store_gb=bundle_gb,
        bundle_store_basis=bundle_basis,
        bundle_max_mb=bundle_max / 1e6 if bundle_max is not None else None,
    )

"""Storage figures against hand arithmetic."""

from __future__ import annotations

import pytest

from sandbox_fleet.plan.storage import storage_plan


def test_scratch_cache_and_growth():
    s = storage_plan(
        nodes=32, per_node_mb=96 * 6144, at_target_mb=3000 * 6144, node_disk_mb=4 * 1024 * 1024,
        reserve_disk_mb=102_400, rollouts_per_day=20_000, trajectory_bytes_mean=2e6, trajectory_bytes_max=498e6,
        bundle_median=39_900, bundle_max=16.7e6, bundle_total=None, task_count=37_484,
    )
    assert s["per_node_gb"] == 576  # 96 x 6 GiB
    assert s["scratch_gb"] == 32 * 576
    assert s["scratch_at_target_gb"] == 18_000
    assert s["cache_gb_per_node"] == 4096 - 100 - 576
    assert s["trajectory_gb_per_day"] == pytest.approx(40.0)  # 20,000 x 2 MB
    assert s["trajectory_gb_per_day_upper"] == pytest.approx(9960.0)
    assert s["bundle_store_gb"] == pytest.approx(37_484 * 39_900 / 1e9)
    assert s["bundle_max_mb"] == pytest.approx(16.7)


def test_unknown_sizes_stay_null():
    s = storage_plan(
        nodes=1, per_node_mb=4 * 1024, at_target_mb=2 * 1024, node_disk_mb=2048, reserve_disk_mb=0,
        rollouts_per_day=None, trajectory_bytes_mean=None, trajectory_bytes_max=None, bundle_median=None,
        bundle_max=None, bundle_total=None, task_count=None,
    )
    assert s["cache_gb_per_node"] == 0.0  # scratch over-commits the disk: nothing left, never negative
    assert s["trajectory_gb_per_day"] is None and s["bundle_store_gb"] is None

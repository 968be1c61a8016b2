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
    assert s.per_node_gb == 576  # 96 x 6 GiB
    assert s.scratch_gb == 32 * 576
    assert s.scratch_at_target_gb == 18_000
    assert s.cache_gb_per_node == 4096 - 100 - 576
    assert s.trajectory_gb_per_day == pytest.approx(40.0)  # 20,000 x 2 MB
    assert s.trajectory_gb_per_day_upper == pytest.approx(9960.0)
    assert s.bundle_store_gb == pytest.approx(37_484 * 39_900 / 1e9)
    assert s.bundle_max_mb == pytest.approx(16.7)


def test_unknown_sizes_stay_null():
    s = storage_plan(
        nodes=1, per_node_mb=4 * 1024, at_target_mb=2 * 1024, node_disk_mb=2048, reserve_disk_mb=0,
        rollouts_per_day=None, trajectory_bytes_mean=None, trajectory_bytes_max=None, bundle_median=None,
        bundle_max=None, bundle_total=None, task_count=None,
    )
    assert s.cache_gb_per_node == 0.0  # scratch over-commits the disk: nothing left, never negative
    assert s.trajectory_gb_per_day is None and s.bundle_store_gb is None


# --- the drifted keys, end to end: a measured corpus with task bundles -----------------------
def test_committed_mixed_summary_is_what_measure_makes():
    """tests/plan/data/mixed.json (used by docs/plan.md) is measure's output for the mixed corpus."""
    import json

    from producers import mixed_telemetry
    from summaries import measure_json

    from .conftest import MIXED

    assert json.loads(MIXED.read_text(encoding="utf-8")) == measure_json(mixed_telemetry())


def test_bundle_storage_appears_in_a_plan_from_a_measured_corpus(produced):
    """measure writes tasks.bundle_bytes_*; the plan reads those keys (it once read others and left this null)."""
    from summaries import plan_json

    tasks = produced.mixed["tasks"]
    assert (tasks["bundle_rows"], tasks["count"], tasks["bundle_bytes_total"]) == (1000, 1000, 999 * 50_000 + 5_000_000)
    s = plan_json(produced.mixed)["storage"]
    assert s["bundle_store_gb"] == (999 * 50_000 + 5_000_000) / 1e9 and s["bundle_store_basis"] == "measured total"
    assert s["bundle_max_mb"] == 5.0
    # some bundle sizes unknown: the total is not the store's size; tasks x median estimates it
    partial = {**produced.mixed, "tasks": {**tasks, "bundle_rows": 999}}
    s = plan_json(partial)["storage"]
    assert s["bundle_store_gb"] == 1000 * 50_000 / 1e9 and s["bundle_store_basis"] == "tasks x median bundle (estimate)"


def test_turns_median_is_read_when_there_is_no_histogram(produced):
    """measure writes tokens.turns_median (the plan once read turns.median, which nothing writes)."""
    from summaries import plan_json

    # the mixed corpus: 100 x 1, 300 x 5, 400 x 11, 150 x 21, 50 x 50 turns: median 11
    tokens = {**produced.mixed["tokens"], "turns_histogram": None}
    assert tokens["turns_median"] == 11
    c = plan_json({**produced.mixed, "tokens": tokens})["caching"]
    # not the median's (11 + 1) / 2: the lognormal through median 11 and p90 (tests/plan/test_turns.py)
    assert c["saving_applied"] > (11 + 1) / 2 and "lognormal turns (median 11, p90" in c["saving_basis"]


def test_trajectory_sizes_are_read_from_the_trajectories_block():
    """The published block carries bytes_max only: no estimate, and no "upper bound" of the largest
    record times every rollout (issue 9: growth uses the median record, tests/plan/test_purchase_order.py)."""
    import json

    from summaries import plan_json

    from .conftest import PUBLISHED

    s = plan_json(json.loads(PUBLISHED.read_text()))["storage"]
    assert s["trajectory_gb_per_day"] is None
    assert s["trajectory_gb_per_day_upper"] is None and s["rollouts_per_day"] > 0

"""Task requests and bundle sizes from a hand-made tasks table."""

from __future__ import annotations

import pyarrow as pa
import pytest

from sandbox_fleet.measure.tasks import measure_tasks
from sandbox_fleet.telemetry import conform_tasks
from summaries import measure_json

from .helpers import telemetry


def tasks_table():
    return conform_tasks(pa.table({
        "task_id": ["a", "b", "c", "d", "e", "f"],
        "cpus": [1.0, 1.0, 1.0, 2.0, 1.0, 2.0],
        "memory_mb": [2048, 2048, 2048, 4096, 2048, 4096],
        "storage_mb": [6144, 6144, 6144, 6144, 6144, 6144],
        "gpus": [0, 0, 0, 0, None, 0],
        "build_timeout_s": [600.0, 600.0, 600.0, 1200.0, None, 600.0],
        "bundle_bytes": [100, 200, 300, None, 1000, 400],
    }))


def test_requests_sorted_by_count():
    out = measure_tasks(tasks_table())
    assert out["count"] == 6
    assert out["requests"] == [
        {"cpus": 1.0, "memory_mb": 2048, "storage_mb": 6144, "gpus": 0, "tasks": 3, "rollouts": None, "sandbox_hours": None},
        {"cpus": 2.0, "memory_mb": 4096, "storage_mb": 6144, "gpus": 0, "tasks": 2, "rollouts": None, "sandbox_hours": None},
        {"cpus": 1.0, "memory_mb": 2048, "storage_mb": 6144, "gpus": None, "tasks": 1, "rollouts": None, "sandbox_hours": None},
    ]
    assert (out["bundle_rows"], out["bundle_bytes_median"], out["bundle_bytes_max"]) == (5, 300.0, 1000.0)
    assert (out["build_timeout_s_rows"], out["build_timeout_s_median"]) == (5, 600.0)


def test_tasks_absent_is_null_and_present_flows_through():
    assert measure_json(telemetry([0], [1]))["tasks"] is None
    out = measure_json(telemetry([0], [1], tasks=tasks_table()))["tasks"]
    assert out["count"] == 6
    assert out["bundle_bytes_median"] == pytest.approx(300.0)


def test_each_request_kind_counts_its_rollouts_and_sandbox_hours():
    # rollouts: a (0-3600 s), a (0-1800 s), d (0-7200 s), zz (no task row): kind (1, 2048) has 2 rollouts
    # and 1.5 sandbox-hours; kind (2, 4096) has d: 1 rollout, 2 h; kind gpus=None (task e) none
    t = telemetry([0, 0, 0, 0], [3600, 1800, 7200, 100], tasks=tasks_table(), task_id=["a", "a", "d", "zz"])
    req = measure_json(t)["tasks"]["requests"]
    assert [(r["tasks"], r["rollouts"], r["sandbox_hours"]) for r in req] == [(3, 2, 1.5), (2, 1, 2.0), (1, 0, 0.0)]

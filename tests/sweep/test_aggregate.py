"""Metric extraction and the across-seed mean and spread, against hand arithmetic."""

from __future__ import annotations

import math

import pytest

from sandbox_fleet.sweep.aggregate import mean_sd, metric, numeric_keys, row

S1 = {"completed": 10, "step_s": {"mean": 2.0}, "lost_sandbox_hours": {"exception": 1.5, "preemption": 0.25},
      "scenario": "x", "ok": True}
S2 = {"completed": 14, "step_s": {"mean": 4.0}, "lost_sandbox_hours": {"exception": 0.5, "preemption": 0.0},
      "scenario": "x", "ok": True}


def test_metric_paths():
    assert metric(S1, "step_s.mean") == 2.0
    assert metric(S1, "completed") == 10
    assert metric(S1, "lost_sandbox_hours.total") == 1.75
    assert metric(S1, "step_s.p99") is None
    assert metric(S1, "scenario") is None  # not a number
    assert metric(S1, "ok") is None  # bools are not figures
    assert metric({}, "lost_sandbox_hours.total") is None


def test_mean_sd_by_hand():
    m, sd = mean_sd([1.0, 2.0, 6.0])
    assert m == 3.0
    assert sd == pytest.approx(math.sqrt(((1 - 3) ** 2 + (2 - 3) ** 2 + (6 - 3) ** 2) / 2))
    assert mean_sd([5.0]) == (5.0, None)
    assert mean_sd([None, None]) == (None, None)
    assert mean_sd([None, 4.0, 2.0]) == (3.0, math.sqrt(2.0))


def test_row_layout():
    r = row({"fleet.cap": 8}, [S1, S2], ["completed", "step_s.mean", "lost_sandbox_hours.total"])
    assert list(r) == ["fleet.cap", "completed", "completed:sd", "step_s.mean", "step_s.mean:sd",
                       "lost_sandbox_hours.total", "lost_sandbox_hours.total:sd"]
    assert (r["completed"], r["step_s.mean"], r["lost_sandbox_hours.total"]) == (12.0, 3.0, 1.125)
    assert r["completed:sd"] == pytest.approx(math.sqrt(8.0))


def test_numeric_keys():
    assert numeric_keys(S1) == ["completed", "step_s.mean", "lost_sandbox_hours.exception",
                                "lost_sandbox_hours.preemption"]

"""Per-model slices are bounded (issue 42 mechanism 7): the ``TOP_SLICES`` models with most rollouts,
then one others row; a null model's row never merges with a real model named "(none)".

The expected rows and sums are counted here from the input lists, not read from the code.
"""

from __future__ import annotations

from collections import Counter

import pytest

from sandbox_fleet.measure import columns
from sandbox_fleet.measure.run import measure_telemetry

from .helpers import telemetry


def _corpus(models: list[str | None], hold_s) -> object:
    n = len(models)
    starts = [float(i) for i in range(n)]
    return telemetry(starts, [s + h for s, h in zip(starts, hold_s)], model=models,
                     has_exception=[i % 3 == 0 for i in range(n)])


def test_top_k_and_others_hand_case(monkeypatch):
    monkeypatch.setattr(columns, "TOP_SLICES", 3)
    # rows per model: m-e 5, m-a 4, m-d 4, m-b 4 (a tie: the name decides), m-c 2, m-f 1, and 2 nulls
    models = ["m-e"] * 5 + ["m-a"] * 4 + ["m-d"] * 4 + ["m-b"] * 4 + ["m-c"] * 2 + ["m-f"] + [None] * 2
    hold_s = [10.0 + i for i in range(len(models))]
    ms = measure_telemetry(_corpus(models, hold_s))
    rows = Counter(models)
    kept = ["m-a", "m-b", "m-e"]  # 5 rows, then the 4-row tie broken by name (m-a, m-b before m-d)
    merged = ["m-c", "m-d", "m-f"]
    assert sorted(ms.by_model) == sorted([*kept, "(others)", "(none)"])
    for name in kept:
        assert ms.by_model[name].rows == rows[name]
        assert ms.by_model[name].sandbox_s == pytest.approx(sum(h for m, h in zip(models, hold_s) if m == name))
    others = ms.by_model["(others)"]
    assert others.rows == sum(rows[m] for m in merged) == 7
    assert others.sandbox_s == pytest.approx(sum(h for m, h in zip(models, hold_s) if m in merged))
    exc = [i % 3 == 0 for i in range(len(models))]
    assert others.exception_rate == pytest.approx(sum(e for m, e in zip(models, exc) if m in merged) / 7)
    assert others.steps is None  # merged models' starts are no one run's steps
    assert ms.by_model["(none)"].rows == 2
    assert ms.hold_s.by_model["(others)"].rows == 7
    cut = ms.slice_cut["by_model"]
    assert (cut.top, cut.groups, cut.groups_merged, cut.rows_merged, cut.others) == (3, 6, 3, 7, "(others)")
    assert "by_job" not in ms.slice_cut
    assert any("6 distinct models" in w and "'(others)'" in w for w in ms.warnings)


def test_jobs_are_bounded_and_caps_still_summed_over_every_job(monkeypatch):
    monkeypatch.setattr(columns, "TOP_SLICES", 2)
    # four jobs, all running over [0, 100): j-a 3 rows (cap 3), j-b 2 (cap 2), j-c 1 (cap 5), j-d 1 (cap 5)
    jobs = ["j-a"] * 3 + ["j-b"] * 2 + ["j-c", "j-d"]
    n = len(jobs)
    caps = {"j-a": 3, "j-b": 2, "j-c": 5, "j-d": 5}
    ms = measure_telemetry(telemetry([0.0] * n, [100.0] * n, job=jobs, model=["m"] * n, caps=caps))
    assert sorted(ms.by_job) == ["(others)", "j-a", "j-b"]
    assert ms.by_job["(others)"].rows == 2 and ms.by_job["(others)"].steps is None
    assert ms.by_job["(others)"].peak == 2  # j-c and j-d together
    assert ms.by_job["j-a"].configured_cap == 3
    assert ms.by_job["(others)"].configured_cap is None  # merged jobs have no one cap
    cut = ms.slice_cut["by_job"]
    assert (cut.top, cut.groups, cut.groups_merged, cut.rows_merged) == (2, 4, 2, 2)
    # the fleet's cap is still summed over all four running jobs' own caps: 3 + 2 + 5 + 5
    assert ms.concurrency.configured_cap == sum(caps.values())


def test_no_cut_no_field():
    ms = measure_telemetry(_corpus(["a", "b", "a"], [1.0, 2.0, 3.0]))
    assert ms.slice_cut is None and sorted(ms.by_model) == ["a", "b"]


def test_a_model_named_none_keeps_its_own_row():
    models = ["(none)"] * 3 + [None] * 2 + ["x"]
    ms = measure_telemetry(_corpus(models, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    assert ms.by_model["(none)"].rows == 3  # the real model
    assert ms.by_model["((none))"].rows == 2  # the rows naming none, under a label no model has
    assert ms.by_model["((none))"].sandbox_s == pytest.approx(4.0 + 5.0)
    assert sum(s.rows for s in ms.by_model.values()) == 6


def test_a_model_named_others_is_not_the_others_row(monkeypatch):
    monkeypatch.setattr(columns, "TOP_SLICES", 1)
    models = ["(others)"] * 3 + ["b", "c"]
    ms = measure_telemetry(_corpus(models, [1.0] * 5))
    assert ms.by_model["(others)"].rows == 3 and ms.by_model["((others))"].rows == 2
    assert ms.slice_cut["by_model"].others == "((others))"

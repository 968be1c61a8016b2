"""Coverage counts on the hand-made 10-row table (see conftest)."""

from __future__ import annotations

from summaries import measure_json


def test_coverage_counts(ten_rows):
    c = measure_json(ten_rows)["coverage"]
    assert c["missing_reward"] == 3  # rows 3, 5, 9
    assert c["missing_tokens"] == 4  # rows 7-10
    assert c["missing_turns"] == 2  # rows 9, 10
    assert c["missing_trajectory"] == 2  # has_trajectory false on rows 9, 10
    assert c["unknown_trajectory"] == 1  # null on row 8
    assert c["missing_cached_tokens"] == 8
    assert c["missing_job"] == 10
    assert c["rejected"] == {"duplicate id": 3}


def test_rows_without_an_interval_are_rejected_and_counted():
    from .helpers import telemetry

    t = telemetry([0, 0, 10, None], [5, None, 4, 3], rejected={"duplicate id": 1})
    out = measure_json(t)
    assert out["rows"] == 1
    assert out["coverage"]["rejected"] == {
        "duplicate id": 1, "finished before started": 1, "missing start or finish": 2}
    assert t.rejected == {"duplicate id": 1}  # the input is not mutated
    assert any("rejected" in w for w in out["warnings"])

"""Hold figures on the hand-made 10-row table (holds 100, 200, ..., 1000 s)."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.holds import histogram
from summaries import measure_json


def test_overall_hold_percentiles(ten_rows):
    h = measure_json(ten_rows)["hold_s"]
    assert (h["rows"], h["min"], h["max"]) == (10, 100.0, 1000.0)
    assert h["median"] == 550.0
    assert h["mean"] == 550.0
    assert h["p90"] == pytest.approx(910.0)
    assert h["p99"] == pytest.approx(991.0)
    assert h["small_sample"] is True


def test_mean_over_rows_with_tokens_is_reported_apart(ten_rows):
    h = measure_json(ten_rows)["hold_s"]
    # Rows 1-6 report tokens: (100 + ... + 600) / 6 = 350; rows 7-10: 3400 / 4 = 850.
    assert (h["rows_with_tokens"], h["mean_with_tokens"]) == (6, 350.0)
    assert (h["rows_without_tokens"], h["mean_without_tokens"]) == (4, 850.0)


def test_hold_by_outcome_exception_first(ten_rows):
    by = measure_json(ten_rows)["hold_s"]["by_outcome"]
    assert list(by) == ["exception", "limit", "passed", "failed", "no_reward"]
    assert by["limit"] is None  # no row records a limit
    # exception: rows 5,6,7,9; passed: 1,4,10; failed: 2 (reward 0), 8 (0.5); no reward: 3.
    assert (by["exception"]["rows"], by["exception"]["median"]) == (4, 650.0)
    assert (by["passed"]["rows"], by["passed"]["median"]) == (3, 400.0)
    assert (by["failed"]["rows"], by["failed"]["median"]) == (2, 500.0)
    assert (by["no_reward"]["rows"], by["no_reward"]["median"]) == (1, 300.0)


def test_pass_threshold_moves_rows_between_passed_and_failed(ten_rows):
    by = measure_json(ten_rows, pass_threshold=0.5)["hold_s"]["by_outcome"]
    assert (by["passed"]["rows"], by["failed"]["rows"]) == (4, 1)


def test_hold_by_model(ten_rows):
    by = measure_json(ten_rows)["hold_s"]["by_model"]
    assert list(by) == ["A", "B"]
    assert (by["A"]["median"], by["B"]["median"]) == (300.0, 800.0)


def test_histogram_log_bins():
    us = np.array([0, 1_000_000, 5_000_000, 50_000_000, 99_000_000])
    h = histogram(us)
    assert h["zero"] == 1
    assert h["edges_s"][0] == pytest.approx(1.0) and h["edges_s"][-1] == pytest.approx(100.0)
    assert len(h["edges_s"]) == 21  # two decades, ten bins each
    assert sum(h["counts"]) == 4
    assert h["counts"][0] == 1  # [1, 1.26)
    assert h["counts"][-1] == 1  # 99 s in the last bin


def test_histogram_of_unsorted_holds_equals_the_sorted_count():
    # The histogram no longer needs sorted holds: counted against np.histogram of the sorted ones.
    import numpy as np

    from sandbox_fleet.measure.holds import histogram

    rng = np.random.default_rng(5)
    holds = np.concatenate([np.zeros(7, dtype=np.int64), rng.integers(1, 10**10, 5000)])
    rng.shuffle(holds)
    got = histogram(holds)
    ordered = np.sort(holds)
    positive = ordered[7:] / 1e6
    assert got["zero"] == 7
    assert got["edges_s"][0] <= positive[0] and got["edges_s"][-1] >= positive[-1]
    assert got["counts"].tolist() == np.histogram(positive, bins=got["edges_s"])[0].tolist()
    assert histogram(np.zeros(3, dtype=np.int64)) == {"edges_s": [], "counts": [], "zero": 3}

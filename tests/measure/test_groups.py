"""Per-model slices on the hand-made 10-row table (A = rows 1-5, B = rows 6-10)."""

from __future__ import annotations

import pytest

from summaries import measure_json


def test_by_model(ten_rows):
    by = measure_json(ten_rows)["by_model"]
    a, b = by["A"], by["B"]
    assert (a["rows"], b["rows"]) == (5, 5)
    assert a["exception_rate"] == pytest.approx(1 / 5)  # row 5
    assert b["exception_rate"] == pytest.approx(3 / 5)  # rows 6, 7, 9
    assert (a["hold_median_s"], b["hold_median_s"]) == (300.0, 800.0)
    assert a["hold_p99_s"] == pytest.approx(496.0)  # 400 + 0.96 * 100
    assert a["pass_rate"] == pytest.approx(2 / 3)  # rewarded 1, 2, 4; passed 1, 4
    assert b["pass_rate"] == pytest.approx(2 / 4)  # rewarded 6, 7, 8, 10; passed 7, 10
    assert a["prefill_per_sandbox_s"] == pytest.approx(15000 / 1500)
    assert a["decode_per_sandbox_s"] == pytest.approx(150 / 1500)
    assert (b["token_rows"], b["prefill_per_sandbox_s"]) == (1, pytest.approx(6000 / 600))
    assert a["small_sample"] is True


def test_null_model_gets_its_own_slice():
    from .helpers import telemetry

    by = measure_json(telemetry([0, 0, 0], [1, 2, 3], model=["m", None, None]))["by_model"]
    assert {k: v["rows"] for k, v in by.items()} == {"m": 1, "(none)": 2}


def test_rows_without_a_job_are_left_out_of_by_job():
    from .helpers import telemetry

    out = measure_json(telemetry([0, 0, 0], [1, 2, 3], job=["j", None, "j"]))
    assert list(out["by_job"]) == ["j"]
    assert out["by_job"]["j"]["rows"] == 2
    assert out["by_job"]["j"]["peak"] == 2

"""Outcomes and exceptions on the hand-made 10-row table (see conftest)."""

from __future__ import annotations

import pytest

from summaries import measure_json


def test_outcome_counts_and_rates(ten_rows):
    o = measure_json(ten_rows)["outcomes"]
    assert (o["exceptions"], o["clean"]) == (4, 6)
    assert o["exception_rate"] == pytest.approx(0.4)
    assert (o["rewarded"], o["passed"], o["failed"], o["no_reward"]) == (7, 4, 3, 3)
    assert o["pass_rate"] == pytest.approx(4 / 7)
    # Clean rows 1,2,3,4,8,10 -> passed 1,4,10; the null reward of row 3 counts as not passed.
    assert o["pass_rate_clean"] == pytest.approx(3 / 6)
    # Exception rows 5,6,7,9 -> passed 7 only.
    assert o["pass_rate_exception"] == pytest.approx(1 / 4)
    assert (o["pass_rate_rows"], o["pass_rate_clean_rows"], o["pass_rate_exception_rows"]) == (7, 6, 4)


def test_sandbox_hours(ten_rows):
    o = measure_json(ten_rows)["outcomes"]
    assert o["sandbox_hours"] == pytest.approx(5500 / 3600)
    assert o["sandbox_hours_per_pass"] == pytest.approx(5500 / 3600 / 4)
    assert o["exception_sandbox_hours"] == pytest.approx((500 + 600 + 700 + 900) / 3600)


def test_threshold(ten_rows):
    o = measure_json(ten_rows, pass_threshold=0.5)["outcomes"]
    assert (o["passed"], o["pass_rate"]) == (5, pytest.approx(5 / 7))


def test_headline_rates_carry_seeded_intervals_and_small_sample_flags(ten_rows):
    a = measure_json(ten_rows, seed=3)["outcomes"]
    b = measure_json(ten_rows, seed=3)["outcomes"]
    for name in ("exception_rate", "pass_rate", "pass_rate_clean", "pass_rate_exception"):
        lo, hi = a[f"{name}_ci95"]
        assert lo <= a[name] <= hi
        assert a[f"{name}_ci95"] == b[f"{name}_ci95"]
    assert set(a["small_sample"]) == {"exception_rate", "pass_rate", "pass_rate_clean", "pass_rate_exception"}


def test_exceptions_by_type_with_hours(ten_rows):
    e = measure_json(ten_rows)["exceptions"]
    assert e["rows"] == 4
    assert e["by_type"] == {"Timeout": 2, "(none)": 1, "OOM": 1}
    assert list(e["by_type"]) == ["Timeout", "(none)", "OOM"]  # by count, then name
    hours = e["sandbox_hours_by_type"]
    assert hours["Timeout"] == pytest.approx((500 + 600) / 3600)
    assert hours["OOM"] == pytest.approx(700 / 3600)
    assert hours["(none)"] == pytest.approx(900 / 3600)


def test_clean_and_exception_pass_rates_are_unknown_without_any_reward():
    from tests.measure.helpers import telemetry

    t = telemetry([0, 0, 0], [10, 20, 30], has_exception=[True, False, False])
    o = measure_json(t)["outcomes"]
    assert o["rewarded"] == 0
    assert o["pass_rate"] is None
    assert o["pass_rate_clean"] is None and o["pass_rate_exception"] is None
    assert o["pass_rate_clean_ci95"] is None


@pytest.mark.parametrize("threshold", [1.0, 0.5, 0.0, -1.0, float("inf")])
def test_reward_masks_read_in_place_match_a_row_by_row_reading(threshold):
    # Rewarded = present and not NaN; passed = present, not NaN and >= threshold. The masks read
    # Arrow's buffers in place, chunk by chunk (a sliced chunk starts at an offset; a null slot
    # holds junk the validity clears); the oracle reads each row as a Python value.
    import math

    import numpy as np
    import pyarrow as pa

    from sandbox_fleet.measure.columns import Frame

    rng = np.random.default_rng(5)
    values = [None if u < 0.2 else float("nan") if u < 0.3 else float(v)
              for u, v in zip(rng.random(700), rng.integers(-2, 3, 700) / 2)]
    whole = pa.array(values, pa.float64())
    # Chunks: a slice at an offset, an all-null chunk with no data buffer, and a plain one.
    reward = pa.chunked_array([whole.slice(3, 300), pa.nulls(50, pa.float64()), whole.slice(303)])
    rows = [None if v is None else v for v in values[3:303]] + [None] * 50 + values[303:]
    fr = Frame(pa.table({"reward": reward}))
    want_rewarded = [v is not None and not math.isnan(v) for v in rows]
    want_passed = [v is not None and not math.isnan(v) and v >= threshold for v in rows]
    assert fr.rewarded.tolist() == want_rewarded
    assert fr.passed(threshold).tolist() == want_passed

"""Token rates, cached fraction, the quadratic turn model and its fit."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.measure.tokens import fit_quadratic, model_error
from summaries import measure_json

from .helpers import telemetry

DOC_MEDIANS = {2: 3207, 5: 11760, 11: 52474, 20: 168366, 50: 1044116}


def test_rates_over_rows_with_tokens(ten_rows):
    t = measure_json(ten_rows)["tokens"]
    assert t["rows"] == 6
    assert t["sandbox_s"] == 2100.0  # 100 + ... + 600
    assert (t["input"], t["output"]) == (21000, 210)
    assert t["prefill_per_sandbox_s"] == pytest.approx(10.0)
    assert t["decode_per_sandbox_s"] == pytest.approx(0.1)
    assert t["prefill_decode_ratio"] == pytest.approx(100.0)
    assert t["hold_mean_s"] == pytest.approx(350.0)
    # Rows 1 and 2 report cached tokens: 500 of their 3000 input tokens.
    assert (t["cached"], t["cached_rows"]) == (500, 2)
    assert t["cached_fraction"] == pytest.approx(500 / 3000)


def test_cached_fraction_is_null_when_no_row_reports_it():
    t = measure_json(telemetry([0, 0], [1, 2], input_tokens=[10, 20], output_tokens=[1, 2]))["tokens"]
    assert t["cached"] is None and t["cached_fraction"] is None
    z = measure_json(telemetry([0], [1], input_tokens=[10], output_tokens=[1], cached_tokens=[0]))["tokens"]
    assert z["cached_fraction"] == 0.0  # reported zero is a real zero


def test_turn_histogram_and_percentiles(ten_rows):
    t = measure_json(ten_rows)["tokens"]
    assert t["turns_histogram"] == {str(n): 1 for n in range(1, 9)}
    assert t["turns_rows"] == 8
    assert t["turns_median"] == 4.5
    assert t["turns_p90"] == pytest.approx(7.3)  # pos 6.3 of 1..8


def test_fit_recovers_c_on_exact_quadratic_data():
    c = 824
    turns, inputs = [], []
    for n in range(1, 31):
        exact = c * n * (n + 1) // 2
        turns += [n] * 3
        inputs += [exact - 100, exact, exact + 100]  # median is the exact value
    out = measure_json(telemetry([0] * len(turns), [1] * len(turns), turns=turns, input_tokens=inputs,
                                      output_tokens=[1] * len(turns)), min_turn_rows=3)["tokens"]
    assert out["median_input_by_turns"]["7"] == c * 28
    assert out["turn_tokens"] == pytest.approx(c)
    assert out["r2_quadratic"] == pytest.approx(1.0)
    assert out["r2_linear"] < 0.99
    assert all(abs(e) < 1e-12 for e in out["model_error_by_turns"].values())
    assert out["fit_points"] == 30 and out["fit_rows"] == 90


def test_fit_uses_only_turn_counts_with_enough_rows():
    # 20 rows at n = 10, all with input 55 * 800 = 44,000 (x = 55); one row at n = 45 with
    # input 500,000 (x = 1035). With min 20 only n = 10 is fitted: c = 800 exactly.
    # With min 1 both: c = (55 * 44000 + 1035 * 500000) / (55^2 + 1035^2).
    turns = [10] * 20 + [45]
    inputs = [44_000] * 20 + [500_000]
    tel = telemetry([0] * 21, [1] * 21, turns=turns, input_tokens=inputs, output_tokens=[1] * 21)
    robust = measure_json(tel)["tokens"]
    assert robust["turn_tokens"] == pytest.approx(800.0)
    assert (robust["fit_points"], robust["fit_rows"], robust["min_turn_rows"]) == (1, 20, 20)
    loose = measure_json(tel, min_turn_rows=1)["tokens"]
    assert loose["turn_tokens"] == pytest.approx((55 * 44_000 + 1035 * 500_000) / (55**2 + 1035**2))
    assert (loose["fit_points"], loose["fit_rows"]) == (2, 21)
    assert loose["median_input_by_turns"] == robust["median_input_by_turns"]  # all points still reported


def test_published_summary_carries_its_stated_c():
    # The published figure is carried, not refitted (its five printed medians alone give 818.4).
    import json
    from pathlib import Path

    pub = json.loads((Path(__file__).resolve().parents[2] / "examples" / "rst-published.json").read_text())
    assert pub["tokens"]["turn_tokens"] == 824.0
    med = pub["tokens"]["median_input_by_turns"]
    assert fit_quadratic(np.array([int(k) for k in med]), np.array(list(med.values())))["turn_tokens"] == pytest.approx(818.4, abs=0.05)


def test_fit_hand_values():
    # x = n(n+1)/2 = [1, 3], y = [2, 5]: c = (2 + 15) / (1 + 9) = 1.7;
    # residuals 0.3, -0.1 -> SS_res 0.1; SS_tot 4.5 -> R^2 = 1 - 0.1/4.5. Two points: a line fits exactly.
    f = fit_quadratic(np.array([1, 2]), np.array([2.0, 5.0]))
    assert f["turn_tokens"] == pytest.approx(1.7)
    assert f["r2_quadratic"] == pytest.approx(1 - 0.1 / 4.5)
    assert f["r2_linear"] == pytest.approx(1.0)
    assert (f["linear_slope"], f["linear_intercept"]) == (pytest.approx(3.0), pytest.approx(-1.0))


def test_documents_model_errors_at_c_824():
    err = model_error(824, DOC_MEDIANS)
    assert {n: round(e * 100, 1) for n, e in err.items()} == {
        "2": -22.9, "5": 5.1, "11": 3.6, "20": 2.8, "50": 0.6}


def test_fit_without_turns_is_null():
    out = measure_json(telemetry([0], [1], input_tokens=[5], output_tokens=[1]))["tokens"]
    assert out["turn_tokens"] is None and out["r2_quadratic"] is None
    assert out["median_input_by_turns"] == {} and out["model_error_by_turns"] == {}

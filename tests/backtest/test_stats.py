"""The drift tests' statistics against scipy and hand-computed cases (independent truth)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import stats

from sandbox_fleet.backtest.drift import drift_tests, holm, mann_whitney, two_proportions


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mann_whitney_matches_scipy_with_ties(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 12, 40).astype(float)  # many ties
    b = rng.integers(2, 14, 33).astype(float)
    u, p, delta = mann_whitney(a, b)
    ref = stats.mannwhitneyu(b, a, alternative="two-sided", method="asymptotic", use_continuity=True)
    assert u == pytest.approx(ref.statistic)
    assert p == pytest.approx(ref.pvalue, rel=1e-9)
    # Cliff's delta by counting every pair
    pairs = [int(x > y) - int(x < y) for x, y in itertools.product(b, a)]
    assert delta == pytest.approx(sum(pairs) / len(pairs))


def test_mann_whitney_all_equal_is_no_evidence():
    assert mann_whitney(np.ones(6), np.ones(7))[1:] == (1.0, 0.0)


def test_two_proportions_matches_the_chi_square_test():
    z, p, h = two_proportions(12, 200, 30, 180)
    chi2, p_ref, _, _ = stats.chi2_contingency([[12, 188], [30, 150]], correction=False)
    assert z * z == pytest.approx(chi2)
    assert p == pytest.approx(p_ref, rel=1e-9)
    assert h == pytest.approx(2 * np.arcsin(np.sqrt(30 / 180)) - 2 * np.arcsin(np.sqrt(12 / 200)))


def test_holm_by_hand():
    # sorted 0.01, 0.03, 0.04 -> x3, x2, x1 = 0.03, 0.06, 0.04 -> monotone 0.03, 0.06, 0.06
    assert holm([0.04, 0.01, 0.03]) == pytest.approx([0.06, 0.03, 0.06])
    assert holm([0.5, 0.9]) == [1.0, 1.0]


def _side(hold, model, exc=None):
    n = len(hold)
    return {"hold_s": np.asarray(hold, float), "model": np.asarray(model), "exception": np.full(n, np.nan) if exc is None else np.asarray(exc, float),
            "tokens": np.full(n, np.nan), "turns": np.full(n, np.nan)}


def test_a_significant_but_tiny_difference_is_not_drift():
    """The effect-size floor: 20,000 rollouts a side, B's holds 1% longer: p is tiny, delta is not."""
    rng = np.random.default_rng(3)
    a = rng.lognormal(3, 0.1, 20_000)
    b = rng.lognormal(3, 0.1, 20_000) * 1.01
    (t,), _ = drift_tests(_side(a, ["m"] * a.size), _side(b, ["m"] * b.size))
    assert t["p_adjusted"] < 1e-6 and abs(t["effect"]) < 0.147 and not t["drifted"]


def test_small_samples_are_skipped_and_said_so():
    tests, skipped = drift_tests(_side([1, 2, 3], ["m"] * 3), _side([4, 5, 6, 7, 8], ["m"] * 5))
    assert tests == []
    assert any("hold_s (m): 3 values in A, 5 in B" in s for s in skipped)
    assert any(s.startswith("exception_rate (m): 0 flagged") for s in skipped)


def test_a_change_of_model_mix_is_not_drift():
    """Each model keeps its holds and exception rate; B runs the slow model more. Nothing drifted."""
    rng = np.random.default_rng(8)

    def side(n_fast, n_slow):
        hold = np.concatenate((rng.lognormal(2, 0.3, n_fast), rng.lognormal(4, 0.3, n_slow)))
        exc = np.concatenate((rng.random(n_fast) < 0.05, rng.random(n_slow) < 0.4)).astype(float)
        return {**_side(hold, ["fast"] * n_fast + ["slow"] * n_slow), "exception": exc}

    tests, _ = drift_tests(side(900, 100), side(100, 900))
    assert {(t["quantity"], t["model"]) for t in tests} == {("hold_s", "fast"), ("hold_s", "slow"),
                                                           ("exception_rate", "fast"), ("exception_rate", "slow")}
    assert not any(t["drifted"] for t in tests)

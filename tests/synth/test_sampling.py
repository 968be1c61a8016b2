"""Sampling helpers of the synthetic corpus, against the standard library and counting."""

from statistics import NormalDist

import numpy as np
import pytest

from sandbox_fleet.synth.sampling import (
    exact_counts,
    exact_flags,
    exact_labels,
    ndtr,
    ndtri,
    stratified_uniform,
    truncated_lognormal,
)


def test_ndtri_matches_stdlib_inverse_cdf_across_tails():
    p = np.array([1e-12, 1e-6, 0.001, 0.02, 0.02425, 0.1, 0.5, 0.77, 0.97575, 0.999, 1 - 1e-9])
    expected = [NormalDist().inv_cdf(x) for x in p]
    assert np.allclose(ndtri(p), expected, rtol=1e-8, atol=1e-8)


def test_ndtr_matches_stdlib_cdf():
    for x in (-5.0, -1.3, 0.0, 0.4, 3.2):
        assert ndtr(x) == pytest.approx(NormalDist().cdf(x), rel=1e-12)


def test_exact_counts_hand_cases():
    assert exact_counts(10, [0.5, 0.5]).tolist() == [5, 5]
    # 7 * (0.2, 0.3, 0.5) = 1.4, 2.1, 3.5: floors 1, 2, 3 and one left for the largest remainder (3.5).
    assert exact_counts(7, [0.2, 0.3, 0.5]).tolist() == [1, 2, 4]
    assert exact_counts(0, [1, 2]).tolist() == [0, 0]


def test_exact_flags_count_and_shuffle():
    rng = np.random.default_rng(3)
    f = exact_flags(rng, 1000, 0.294)
    assert f.sum() == 294
    assert not f[:294].all()  # shuffled, not a prefix
    labels = exact_labels(rng, 9, [1, 1, 1])
    assert sorted(np.bincount(labels).tolist()) == [3, 3, 3]


def test_stratified_uniform_has_one_draw_per_stratum():
    u = stratified_uniform(np.random.default_rng(0), 500)
    strata = np.floor(u * 500).astype(int)
    assert sorted(strata.tolist()) == list(range(500))


def test_truncated_lognormal_respects_bounds_and_median():
    u = stratified_uniform(np.random.default_rng(1), 20001)
    x, z = truncated_lognormal(u, 1000.0, 1.0, 100.0, 1e9)
    assert x.min() >= 100.0 and x.max() <= 1e9
    # Truncating only the far-left tail (P = 1.07%) shifts the median to the 50.53th percentile.
    q = NormalDist().inv_cdf(NormalDist().cdf(np.log(0.1)) + 0.5 * (1 - NormalDist().cdf(np.log(0.1))))
    assert np.median(x) == pytest.approx(1000.0 * np.exp(q), rel=2e-3)
    assert np.allclose(np.log(x), np.log(1000.0) + z)

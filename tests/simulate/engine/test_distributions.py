"""Distributions: sample moments against closed forms, labels, bootstrap, bad parameters."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Clipped, Deterministic, Empirical, Exponential, LogNormal, Mixture, Weibull

N = 400_000


def rng():
    return np.random.default_rng(123)


def test_exponential_mean():
    assert Exponential(2.5).sample(rng(), N).mean() == pytest.approx(2.5, rel=0.01)


def test_deterministic():
    assert Deterministic(4.0).sample(rng(), 5).tolist() == [4.0] * 5


def test_lognormal_median_and_mean():
    x = LogNormal(1332.0, 1.0).sample(rng(), N)
    assert np.median(x) == pytest.approx(1332.0, rel=0.01)
    assert x.mean() == pytest.approx(1332.0 * math.exp(0.5), rel=0.02)
    assert LogNormal(1332.0, 1.0).mean() == pytest.approx(1332.0 * math.exp(0.5))


def test_weibull_mean_and_shape_one_is_exponential():
    x = Weibull(2.0, 10.0).sample(rng(), N)
    assert x.mean() == pytest.approx(10.0 * math.sqrt(math.pi) / 2, rel=0.01)  # Gamma(1.5) = sqrt(pi)/2
    assert Weibull(1.0, 3.0).sample(rng(), N).mean() == pytest.approx(3.0, rel=0.01)


def test_mixture_labels_follow_weights_and_components():
    mix = Mixture((Deterministic(1.0), Deterministic(5.0)), (1.0, 3.0), ("a", "b"))
    x, lab = mix.sample_labeled(rng(), N)
    assert np.mean(lab == 1) == pytest.approx(0.75, abs=0.005)
    assert np.all(x[lab == 0] == 1.0) and np.all(x[lab == 1] == 5.0)
    assert mix.mean() == pytest.approx(4.0)


def test_empirical_resamples_only_measured_values():
    vals = np.array([3.0, 7.0, 11.0])
    x = Empirical(vals).sample(rng(), 10_000)
    assert set(np.unique(x).tolist()) == {3.0, 7.0, 11.0}
    assert x.mean() == pytest.approx(7.0, rel=0.02)


def test_clipped_bounds():
    x = Clipped(Exponential(1.0), 0.5, 2.0).sample(rng(), 10_000)
    assert x.min() == 0.5 and x.max() == 2.0


@pytest.mark.parametrize("make", [
    lambda: Exponential(0.0), lambda: LogNormal(-1.0, 1.0), lambda: LogNormal(1.0, -0.1),
    lambda: Weibull(0.0, 1.0), lambda: Deterministic(-1.0), lambda: Empirical(np.array([])),
    lambda: Mixture((Exponential(1.0),), (1.0, 2.0)), lambda: Mixture((Exponential(1.0),), (-1.0,)),
])
def test_bad_parameters_are_input_errors(make):
    with pytest.raises(InputError):
        make()


def test_clipping_a_mixture_clips_each_draw_and_keeps_labels_and_flags():
    from sandbox_fleet.simulate.engine.distributions import clip, mixture_of

    mix = Mixture((Exponential(1.0), Exponential(50.0)), (1.0, 1.0), ("a", "b"), (False, True))
    raw, raw_lab = mix.sample_labeled(rng(), 20_000)
    for clipped in (clip(mix, 0.5, 20.0), Clipped(mix, 0.5, 20.0)):
        x, lab = clipped.sample_labeled(rng(), 20_000)
        # Clipping is pointwise: same stream, same components, each draw clipped.
        assert np.array_equal(lab, raw_lab) and np.array_equal(x, np.clip(raw, 0.5, 20.0))
        view = mixture_of(clipped)
        assert view.labels == ("a", "b") and view.exceptions == (False, True) and view.weights == (1.0, 1.0)
        y, lab2 = view.sample_labeled(rng(), 20_000)
        assert np.array_equal(y, x) and np.array_equal(lab2, lab)
    assert isinstance(clip(mix, 0.0, 20.0), Mixture)
    assert mixture_of(Clipped(Clipped(mix, 0.0, 30.0), 1.0, 20.0)).labels == ("a", "b")
    assert mixture_of(Clipped(Exponential(1.0), 0.0, 2.0)) is None and mixture_of(Exponential(1.0)) is None


@pytest.mark.parametrize("lo,hi", [(3.0, 2.0), (-1.0, 2.0), (0.0, 0.0)])
def test_clip_bounds_must_be_ordered(lo, hi):
    with pytest.raises(InputError, match="min_s <= max_s"):
        Clipped(Exponential(1.0), lo, hi)

"""Exact expectations over the fitted holds, against independent truth: NumPy's Gauss-Legendre rule,
SciPy's normal and adaptive quadrature of the fit's quantile function, high-precision decimals, and a
large Monte Carlo sample drawn by the fit's own sampler."""

from __future__ import annotations

import itertools
import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import integrate, stats

from sandbox_fleet.plan import holdfit
from sandbox_fleet.plan.rework import expected_rework, spot_rework
from sandbox_fleet.plan.target import HoldSampler, _p90_matching_mean

PUBLISHED = {0.0: 3.8, 0.5: 1332.0, 0.99: 8845.0, 1.0: 26571.0}  # examples/rst-published.json: no p90
PUBLISHED_MEAN_S, PUBLISHED_ROWS = 2102.631549349153, 327189


def _fits() -> list[HoldSampler]:
    rng = np.random.default_rng(3)
    fits = [HoldSampler(PUBLISHED, PUBLISHED_MEAN_S, PUBLISHED_ROWS),
            HoldSampler({0.0: 1.0, 0.5: 10.0, 0.9: 30.0, 0.99: 50.0, 1.0: 100.0}, None, rows=200),
            HoldSampler({0.5: 3046.76, 0.99: 9844.0}, None, rows=5000)]  # lognormal, clipped at 1/(2 x 5000)
    for _ in range(3):
        median = float(rng.uniform(50, 3000))
        fits.append(HoldSampler({0.0: median * float(rng.uniform(0.001, 0.5)), 0.25: median * 0.6, 0.5: median,
                                 0.99: median * float(rng.uniform(2, 20)), 1.0: median * float(rng.uniform(25, 60))},
                                None, rows=float(rng.choice([100, 20_000, 1_000_000]))))
    return fits


FITS = _fits()


def _quantile_s(fit: HoldSampler, u: np.ndarray | float) -> np.ndarray:
    """The fit's quantile function, built independently: SciPy's normal score, clipped, NumPy's interpolation."""
    z = np.clip(stats.norm.ppf(u), fit.knots_z[0], fit.knots_z[-1])
    return np.exp(np.interp(z, fit.knots_z, fit.knots_log_s))


def _quad_expectation(fit: HoldSampler, f, epsrel: float = 1e-11) -> float:
    """E[f(hold)] = integral over u in (0, 1) of f(Q(u)), by SciPy's adaptive quadrature; the knots' and
    clip points' quantiles are breakpoints (the quantile function bends there)."""
    cuts = sorted(stats.norm.cdf(fit.knots_z))
    edges = [0.0, *cuts, 1.0]
    return sum(integrate.quad(lambda u: f(float(_quantile_s(fit, u))), a, b, limit=200, epsabs=0, epsrel=epsrel)[0]
               for a, b in itertools.pairwise(edges) if b > a)


def test_the_gauss_legendre_rule_is_numpys():
    nodes, weights = holdfit.gauss_legendre(holdfit.GL_NODES)
    want_x, want_w = np.polynomial.legendre.leggauss(holdfit.GL_NODES)
    assert sorted(nodes) == pytest.approx(sorted(want_x), abs=1e-15)
    assert [w for _, w in sorted(zip(nodes, weights))] == pytest.approx(list(want_w), abs=1e-14)


@pytest.mark.parametrize(("x1", "x2"), [(-40.0, -30.0), (-3.0, -1.0), (-1.0, 2.0), (0.5, 6.0), (20.0, 30.0), (-1e-3, 1e-3)])
def test_the_normal_mass_between_two_points_is_scipys_to_relative_precision_in_both_tails(x1, x2):
    want = stats.norm.sf(x1) - stats.norm.sf(x2) if x1 > 0 else stats.norm.cdf(x2) - stats.norm.cdf(x1)
    assert holdfit.normal_between(x1, x2) == pytest.approx(want, rel=1e-12)


@pytest.mark.parametrize("i", range(len(FITS)))
def test_the_closed_form_mean_is_the_quantile_functions_integral(i):
    fit = FITS[i]
    clipped = fit.clipped()
    assert holdfit.mean_s(clipped) == pytest.approx(_quad_expectation(fit, lambda h: h), rel=1e-9)
    # and the quadrature of the identity agrees with the closed form to rounding
    assert holdfit.expectation(clipped, lambda h: h) == pytest.approx(holdfit.mean_s(clipped), rel=1e-13)


@pytest.mark.parametrize("i", range(len(FITS)))
@pytest.mark.parametrize("rate_per_h", [0.000103, 0.5])
def test_rework_and_reclaims_are_scipys_quadrature_of_the_fit(i, rate_per_h):
    fit = FITS[i]
    share, per_hold, basis = expected_rework(fit, rate_per_h)
    # this integrand cancels at small r h (expm1(x) - x): SciPy is asked for what its rounding allows
    extra_h = _quad_expectation(fit, lambda h: math.expm1(rate_per_h * h / 3600) / rate_per_h - h / 3600, epsrel=1e-8)
    mean_h = _quad_expectation(fit, lambda h: h / 3600)
    assert share == pytest.approx(extra_h / mean_h, rel=1e-7)
    assert per_hold == pytest.approx(_quad_expectation(fit, lambda h: math.expm1(rate_per_h * h / 3600)), rel=1e-9)
    assert "quadrature" in basis and "no sample" in basis


@pytest.mark.parametrize("rate_per_h", [0.000103, 0.5])
def test_the_published_fits_rework_is_a_2m_draw_monte_carlo_within_its_standard_error(rate_per_h):
    fit = FITS[0]
    share, per_hold, _ = expected_rework(fit, rate_per_h)
    h = fit.sample(np.random.default_rng(2026), 2_000_000) / 3600  # the fit's own sampler: NumPy's draws
    extra = np.expm1(rate_per_h * h) / rate_per_h - h
    # the share is a ratio of means: its standard error by the delta method
    mh, me = h.mean(), extra.mean()
    resid = extra - (me / mh) * h
    se_share = resid.std() / mh / math.sqrt(h.size)
    assert abs(share - me / mh) < 4 * se_share
    reclaims = np.expm1(rate_per_h * h)
    assert abs(per_hold - reclaims.mean()) < 4 * reclaims.std() / math.sqrt(h.size)


def test_a_deterministic_hold_reworks_exactly_by_hand():
    # every knot 3600 s: the fit is one 1 h hold; r = 0.5/h: (e^0.5 - 1)/0.5 - 1 = 0.29744254 extra per hour held
    fit = HoldSampler({0.0: 3600.0, 0.5: 3600.0, 1.0: 3600.0}, None, rows=1000)
    share, per_hold, _ = expected_rework(fit, 0.5)
    assert share == pytest.approx(0.2974425414002563, rel=1e-13)
    assert per_hold == pytest.approx(math.e**0.5 - 1, rel=1e-13)
    out = spot_rework(fit, 0.5, busy_sandboxes=100, spot_per_h=10.0, source="x")
    assert out.rework_sandbox_hours_per_h == pytest.approx(29.74425414, rel=1e-9)
    assert out.spot_per_h_with_rework == pytest.approx(12.974425414, rel=1e-10)
    assert spot_rework(None, 0.5, 1, 1) is None and spot_rework(fit, None, 1, 1) is None
    assert expected_rework(fit, 0.0)[:2] == (0.0, 0.0)


def test_exponential_holds_in_closed_form_and_unbounded_past_one_reclaim_per_mean_hold():
    # mean 1 h, r = 0.5/h: E[e^(rh)] = 1/(1 - 0.5) = 2, so one reclaim per hold and a share of 1
    fit = HoldSampler({}, 3600.0)
    assert expected_rework(fit, 0.5)[:2] == (1.0, 1.0)
    share, per_hold, basis = expected_rework(fit, 1.0)
    assert share is None and per_hold is None and basis.startswith("unbounded")
    out = spot_rework(fit, 1.0, 100, 10.0)
    assert out.rework_share is None and out.spot_per_h_with_rework is None and out.basis.startswith("unbounded")
    # against a Monte Carlo of the exponential at r m = 0.2 (E[e^(2rh)] finite, so the sample's error is)
    h = np.random.default_rng(5).exponential(1.0, 2_000_000)
    reclaims = np.expm1(0.2 * h)
    assert abs(expected_rework(fit, 0.2)[1] - reclaims.mean()) < 4 * reclaims.std() / math.sqrt(h.size)


def test_e_to_the_x_less_one_less_x_is_exact_at_small_and_large_x():
    for x in (1e-12, -3e-9, 2.5e-4, 0.07, -0.3, 0.49, 0.5, 3.0, 40.0):
        with localcontext() as ctx:
            ctx.prec = 60
            want = float(Decimal(x).exp() - 1 - Decimal(x))
        assert holdfit.exp_excess(x) == pytest.approx(want, rel=4e-16), x
    assert holdfit.exp_excess(0.0) == 0.0


@pytest.mark.parametrize(("known", "mean", "rows"), [
    (PUBLISHED, PUBLISHED_MEAN_S, PUBLISHED_ROWS),
    ({0.0: 2.0, 0.5: 400.0, 0.99: 9000.0, 1.0: 20000.0}, 900.0, 5000),
    ({0.0: 2.0, 0.25: 200.0, 0.5: 400.0, 0.99: 9000.0, 1.0: 20000.0}, 1500.0, 200),
])
def test_the_invented_p90_gives_the_fit_the_measured_mean_by_brute_force(known, mean, rows):
    p90 = _p90_matching_mean(known, mean, rows)
    assert known[0.5] < p90 < known[0.99]
    fit = HoldSampler({**known, 0.9: p90}, None, rows)
    assert _quad_expectation(fit, lambda h: h) == pytest.approx(mean, rel=1e-9)
    # the mean is monotone in p90: a hair either side misses it on the right sides
    lower = HoldSampler({**known, 0.9: p90 * (1 - 1e-9)}, None, rows).clipped()
    upper = HoldSampler({**known, 0.9: p90 * (1 + 1e-9)}, None, rows).clipped()
    assert holdfit.mean_s(lower) < mean < holdfit.mean_s(upper)


def test_an_unreachable_mean_clips_the_invented_p90_to_the_p99():
    assert _p90_matching_mean(PUBLISHED, 1e7, PUBLISHED_ROWS) == pytest.approx(PUBLISHED[0.99], rel=1e-12)
    assert _p90_matching_mean(PUBLISHED, 1.0, PUBLISHED_ROWS) == pytest.approx(PUBLISHED[0.5], rel=1e-12)

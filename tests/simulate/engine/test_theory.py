"""Validation against queueing theory (issue section 6). Expected values are closed
forms computed here, independently of the engine."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.simulate import Exponential, Fleet, LogNormal, Poisson, SyncRL, run_workloads


def erlang_c_wait(lam: float, mu: float, c: int) -> float:
    """Mean queue wait of M/M/c (Erlang C)."""
    a = lam / mu
    top = a**c / math.factorial(c) * c / (c - a)
    p_wait = top / (sum(a**k / math.factorial(k) for k in range(c)) + top)
    return p_wait / (c * mu - lam)


def test_erlang_c_helper_on_a_textbook_value():
    # M/M/1: Wq = rho / (mu - lam).
    assert erlang_c_wait(0.5, 1.0, 1) == pytest.approx(1.0)
    # M/M/2, lam=1, mu=1: P(wait) = 1/3, Wq = (1/3) / (2 - 1).
    assert erlang_c_wait(1.0, 1.0, 2) == pytest.approx(1 / 3)


@pytest.fixture(params=["interpreted", "compiled"])
def fifo_path(request, monkeypatch):
    """The one-pass FIFO runs below on the recursion's rule as plain Python and compiled by numba
    (which must run: the plain one is made to fail)."""
    if request.param == "interpreted":
        monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    else:
        from sandbox_fleet.simulate.engine import fifo
        from sandbox_fleet.simulate.engine.fast import fifo_compiled

        fifo_compiled.load()  # loaded in the process: every run takes it
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)

        def no_pure(*a):
            raise AssertionError("the interpreted rule ran")

        monkeypatch.setattr(fifo, "place_stream", no_pure)
    return request.param


@pytest.mark.parametrize("c,lam", [(10, 7.0), (4, 3.2)])
def test_mmc_mean_wait_matches_erlang_c(c, lam, fifo_path):
    waits = []
    for seed in range(5):
        res = run_workloads(Fleet(cap=c), [Poisson(rate_per_s=lam, n=100_000, holds=Exponential(1.0))], seed=seed)
        waits.append(res.summary()["queue_wait_s"]["mean"])
    assert np.mean(waits) == pytest.approx(erlang_c_wait(lam, 1.0, c), rel=0.05)


def _time_weighted_moments(start: np.ndarray, finish: np.ndarray, t0: float, t1: float) -> tuple[float, float]:
    """Mean and variance over [t0, t1] of the number of open intervals."""
    t = np.concatenate((start, finish))
    d = np.concatenate((np.ones(start.size), -np.ones(finish.size)))
    order = np.argsort(t, kind="stable")
    t, level = t[order], np.cumsum(d[order])
    seg_t0, seg_t1 = np.clip(t[:-1], t0, t1), np.clip(t[1:], t0, t1)
    w = seg_t1 - seg_t0
    lv = level[:-1]
    mean = float(np.sum(lv * w) / w.sum())
    return mean, float(np.sum((lv - mean) ** 2 * w) / w.sum())


def test_mginf_concurrency_is_poisson():
    lam, median, sigma = 5.0, 2.0, 0.8
    mean_s = median * math.exp(sigma**2 / 2)  # E[S] of the lognormal
    res = run_workloads(Fleet(cap=None), [Poisson(rate_per_s=lam, n=200_000, holds=LogNormal(median, sigma))], seed=3)
    # Measure away from the empty start and the draining end (steady state).
    t0, t1 = 200.0, float(res.rollout_arrival_s.max()) - 200.0
    mean, var = _time_weighted_moments(res.start_s, res.finish_s, t0, t1)
    assert mean == pytest.approx(lam * mean_s, rel=0.01)
    assert var == pytest.approx(lam * mean_s, rel=0.10)  # Poisson: variance = mean


def expected_max_exponential(b: int, mean: float) -> float:
    return mean * sum(1.0 / k for k in range(1, b + 1))  # H_B * mean


def expected_max_numeric(b: int, cdf) -> float:
    """E[max of B iid] = integral of 1 - F(x)^B over x >= 0 (trapezoid)."""
    x = np.linspace(0.0, 400.0, 400_001)
    y = 1.0 - cdf(x) ** b
    return float(np.sum((y[1:] + y[:-1]) / 2 * np.diff(x)))


def test_numeric_max_agrees_with_harmonic_formula():
    assert expected_max_numeric(64, lambda x: 1 - np.exp(-x)) == pytest.approx(expected_max_exponential(64, 1.0), rel=1e-6)


@pytest.mark.parametrize("dist", ["exponential", "lognormal"])
def test_sync_step_duty_matches_e_s_over_e_max(dist):
    b, steps = 64, 2000
    if dist == "exponential":
        holds, e_s, e_max = Exponential(1.0), 1.0, expected_max_exponential(b, 1.0)
    else:
        mu, sigma = 0.0, 0.5
        holds = LogNormal(math.exp(mu), sigma)
        e_s = math.exp(mu + sigma**2 / 2)
        erf = np.vectorize(math.erf)
        def cdf(x):
            return np.where(x > 0, 0.5 * (1 + erf((np.log(np.maximum(x, 1e-300)) - mu) / (sigma * math.sqrt(2)))), 0.0)
        e_max = expected_max_numeric(b, cdf)
    res = run_workloads(Fleet(cap=None), [SyncRL(batch=b, steps=steps, train_s=0.0, holds=holds)], seed=7)
    s = res.summary()
    duty = s["concurrency"]["mean"] / s["concurrency"]["peak"]
    assert s["concurrency"]["peak"] == b
    assert duty == pytest.approx(e_s / e_max, rel=0.02)
    assert s["trainer_idle_fraction"] == pytest.approx(1.0)


def test_littles_law_on_a_capped_run(fifo_path):
    res = run_workloads(Fleet(cap=8, provision_delay_s=0.2), [Poisson(rate_per_s=6.0, n=50_000, holds=Exponential(1.1))], seed=9)
    # L from a sweep over each rollout's time in the system; lambda and W from the rows.
    arrive, leave = res.arrival_s, res.finish_s
    t0, t1 = float(arrive.min()), float(leave.max())
    L, _ = _time_weighted_moments(arrive, leave, t0, t1)
    lam, W = arrive.size / (t1 - t0), float(np.mean(leave - arrive))
    assert L == pytest.approx(lam * W, rel=1e-9)
    ll = res.summary()["littles_law"]
    assert ll["mean_in_system"] == pytest.approx(L, rel=1e-9)

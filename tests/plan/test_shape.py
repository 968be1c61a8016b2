"""Throughput targets: shape arithmetic, the bisection, and the smooth shape against Erlang C."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.shape import measured_shape, mean_busy, smallest_cap, smooth_shape


def test_measured_shape_divides_the_mean_by_the_duty():
    # 400 passes/h x 3.0570527 sandbox-h = 1,222.82 busy; / 0.1558639 = 7,845.4 -> 7,846 slots
    m = mean_busy(400, 3.0570526876158683)
    assert m == pytest.approx(1222.821, abs=1e-3)
    out = measured_shape(m, 0.1558639041815157)
    assert out["concurrency"] == 7846 and out["shape"] == "measured"
    assert out["duty"] == pytest.approx(1222.821 / 7846, rel=1e-6)


def test_measured_shape_without_a_duty_is_an_input_error():
    with pytest.raises(InputError, match="--shape smooth"):
        measured_shape(10.0, None)


def test_smallest_cap_matches_a_brute_force_scan():
    waits = {c: 1000.0 / c**2 for c in range(1, 200)}  # non-increasing
    cap, wait = smallest_cap(waits.__getitem__, 1, 199, 0.5)
    assert cap == min(c for c, w in waits.items() if w <= 0.5) == 45 and wait == waits[45]


def test_smallest_cap_that_cannot_be_met_is_one_line_input_error():
    with pytest.raises(InputError, match="even 20 slots"):
        smallest_cap(lambda c: 100.0, 1, 20, 1.0)


def erlang_c_wait(c: int, a: float, mean_s: float) -> float:
    """M/M/c mean queue wait: C(c, a) x mean / (c - a)."""
    s = sum(a**k / math.factorial(k) for k in range(c))
    top = a**c / math.factorial(c) * c / (c - a)
    return top / (s + top) * mean_s / (c - a)


def test_smooth_shape_matches_erlang_c_on_exponential_holds():
    # a = 8 Erlangs of exponential holds (mean 100 s); Erlang C's smallest c with mean wait <= 5 s
    a, mean_s, limit = 8.0, 100.0, 5.0
    exact = min(c for c in range(9, 40) if erlang_c_wait(c, a, mean_s) <= limit)
    assert exact == 12  # Erlang C: W(11) = 8.17 s, W(12) = 3.50 s
    out = smooth_shape(a, lambda rng, n: rng.exponential(mean_s, n), max_wait_s=limit, seed=3)
    assert out["concurrency"] == exact
    assert out["duty"] == pytest.approx(a / exact)


def test_smooth_shape_out_of_reach_is_an_input_error():
    with pytest.raises(InputError, match="--max-wait-s"):
        smooth_shape(5.0, lambda rng, n: np.full(n, 10.0), max_wait_s=-1.0, seed=0)

"""Throughput targets: shape arithmetic, the bisection, and the smooth shape against Erlang C."""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.shape import mean_busy, measured_shape, smallest_cap, smooth_shape
from summaries import as_measure


def test_measured_shape_divides_the_mean_by_the_duty():
    # 400 passes/h x 3.0570527 sandbox-h = 1,222.82 busy; / 0.1558639 = 7,845.4 -> 7,846 slots
    m = mean_busy(400, 3.0570526876158683)
    assert m == pytest.approx(1222.821, abs=1e-3)
    out = measured_shape(m, 0.1558639041815157)
    assert out.concurrency == 7846 and out.shape == "measured"
    assert out.duty == pytest.approx(1222.821 / 7846, rel=1e-6)


def test_measured_shape_without_a_duty_is_an_input_error():
    with pytest.raises(InputError, match="`shape` smooth"):
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
    assert out.concurrency == exact
    assert out.duty == pytest.approx(a / exact)


def test_smooth_shape_out_of_reach_is_an_input_error():
    with pytest.raises(InputError, match="`max_wait_s`"):
        smooth_shape(5.0, lambda rng, n: np.full(n, 10.0), max_wait_s=-1.0, seed=0)


# --- issue 22 item 8: the shape chosen from the measured step structure, both shown past 1.5x ---


def _published(**concurrency_or_steps) -> dict:
    import json

    from .conftest import PUBLISHED

    s = json.loads(PUBLISHED.read_text())
    steps = concurrency_or_steps.pop("steps", None)
    s["concurrency"] = {**s["concurrency"], **concurrency_or_steps}
    if steps is not None:
        s["steps"] = steps
    return s


def test_auto_shape_follows_the_step_structure():
    from sandbox_fleet.plan.shape import auto_shape

    assert auto_shape(True, 0.2)[0] == "measured"
    assert auto_shape(False, 0.2)[0] == "smooth"
    assert auto_shape(None, 0.2)[0] == "measured"  # never measured: keep what was measured
    assert auto_shape(True, None)[0] == "smooth"  # nothing to keep


def test_auto_on_a_summary_without_steps_keeps_the_measured_shape_and_shows_smooth():
    from sandbox_fleet.plan.summary import Figures
    from sandbox_fleet.plan.target import resolve_target

    s = _published()
    fig = Figures(as_measure(s))
    got = resolve_target(fig, passing_per_hour=50)
    # by hand: 50 passing/h x sandbox-h per pass / measured duty, rounded up
    shph = s["outcomes"]["sandbox_hours_per_pass"]
    assert got.concurrency == math.ceil(50 * shph / s["concurrency"]["duty"])
    assert got.shape == "measured" and "does not say whether rollouts come in steps" in got.shape_basis
    smooth = resolve_target(fig, passing_per_hour=50, shape="smooth")
    alt = got.shape_alternative
    assert (alt.shape, alt.concurrency) == ("smooth", smooth.concurrency)
    assert alt.ratio == pytest.approx(got.concurrency / smooth.concurrency) and alt.ratio > 1.5


def test_auto_without_steps_in_telemetry_is_smooth_and_close_answers_show_one():
    from sandbox_fleet.plan.summary import Figures
    from sandbox_fleet.plan.target import resolve_target

    no_steps = {"detected": False, "reason": "no break", "runs_with_steps": []}
    got = resolve_target(Figures(as_measure(_published(steps=no_steps))), passing_per_hour=50)
    assert got.shape == "smooth" and "no synchronous steps" in got.shape_basis
    assert got.shape_alternative.shape == "measured"
    # at a duty of 0.9 the measured answer is within 1.5x of the smooth one: one answer
    close = resolve_target(Figures(as_measure(_published(steps=no_steps, duty=0.9, mean=2700.0))), passing_per_hour=50)
    measured = math.ceil(50 * _published()["outcomes"]["sandbox_hours_per_pass"] / 0.9)
    assert measured / close.concurrency <= 1.5
    assert close.shape_alternative is None

"""Every named invariant is checked on every run, and catches a broken result."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from sandbox_fleet.simulate import RETRIED, Exponential, Fleet, InvariantError, Poisson, run_workloads
from sandbox_fleet.simulate.engine.invariants import check_invariants


@pytest.fixture(scope="module", params=["fifo", "events"])
def res(request):
    return run_workloads(Fleet(cap=3), [Poisson(rate_per_s=2.5, n=2000, holds=Exponential(1.0))], seed=1, engine=request.param)


def broken(res, **changes):
    r = copy.copy(res)
    r._sweeps = {}
    for k, v in changes.items():
        setattr(r, k, v)
    return r


def test_clean_run_passes(res):
    check_invariants(res, n_expected=2000)


def test_one_terminal_state(res):
    state = res.state.copy()
    state[5] = RETRIED  # rollout 5 would end in no terminal state
    with pytest.raises(InvariantError, match="one_terminal_state"):
        check_invariants(broken(res, state=state), n_expected=2000)
    with pytest.raises(InvariantError, match="one_terminal_state"):
        check_invariants(res, n_expected=2001)  # a rollout that arrived but never ended


def test_clock_monotonic(res):
    with pytest.raises(InvariantError, match="clock_monotonic"):
        check_invariants(broken(res, clock_monotonic=False), n_expected=2000)


def test_no_start_before_arrival(res):
    start = res.start_s.copy()
    start[7] = res.arrival_s[7] - 0.5
    with pytest.raises(InvariantError, match="no_start_before_arrival"):
        check_invariants(broken(res, start_s=start), n_expected=2000)


def test_cap_respected(res):
    start, finish = res.start_s.copy(), res.finish_s.copy()
    start[:4], finish[:4] = 0.0, 100.0  # four overlapping sandboxes on a cap of 3
    with pytest.raises(InvariantError, match="cap_respected|no_start_before_arrival"):
        check_invariants(broken(res, start_s=start, finish_s=finish), n_expected=2000)


def test_littles_law(res):
    arrival = res.arrival_s.copy()
    arrival[10] -= 1.0  # the loop's integrals no longer match the rows
    with pytest.raises(InvariantError, match="littles_law"):
        check_invariants(broken(res, arrival_s=arrival, rollout_arrival_s=res.rollout_arrival_s), n_expected=2000)


def test_engine_runs_the_checks_by_default(monkeypatch):
    import sandbox_fleet.simulate.engine.run as engine

    calls = []
    monkeypatch.setattr(engine, "check_invariants", lambda r, n_expected: calls.append(n_expected))
    run_workloads(Fleet(cap=2), [Poisson(rate_per_s=1, n=10, holds=Exponential(1.0))], seed=0)
    assert calls == [10]


def test_integral_is_the_area_under_the_open_interval_count():
    """Brute force on a microsecond grid: count the intervals open in each microsecond."""
    from sandbox_fleet.simulate.engine.invariants import integral

    rng = np.random.default_rng(12)
    start_us = rng.integers(0, 400, 60)
    end_us = start_us + rng.integers(0, 150, 60)
    count = np.zeros(600, dtype=np.int64)
    for a, b in zip(start_us, end_us):
        count[a:b] += 1
    assert integral(start_us / 1e6, end_us / 1e6) == count.sum() / 1e6
    assert integral(np.zeros(0), np.zeros(0)) == 0.0


# --- the copy-free helpers against the expressions they replace ---------------------------
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from sandbox_fleet.simulate.engine.invariants import _abs_max, _each_once  # noqa: E402


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 12), max_size=14), st.integers(0, 12), st.booleans())
def test_each_once_matches_bincount(ids, n, in_order):
    arr = np.array(sorted(ids) if in_order else ids, dtype=np.int64)
    counts = np.bincount(arr, minlength=n)
    assert _each_once(arr, n) == (counts.size == n and bool(np.all(counts == 1)))


def test_each_once_on_hand_cases():
    assert _each_once(np.arange(5), 5)
    assert not _each_once(np.array([0, 1, 1, 3, 4]), 5)  # ends right, a repeat inside
    assert not _each_once(np.array([0, 2, 4]), 3)  # in order, wrong values
    assert _each_once(np.array([2, 0, 1]), 3)  # out of order: still each once


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=False, width=64)), max_size=20))
def test_abs_max_matches_nanmax_of_abs(xs):
    x = np.array(xs, dtype=float)
    expected = float(np.nanmax(np.abs(x), initial=0.0)) if x.size and not np.all(np.isnan(x)) else 0.0
    assert _abs_max(x) == expected


def test_repeated_rollout_still_caught(res):
    roll = res.rollout.copy()
    roll[5] = roll[4]
    with pytest.raises(InvariantError, match="one_terminal_state"):
        check_invariants(broken(res, rollout=roll), n_expected=res.n_rollouts)

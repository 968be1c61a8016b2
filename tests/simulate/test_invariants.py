"""Every named invariant is checked on every run, and catches a broken result."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from sandbox_fleet.simulate import RETRIED, Exponential, Fleet, InvariantError, Poisson, run_workloads
from sandbox_fleet.simulate.invariants import check_invariants


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
    import sandbox_fleet.simulate.engine as engine

    calls = []
    monkeypatch.setattr(engine, "check_invariants", lambda r, n_expected: calls.append(n_expected))
    run_workloads(Fleet(cap=2), [Poisson(rate_per_s=1, n=10, holds=Exponential(1.0))], seed=0)
    assert calls == [10]


def test_integral_is_the_area_under_the_open_interval_count():
    """Brute force on a microsecond grid: count the intervals open in each microsecond."""
    from sandbox_fleet.simulate.invariants import integral

    rng = np.random.default_rng(12)
    start_us = rng.integers(0, 400, 60)
    end_us = start_us + rng.integers(0, 150, 60)
    count = np.zeros(600, dtype=np.int64)
    for a, b in zip(start_us, end_us):
        count[a:b] += 1
    assert integral(start_us / 1e6, end_us / 1e6) == count.sum() / 1e6
    assert integral(np.zeros(0), np.zeros(0)) == 0.0

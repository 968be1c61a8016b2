"""The invariant checks and the summary read one concurrency sweep and one set of derived
arrays; replacing an array the derived set was built from rebuilds it."""

from __future__ import annotations

import numpy as np
import pytest

import sandbox_fleet.measure.concurrency as conc
from sandbox_fleet.simulate import Exponential, Fleet, Poisson, run_workloads


@pytest.mark.parametrize("engine", ["fifo", "events"])
def test_checks_and_summary_share_one_sweep(engine, monkeypatch):
    calls = []
    real = conc.sweep
    monkeypatch.setattr(conc, "sweep", lambda s, f: calls.append(s.size) or real(s, f))
    res = run_workloads(Fleet(cap=4), [Poisson(rate_per_s=3, n=3000, holds=Exponential(1.0))], seed=2, engine=engine)
    assert calls == [3000]  # the cap check swept once
    s = res.summary()
    assert calls == [3000]  # the summary reused it
    assert s["concurrency"]["peak"] == 4


def test_derived_arrays_follow_replaced_inputs():
    res = run_workloads(Fleet(cap=2), [Poisson(rate_per_s=1, n=50, holds=Exponential(1.0))], seed=3)
    d = res.derived()
    assert d["s0"] is res.start_s and d["hold"].tolist() == (res.finish_s - res.start_s).tolist()
    assert res.derived() is d and res.derived()["hold"] is d["hold"]  # cached
    res.finish_s = res.finish_s + 1.0
    assert np.allclose(res.derived()["hold"], res.finish_s - res.start_s)  # rebuilt for the new array
    start = res.start_s.copy()
    start[0] = np.nan  # a row that never started: masks apply again
    res.start_s = start
    assert res.derived()["s0"].size == 49 and not res.derived()["started"][0]

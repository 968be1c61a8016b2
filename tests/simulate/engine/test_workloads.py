"""Workloads: release order, batch arrays, replay from telemetry, bad parameters."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import AsyncRL, Exponential, Fleet, Poisson, Replay, SyncRL, run_workloads
from sandbox_fleet.simulate.scenario.calibrate import empirical_by_model_outcome
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA


def table(starts, holds, models=None, exc=None) -> pa.Table:
    n = len(starts)
    base = 1_700_000_000_000_000
    s = np.asarray(starts, dtype=np.int64) * 1_000_000 + base
    f = s + (np.asarray(holds) * 1_000_000).astype(np.int64)
    cols = {
        "id": pa.array([f"r{i}" for i in range(n)]),
        "started_at": pa.array(s).cast(pa.timestamp("us", tz="UTC")),
        "finished_at": pa.array(f).cast(pa.timestamp("us", tz="UTC")),
        "model": pa.array(models if models is not None else [None] * n, pa.string()),
        "has_exception": pa.array(exc if exc is not None else [None] * n, pa.bool_()),
    }
    return pa.table({k: cols[k] if k in cols else pa.nulls(n, ROLLOUT_SCHEMA.field(k).type) for k in ROLLOUT_SCHEMA.names})


def test_per_step_batch_sizes_release_in_order():
    wl = SyncRL(batch=np.array([2, 3, 1]), train_s=1.0, holds=np.arange(1.0, 7.0))
    res = run_workloads(Fleet(cap=None), [wl], seed=0)
    rel = res.steps[0]["release_s"]
    assert rel.tolist() == [0.0, 3.0, 9.0]  # step 0 ends at max(1,2)=2, +1 train; step 1 ends 3+5=8, +1
    assert np.array_equal(res.arrival_s, np.repeat(rel, [2, 3, 1]))
    assert res.hold_s.tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_replay_from_table_uses_start_order_and_measured_holds():
    tb = table([100, 0, 40], [5.0, 7.0, 1.5])
    wl = Replay.from_table(tb)
    assert wl.arrivals_s.tolist() == [0.0, 40.0, 100.0]
    res = run_workloads(Fleet(cap=None), [wl], seed=0)
    assert res.start_s.tolist() == [0.0, 40.0, 100.0]
    assert res.hold_s.tolist() == [7.0, 1.5, 5.0]


def test_empirical_by_model_and_outcome_groups():
    tb = table([0] * 6, [1, 2, 3, 10, 20, 30], ["a", "a", "a", "b", "b", None], [False, False, True, False, True, False])
    mix = empirical_by_model_outcome(tb)
    assert mix.labels == ("(none)", "a", "a", "b", "b")
    assert mix.exceptions == (False, False, True, False, True)
    assert mix.weights == (1.0, 2.0, 1.0, 1.0, 1.0)
    assert mix.components[1].values.tolist() == [1.0, 2.0]


@pytest.mark.parametrize("make", [
    lambda: SyncRL(batch=4, holds=Exponential(1.0)),  # no steps
    lambda: SyncRL(batch=np.array([3, 0]), holds=Exponential(1.0)),
    lambda: SyncRL(batch=np.array([3, 3]), steps=3, holds=Exponential(1.0)),
    lambda: SyncRL(batch=3, steps=2, staleness=1, holds=Exponential(1.0)),
    lambda: AsyncRL(batch=3, steps=2, staleness=-1, holds=Exponential(1.0)),
    lambda: Poisson(rate_per_s=0.0, n=5, holds=Exponential(1.0)),
    lambda: Replay(arrivals_s=np.array([])),
])
def test_bad_workloads(make):
    with pytest.raises(InputError):
        make()


def test_short_explicit_arrays_and_duplicate_names_rejected():
    with pytest.raises(InputError, match="holds has 2 values for 3"):
        run_workloads(Fleet(cap=2), [Replay(arrivals_s=np.zeros(3), holds=np.ones(2))], seed=0)
    a = Poisson(rate_per_s=1, n=3, holds=Exponential(1.0), name="x")
    b = Poisson(rate_per_s=1, n=3, holds=Exponential(1.0), name="x")
    with pytest.raises(InputError, match="used twice"):
        run_workloads(Fleet(cap=2), [a, b], seed=0)


def test_replay_start_s_shifts_every_arrival():
    wl = Replay(arrivals_s=np.array([0.0, 1.0, 4.0]), start_s=100.0, holds=np.array([5.0, 5.0, 5.0]))
    res = run_workloads(Fleet(cap=1), [wl], seed=0)
    # One slot, 5 s holds: starts at 100, 105, 110 (the third waits 110 - 104 = 6 s).
    assert res.arrival_s.tolist() == [100.0, 101.0, 104.0]
    assert res.start_s.tolist() == [100.0, 105.0, 110.0]
    tb = table([50, 10, 30], [1.0, 1.0, 1.0])
    assert Replay.from_table(tb, start_s=7.0).arrivals(None).tolist() == [7.0, 27.0, 47.0]


@pytest.mark.parametrize("make", [
    lambda: Replay(arrivals_s=np.array([-1.0, 2.0]), holds=Exponential(1.0)),
    lambda: Replay(arrivals_s=np.array([0.0, np.inf]), holds=Exponential(1.0)),
    lambda: Replay(arrivals_s=np.array([0.0]), start_s=-5.0, holds=Exponential(1.0)),
])
def test_replay_rejects_negative_or_infinite_times(make):
    with pytest.raises(InputError):
        make()

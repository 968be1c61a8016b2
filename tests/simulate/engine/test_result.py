"""SimResult.to_telemetry: the canonical record, caller attributes, model labels."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sandbox_fleet.simulate import (
    Build,
    Deterministic,
    Episode,
    Exponential,
    Fleet,
    Mixture,
    Poisson,
    Replay,
    SyncRL,
    run_workloads,
)
from sandbox_fleet.telemetry.record import ROLLOUT_SCHEMA


def test_schema_and_hold_roundtrip():
    res = run_workloads(Fleet(cap=4), [SyncRL(batch=10, steps=3, train_s=5, holds=Exponential(30.0), name="job")], seed=1)
    tb = res.to_telemetry()
    assert tb.schema.equals(ROLLOUT_SCHEMA)
    hold_us = (tb.column("finished_at").cast(pa.int64()).to_numpy() - tb.column("started_at").cast(pa.int64()).to_numpy())
    assert np.max(np.abs(hold_us / 1e6 - res.hold_s)) <= 1e-6
    assert tb.column("id").to_pylist()[:2] == ["job-0-0", "job-1-0"]
    assert set(tb.column("job").to_pylist()) == {"job"}
    # Nothing the model does not simulate is filled with zeros.
    assert tb.column("input_tokens").null_count == tb.num_rows
    assert tb.column("environment_setup_started_at").null_count == tb.num_rows


def test_attrs_pass_through_in_release_order_nan_as_null():
    holds = np.array([5.0, 1.0, 3.0, 2.0])
    attrs = {
        "model": np.array(["m0", "m1", "m0", "m1"], dtype=object),
        "reward": np.array([1.0, np.nan, 0.0, 1.0]),
        "input_tokens": np.array([10, 20, 30, 40]),
        "has_exception": np.array([False, True, False, False]),
    }
    wl = SyncRL(batch=2, steps=2, train_s=1.0, holds=holds, exception=attrs["has_exception"], attrs=attrs)
    tb = run_workloads(Fleet(cap=1), [wl], seed=0).to_telemetry()
    assert tb.column("model").to_pylist() == ["m0", "m1", "m0", "m1"]
    assert tb.column("reward").to_pylist() == [1.0, None, 0.0, 1.0]
    assert tb.column("input_tokens").to_pylist() == [10, 20, 30, 40]
    assert tb.column("has_exception").to_pylist() == [False, True, False, False]
    hold = (tb.column("finished_at").cast(pa.int64()).to_numpy() - tb.column("started_at").cast(pa.int64()).to_numpy()) / 1e6
    assert hold.tolist() == holds.tolist()


def test_mixture_labels_become_models_and_outcome_components_raise():
    mix = Mixture((Deterministic(1.0), Deterministic(2.0)), (1.0, 1.0), ("gpt", "qwen"), (True, False))
    res = run_workloads(Fleet(cap=None), [Replay(arrivals_s=np.zeros(400), holds=mix)], seed=0)
    tb = res.to_telemetry()
    model = np.array(tb.column("model").to_pylist())
    exc = np.array(tb.column("has_exception").to_pylist())
    hold = res.hold_s
    assert set(model) == {"gpt", "qwen"}
    assert np.all(exc[model == "gpt"]) and not np.any(exc[model == "qwen"])
    assert np.all(hold[model == "gpt"] == 1.0) and np.all(hold[model == "qwen"] == 2.0)


def test_phase_timestamps():
    ep = Episode(agent=Deterministic(10.0), build=Build(1.0, Deterministic(2.0)), verifier=Deterministic(3.0))
    tb = run_workloads(Fleet(cap=1), [Replay(arrivals_s=np.array([0.0]), episode=ep)], seed=0).to_telemetry()
    row = tb.to_pylist()[0]
    def sec(k):
        return (row[k] - row["started_at"]).total_seconds()
    assert [sec("environment_setup_finished_at"), sec("agent_execution_finished_at"), sec("verifier_finished_at")] == [2.0, 12.0, 15.0]
    assert row["agent_setup_started_at"] is None


def test_derived_hold_and_waits_equal_a_loop_over_rows():
    """``hold`` and ``waits`` (computed on first read) against a plain loop, on a run with drops."""
    res = run_workloads(Fleet(cap=2, queue_timeout_s=0.5), [Poisson(rate_per_s=6.0, n=400, holds=Exponential(1.0))], seed=3,
                         check=False)
    d = res.derived()
    assert "hold" not in d and "waits" not in d  # not built until read
    starts, fins, arrs = res.start_s.tolist(), res.finish_s.tolist(), res.arrival_s.tolist()
    holds = [f - s for s, f in zip(starts, fins) if s == s]  # s == s: not NaN (held a sandbox)
    waits = [(s if s == s else f) - a for s, f, a in zip(starts, fins, arrs)]
    assert any(s != s for s in starts)  # some rollouts were dropped
    assert d["hold"].tolist() == holds
    assert d["waits"].tolist() == waits
    assert res.derived()["hold"] is d["hold"]  # computed once

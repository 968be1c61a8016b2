"""The fleet + inference pool loop against queueing theory. Expected values are exact
Mean Value Analysis (computed here, never by the engine) or hand arithmetic."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, Turns, run_workloads
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.workloads import Closed


@pytest.fixture(autouse=True, params=["plain", "compiled"])
def loop_path(request, monkeypatch):
    """Every theory test runs on the admission kernel's source as plain Python and compiled."""
    if request.param == "plain":
        monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    else:
        from tests.simulate.engine.inference.test_inference_kernel import require_numba

        from sandbox_fleet.simulate.engine.fast import admit_loop

        require_numba()
        monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
        monkeypatch.setattr(admit_loop, "MIN_ROLLOUTS", 0)  # these runs are below the compiled kernel's start size
    return request.param


TURNS, DEMAND_S, THINK_S = 4, 0.5, 2.0  # 500 decode tokens at 1,000 tok/s; 2 s commands


def mva(n: int, demand_s: float, think_s: float) -> tuple[float, float]:
    """Exact MVA of a closed network: one processor-sharing station + a delay (think) station.

    Returns (throughput of calls per second, mean time at the PS station)."""
    q, x, r = 0.0, 0.0, 0.0
    for k in range(1, n + 1):
        r = demand_s * (1.0 + q)
        x = k / (r + think_s)
        q = x * r
    return x, r


def test_mva_helper_by_hand():
    # N = 1: no queueing. N = 2: R = D (1 + X1 D) with X1 = 1 / (D + Z).
    assert mva(1, 0.5, 2.0) == pytest.approx((1 / 2.5, 0.5))
    r2 = 0.5 * (1 + 0.5 / 2.5)
    assert mva(2, 0.5, 2.0) == pytest.approx((2 / (r2 + 2.0), r2))


def closed_loop(population: int, count: int, seed: int, replicas: int = 1, cap: int | None = None, **inf):
    turns = Turns(Deterministic(TURNS), None, Exponential(THINK_S), Deterministic(0), Exponential(500))
    wl = Closed(population=population, n=count, episode=Episode(turns=turns))
    pool = Inference(replicas=replicas, prefill_tok_s=10_000, decode_tok_s=1_000, **inf)
    return run_workloads(Fleet(cap=cap or population), [wl], seed, inference=pool)


@pytest.mark.parametrize("n", [1, 4, 16])
def test_one_ps_replica_matches_mva(n):
    x_mva, r_mva = mva(n, DEMAND_S, THINK_S)
    holds, rates = [], []
    for seed in (1, 2, 3):
        s = closed_loop(n, 1500 * n if n < 16 else 6000, seed).summary()
        holds.append(s["hold_s"]["mean"])
        rates.append(s["inference"]["calls"] / s["sim_time_s"])
    assert np.mean(holds) == pytest.approx(TURNS * (r_mva + THINK_S), rel=0.03)
    assert np.mean(rates) == pytest.approx(x_mva, rel=0.03)


def test_sticky_replicas_are_independent_mva_networks():
    # 16 rollouts over 4 sticky replicas: 4 each at all times (a new rollout takes the
    # replica its predecessor left), so each replica is an N = 4 network.
    x4, r4 = mva(4, DEMAND_S, THINK_S)
    holds, rates = [], []
    for seed in (1, 2, 3):
        s = closed_loop(16, 6000, seed, replicas=4).summary()
        holds.append(s["hold_s"]["mean"])
        rates.append(s["inference"]["calls"] / s["sim_time_s"])
    assert np.mean(holds) == pytest.approx(TURNS * (r4 + THINK_S), rel=0.03)
    assert np.mean(rates) == pytest.approx(4 * x4, rel=0.03)


def test_unlimited_replicas_reproduce_fixed_latency_holds():
    # As many sticky replicas as rollouts: every call is served alone, so each hold is
    # exactly its unloaded hold, and the holds match a fixed 0.5 s mean latency per turn.
    res = closed_loop(8, 4000, 5, replicas=8)
    s = res.summary()
    assert s["hold_stretch"] == pytest.approx(1.0, abs=1e-9)
    assert np.allclose(res.hold_s, res.inference.unloaded_hold_s[res.rollout], rtol=1e-9, atol=1e-9)
    fixed = run_workloads(Fleet(cap=8), [Closed(population=8, n=4000, episode=Episode(
        turns=Turns(Deterministic(TURNS), Exponential(DEMAND_S), Exponential(THINK_S))))], 5).summary()
    assert s["hold_s"]["mean"] == pytest.approx(fixed["hold_s"]["mean"], rel=0.03)
    assert s["hold_s"]["mean"] == pytest.approx(TURNS * (DEMAND_S + THINK_S), rel=0.03)


def _tokens_run(kv_cache_bytes):
    # 5 turns of 100 new prompt tokens and 50 decoded: turn k (from 0) sends 150 k + 100.
    turns = Turns(Deterministic(5), None, Exponential(1.0), Deterministic(100), Deterministic(50))
    pool = Inference(replicas=2, prefill_tok_s=5_000, decode_tok_s=2_000, kv_cache_bytes=kv_cache_bytes,
                     kv_bytes_per_token=1.0)
    return run_workloads(Fleet(cap=10), [Closed(population=10, n=300, episode=Episode(turns=turns))], 7,
                         inference=pool)


def test_a_cache_holding_every_context_hits_every_turn_after_the_first():
    res = _tokens_run(None)
    tel = res.to_telemetry()
    # input = sum_k (150 k + 100) = 500 + 150 x 10 = 2000; cached = 150 x 10 = 1500 per rollout.
    assert set(tel.column("input_tokens").to_pylist()) == {2000}
    assert set(tel.column("cached_tokens").to_pylist()) == {1500}
    assert set(tel.column("output_tokens").to_pylist()) == {250}
    assert set(tel.column("turns").to_pylist()) == {5}
    s = res.summary()["inference"]
    assert s["cache_hit_rate"] == pytest.approx(0.75)
    assert s["prefill_tokens_computed"] == 300 * 500


def test_a_zero_cache_never_hits():
    s = _tokens_run(0.0).summary()["inference"]
    assert s["cache_hit_rate"] == 0.0
    assert s["prefill_tokens_computed"] == s["input_tokens"] == 300 * 2000
    assert s["evicted_gb"] == 0.0


def test_littles_law_on_the_pool():
    s = closed_loop(16, 3000, 4, replicas=2, max_num_seqs=3, iteration_base_s=0.002).summary()["inference"]
    ll = s["littles_law"]
    assert ll["mean_in_pool"] == pytest.approx(ll["arrival_rate_per_s"] * ll["mean_time_in_pool_s"], rel=1e-9)
    assert s["queue_wait_s"]["mean"] > 0  # the seat limit binds


def test_the_issue_example_runs_as_written():
    from pathlib import Path

    from sandbox_fleet.simulate.scenario.run import run_scenario

    path = Path(__file__).resolve().parents[4] / "examples" / "scenarios" / "closed_loop.toml"
    s = run_scenario(path)
    _x, r = mva(16, DEMAND_S, THINK_S)
    assert s["rollouts"] == s["completed"] == 6000
    assert s["concurrency"]["peak"] == 16
    assert s["hold_s"]["mean"] == pytest.approx(TURNS * (r + THINK_S), rel=0.03)
    assert s["hold_stretch"] > 1


def test_measure_reads_the_simulated_tokens_like_real_telemetry(tmp_path):
    # A bounded cache with a host tier and least-loaded routing: some hits, some misses.
    # measure's cached_fraction, computed by DuckDB from the written Parquet, must equal the
    # pool's cache_hit_rate, and its output per rollout the decoded tokens per rollout.
    import pyarrow.parquet as pq

    from summaries import paths_json

    turns = Turns(Deterministic(6), None, Exponential(2.0), Exponential(200), Exponential(100))
    pool = Inference(replicas=3, prefill_tok_s=5_000, decode_tok_s=800, routing="least-loaded",
                     kv_cache_bytes=8e6, kv_bytes_per_token=4096, kv_offload_bytes=4e6)
    res = run_workloads(Fleet(cap=20), [Closed(population=20, n=400, episode=Episode(turns=turns))], 3, inference=pool)
    s = res.summary()["inference"]
    assert 0 < s["cache_hit_rate"] < 1 and s["evicted_gb"] > 0
    pq.write_table(res.to_telemetry(), tmp_path / "t.parquet")
    m = paths_json([str(tmp_path / "t.parquet")], progress=False)
    assert m["tokens"]["cached_fraction"] == pytest.approx(s["cache_hit_rate"], rel=1e-12)
    assert m["tokens"]["output_per_rollout"] == pytest.approx(s["decode_tokens"] / 400, rel=1e-12)

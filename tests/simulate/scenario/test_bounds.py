"""simulate.bounds: the memory estimate against measured memory, the year-9999 horizon, preemption."""

from __future__ import annotations

import math
import tracemalloc
from datetime import UTC, datetime
from pathlib import Path

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import distributions as D
from sandbox_fleet.simulate.scenario import bounds
from sandbox_fleet.simulate.scenario.run import build, load_scenario, run_scenario

POISSON = """[fleet]
cap = 20
[workload]
kind = "poisson"
rate_per_s = 7.0
count = 60000
[hold]
dist = "exponential"
mean_s = 2.0
"""

TURNS_RETRIES = """[fleet]
cap = 200
preempt_rate_per_node_s = 0.00001
[workload]
kind = "sync-rl"
batch = 500
steps = 60
[workload.retry]
max_retries = 2
[workload.exceptions]
p = {agent = 0.3}
[workload.turns]
turns = {dist = "exponential", mean_s = 20}
model_latency = {dist = "exponential", mean_s = 2.0}
"""


def built(tmp_path: Path, text: str):
    p = tmp_path / "s.toml"
    p.write_text(text)
    return p, build(load_scenario(p), tmp_path, str(p))


@pytest.mark.parametrize("text", [POISSON, TURNS_RETRIES])
def test_estimate_covers_the_measured_peak_without_being_absurd(tmp_path, text):
    p, b = built(tmp_path, text)
    est = bounds.estimate_bytes(b.fleets, b.workloads)
    tracemalloc.start()
    run_scenario(p, telemetry_out=tmp_path / "t.parquet")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= est <= 8 * peak, (peak, est)


def test_estimate_is_linear_in_rollouts_and_counts_turns_and_retries(tmp_path):
    _, small = built(tmp_path, POISSON)
    _, big = built(tmp_path, POISSON.replace("count = 60000", "count = 600000"))
    slots = 20 * bounds.BYTES_PER_SLOT
    assert bounds.estimate_bytes(big.fleets, big.workloads) - slots == pytest.approx(
        10 * (bounds.estimate_bytes(small.fleets, small.workloads) - slots))
    _, t = built(tmp_path, TURNS_RETRIES)
    n = 500 * 60
    expect = n * bounds.BYTES_PER_ATTEMPT + 2 * n * bounds.BYTES_PER_RETRY + 3 * n * 20 * bounds.BYTES_PER_TURN \
        + 200 * bounds.BYTES_PER_SLOT
    assert bounds.estimate_bytes(t.fleets, t.workloads) == pytest.approx(expect)


def test_horizon_is_the_distance_to_the_end_of_year_9999():
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    assert bounds.horizon_s("2026-01-01T00:00:00+00:00") == (end - datetime(2026, 1, 1, tzinfo=UTC)).total_seconds()
    assert bounds.horizon_s("9999-12-31T23:59:00+00:00") == 59.0
    assert 2.5e11 < bounds.horizon_s(None) < 2.6e11


def test_means_that_overflow_are_infinite():
    assert bounds.mean_s(D.LogNormal(10.0, 1000.0)) == math.inf
    assert bounds.mean_s(D.Exponential(3.0)) == 3.0
    assert bounds.mean_s(D.clip(D.LogNormal(10.0, 1000.0), 0.0, 5.0)) <= 5.0


def test_an_epoch_near_year_9999_shrinks_the_horizon(tmp_path):
    p = tmp_path / "s.toml"
    # 1,000,000 arrivals at 7/s last 142,857 s; the last day of year 9999 has 86,399.
    p.write_text(POISSON.replace("count = 60000", "count = 1000000") + '[run]\nepoch = "9999-12-31T00:00:00+00:00"\n')
    with pytest.raises(InputError, match="'workload.rate_per_s'.*year 9999"):
        build(load_scenario(p), tmp_path, str(p))


@pytest.mark.parametrize("rate, refused", [(1.0 / 60, False), (0.9, False), (2.0, True)])
def test_preemption_refused_only_when_a_mean_attempt_cannot_survive(tmp_path, rate, refused):
    # mean hold 20 s: refused when rate x 20 > 20, i.e. a node reclaimed more often than once a second.
    text = POISSON.replace("mean_s = 2.0", "mean_s = 20.0").replace("count = 60000", "count = 100") \
        .replace("cap = 20", f"cap = 96\npreempt_rate_per_node_s = {rate!r}")
    p, b = built(tmp_path, text)
    if refused:
        with pytest.raises(InputError, match="fleet.preempt_rate_per_node_s"):
            bounds.check_run(b, str(p), None)
    else:
        bounds.check_run(b, str(p), None)


SERVED = """[fleet]
cap = 16
[workload]
kind = "closed"
population = 16
count = 3000
[turns]
turns = { dist = "deterministic", value_s = 8 }
command = { dist = "exponential", mean_s = 2.0 }
decode_tokens = { dist = "exponential", mean_s = 500 }
prefill_tokens = { dist = "lognormal", median_s = 300, sigma = 0.7 }
[inference]
replicas = 2
decode_tok_s = 1000
prefill_tok_s = 10000
kv_cache_gb = 1
kv_bytes_per_token = 65536
"""


def test_estimate_covers_a_pool_served_run(tmp_path):
    p, b = built(tmp_path, SERVED)
    est = bounds.estimate_bytes(b.fleets, b.workloads, b.inference)
    tracemalloc.start()
    run_scenario(p, telemetry_out=tmp_path / "t.parquet")
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak <= est <= 8 * peak, (peak, est)


def test_estimate_counts_the_pools_turns_rollouts_and_replicas(tmp_path):
    _, b = built(tmp_path, SERVED)
    n, turns = 3000, 3000 * 8
    expect = n * (bounds.BYTES_PER_ATTEMPT + bounds.BYTES_PER_SERVED_ROLLOUT) \
        + turns * (bounds.BYTES_PER_TURN + bounds.BYTES_PER_SERVED_TURN) + 16 * bounds.BYTES_PER_SLOT \
        + 2 * bounds.BYTES_PER_REPLICA \
        + 2 * 16 * (8 + 16) + 3000 * (16 + 16 + 2)  # 2 replicas x 16 in flight; sticky: a cache key a rollout
    assert bounds.estimate_bytes(b.fleets, b.workloads, b.inference) == pytest.approx(expect)


@pytest.mark.parametrize("fleet, routing", [("cap = 16", "sticky"), ("cap = 16", "least-loaded"),
                                            ("unbounded = true", "least-loaded")])
def test_inference_grid_is_what_the_admission_kernel_allocates(tmp_path, fleet, routing):
    # The arrays that grow as replicas x rollouts, as the kernel allocates them (their nbytes, not a formula).
    from sandbox_fleet.simulate.engine.fast.admit_loop import _inference_state
    from sandbox_fleet.simulate.engine.prepare import prepare

    text = SERVED.replace("cap = 16", fleet).replace("[inference]", f'[inference]\nrouting = "{routing}"')
    _, b = built(tmp_path, text)
    prep = prepare(b.fleets, b.workloads, 0, inference=b.inference)
    arrays = _inference_state(prep, None, prep.n)  # (the grid does not depend on the attempt rows)
    grid = sum(arrays[k].nbytes for k in ("dv", "dq", "cl", "cs", "cin"))
    assert bounds.inference_grid_bytes(b.fleets, b.workloads, b.inference) == grid


def test_a_run_too_big_for_its_replica_grid_is_refused_in_one_line(tmp_path):
    # 64 least-loaded replicas x 2,000,000 uncapped rollouts: 128M cells of the kernel's queues and cache
    # keys (~7.4 GiB) that the per-rollout and per-turn terms alone do not count.
    text = SERVED.replace("cap = 16", "unbounded = true").replace("population = 16", "population = 2000000") \
        .replace("count = 3000", "count = 2000000").replace("replicas = 2", 'replicas = 64\nrouting = "least-loaded"')
    p, b = built(tmp_path, text)
    grid = bounds.inference_grid_bytes(b.fleets, b.workloads, b.inference)
    assert grid == 64 * 2_000_000 * (24 + 34)
    est = bounds.estimate_bytes(b.fleets, b.workloads, b.inference)
    limit_gb = (est - grid / 2) / 2**30  # room for all but the grid
    with pytest.raises(InputError) as e:
        bounds.check_run(b, str(p), limit_gb)
    assert "\n" not in str(e.value) and "2,000,000 rollouts" in str(e.value)


@pytest.mark.parametrize("dist, match", [
    ('{ dist = "lognormal", median_s = 300, sigma = 1000 }', "token counts overflow"),
    ('{ dist = "exponential", mean_s = 1e12 }', "tokens per turn"),
])
def test_token_draws_must_be_finite_counts(tmp_path, dist, match):
    text = SERVED.replace('prefill_tokens = { dist = "lognormal", median_s = 300, sigma = 0.7 }', f"prefill_tokens = {dist}")
    with pytest.raises(InputError, match=f"'turns.prefill_tokens'.*{match}"):
        built(tmp_path, text)


def test_a_pool_too_slow_to_finish_before_year_9999_is_refused(tmp_path):
    # 8 turns x 500 tokens at 1e-12 tok/s: 4e15 s per attempt with every call alone, past the
    # ~2.5e11 s horizon; refused as built, naming the key that made the hold (issue 42 s3)
    with pytest.raises(InputError, match=r"'inference\.decode_tok_s'.* 4e\+15 s.*year 9999"):
        built(tmp_path, SERVED.replace("decode_tok_s = 1000", "decode_tok_s = 1e-12"))


def test_the_iteration_base_is_blamed_on_its_own_key(tmp_path):
    # base 1e12 ms = 1e9 s per decode-token time of 1/1000 s: b = 1e12 units; 8 x 0.5 s x 1e12 = 4e12 s
    with pytest.raises(InputError, match=r"'inference\.iteration_base_ms'.* 4e\+12 s"):
        built(tmp_path, SERVED.replace("[inference]", "[inference]\niteration_base_ms = 1e12"))


def test_a_fast_prefill_rate_is_no_duration(tmp_path):
    # prefill_tok_s ends in _s but is a rate: 1e15 tokens/s is fast, not a time past year 9999
    built(tmp_path, SERVED.replace("prefill_tok_s = 10000", "prefill_tok_s = 1e15"))


def test_a_population_far_above_count_starts_every_rollout_at_once(tmp_path):
    text = SERVED.replace("population = 16", "population = 1000000000000").replace("count = 3000", "count = 5")
    s = run_scenario(*built(tmp_path, text)[:1])
    assert s["rollouts"] == 5 and s["completed"] == 5

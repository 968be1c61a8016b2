"""simulate.bounds: the memory estimate against measured memory, the year-9999 horizon, preemption."""

from __future__ import annotations

import math
import tracemalloc
from datetime import datetime, timezone
from pathlib import Path

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import bounds
from sandbox_fleet.simulate import distributions as D
from sandbox_fleet.simulate.scenario import build, load_scenario, run_scenario

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
    end = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)
    assert bounds.horizon_s("2026-01-01T00:00:00+00:00") == (end - datetime(2026, 1, 1, tzinfo=timezone.utc)).total_seconds()
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

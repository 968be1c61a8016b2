"""Steady state: overload flagged, saturation of closed loops, MSER-5 warm-up, intervals over the window.

Expected values come from closed forms (M/M/1, exact MVA), hand arithmetic, or a brute-force MSER
written here from its definition, never from the code under test.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, Poisson, Turns, run_workloads
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.steady import MIN_HOLDS_PER_SANDBOX, mser
from sandbox_fleet.simulate.engine.workloads import Closed, Replay
from sandbox_fleet.simulate.scenario.run import run_scenario

ROOT = Path(__file__).resolve().parents[3]


def brute_mser(y: np.ndarray, batch: int = 5) -> int:
    """MSER-b from its definition: argmin over d <= m/2 of sum((z_i - mean)^2) / (m - d)^2 over kept batch means."""
    m = y.size // batch
    z = [sum(float(v) for v in y[i * batch:(i + 1) * batch]) / batch for i in range(m)]
    best, best_d = None, 0
    for d in range(m // 2 + 1):
        kept = z[d:]
        mu = sum(kept) / len(kept)
        stat = sum((v - mu) ** 2 for v in kept) / len(kept) ** 2
        if best is None or stat < best:
            best, best_d = stat, d
    return best_d * batch


def mm1(rho: float, n: int, seed: int):
    return run_workloads(Fleet(cap=1), [Poisson(rate_per_s=rho, n=n, holds=Exponential(1.0))], seed)


def test_mser_matches_brute_force_and_removes_a_planted_transient():
    rng = np.random.default_rng(7)
    y = rng.normal(0.0, 1.0, 3000)
    y[:400] += np.linspace(8.0, 2.0, 400)  # a transient decaying over the first 400 observations
    cut = mser(y)
    assert cut == brute_mser(y)
    assert 380 <= cut <= 460
    flat = rng.normal(0.0, 1.0, 3000)
    assert mser(flat) == brute_mser(flat) and mser(flat) < 1500  # never more than half
    assert mser(np.ones(7)) == 0 and mser(np.arange(3.0)) == 0  # too short to truncate


def test_mser_deletes_a_simulated_burst():
    # 300 rollouts arrive at once on 10 slots (a 30 s backlog of 1 s holds), then 0.5/s: the
    # early ones wait, later ones do not. The warm-up is the brute-force MSER cut of the
    # time-in-system series read off the result's own arrays.
    rng = np.random.default_rng(3)
    arr = np.concatenate([np.zeros(300), np.cumsum(rng.exponential(2.0, 4000))])
    res = run_workloads(Fleet(cap=10), [Replay(arrivals_s=arr, holds=Exponential(1.0))], 5)
    ss = res.summary()["steady_state"]
    order = np.argsort(res.rollout_arrival_s, kind="stable")
    sojourn = (res.finish_s - res.rollout_arrival_s)[order]
    cut = brute_mser(sojourn)
    assert ss["warmup_s"] == pytest.approx(float(res.rollout_arrival_s[order][cut]))
    assert cut >= 250  # most of the burst deleted
    assert ss["stable"] is True
    assert ss["offered_load"]["pool 0"] < 0.1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_mm1_overloaded_is_unstable(seed):
    ss = mm1(1.1, 20_000, seed).summary()["steady_state"]
    assert ss["stable"] is False
    assert ss["offered_load"]["pool 0"] == pytest.approx(1.1, rel=0.03)  # lambda E[S] / 1 slot
    assert ss["reason"].startswith("offered work exceeds capacity: pool 0")


def test_mm1_at_rho_0_9_is_stable_and_its_intervals_cover_the_truth():
    # 95% intervals from batch means: over 20 seeds, the true throughput (the arrival rate, 3,240/h)
    # and the true mean hold (1 s) should each be covered ~19 times; fewer than 16 is a broken interval.
    cover_rate = cover_hold = 0
    for seed in range(1, 21):
        ss = mm1(0.9, 40_000, seed).summary()["steady_state"]
        assert ss["stable"] is True and ss["saturated"] is None, (seed, ss["reason"])
        assert ss["offered_load"]["pool 0"] == pytest.approx(0.9, rel=0.03)
        assert ss["short_run"] is False and ss["ci_method"].startswith("batch means: 20 batches")
        lo, hi = ss["completed_per_hour_ci"]
        cover_rate += lo <= 0.9 * 3600 <= hi
        lo, hi = ss["hold_s_ci"]
        cover_hold += lo <= 1.0 <= hi
    assert cover_rate >= 16 and cover_hold >= 16, (cover_rate, cover_hold)


def test_inference_pool_example_unstable_on_4_gpus_not_on_8(tmp_path):
    src = (ROOT / "examples" / "scenarios" / "inference_pool.toml").read_text()
    half = tmp_path / "four.toml"
    half.write_text(src.replace("gpus = 8", "gpus = 4"))
    eight = run_scenario(ROOT / "examples" / "scenarios" / "inference_pool.toml")["steady_state"]
    four = run_scenario(half)["steady_state"]
    assert eight["stable"] is True
    assert eight["offered_load"]["inference replica"] < 0.6
    assert four["stable"] is False
    # arrival rate 2/s x replica-seconds per rollout / 4 replicas: the tokens the pool computed at the
    # roofline rate (the drawn arrival rate is within ~1.3% of 2/s at 6,000 arrivals)
    s = run_scenario(half)
    inf = s["inference"]
    from sandbox_fleet import gpus as G

    rate = G.compute_tok_s(G.load_gpus(None)["h100-80gb"], 27.0, 0.4, 1)
    work = inf["prefill_tokens_computed"] / rate + inf["decode_tokens"] / rate
    assert four["offered_load"]["inference replica"] == pytest.approx(2.0 * work / 6000 / 4, rel=0.05)
    assert four["offered_load"]["inference replica"] > 1.4


def _closed(replicas: int, seed: int = 11):
    turns = Turns(Deterministic(4), None, Exponential(2.0), Deterministic(0), Exponential(500))
    wl = Closed(population=16, n=4000, episode=Episode(turns=turns))
    pool = Inference(replicas=replicas, prefill_tok_s=10_000, decode_tok_s=1_000)
    return run_workloads(Fleet(cap=16), [wl], seed, inference=pool)


def test_closed_loop_at_full_gpu_is_saturated_and_spread_out_is_not():
    # MVA of one PS replica (D = 0.5 s) + 2 s think, N = 16: X = 2.0 calls/s, utilisation X D = 1.0.
    one = _closed(1).summary()["steady_state"]
    assert one["stable"] is True and one["saturated"] is True
    assert one["bottleneck"].startswith("inference pool") and one["bottleneck_utilisation"] > 0.97
    assert one["reason"].startswith("a closed population cannot grow without bound; saturated")
    # 16 sticky replicas, one rollout each: N = 1 per replica, X = 1 / 2.5 calls/s, utilisation 0.2.
    spread = _closed(16).summary()["steady_state"]
    assert spread["saturated"] is False
    assert spread["bottleneck_utilisation"] == pytest.approx(0.2, rel=0.05)


def test_closed_sandbox_pool_overfilled_is_the_bottleneck():
    # 20 rollouts on 5 slots, deterministic 10 s holds: the pool is busy all the time.
    wl = Closed(population=20, n=2000, holds=Deterministic(10.0))
    ss = run_workloads(Fleet(cap=5), [wl], 1).summary()["steady_state"]
    assert ss["saturated"] is True and ss["bottleneck"].startswith("sandbox pool 0 (5 slots)")
    assert ss["bottleneck_utilisation"] == pytest.approx(1.0)
    # 5 slots x 3600 / 10 s = 1,800 completions per hour, exactly
    assert ss["completed_per_hour"] == pytest.approx(1800.0, rel=0.01)


def test_short_run_warns_and_pass_rate_scales_passing():
    wl = Closed(population=20, n=100, holds=Exponential(10.0))
    res = run_workloads(Fleet(cap=20), [wl], 1)
    ss = res.summary(pass_rate=0.25)["steady_state"]
    assert ss["short_run"] is True and ss["holds_per_sandbox"] < MIN_HOLDS_PER_SANDBOX
    assert any(w.startswith("short run") for w in ss["warnings"])
    assert ss["passing_per_hour"] == pytest.approx(0.25 * ss["completed_per_hour"])
    assert ss["pass_model"] == "completed rollouts x run.pass_rate 0.25"


def test_fixed_warmup_is_used_and_bad_ones_are_refused():
    res = mm1(0.5, 2000, 1)
    assert res.summary(warmup_s=100.0)["steady_state"]["warmup_s"] >= 100.0
    with pytest.raises(InputError, match="run.warmup_s"):
        res.summary(warmup_s=1e9)
    late = run_workloads(Fleet(cap=10), [Replay(arrivals_s=np.array([0.0, 100.0]), holds=Deterministic(1000.0))], 1)
    with pytest.raises(InputError, match="no completed rollouts"):
        late.summary(warmup_s=50.0)


SCEN = """
[fleet]
cap = 1
[workload]
kind = "poisson"
rate_per_s = {rate}
count = 4000
[hold]
dist = "exponential"
mean_s = 1.0
[run]
seed = 2
{extra}
"""


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "simulate", *map(str, args)],
                          capture_output=True, text=True)


def test_cli_text_says_unstable_first(tmp_path):
    p = tmp_path / "over.toml"
    p.write_text(SCEN.format(rate=1.2, extra=""))
    r = _cli(p)
    assert r.returncode == 0
    assert r.stdout.lstrip().startswith("unstable: offered work exceeds capacity")


@pytest.mark.parametrize("extra,msg", [("warmup_s = 1e7", "reaches the end of the steady window"),
                                       ("pass_rate = 1.5", "pass_rate")])
def test_cli_bad_steady_keys_exit_2_one_line(tmp_path, extra, msg):
    p = tmp_path / "bad.toml"
    p.write_text(SCEN.format(rate=0.5, extra=extra))
    r = _cli(p)
    assert r.returncode == 2 and msg in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and str(p) in r.stderr


def test_cli_window_without_completions_exit_2(tmp_path):
    p = tmp_path / "late.toml"
    p.write_text('[fleet]\ncap = 10\n[workload]\nkind = "replay"\narrivals_s = [0, 100]\n'
                 '[hold]\ndist = "deterministic"\nvalue_s = 1000\n[run]\nwarmup_s = 50\n')
    r = _cli(p)
    assert r.returncode == 2 and "no completed rollouts" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1

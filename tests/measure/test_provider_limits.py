"""Provider and harness limits the history shows (``measure/limits.py``).

Each detector is run on a synthetic history made here with a known limit (creation at 5/s through
a token bucket, a cap of 128 on sandboxes starting at once, a sandbox lifetime of 1,800 s), and
on the same history without it. The histories are simulated in this file, step by step, from
the limit's own definition; the detector never sees the limit. Then on the real histories in
/work/shared/fixtures/: none of them shows a limit, and the detectors must claim none.
"""

from __future__ import annotations

import heapq
from pathlib import Path

import numpy as np
import pytest
from tests.measure.helpers import telemetry

from sandbox_fleet.measure import measure_telemetry
from sandbox_fleet.measure.limits import creation_ceiling, hold_spikes, starting_cap

US = 1_000_000
SHARED = Path("/work/shared/fixtures")


def _us(seconds: np.ndarray) -> np.ndarray:
    return np.round(np.asarray(seconds) * US).astype(np.int64)


# ------------------------------------------------------------ creation rate


def _bucket(release_s: np.ndarray, rate: float, burst: int) -> np.ndarray:
    """Creation times through a token bucket (rate, burst), first come first created: brute force."""
    tokens, last, out = float(burst), 0.0, []
    for t in np.sort(release_s):
        now = max(t, out[-1] if out else t)
        tokens = min(burst, tokens + (now - last) * rate)
        if tokens < 1.0:
            now += (1.0 - tokens) / rate
            tokens = 1.0
        tokens -= 1.0
        last = now
        out.append(now)
    return np.array(out)


def _batches(steps: int = 20, batch: int = 400, period_s: float = 300.0) -> np.ndarray:
    return np.repeat(np.arange(steps) * period_s, batch)


def _holds(n: int, seed: int, median_s: float = 100.0) -> np.ndarray:
    return np.random.default_rng(seed).lognormal(np.log(median_s), 0.6, n)


def test_bucket_oracle_matches_the_closed_form():
    # The law for a batch B through (r, b): the k-th starts at max(0, (k - b) / r).
    got = _bucket(np.zeros(50), rate=5.0, burst=5)
    k = np.arange(1, 51)
    assert np.allclose(got, np.maximum(0.0, (k - 5) / 5.0))


def test_creation_at_5_per_s_is_found():
    start = _bucket(_batches(), rate=5.0, burst=5)
    finish = start + _holds(start.size, 1)
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=10_000)
    assert got["detected"], got["basis"]
    assert got["window_s"] == 1.0
    assert got["rate_per_s"] == pytest.approx(5.0, rel=0.05)


def test_creation_at_5_per_s_with_jittered_records_is_found():
    # Records stamped up to 300 ms after the create (a harness's own latency): counts wobble 4-6.
    start = _bucket(_batches(), rate=5.0, burst=5)
    start = start + np.random.default_rng(2).uniform(0, 0.3, start.size)
    finish = start + _holds(start.size, 3)
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=10_000)
    assert got["detected"], got["basis"]
    assert 4.5 <= got["rate_per_s"] <= 5.6


def test_e2b_hobby_1_per_s_is_found_on_ten_second_windows():
    start = _bucket(_batches(steps=12, batch=200, period_s=400.0), rate=1.0, burst=1)
    finish = start + _holds(start.size, 4)
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=10_000)
    assert got["detected"], got["basis"]
    assert got["window_s"] == 10.0
    assert got["rate_per_s"] == pytest.approx(1.0, rel=0.06)


def test_released_batches_without_a_limit_are_no_ceiling():
    start = _batches() + np.random.default_rng(5).uniform(0, 0.02, 20 * 400)
    finish = start + _holds(start.size, 6)
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=400)
    assert not got["detected"], got["basis"]


@pytest.mark.parametrize("rate", [0.5, 4.0, 50.0])
def test_poisson_starts_without_a_limit_are_no_ceiling(rate):
    rng = np.random.default_rng(int(rate * 10))
    start = np.cumsum(rng.exponential(1.0 / rate, int(rate * 20_000)))
    finish = start + _holds(start.size, 7)
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=100_000)
    assert not got["detected"], got["basis"]


def test_turnover_under_a_concurrency_cap_is_not_a_creation_limit():
    # 100 slots, every hold exactly 20 s: starts replace finishes at 5/s, flat, with no creation limit.
    start = np.concatenate([np.arange(100) * 0.2 + 20.0 * i for i in range(100)])
    finish = start + 20.0
    got = creation_ceiling(_us(start), _us(finish), fleet_peak=100)
    assert not got["detected"], got["basis"]
    assert "turnover" in got["basis"]


# ------------------------------------------------------------ starting at once


def _start_semaphore(release_s: np.ndarray, setup_s: np.ndarray, cap: int | None) -> np.ndarray:
    """When each rollout's setup begins, ``cap`` setups at a time, first come first served."""
    if cap is None:
        return release_s.copy()
    free: list[float] = [0.0] * cap
    out = np.empty_like(release_s)
    for i in np.argsort(release_s, kind="stable"):
        slot = heapq.heappop(free)
        out[i] = max(release_s[i], slot)
        heapq.heappush(free, out[i] + setup_s[i])
    return out


def _starting_history(cap: int | None, seed: int = 11):
    rng = np.random.default_rng(seed)
    release = _batches(steps=15, batch=600, period_s=900.0)
    setup = rng.uniform(20.0, 40.0, release.size)
    setup_a = _start_semaphore(release, setup, cap)
    setup_b = setup_a + setup
    finish = setup_b + _holds(release.size, seed + 1, median_s=120.0)
    return release, setup_a, setup_b, finish


def test_a_starting_cap_of_128_is_found():
    release, a, b, _finish = _starting_history(128)
    got = starting_cap(_us(release), _us(a), _us(b), fleet_peak=600)  # a step's 600 hold from their release
    assert got["detected"], got["basis"]
    assert got["peak"] == 128
    assert got["touches"] >= 10


def test_no_starting_cap_is_no_starting_cap():
    release, a, b, _finish = _starting_history(None)
    got = starting_cap(_us(release), _us(a), _us(b), fleet_peak=600)
    assert not got["detected"], got["basis"]
    assert got["waited_rows"] == 0


def test_the_starting_cap_through_measure():
    release, a, b, finish = _starting_history(128)
    t = telemetry(release, finish, environment_setup_started_at=a, environment_setup_finished_at=b)
    m = measure_telemetry(t)
    assert m.concurrency.peak >= 600  # a step's 600 overlap (a long tail may reach into the next step)
    assert m.limits.starting.detected is True
    assert m.limits.starting.peak == 128
    assert m.limits.creation.detected is False


# ------------------------------------------------------------ holds piling at one duration


def _lifetime_history(lifetime_s: float | None, n: int = 6000, seed: int = 21):
    rng = np.random.default_rng(seed)
    hold = rng.lognormal(np.log(600.0), 0.9, n)
    killed = np.zeros(n, dtype=bool)
    if lifetime_s is not None:
        killed = hold > lifetime_s
        hold = np.where(killed, lifetime_s + rng.uniform(0.0, 2.0, n), hold)  # the kill, then teardown
    start = np.sort(rng.uniform(0, 86_400, n))
    return start, start + hold, killed


def test_a_lifetime_of_1800_s_is_found_with_its_outcome():
    start, finish, killed = _lifetime_history(1800.0)
    outcome = np.where(killed, 0, 3).astype(np.int8)  # exception vs failed (OUTCOMES order)
    spikes = hold_spikes(_us(finish) - _us(start), outcome)
    assert len(spikes) == 1
    s = spikes[0]
    assert 1800.0 <= s["value_s"] <= 1802.0
    assert s["ceiling"] is True and s["past_share"] == 0.0
    assert s["rows"] >= int(killed.sum())  # every killed rollout, plus the few that ended there anyway
    assert s["by_outcome"]["exception"] == int(killed.sum())


def test_no_lifetime_is_no_spike():
    start, finish, _ = _lifetime_history(None)
    assert hold_spikes(_us(finish) - _us(start), np.zeros(start.size, dtype=np.int8)) == []


def test_a_timeout_some_rollouts_hit_is_a_spike_they_run_past():
    # A 900-s agent timeout on a third of the tasks: the rest run on; the spike is no ceiling.
    rng = np.random.default_rng(31)
    hold = rng.lognormal(np.log(600.0), 0.9, 6000)
    capped = (np.arange(6000) % 3 == 0) & (hold > 900.0)
    hold = np.where(capped, 900.0 + rng.uniform(0, 1.0, 6000), hold)
    spikes = hold_spikes(_us(hold), np.zeros(6000, dtype=np.int8))
    assert len(spikes) == 1 and 900.0 <= spikes[0]["value_s"] <= 901.0
    assert spikes[0]["ceiling"] is False and spikes[0]["past_share"] > 0.1


def test_whole_second_clocks_are_not_spikes():
    # Integer-second holds of 3-60 s: each second is a spike at 0.5% bins; the clock is not a limit.
    rng = np.random.default_rng(41)
    start = np.floor(rng.uniform(0, 10_000, 5000))
    finish = start + np.floor(rng.lognormal(np.log(15.0), 0.5, 5000)) + 1
    t = telemetry(start, finish)
    assert measure_telemetry(t).limits.spikes is None


def test_the_lifetime_through_measure_names_the_exception_type():
    start, finish, killed = _lifetime_history(1800.0)
    types = np.where(killed, "SandboxTimeoutError", None).tolist()
    t = telemetry(start, finish, has_exception=killed.tolist(), exception_type=types)
    spikes = measure_telemetry(t).limits.spikes["hold"]
    assert spikes[0].exception_types == {"SandboxTimeoutError": int(killed.sum())}
    assert spikes[0].by_outcome["exception"] == int(killed.sum())


# ------------------------------------------------------------ the real histories show no limit


REAL = [
    ("harbor oracle-n2", [str(SHARED / "harbor/oracle-n2")]),
    ("harbor terminus2-n3", [str(SHARED / "harbor/terminus2-n3")]),
    ("ccb harbor", [str(SHARED / "real/ccb_harbor/jobs")]),
    ("mini-swe-agent", [str(SHARED / "real/miniswe_gemini3/containers.csv"), "--format", "table"]),
    ("tau2", [str(SHARED / "real/tau2_whissle/simulations.jsonl"), "--format", "table", "--map",
              "id=sim_id,task_id=task,started_at=start_time,finished_at=end_time,reward=reward,model=agent_llm"]),
]


@pytest.mark.skipif(not SHARED.is_dir(), reason="the shared real fixtures are not on this machine")
@pytest.mark.parametrize("name,args", REAL, ids=[r[0] for r in REAL])
def test_real_histories_claim_no_limit(name, args):
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.telemetry.options import make_options

    fmt = args[args.index("--format") + 1] if "--format" in args else None
    mapping = args[args.index("--map") + 1] if "--map" in args else None
    m = measure_paths([args[0]], read=make_options(fmt=fmt, column_map=mapping, progress=False), progress=False)
    lim = m.to_json()["limits"]
    assert lim["creation"]["detected"] is False, lim["creation"]["basis"]
    assert lim["starting"]["detected"] is False, lim["starting"]["basis"]
    assert lim["spikes"] is None

"""Provider limits in the simulator (``[fleet.limits]``: ``limits_rules`` placed by the admission kernel through
``fifo.claim``; its oracle where nothing feeds back, ``oracle/limits_pass``, in test_limits_kernel.py) against closed forms: a batch through a token bucket passes its k-th creation at max(0, (k - b) / r); Poisson
arrivals through a bucket of burst 1 wait as an M/D/1 queue (Pollaczek-Khinchine); a starting-at-once cap of
m with cold start c readies the k-th of a batch at (k // m + 1) c; a warm pool of size >= B starts a batch
warm; a lifetime L kills exactly the holds longer than L. The compiled kernel gives the interpreted one's bits.
"""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Deterministic, Exponential, Fleet, Poisson, RetryPolicy, SyncRL, run_workloads
from sandbox_fleet.simulate.engine.entities import EXCEPTION, LIFETIME, RETRIED
from sandbox_fleet.simulate.engine.limits_rules import bucket_take, new_state, warm_take
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits
from sandbox_fleet.simulate.engine.workloads import Replay


def batch(n: int, hold_s: float = 100.0) -> Replay:
    return Replay(arrivals_s=np.zeros(n), holds=np.full(n, hold_s))


#: the path each ``engine`` takes for these runs (limits are claimed by the kernel either way)
EXECUTOR = {"auto": "admission-kernel", "events": "admission-kernel"}


def _run(*args, engine: str, **kw):
    """``run_workloads`` on a forced executor family, checking which executor ran."""
    res = run_workloads(*args, engine=engine, **kw)
    assert res.engine == EXECUTOR[engine]
    return res


def ready_s(res) -> np.ndarray:
    """When each first attempt's sandbox is ready: its slot plus the creation's wait and cold start."""
    first = res.attempt == 0
    return (res.start_s + res.build_s)[first]


@pytest.mark.parametrize(("rate", "burst", "n"), [(5.0, 1, 40), (5.0, 10, 60), (0.5, 3, 12), (600 / 60, 600, 700)])
@pytest.mark.parametrize("engine", ["auto", "events"])  # the admission kernel (auto: limits feed back)
def test_batch_through_bucket_passes_kth_at_closed_form(rate, burst, n, engine):
    lim = SandboxLimits(creates_per_s=rate, creates_burst=burst)
    res = _run(Fleet(cap=None, limits=lim), [batch(n)], seed=1, engine=engine)
    k = np.arange(1, n + 1)
    want = np.maximum(0.0, (k - burst) / rate)
    np.testing.assert_allclose(ready_s(res), want, rtol=1e-12, atol=1e-9)
    # the slot is held from its start through the wait and the hold
    np.testing.assert_allclose((res.finish_s - res.start_s), want + 100.0, rtol=1e-12)


def test_bucket_rule_by_hand():
    st = new_state(2.0)  # burst 2, rate 1/s
    assert [bucket_take(st, t, 1.0, 2.0) for t in (0.0, 0.0, 0.0, 0.5, 10.0, 10.0, 10.0)] == \
        [0.0, 0.0, 1.0, 2.0, 10.0, 10.0, 11.0]


def test_warm_pool_rule_by_hand():
    st = new_state(2.0)  # two ready, one more every 4 s
    got = [warm_take(st, t, 0.25, 2.0) for t in (0.0, 0.0, 0.0, 3.9, 4.0, 4.1, 100.0, 100.0, 100.0)]
    assert got == [True, True, False, False, True, False, True, True, False]


def _batch_means_se(x: np.ndarray, batches: int = 50) -> float:
    m = x[: x.size // batches * batches].reshape(batches, -1).mean(axis=1)
    return float(m.std(ddof=1) / math.sqrt(batches))


@pytest.mark.parametrize("lam", [0.5, 0.75])
@pytest.mark.parametrize("engine", ["auto", "events"])  # the admission kernel (auto: limits feed back)
def test_poisson_through_burst_one_bucket_waits_as_md1(lam, engine):
    """lambda < r, burst 1: d_k = max(a_k, d_{k-1} + 1/r), the M/D/1 recursion with service D = 1/r.
    Pollaczek-Khinchine: Wq = lambda D^2 / (2 (1 - rho)). 200,000 arrivals, the first 2,000 dropped as
    warm-up; the mean must be within 4 batch-means standard errors and 5% of the closed form."""
    r, n = 1.0, 200_000
    lim = SandboxLimits(creates_per_s=r, creates_burst=1)
    res = _run(Fleet(cap=None, limits=lim), [Poisson(rate_per_s=lam, n=n, holds=Exponential(mean_s=1.0))],
                        seed=7, engine=engine)
    order = np.argsort(res.arrival_s, kind="stable")
    wait = res.build_s[order][2000:]  # the creation's wait (no cold start, no build)
    d = 1.0 / r
    rho = lam * d
    wq = lam * d * d / (2.0 * (1.0 - rho))
    se = _batch_means_se(wait)
    assert abs(wait.mean() - wq) < max(4 * se, 1e-9), (wait.mean(), wq, se)
    assert abs(wait.mean() - wq) < 0.05 * wq


@pytest.mark.parametrize("engine", ["auto", "events"])  # the admission kernel (auto: limits feed back)
def test_starting_cap_readies_in_waves_of_cold_starts(engine):
    m, c, n = 8, 3.0, 50
    lim = SandboxLimits(max_starting=m, cold_start_s=c)
    res = _run(Fleet(cap=None, limits=lim), [batch(n)], seed=1, engine=engine)
    want = (np.arange(n) // m + 1) * c
    np.testing.assert_allclose(ready_s(res), want, rtol=1e-12)


@pytest.mark.parametrize("size", [50, 80])
@pytest.mark.parametrize("engine", ["auto", "events"])  # the admission kernel (auto: limits feed back)
def test_warm_pool_at_least_the_batch_starts_it_warm(size, engine):
    lim = SandboxLimits(creates_per_s=1.0, cold_start_s=20.0, warm_pool_size=size, warm_pool_refill_per_s=0.5)
    res = _run(Fleet(cap=None, limits=lim), [batch(50)], seed=1, engine=engine)
    assert np.all(ready_s(res) == 0.0)


@pytest.mark.parametrize("engine", ["auto", "events"])  # the admission kernel (auto: limits feed back)
def test_warm_pool_smaller_than_the_batch_sends_the_rest_cold(engine):
    lim = SandboxLimits(cold_start_s=20.0, warm_pool_size=30, warm_pool_refill_per_s=0.5)
    res = _run(Fleet(cap=None, limits=lim), [batch(50)], seed=1, engine=engine)
    r = ready_s(res)
    assert np.all(r[:30] == 0.0) and np.all(r[30:] == 20.0)


def test_warm_pool_refills_between_rl_steps():
    """A synchronous RL batch of 20 every step (on the admission kernel, which runs RL): a pool of 20
    refilled at 1/s is full again after the step's 100-s holds and 5-s training, so every step starts warm."""
    engine = "events"
    lim = SandboxLimits(cold_start_s=30.0, warm_pool_size=20, warm_pool_refill_per_s=1.0)
    wl = SyncRL(batch=20, steps=4, train_s=5.0, holds=np.full(80, 100.0))
    res = _run(Fleet(cap=20, limits=lim), [wl], seed=1, engine=engine)
    assert np.all(res.build_s == 0.0)
    # By hand at 1/8 per s: step 2 at 105 s finds 13.125 ready (13 warm, 7 cold: ends 235, trains to 240);
    # step 3 finds 0.125 + 135/8 = 17 (3 cold, to 375); step 4 finds 16.875 (4 cold, ends 505).
    small = SandboxLimits(cold_start_s=30.0, warm_pool_size=20, warm_pool_refill_per_s=0.125)
    res2 = _run(Fleet(cap=20, limits=small), [wl], seed=1, engine=engine)
    assert (res2.build_s == 30.0).sum() == 7 + 3 + 4 and res2.finish_s.max() == 505.0


def test_lifetime_kills_exactly_the_longer_holds_in_every_executor():
    rng = np.random.default_rng(3)
    holds = rng.exponential(600.0, 5000)
    holds[:3] = [1800.0, np.nextafter(1800.0, math.inf), 1799.0]  # at the lifetime: not killed; past it: killed
    lim = SandboxLimits(lifetime_s=1800.0)
    arrivals = np.sort(rng.uniform(0, 1e4, 5000))
    runs = {eng: run_workloads(Fleet(cap=200, limits=lim), [Replay(arrivals_s=arrivals, holds=holds)], seed=1, engine=eng)
            for eng in ("fifo", "events")}
    for res in runs.values():
        killed = (res.state == EXCEPTION) & (res.phase == LIFETIME)
        np.testing.assert_array_equal(killed, holds > 1800.0)
        np.testing.assert_allclose(res.finish_s - res.start_s, np.minimum(holds, 1800.0), rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(runs["fifo"].finish_s, runs["events"].finish_s)


def test_lifetime_kill_retried_only_when_retry_on_names_it():
    holds = np.array([10.0, 5000.0, 20.0])
    for on, retries in ((("build",), 0), (("lifetime",), 2)):
        wl = Replay(arrivals_s=np.zeros(3), holds=holds, retry=RetryPolicy(max_retries=2, on=on))
        res = run_workloads(Fleet(cap=None, limits=SandboxLimits(lifetime_s=1000.0)), [wl], seed=1)
        assert int((res.attempt > 0).sum()) == retries
        if retries:
            assert int((res.state == RETRIED).sum()) == 2  # the re-run task is as long: killed again


def test_placing_limits_refused_where_not_simulated():
    """Beside an inference pool nothing places them (the admission kernel does not claim them there):
    refused in one line naming it; the admission kernel runs them (the one pass, ``engine = "fifo"``, refuses)."""
    from sandbox_fleet.simulate.engine.entities import Episode, Turns
    from sandbox_fleet.simulate.engine.inference import Inference

    lim = SandboxLimits(creates_per_s=5.0)
    ep = Episode(turns=Turns(turns=Deterministic(2), model_latency=None, prefill_tokens=Deterministic(10),
                             decode_tokens=Deterministic(5)))
    inf = Inference(replicas=1, prefill_tok_s=1000, decode_tok_s=100)
    with pytest.raises(InputError, match="an inference pool serves the model calls"):
        run_workloads(Fleet(cap=10, limits=lim), [Poisson(rate_per_s=1.0, n=5, episode=ep)], seed=1, inference=inf)
    wl = Replay(arrivals_s=np.zeros(3), holds=np.ones(3), retry=RetryPolicy(max_retries=1))
    with pytest.raises(InputError, match=r"engine 'fifo' cannot run this scenario \(the fleet has \[fleet.limits\]"):
        run_workloads(Fleet(cap=10, limits=lim), [wl], seed=1, engine="fifo")
    assert run_workloads(Fleet(cap=10, limits=lim), [wl], seed=1).engine == "admission-kernel"
    # dynamic sampling: the admission kernel places it with limits, on one pool or several
    from sandbox_fleet.simulate import DynamicSampling

    ds = DynamicSampling(groups=4, group_size=2, task_pass=np.array([0.5]), valid_rate=1.0)
    rl = SyncRL(batch=8, steps=3, holds=Deterministic(1.0), dynamic=ds)
    assert run_workloads(Fleet(cap=10, limits=lim), [rl], seed=1).engine == "admission-kernel"
    assert run_workloads([Fleet(cap=10, limits=lim), Fleet(cap=2)],
                         [rl, Replay(arrivals_s=np.zeros(2), holds=np.ones(2), pool=1)], seed=1).engine == "admission-kernel"
    with pytest.raises(InputError, match="creates_burst needs creates_per_s"):
        Fleet(cap=1, limits={"creates_burst": 3})
    with pytest.raises(InputError, match="warm_pool_refill_per_s"):
        Fleet(cap=1, limits={"warm_pool_size": 3})


def _bits(values) -> list[int]:
    return [struct.unpack("<Q", struct.pack("<d", float(v)))[0] for v in values]


def test_a_scenario_file_reports_its_limits(tmp_path):
    """``[fleet.limits]`` read from a file: a batch of 40 released at once into a warm pool of 25, the rest
    through a bucket of 2/s burst 5 and 3 s cold starts (by hand: 25 warm, 15 cold waiting 3 + max(0, k - 5)/2
    for k = 1..15, mean 3 + 55/30), holds of 10 s cut at a lifetime of 8 s (all 40 killed)."""
    from sandbox_fleet.simulate.scenario.run import run_scenario

    f = tmp_path / "s.toml"
    f.write_text("[fleet]\nunbounded = true\n[fleet.limits]\ncreates_per_s = 2.0\ncreates_burst = 5\n"
                 "cold_start_s = 3.0\nwarm_pool_size = 25\nwarm_pool_refill_per_s = 0.5\nlifetime_s = 8.0\n"
                 "[workload]\nkind = \"replay\"\narrivals_s = [" + ", ".join(["0.0"] * 40) + "]\n"
                 "[hold]\ndist = \"deterministic\"\nvalue_s = 10.0\n[run]\nseed = 1\n")
    lim = run_scenario(f)["limits"]
    assert (lim["killed_attempts"], lim["lifetime_s"], lim["warm_claims"], lim["cold_starts"]) == (40, 8.0, 25, 15)
    want = 15 * 3.0 + sum(max(0, k - 5) / 2 for k in range(1, 16))
    assert lim["ready_wait_s"]["mean"] == pytest.approx(want / 40, abs=1e-3)


def test_whole_runs_compiled_and_interpreted_give_the_same_bits():
    """Every limit and a lifetime on open arrivals: the kernel compiled and as plain Python, the same bits."""
    from sandbox_fleet.simulate.engine import fast
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    if not fast.available():
        pytest.skip("numba may not run here")
    lim = SandboxLimits(creates_per_s=3.0, creates_burst=4, max_starting=5, cold_start_s=2.5, warm_pool_size=12,
                        warm_pool_refill_per_s=0.2, lifetime_s=60.0)
    wl = Poisson(rate_per_s=2.0, n=20_000, holds=Exponential(mean_s=20.0))
    runs = []
    for compiled in (True, False):
        out = admit_loop.run(prepare(Fleet(cap=40, limits=lim), [wl], 3), compiled=compiled)
        runs.append([_bits(out.first[k]) for k in ("start_s", "finish_s", "build_s")] + [out.limits["warm"].tolist()])
    assert runs[0] == runs[1]


def test_the_example_scenario(tmp_path):
    """examples/scenarios/provider_limits.toml: every exception is a lifetime kill (the scenario has no other),
    each killed hold is cut at the lifetime past its ready wait, and every first attempt is warm or cold."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from sandbox_fleet.simulate.scenario.run import run_scenario

    root = __import__("pathlib").Path(__file__).resolve().parents[3]
    tel = tmp_path / "t.parquet"
    s = run_scenario(root / "examples" / "scenarios" / "provider_limits.toml", telemetry_out=tel)
    lim = s["limits"]
    assert lim["killed_attempts"] == s["outcomes"]["exceptions"] > 0
    assert lim["warm_claims"] + lim["cold_starts"] == s["rollouts"] == 5120 and lim["warm_claims"] > 0
    t = pq.read_table(tel)
    killed = t.filter(pc.equal(t.column("exception_type"), "SandboxLifetimeError"))
    assert killed.num_rows == lim["killed_attempts"]


def test_each_rule_compiles_alone_with_the_same_bits():
    """The rules as another engine would call them: numba's build of each, against the plain function."""
    from sandbox_fleet.simulate.engine import fast, limits_rules

    if not fast.available():
        pytest.skip("numba may not run here")
    from sandbox_fleet.simulate.engine.fast._jit import njit

    rng = np.random.default_rng(5)
    times = np.sort(rng.exponential(0.4, 500).cumsum())
    for name, args in (("bucket_take", (1.7, 3.0)), ("warm_take", (0.3, 4.0))):
        fn, jitted = getattr(limits_rules, name), njit(getattr(limits_rules, name))
        s1, s2 = new_state(3.0), new_state(3.0)
        assert [fn(s1, t, *args) for t in times] == [jitted(s2, t, *args) for t in times]
        assert _bits(s1) == _bits(s2)
    parts = [rng.exponential(m, 2000) for m in (5.0, 50.0, 10.0)]
    out = []
    for fn in (limits_rules.lifetime_cut, njit(limits_rules.lifetime_cut)):
        b, a, v = (p.copy() for p in parts)
        h = b + a + v
        killed = fn(b, a, v, h, 60.0)
        out.append((killed.tolist(), _bits(b), _bits(a), _bits(v), _bits(h)))
    assert out[0] == out[1] and any(out[0][0])

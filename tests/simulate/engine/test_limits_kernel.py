"""``[fleet.limits]`` on the admission kernel (``_admit_kernel.place`` calling ``fifo.claim``, the one
sequencing of ``limits_rules``): the same bytes as its oracle where nothing feeds back (one pass over the
arrivals, ``oracle/limits_pass``; the FIFO-with-limits cases of ``test_limits_rules.py``), compiled and as
plain Python; an RL case as the oracle pass places its rollouts arriving when the kernel released them,
those releases checked against the trainer's rule by hand; and what only the kernel runs, against schedules worked by hand:
lifetime kills retried through the bucket, a priority pool, several pools.
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.simulate.engine.builds import BOTH_BUILDS
from tests.simulate.engine.oracle.limits_pass import run_limits_pass

from sandbox_fleet.simulate import Deterministic, Exponential, Fleet, Poisson, RetryPolicy, SyncRL, run_workloads
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling
from sandbox_fleet.simulate.engine.entities import EXCEPTION, LIFETIME, RETRIED
from sandbox_fleet.simulate.engine.fast import admit_loop
from sandbox_fleet.simulate.engine.fifo import one_pass_refusal
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits
from sandbox_fleet.simulate.engine.workloads import Replay


def _batch(n: int, hold_s: float = 100.0) -> Replay:
    return Replay(arrivals_s=np.zeros(n), holds=np.full(n, hold_s))


ALL = SandboxLimits(creates_per_s=3.0, creates_burst=4, max_starting=5, cold_start_s=2.5, warm_pool_size=12,
                    warm_pool_refill_per_s=0.2, lifetime_s=60.0)

#: the FIFO-with-limits cases of test_limits_rules.py: (fleet, workloads)
CASES = {
    "bucket_5_1": lambda: (Fleet(cap=None, limits=SandboxLimits(creates_per_s=5.0, creates_burst=1)), [_batch(40)]),
    "bucket_5_10": lambda: (Fleet(cap=None, limits=SandboxLimits(creates_per_s=5.0, creates_burst=10)), [_batch(60)]),
    "bucket_daytona": lambda: (Fleet(cap=None, limits=SandboxLimits(creates_per_s=10.0, creates_burst=600)),
                               [_batch(700)]),
    "md1_poisson": lambda: (Fleet(cap=None, limits=SandboxLimits(creates_per_s=1.0, creates_burst=1)),
                            [Poisson(rate_per_s=0.75, n=5000, holds=Exponential(mean_s=1.0))]),
    "starting_cap": lambda: (Fleet(cap=None, limits=SandboxLimits(max_starting=8, cold_start_s=3.0)), [_batch(50)]),
    "warm_pool_covers": lambda: (Fleet(cap=None, limits=SandboxLimits(
        creates_per_s=1.0, cold_start_s=20.0, warm_pool_size=50, warm_pool_refill_per_s=0.5)), [_batch(50)]),
    "warm_pool_short": lambda: (Fleet(cap=None, limits=SandboxLimits(
        cold_start_s=20.0, warm_pool_size=30, warm_pool_refill_per_s=0.5)), [_batch(50)]),
    "warm_pool_rl_refill": lambda: (Fleet(cap=20, limits=SandboxLimits(
        cold_start_s=30.0, warm_pool_size=20, warm_pool_refill_per_s=0.125)),
        [SyncRL(batch=20, steps=4, train_s=5.0, holds=np.full(80, 100.0))]),
    "all_open_capped": lambda: (Fleet(cap=40, provision_delay_s=0.5, limits=ALL),
                                [Poisson(rate_per_s=2.0, n=3000, holds=Exponential(mean_s=20.0))]),
    "all_rl_capped": lambda: (Fleet(cap=40, limits=ALL),
                              [SyncRL(batch=64, steps=20, train_s=5.0, holds=Exponential(mean_s=20.0))]),
    "dynamic_rl_rounds": lambda: (Fleet(cap=20, limits=SandboxLimits(
        creates_per_s=2.0, creates_burst=4, max_starting=6, cold_start_s=2.0, warm_pool_size=8,
        warm_pool_refill_per_s=0.1)), [SyncRL(batch=16, steps=12, train_s=5.0, holds=Exponential(mean_s=20.0),
                                             dynamic=DynamicSampling(groups=4, group_size=4,
                                                                     task_pass=np.array([0.5, 0.1, 0.9])))]),
}


def _bytes(out) -> dict[str, bytes]:
    """An ``ExecutorOutput``'s attempts and limits figures, as bytes."""
    parts = {f"first.{k}": np.ascontiguousarray(v).tobytes() for k, v in out.first.items()}
    parts.update({f"extra.{k}": repr(list(v)).encode() for k, v in out.extra.items() if k != "hold"})
    for k, v in (out.limits or {}).items():
        parts[f"limits.{k}"] = np.ascontiguousarray(v).tobytes()
    for w, st in out.rl.items():
        parts.update({f"rl{w}.{k}": v.tobytes() for k, v in st.arrays().items()})
    return parts




@BOTH_BUILDS
@pytest.mark.parametrize("name", sorted(n for n in CASES if "_rl_" not in n))
def test_the_kernel_gives_the_oracle_passs_bytes(name, compiled):
    fleet, wls = CASES[name]()
    prep = prepare(fleet, wls, 7)
    assert admit_loop.refusal(prep) is None and not prep.any_retry
    fifo_out = run_limits_pass(prep)
    kernel_out = admit_loop.run(prepare(fleet, wls, 7), compiled=compiled)
    assert kernel_out.limits is not None and kernel_out.limits["warm"].size == prep.n
    assert _bytes(kernel_out) == _bytes(fifo_out)


@BOTH_BUILDS
@pytest.mark.parametrize("name", sorted(n for n in CASES if "_rl_" in n))
def test_an_rl_case_places_its_batches_as_the_oracle_pass_at_the_trainers_releases(name, compiled):
    """The oracle pass runs no RL (the trainer is the kernel's). Synchronous RL by hand: batch 0 goes
    out at 0, batch ``j + 1`` when step ``j`` ends, ``train_s`` after batch ``j``'s last rollout ended;
    with dynamic sampling a step's batch goes out in rounds, each when the round before has ended.
    Given those releases as open arrivals (the same holds, in rollout order), the oracle pass places
    each rollout at the kernel's slot time, with the kernel's waits and warm claims."""
    fleet, wls = CASES[name]()
    prep = prepare(fleet, wls, 7)
    assert one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry) is not None
    out = admit_loop.run(prep, compiled=compiled)
    wl, st = prep.workloads[0], out.rl[0]
    drawn = wl.groups_drawn
    rounds = [[n] for n in wl.batch_sizes.tolist()] if drawn is None else [
        [g * drawn.group_size for g in step] for step in drawn.rounds]
    fin, arr = out.first["finish_s"], out.first["arrival_s"]
    lo, release = 0, 0.0
    for j, step in enumerate(rounds):
        assert st.release_s[j] == release
        t = release
        for size in step:  # each round out when the one before has ended
            assert np.all(arr[lo : lo + size] == t)
            t = float(fin[lo : lo + size].max())
            lo += size
        assert st.batch_end_s[j] == t and st.train_end_s[j] == t + wl.train_s
        release = t + wl.train_s
    assert lo == prep.n
    fifo_out = run_limits_pass(prepare(fleet, [Replay(arrivals_s=arr.copy(), holds=prep.hold_np.copy())], 7))
    assert fifo_out.limits is not None and out.limits is not None
    for k in ("arrival_s", "start_s", "finish_s"):
        assert out.first[k].tobytes() == fifo_out.first[k].tobytes(), k
    for k in ("warm", "ready_wait_s"):
        assert out.limits[k].tobytes() == fifo_out.limits[k].tobytes(), k


def test_the_cases_exercise_the_limits():
    """Each case's limits move attempts (a wait for some rollout), and the set covers warm and cold claims."""
    warm = cold = 0
    for name, make in CASES.items():
        fleet, wls = make()
        out = admit_loop.run(prepare(fleet, wls, 7), compiled=False)
        assert out.limits is not None
        w = out.limits["warm"]
        warm, cold = warm + int(w.sum()), cold + int((~w).sum())
        assert out.limits["ready_wait_s"].max() > 0 or name == "warm_pool_covers", name
    assert warm > 0 and cold > 0


def test_lifetime_kills_retried_pay_the_bucket_again():
    """Unbounded pool, a bucket of 1 token per 100 s (burst 1), a lifetime of 50 s; at t=0 rollout A (a
    500-s task) then B (10 s), each retried up to twice on ``lifetime``. By hand: A passes at 0, ready 0,
    killed at 50. B's creation was asked at 0: it passes at 100 (ready 100, ends 110). A's retry at 50
    waits behind it: passes at 200 (wait 150), killed at 250; its second retry at 250 finds half a token
    (the last pass at 200): passes at 300 (wait 50), killed at 350, out of retries."""
    lim = SandboxLimits(creates_per_s=0.01, lifetime_s=50.0)
    wl = Replay(arrivals_s=np.zeros(2), holds=np.array([500.0, 10.0]),
                retry=RetryPolicy(max_retries=2, on=("lifetime",)))
    res = run_workloads(Fleet(cap=None, limits=lim), [wl], seed=1)
    assert res.engine == "admission-kernel"
    a = res.rollout == 0
    assert res.start_s[a].tolist() == [0.0, 50.0, 250.0]
    assert res.build_s[a].tolist() == [0.0, 150.0, 50.0]  # the creation's wait, in the build
    assert res.finish_s[a].tolist() == [50.0, 250.0, 350.0]
    assert res.state[a].tolist() == [RETRIED, RETRIED, EXCEPTION] and res.phase[a][-1] == LIFETIME
    b = res.rollout == 1
    assert (res.start_s[b].tolist(), res.build_s[b].tolist(), res.finish_s[b].tolist()) == ([0.0], [100.0], [110.0])
    # not retried on lifetime: A is killed once, B passes at 100 as before
    no = Replay(arrivals_s=np.zeros(2), holds=np.array([500.0, 10.0]), retry=RetryPolicy(max_retries=2, on=("build",)))
    res2 = run_workloads(Fleet(cap=None, limits=lim), [no], seed=1)
    assert res2.finish_s.tolist() == [50.0, 110.0]


def test_a_priority_pool_claims_in_its_order():
    """One slot, priority admission, a bucket of 1 token per 16 s (burst 1), cold start 1 s, holds of 10 s;
    lo arrives at 0 and 0, hi at 1 and 1. By hand: lo0 passes at 0, ready 1, ends 11. At 11 hi0 goes
    first (higher class; FIFO would take lo1): 11 x 1/16 = 0.6875 token, passes at 16, ready 17, ends 27;
    hi1 at 27 passes at 32 (ends 43); lo1 at 43 passes at 48 (ends 59). Each waited 5 s for its token."""
    lim = SandboxLimits(creates_per_s=0.0625, cold_start_s=1.0)

    def rep(t, name, **kw):
        return Replay(arrivals_s=np.asarray(t, dtype=float), holds=Deterministic(10.0), name=name, **kw)

    res = run_workloads(Fleet(cap=1, admission="priority", limits=lim), [rep([0, 0], "lo"), rep([1, 1], "hi", priority=5)],
                        seed=1)
    assert res.engine == "admission-kernel"
    assert res.start_s.tolist() == [0.0, 43.0, 11.0, 27.0]  # lo0, lo1, hi0, hi1
    assert res.build_s.tolist() == [1.0, 6.0, 6.0, 6.0]
    assert res.finish_s.tolist() == [11.0, 59.0, 27.0, 43.0]


def test_several_pools_limit_only_their_own():
    """Two pools, limits on the first only: the second's rollouts start at their arrival, untouched, and
    the limits figures count the first pool's rollouts. Pool 0 is a batch of 10 through a bucket of 2/s,
    burst 3: its k-th ready at max(0, (k - 3) / 2)."""
    lim = SandboxLimits(creates_per_s=2.0, creates_burst=3)
    wls = [Replay(arrivals_s=np.zeros(10), holds=np.full(10, 5.0), pool=0, name="a"),
           Replay(arrivals_s=np.zeros(4), holds=np.full(4, 5.0), pool=1, name="b")]
    res = run_workloads([Fleet(cap=None, limits=lim, name="p0"), Fleet(cap=None, name="p1")], wls, seed=1)
    assert res.engine == "admission-kernel"
    k = np.arange(1, 11)
    np.testing.assert_array_equal((res.start_s + res.build_s)[:10], np.maximum(0.0, (k - 3) / 2.0))
    np.testing.assert_array_equal(res.build_s[10:], np.zeros(4))
    assert res.limits is not None and res.limits["warm"].size == 10


def test_every_policy_compiled_gives_the_plain_bits():
    """What only the kernel runs (retries, a priority pool with preemption, several pools, a closed
    population), compiled and as plain Python: the same bytes."""
    if not fast.available():
        pytest.skip("numba may not run here")
    flaky = RetryPolicy(max_retries=3, on=("lifetime",))
    wls = [Poisson(rate_per_s=1.5, n=1500, holds=Exponential(mean_s=30.0), retry=flaky, pool=0, name="o", priority=1),
           SyncRL(batch=32, steps=10, train_s=4.0, holds=Exponential(mean_s=15.0), pool=0, name="rl", nominal=8),
           Replay(arrivals_s=np.sort(np.random.default_rng(2).uniform(0, 500, 300)), holds=np.full(300, 7.0), pool=1,
                  name="r")]
    pools = [Fleet(cap=30, admission="priority", preempt=True, limits=ALL, name="a"),
             Fleet(cap=10, limits=SandboxLimits(max_starting=2, cold_start_s=1.5), name="b")]
    outs = [_bytes(admit_loop.run(prepare(pools, wls, 11), compiled=c)) for c in (True, False)]
    assert outs[0] == outs[1]
    out = admit_loop.run(prepare(pools, wls, 11), compiled=False)
    assert len(out.extra["rollout"]) > 0  # retries ran

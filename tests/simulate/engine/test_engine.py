"""Engine behaviour on hand-computed cases, and the two loops agreeing."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.simulate import (
    COMPLETED,
    DROPPED,
    EXCEPTION,
    RETRIED,
    TIMEOUT,
    AsyncRL,
    Build,
    Deterministic,
    Episode,
    Exponential,
    Fleet,
    LogNormal,
    Poisson,
    Replay,
    RetryPolicy,
    SyncRL,
    Weibull,
    run_workloads,
)

BOTH = pytest.mark.parametrize("engine", ["fifo", "events"])


@BOTH
def test_fifo_cap_two_by_hand(engine):
    wl = Replay(arrivals_s=np.array([0.0, 0.0, 1.0, 5.0]), holds=np.array([3.0, 4.0, 1.0, 2.0]))
    res = run_workloads(Fleet(cap=2), [wl], seed=0, engine=engine)
    assert res.start_s.tolist() == [0.0, 0.0, 3.0, 5.0]
    assert res.finish_s.tolist() == [3.0, 4.0, 4.0, 7.0]
    assert (res.start_s - res.arrival_s).tolist() == [0.0, 0.0, 2.0, 0.0]
    s = res.summary()
    assert s["queue_wait_s"]["mean"] == 0.5
    assert s["concurrency"]["peak"] == 2
    assert s["sim_time_s"] == 7.0


@BOTH
def test_provision_delay_by_hand(engine):
    wl = Replay(arrivals_s=np.array([0.0, 0.0, 1.0, 5.0]), holds=np.array([3.0, 4.0, 1.0, 2.0]))
    res = run_workloads(Fleet(cap=2, provision_delay_s=0.5), [wl], seed=0, engine=engine)
    # r2 waits for r0's slot to be refilled at 3.5; r3 finds r1's slot ready at 4.5.
    assert res.start_s.tolist() == [0.0, 0.0, 3.5, 5.0]
    assert res.finish_s.tolist() == [3.0, 4.0, 4.5, 7.0]


RL = pytest.mark.parametrize("engine", ["auto", "events"])  # RL runs on the admission kernel only


@RL
def test_sync_rl_by_hand(engine):
    wl = SyncRL(batch=3, steps=2, train_s=10.0, holds=np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]))
    res = run_workloads(Fleet(cap=2), [wl], seed=0, engine=engine)
    assert res.engine == "admission-kernel"
    assert res.start_s.tolist() == [0.0, 0.0, 1.0, 14.0, 14.0, 18.0]
    st = res.steps[0]
    assert st["release_s"].tolist() == [0.0, 14.0]
    assert st["batch_end_s"].tolist() == [4.0, 24.0]
    assert st["train_end_s"].tolist() == [14.0, 34.0]
    s = res.summary()
    assert s["sim_time_s"] == 34.0
    assert s["step_s"]["mean"] == 17.0
    assert s["trainer_idle_fraction"] == pytest.approx(14 / 34)


@RL
def test_async_rl_staleness_by_hand(engine):
    wl = AsyncRL(batch=2, steps=3, train_s=10.0, staleness=1, holds=np.array([5.0, 1.0, 2.0, 2.0, 1.0, 1.0]))
    res = run_workloads(Fleet(cap=None), [wl], seed=0, engine=engine)
    st = res.steps[0]
    assert st["release_s"].tolist() == [0.0, 0.0, 15.0]
    assert st["train_start_s"].tolist() == [5.0, 15.0, 25.0]
    assert st["train_end_s"].tolist() == [15.0, 25.0, 35.0]


def test_async_with_zero_staleness_is_sync():
    kw = {"batch": 40, "steps": 5, "train_s": 30.0, "holds": LogNormal(100, 0.8)}
    a = run_workloads(Fleet(cap=16, provision_delay_s=1), [SyncRL(**kw)], seed=4)
    b = run_workloads(Fleet(cap=16, provision_delay_s=1), [AsyncRL(staleness=0, **kw)], seed=4)
    assert np.array_equal(a.start_s, b.start_s) and np.array_equal(a.finish_s, b.finish_s)


@BOTH
def test_agent_timeout_cuts_episode_and_verifier_runs(engine):
    ep = Episode(agent=np.array([10.0, 3.0]), agent_timeout_s=4.0, verifier=Deterministic(1.0))
    res = run_workloads(Fleet(cap=5), [Replay(arrivals_s=np.array([0.0, 0.0]), episode=ep)], seed=0, engine=engine)
    assert res.state.tolist() == [TIMEOUT, COMPLETED]
    assert res.hold_s.tolist() == [5.0, 4.0]
    tb = res.to_telemetry()
    assert tb.column("exception_type").to_pylist() == ["AgentTimeoutError", None]
    assert tb.column("has_exception").to_pylist() == [True, False]


@RL  # retries feed back: the kernel's (engine = "fifo" refuses them)
def test_infra_errors_retried_up_to_budget(engine):
    ep = Episode(agent=Deterministic(2.0), build=Build(hit_p=1.0, hit=Deterministic(1.0)), exception_p={"build": 1.0})
    wl = Replay(arrivals_s=np.array([0.0, 0.0]), episode=ep, retry=RetryPolicy(max_retries=2))
    res = run_workloads(Fleet(cap=1), [wl], seed=0, engine=engine)
    assert res.rollout.tolist() == [0, 0, 0, 1, 1, 1]
    assert res.attempt.tolist() == [0, 1, 2, 0, 1, 2]
    assert res.state.tolist() == [RETRIED, RETRIED, EXCEPTION] * 2
    # A build failure ends the hold inside the build phase.
    assert np.all(res.hold_s < 1.0) and np.all(res.agent_s == 0)
    # Retries re-enter the queue when the failed attempt ends (FIFO behind rollout 1).
    assert np.all(res.arrival_s[1:3] == res.finish_s[0:2])


def test_agent_timeouts_never_retried():
    ep = Episode(agent=Deterministic(10.0), agent_timeout_s=1.0)
    wl = Replay(arrivals_s=np.zeros(3), episode=ep, retry=RetryPolicy(max_retries=3, on=("build", "agent", "verifier")))
    res = run_workloads(Fleet(cap=3), [wl], seed=0)
    assert res.state.tolist() == [TIMEOUT] * 3 and res.attempt.tolist() == [0, 0, 0]


def test_agent_errors_not_retried_by_default():
    ep = Episode(agent=Deterministic(10.0), exception_p={"agent": 1.0})
    res = run_workloads(Fleet(cap=3), [Replay(arrivals_s=np.zeros(3), episode=ep, retry=RetryPolicy(max_retries=3))], seed=0)
    assert res.state.tolist() == [EXCEPTION] * 3


def test_start_cap_serialises_builds():
    ep = Episode(agent=Deterministic(1.0), build=Build(hit_p=1.0, hit=Deterministic(2.0)))
    res = run_workloads(Fleet(cap=10, start_cap=1), [Replay(arrivals_s=np.zeros(3), episode=ep)], seed=0)
    assert res.start_s.tolist() == [0.0, 2.0, 4.0]
    assert res.finish_s.tolist() == [3.0, 5.0, 7.0]


def test_queue_timeout_drops():
    wl = Replay(arrivals_s=np.zeros(3), holds=Deterministic(10.0))
    res = run_workloads(Fleet(cap=1, queue_timeout_s=15.0), [wl], seed=0)
    assert res.state.tolist() == [COMPLETED, COMPLETED, DROPPED]
    assert np.isnan(res.start_s[2]) and res.finish_s[2] == 15.0
    s = res.summary()
    assert s["dropped"] == 1 and s["completed"] == 2
    assert res.to_telemetry().num_rows == 2  # a dropped rollout never held a sandbox


def test_shortest_timeout_first():
    ep = Episode(agent=Deterministic(1.0), agent_timeout_s=np.array([100.0, 50.0, 10.0]))
    wl = Replay(arrivals_s=np.array([0.0, 0.1, 0.2]), episode=ep)
    res = run_workloads(Fleet(cap=1, admission="shortest-timeout-first"), [wl], seed=0)
    assert res.start_s.tolist() == [0.0, 2.0, 1.0]
    fifo = run_workloads(Fleet(cap=1), [wl], seed=0)
    assert fifo.start_s.tolist() == [0.0, 1.0, 2.0]


def test_preemption_retries_and_counts_lost_hours():
    wl = Poisson(rate_per_s=0.5, n=400, holds=Deterministic(100.0), retry=RetryPolicy(max_retries=10))
    fleet = Fleet(cap=64, slots_per_node=8, preempt_rate_per_node_s=2e-4, node_replace_s=30.0)
    res = run_workloads(fleet, [wl], seed=2)
    pre = res.phase == 4
    assert pre.any()
    expected = np.where(res.attempt[pre] < 10, RETRIED, EXCEPTION)
    assert np.array_equal(res.state[pre], expected)
    assert np.all(res.hold_s[pre] <= 100.0)
    lost = res.summary()["lost_sandbox_hours"]["preemption"]
    assert lost == pytest.approx(float(res.hold_s[pre].sum()) / 3600)
    assert lost > 0


def test_preemption_frees_no_capacity_while_node_is_down():
    # One node of 4 slots, reclaimed almost at once and down for 1000 s: nothing can run meanwhile.
    wl = Replay(arrivals_s=np.zeros(4), holds=Deterministic(50.0), retry=RetryPolicy(max_retries=1))
    res = run_workloads(Fleet(cap=4, slots_per_node=4, preempt_rate_per_node_s=1.0, node_replace_s=1000.0), [wl], seed=0)
    first_kill = res.finish_s[res.phase == 4].min()
    later = res.start_s[res.attempt == 1]
    assert np.all(later >= first_kill + 1000.0)


def test_shared_vs_separate_pools():
    rollouts = SyncRL(batch=64, steps=10, train_s=60.0, holds=Exponential(100.0), name="rollouts")
    synth = Poisson(rate_per_s=1.0, n=3000, holds=Exponential(30.0), name="synth")
    shared = run_workloads(Fleet(cap=64), [rollouts, synth], seed=1).summary()
    rollouts.pool, synth.pool = 0, 1
    separate = run_workloads([Fleet(cap=64), Fleet(cap=40)], [rollouts, synth], seed=1).summary()
    # Task synthesis starves rollouts on a shared pool, not on separate ones.
    assert shared["workloads"]["rollouts"]["queue_wait_s"]["mean"] > 5 * separate["workloads"]["rollouts"]["queue_wait_s"]["mean"]
    assert shared["step_s"]["mean"] > separate["step_s"]["mean"]


SCENARIOS = {
    "poisson": lambda: ([Fleet(cap=12, provision_delay_s=0.3)], [Poisson(rate_per_s=10, n=5000, holds=Weibull(1.3, 1.0))]),
    "sync": lambda: ([Fleet(cap=50, provision_delay_s=2)], [SyncRL(batch=80, steps=12, train_s=40, holds=LogNormal(60, 1.0))]),
    "async-retry": lambda: (
        [Fleet(cap=30)],
        [AsyncRL(batch=40, steps=10, train_s=100, staleness=2,
                 episode=Episode(agent=LogNormal(60, 0.9), build=Build(0.6, Exponential(2), Exponential(30)),
                                 exception_rate_per_s={"build": 0.01}, exception_p={"verifier": 0.05},
                                 verifier=Exponential(5)),
                 retry=RetryPolicy(max_retries=2))],
    ),
    "two-pools": lambda: (
        [Fleet(cap=20), Fleet(cap=None)],
        [SyncRL(batch=30, steps=8, train_s=20, holds=Exponential(40)),
         Poisson(rate_per_s=0.5, n=800, holds=Exponential(40), pool=1),
         Poisson(rate_per_s=0.2, n=300, holds=Exponential(10), pool=0)],
    ),
    "two-pools-open": lambda: (
        [Fleet(cap=20, provision_delay_s=0.5), Fleet(cap=None)],
        [Poisson(rate_per_s=0.3, n=600, holds=Exponential(40), pool=0),
         Poisson(rate_per_s=0.5, n=800, holds=Exponential(40), pool=1),
         Poisson(rate_per_s=0.2, n=300, holds=Exponential(10), pool=0)],
    ),
}


# RL, several pools, retries: the kernel against the oracle (test_admit_kernel, test_dispatch)
@pytest.mark.parametrize("name", ["poisson"])
def test_fifo_path_matches_event_loop(name):
    fleets, wls = SCENARIOS[name]()
    a = run_workloads(fleets, wls, seed=11, engine="fifo")
    b = run_workloads(fleets, wls, seed=11, engine="events")
    for col in ("rollout", "attempt", "arrival_s", "start_s", "finish_s", "state", "phase"):
        assert np.array_equal(getattr(a, col), getattr(b, col), equal_nan=True), col
    assert jsonio.dumps(a.summary()) == jsonio.dumps(b.summary())


def test_same_seed_byte_identical_and_seed_matters(tmp_path):
    import pyarrow.parquet as pq

    outs = []
    for seed in (5, 5, 6):
        fleets, wls = SCENARIOS["async-retry"]()
        res = run_workloads(fleets, wls, seed=seed)
        p = tmp_path / f"run{len(outs)}.parquet"
        pq.write_table(res.to_telemetry(), p)
        outs.append((p.read_bytes(), jsonio.dumps(res.summary())))
    assert outs[0] == outs[1]
    assert outs[0][0] != outs[2][0] and outs[0][1] != outs[2][1]


def test_events_count_is_model_level():
    wl = Replay(arrivals_s=np.array([0.0, 0.0, 1.0, 5.0]), holds=np.array([3.0, 4.0, 1.0, 2.0]))
    res = run_workloads(Fleet(cap=2, provision_delay_s=0.5), [wl], seed=0)
    assert res.summary()["events"] == 4 + 4 + 4  # arrivals, finishes, slot refills
    assert res.summary()["events_per_s"] is None and res.summary(timing=True)["events_per_s"] > 0

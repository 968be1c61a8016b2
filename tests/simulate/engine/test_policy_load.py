"""Offered work against the slots an admission policy leaves a workload (``simulate.engine.policy_load``).

Issue 38 item 3: an RL batch of 300 on 400 slots under timeout-ceiling admission, beside open
synthesis arrivals at 0.12/s holding 936.7 s on average. By hand: the ceiling rule keeps room for
the batch at every release, so synthesis (timeout 4 h, longer than the trainer's 300 s) shares
400 - 300 = 100 slots, and is offered 0.12 x 936.7 = 112.4 busy slots: 1.124 per slot, a queue that
grows without bound. The trend test alone called it stable ("no capped resource") while its mean
wait grew with the run's length; these tests re-make that case and check the flag against the hand
arithmetic and the growth itself.
"""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.report.checks.simulation import simulation_steady
from sandbox_fleet.simulate import Episode, Exponential, Fleet, LogNormal, Poisson, SyncRL, run_workloads
from sandbox_fleet.simulate.engine.steady import analyse
from sandbox_fleet.simulate.model import SimulateSummary, SteadyState

CAP, BATCH, RATE, HOLD_S, TRAIN_S = 400, 300, 0.12, 936.7, 300.0


def _case(scale: int, rate: float = RATE, timeout_s: float = 14400.0, admission: str = "timeout-ceiling"):
    """The review's case, ``scale`` x as long (steps and synthesis arrivals together)."""
    rl = SyncRL(batch=BATCH, steps=8 * scale, train_s=TRAIN_S, name="rl",
                episode=Episode(agent=LogNormal(600, 0.5), agent_timeout_s=3600.0))
    synth = Poisson(rate_per_s=rate, n=round(3000 * scale * rate / RATE), name="synth",
                    episode=Episode(agent=Exponential(HOLD_S), agent_timeout_s=timeout_s))
    return run_workloads(Fleet(cap=CAP, admission=admission), [rl, synth], seed=1)


def _synth_wait_s(res) -> float:
    sel = (res.workload == 1) & res.started
    return float((res.start_s[sel] - res.arrival_s[sel]).mean())


@pytest.fixture(scope="module")
def runs():
    return {k: _case(k) for k in (1, 2, 4)}


def test_ceiling_leaves_synthesis_cap_minus_batch_and_flags_the_overload(runs):
    for res in runs.values():
        st = analyse(res)
        (key, load), = st["offered_load"].items()
        assert "leaves 100 of 400 slots" in key and "synth" in key
        # the hand arithmetic: 0.12/s x 936.7 s over 100 slots, within the sampling error of the draws
        assert load == pytest.approx(RATE * HOLD_S / (CAP - BATCH), rel=0.08)
        # and exactly the run's own arrival rate x mean hold per rollout over 100 slots
        sel = res.workload == 1
        arr = np.sort(res.rollout_arrival_s[-int(res.workloads[1].count):])
        rate = (arr.size - 1) / (arr[-1] - arr[0])
        assert load == pytest.approx(rate * res.hold_s[sel & res.started].sum() / arr.size / 100, rel=1e-12)
        assert st["stable"] is False
        assert "offered work exceeds capacity" in st["reason"] and "no capped resource" not in st["reason"]


def test_the_flagged_queue_does_grow_with_the_run(runs):
    # the independent truth behind the flag: the mean wait keeps growing as the run doubles
    waits = [_synth_wait_s(runs[k]) for k in (1, 2, 4)]
    assert waits[0] < waits[1] < waits[2] and waits[2] > 3 * waits[0]


def test_check_simulate_fails_the_overloaded_run(runs):
    st = SteadyState.model_validate(analyse(runs[2]))
    got = simulation_steady(SimulateSummary.model_construct(steady_state=st))
    assert got.status == "fail" and got.value is not None and got.value >= 1


def test_below_the_slots_left_it_is_stable_and_its_wait_does_not_grow():
    # 0.08/s x 936.7 s = 74.9 busy slots of 100: stable, the load stated
    res = [_case(k, rate=0.08) for k in (1, 4)]
    for r in res:
        st = analyse(r)
        (load,) = st["offered_load"].values()
        assert load == pytest.approx(0.08 * HOLD_S / 100, rel=0.08)
        assert st["stable"] is True
    assert _synth_wait_s(res[1]) < 2 * _synth_wait_s(res[0]) + 60


def test_a_timeout_within_train_s_is_not_bounded_by_the_rule():
    # a 200 s ceiling never outlasts a release train_s = 300 s away while the batch runs: no bound stated
    st = analyse(_case(1, rate=0.05, timeout_s=200.0))
    assert not any("synth" in k for k in (st["offered_load"] or {}))


def test_priority_limit_and_higher_classes_by_hand():
    # cap 10, no quotas: class "hi" (priority 1) offered 0.5/s x 8 s = 4 busy slots, class "lo"
    # 0.5/s x 14 s = 7: by hand lo is left 10 - 4 = 6 slots, 7/6 = 1.17 >= 1 (unstable), and hi is
    # left all 10 (0.4). The pool as a whole is offered 11 of 10 (1.1).
    hi = Poisson(rate_per_s=0.5, n=4000, holds=Exponential(8.0), name="hi", priority=1)
    lo = Poisson(rate_per_s=0.5, n=4000, holds=Exponential(14.0), name="lo", priority=0)
    st = analyse(run_workloads(Fleet(cap=10, admission="priority"), [hi, lo], seed=3))
    loads = st["offered_load"]
    lo_load = next(v for k, v in loads.items() if "workload lo" in k)
    hi_load = next(v for k, v in loads.items() if "workload hi" in k)
    assert lo_load == pytest.approx(7 / 6, rel=0.06) and hi_load == pytest.approx(4 / 10, rel=0.06)
    assert loads["pool 0"] == pytest.approx(11 / 10, rel=0.05)
    assert st["stable"] is False


def test_priority_quota_limit_by_hand():
    # nominal 2 + borrow_limit 1 = 3 slots at most for "a", offered 0.5/s x 7 s = 3.5: 1.17 >= 1,
    # though the pool of 10 is offered only 3.5 + 1 = 4.5 (0.45)
    a = Poisson(rate_per_s=0.5, n=3000, holds=Exponential(7.0), name="a", nominal=2, borrow_limit=1)
    b = Poisson(rate_per_s=0.25, n=1500, holds=Exponential(4.0), name="b", nominal=2)
    st = analyse(run_workloads(Fleet(cap=10, admission="priority"), [a, b], seed=4))
    loads = st["offered_load"]
    a_load = next(v for k, v in loads.items() if "workload a" in k)
    assert a_load == pytest.approx(3.5 / 3, rel=0.06)
    assert loads["pool 0"] == pytest.approx(0.45, rel=0.06)
    assert st["stable"] is False

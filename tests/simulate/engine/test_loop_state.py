"""The general loop's state object: its consistency audit holds throughout every kind of
run (with the policies of ``oracle_policies``) and catches a corrupted state."""

from __future__ import annotations

import math
from heapq import heappop

import numpy as np
import pytest
from tests.simulate.engine.oracle.loop_state import RUNNING, S_BUSY, S_DOWN, S_FREE, S_PROV, LoopState
from tests.simulate.engine.oracle_policies import run_oracle as run_events

from sandbox_fleet.simulate import (
    AsyncRL,
    Build,
    Closed,
    Episode,
    Exponential,
    Fleet,
    LogNormal,
    Poisson,
    RetryPolicy,
    SyncRL,
)
from sandbox_fleet.simulate.engine import events as ev
from sandbox_fleet.simulate.engine.fifo import place_stream
from sandbox_fleet.simulate.engine.prepare import ids_index, prepare


def _episode() -> Episode:
    return Episode(agent=LogNormal(60.0, 0.8), build=Build(hit_p=0.7, hit=Exponential(2.0), miss=Exponential(20.0)),
                   verifier=Exponential(5.0), exception_rate_per_s={"build": 0.002, "verifier": 0.01, "agent": 0.0005},
                   agent_timeout_s=200.0)


CASES = {
    "plain": lambda: (Fleet(cap=10), [Poisson(rate_per_s=7, n=3000, holds=Exponential(1.0))]),
    "plain_retries": lambda: (Fleet(cap=10), [Poisson(rate_per_s=0.15, n=1500, episode=_episode(),
                                                       retry=RetryPolicy(max_retries=3))]),
    "unbounded": lambda: (Fleet(cap=None), [Poisson(rate_per_s=7, n=1000, holds=Exponential(1.0))]),
    "start_cap": lambda: (Fleet(cap=30, start_cap=3), [Poisson(rate_per_s=0.4, n=1500, episode=_episode(),
                                                                retry=RetryPolicy(max_retries=2))]),
    "provisioning": lambda: (Fleet(cap=25, provision_delay_s=2.0), [Poisson(rate_per_s=0.4, n=1500, episode=_episode())]),
    "preemption": lambda: (Fleet(cap=40, slots_per_node=8, preempt_rate_per_node_s=1e-4, node_replace_s=60),
                           [Poisson(rate_per_s=0.5, n=2000, episode=_episode(), retry=RetryPolicy(max_retries=2))]),
    "queue_timeout": lambda: (Fleet(cap=15, queue_timeout_s=30.0), [Poisson(rate_per_s=0.4, n=1500, episode=_episode())]),
    "shortest_timeout_first": lambda: (Fleet(cap=20, admission="shortest-timeout-first"),
                                       [Poisson(rate_per_s=0.3, n=1500, episode=_episode())]),
    "closed": lambda: (Fleet(cap=12), [Closed(population=20, n=1500, episode=_episode(), retry=RetryPolicy(max_retries=1))]),
    "closed_timeout": lambda: (Fleet(cap=12, queue_timeout_s=20.0), [Closed(population=20, n=1500, episode=_episode())]),
    "rl": lambda: (Fleet(cap=50, provision_delay_s=1.0), [SyncRL(batch=64, steps=10, train_s=100, episode=_episode(),
                                                                 retry=RetryPolicy(max_retries=1))]),
    "async_plain": lambda: (Fleet(cap=50), [AsyncRL(batch=64, steps=10, train_s=100, staleness=2, holds=LogNormal(60, 1.0))]),
    "priority_preempt": lambda: (
        Fleet(cap=24, provision_delay_s=1.5, start_cap=6, admission="priority", preempt=True, slots_per_node=8,
              preempt_rate_per_node_s=1e-4, node_replace_s=30, queue_timeout_s=400.0),
        [Poisson(rate_per_s=0.2, n=800, episode=_episode(), retry=RetryPolicy(max_retries=1), priority=2, name="hi"),
         Poisson(rate_per_s=0.2, n=800, episode=_episode(), priority=1, nominal=4, borrow_limit=10, name="mid"),
         Closed(population=10, n=400, holds=LogNormal(80, 0.7), name="lo")]),
    "priority_quotas": lambda: (
        Fleet(cap=12, admission="priority", preempt=True),
        [Poisson(rate_per_s=0.1, n=800, episode=_episode(), nominal=6, borrow_limit=2, name="x"),
         Poisson(rate_per_s=0.1, n=800, episode=_episode(), nominal=4, name="y"),
         SyncRL(batch=16, steps=6, train_s=50, holds=LogNormal(40, 0.5), priority=1, name="z")]),
    "timeout_ceiling": lambda: (
        Fleet(cap=40, provision_delay_s=1.0, admission="timeout-ceiling"),
        [SyncRL(batch=32, steps=8, train_s=60, episode=_episode(), name="rl"),
         Closed(population=30, n=800, episode=_episode(), retry=RetryPolicy(max_retries=1), name="synth")]),
    "two_pools": lambda: ([Fleet(cap=20), Fleet(cap=10, start_cap=2)],
                          [Poisson(rate_per_s=0.3, n=1000, episode=_episode(), name="a"),
                           SyncRL(batch=30, steps=5, train_s=50, holds=LogNormal(40, 0.5), pool=1, name="b"),
                           Closed(population=5, n=300, holds=LogNormal(30, 0.5), pool=0, name="c")]),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_audit_holds_throughout_the_run(name):
    fleet, wls = CASES[name]()
    prep = prepare(fleet, wls, seed=5)
    states = []
    run_events(prep, audit=lambda st: states.append(st) or st.audit(), progress_every=37)
    assert len(states) > 10  # audited mid-run, not only at the end
    st = states[-1]  # the final audit ran after the loop: every rollout ended, nothing holds a slot
    assert st.done == prep.n and st.busy == 0 and st.waiting == 0
    assert all(s in (S_FREE, S_PROV, S_DOWN) for s in st.slot_state)
    assert all(nf == pl.cap for nf, pl, c in zip(st.nfree, st.pools, st.counted) if c)


def test_audit_catches_a_corrupted_state():
    fleet, wls = CASES["plain"]()
    prep = prepare(fleet, wls, seed=1)

    def corrupt(st):
        st.busy += 1  # one attempt counted that no row shows running
        st.audit()

    with pytest.raises(AssertionError):
        run_events(prep, audit=corrupt, progress_every=50)

    def lose_a_slot(st):
        st.nfree[0] -= 1
        st.audit()

    with pytest.raises(AssertionError):
        run_events(prepare(fleet, wls, seed=1), audit=lose_a_slot, progress_every=50)


def test_place_pushes_the_build_end_before_the_finish_and_marks_the_slot():
    prep = prepare(Fleet(cap=4, start_cap=2, provision_delay_s=1.0), [Poisson(rate_per_s=1, n=5, episode=_episode())], seed=2)
    st = LoopState(prep)
    st.schedule_start()
    st.now = 7.0
    slot = st.free[0].pop()
    st.in_list[slot] = False
    st.place(0, 3, slot)
    assert st.a_start[3] == 7.0 and st.a_state[3] == RUNNING and st.a_slot[3] == slot
    assert st.slot_state[slot] == S_BUSY and st.slot_row[slot] == 3 and st.busy == 1 and st.building[0] == 1
    first, second = heappop(st.heap), heappop(st.heap)
    assert (first[2], first[0]) == (ev.BUILD_DONE, 7.0 + st.a_build[3])
    assert (second[2], second[0]) == (ev.FINISH, 7.0 + st.a_hold[3])
    st.free_slot(0, slot)  # a provisioning delay: the slot is unavailable until SLOT_READY
    assert st.slot_state[slot] == S_PROV and heappop(st.heap)[2] == ev.SLOT_READY
    st.on_slot_ready(slot)
    assert st.slot_state[slot] == S_FREE and st.in_list[slot] and st.free[0][-1] == slot


def test_counted_pool_keeps_a_count_not_slots():
    prep = prepare(Fleet(cap=2), [Poisson(rate_per_s=1, n=5, holds=Exponential(1.0))], seed=2)
    st = LoopState(prep)
    assert st.counted == [True] and st.nfree == [2] and st.free == [[]] and st.slot_state == []
    for r in range(3):
        st.enqueue(r, r)
    st.dispatch(0)
    assert st.nfree == [0] and st.busy == 2 and st.waiting == 1 and st.a_slot[:2] == [-1, -1]
    st.free_slot(0, -1)
    assert st.nfree == [1]
    st.dispatch(0)
    assert st.nfree == [0] and st.waiting == 0 and st.a_state[2] == RUNNING


def test_merged_arrivals_are_a_stable_time_sort():
    a = Poisson(rate_per_s=2.0, n=400, holds=Exponential(1.0), name="a")
    b = Poisson(rate_per_s=3.0, n=300, holds=Exponential(1.0), name="b")
    prep = prepare(Fleet(cap=3), [a, b], seed=4)
    from sandbox_fleet.simulate.engine.prepare import ARRIVALS, stream

    t = np.concatenate([a.arrivals(stream(4, ARRIVALS, 0)), b.arrivals(stream(4, ARRIVALS, 1))])
    order = np.argsort(t, kind="stable")
    assert prep.arr_t == t[order].tolist() and list(prep.arr_r) == order.tolist() and not prep.arr_in_order
    one = prepare(Fleet(cap=3), [Poisson(rate_per_s=2.0, n=400, holds=Exponential(1.0))], seed=4)
    assert one.arr_in_order and one.arr_r == range(400) and ids_index(one.arr_r) == slice(0, 400)
    assert np.all(np.diff(one.arr_t_np) >= 0) and one.arr_t == one.arr_t_np.tolist()


def test_place_stream_is_the_gg_c_recursion_by_brute_force():
    """Each start is max(arrival, the earliest time any of the c slots is free), by a linear scan."""
    rng = np.random.default_rng(3)
    arr = np.cumsum(rng.exponential(0.3, 500)).tolist()
    hold = rng.exponential(1.0, 500).tolist()
    for c, prov in ((1, 0.0), (3, 0.0), (3, 0.25)):
        free = [0.0] * c
        want = []
        for t, h in zip(arr, hold):
            k = min(range(c), key=free.__getitem__)
            s = max(t, free[k])
            want.append(s)
            free[k] = s + h + prov
        got = [math.nan] * len(arr)
        assert place_stream([0.0] * c, arr, None, 0, len(arr), hold, prov, got, None) == len(arr)
        assert got == want

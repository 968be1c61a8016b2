"""A pool made of nodes runs every feature a slot pool runs (issue 37 item 1, issue 36 item 3): every
admission policy, start caps, queue timeouts, ``[fleet.limits]`` and dynamic sampling, placed by the
admission kernel's ``node_dispatch`` through the slot dispatch's policy hooks.

Independent truth: the oracle (the pure event loop in ``tests/simulate/engine/oracle/``) does not know
nodes. A pool of N nodes (min = max = N, provision_s = 0) whose node type holds exactly k requests is
a slot pool of cap N * k: the node run must give the oracle's bytes on that slot pool (every attempt's
start, finish, phase and state, the trainer's steps, the time integrals). Limits, which the oracle does
not run, are compared with the oracle pass (``oracle/limits_pass``) on the slot pool. Where placement
matters (requests of different sizes), hand-worked schedules."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from tests.simulate.engine.oracle_policies import run_oracle
from tests.simulate.engine.test_admit_kernel import CASES, _digest

from sandbox_fleet.simulate import Closed, Exponential, Fleet, LogNormal, Poisson
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.engine.distributions import Deterministic
from sandbox_fleet.simulate.engine.entities import FleetNodePool
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits

REQUEST = (2.0, 4096.0, 10_000.0)


def _nodes_for(cap: int) -> list[FleetNodePool]:
    """N nodes of k requests each, N * k = cap: N the largest divisor of cap up to 4 nodes' worth."""
    k = next(k for k in (3, 2, 1) if cap % k == 0)
    n = cap // k
    return [FleetNodePool(name="n", cpu=REQUEST[0] * k, memory_mb=REQUEST[1] * k + 1.0, disk_mb=REQUEST[2] * k + 1.0,
                          min_nodes=n, max_nodes=n)]


def _slot_and_node(pools, wls):
    """The case's slot pools without provisioning delays or node preemption, and the same pools made of
    nodes (each capped pool; an unbounded one stays a slot pool), its workloads given the request."""
    one = isinstance(pools, Fleet)
    pools = [pools] if one else list(pools)
    slots = [p.model_copy(update={"provision_delay_s": 0.0, "preempt_rate_per_node_s": 0.0}) for p in pools]
    nodes = [p if p.cap is None else Fleet(**{**p.model_dump(exclude={"cap", "slots_per_node", "node_replace_s"}),
                                             "node_pools": _nodes_for(int(p.cap))}) for p in slots]
    node_wls = [dataclasses.replace(wl, request=REQUEST) if nodes[wl.pool].node_pools else wl for wl in wls]
    return slots, wls, nodes, node_wls


# Every policy case of the kernel's oracle test that has a finite cap (the node runs drop its
# provisioning delay and node preemption, the slot runs too).
POLICY_CASES = ["priority_quotas_preempt_provisioning", "priority_preempt_counted_with_retries",
                "priority_start_cap_queue_timeout", "ceiling_rl_beside_closed", "fifo_start_cap_timeout_retries_two_pools",
                "node_preemption_priority_evicting_start_cap_timeout", "node_preemption_ceiling_rl",
                "shortest_timeout_first_queue_timeout_retries", "shortest_timeout_first_preempted_beside_fifo",
                "dynamic_sampling_fifo_queue_timeout_retries",
                "dynamic_sampling_async_rounds_preemption_shortest_timeout_first",
                "example_shared_pool_priority", "example_timeout_ceiling"]


@pytest.mark.parametrize("compiled", [pytest.param(True, marks=pytest.mark.skipif(
    not fast.available(), reason="numba may not run here")), False], ids=["compiled", "plain_twin"])
@pytest.mark.parametrize("name", POLICY_CASES)
def test_a_pool_of_nodes_holding_k_each_places_as_the_oracle_on_the_slot_pool_of_cap_n_k(name, compiled):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    slots, wls, nodes, node_wls = _slot_and_node(*CASES[name]())
    want = _digest(run_oracle(prepare(slots, wls, 7)))
    prep = prepare(nodes, node_wls, 7)
    assert admit_loop.refusal(prep) is None
    out = admit_loop.run(prep, compiled=compiled)
    assert _digest(out) == want
    assert out.nodes is not None and sum(row["attempts"] for row in out.nodes) > 0
    if "preempt" in name and "priority" in name:
        assert out.first["state"].size and len(out.extra["rollout"]) > 0  # evictions re-ran rollouts


@pytest.mark.parametrize("limits", [
    {"creates_per_s": 0.5, "creates_burst": 3, "cold_start_s": 1.5},
    {"max_starting": 2, "cold_start_s": 2.0, "lifetime_s": 6.0},
    {"warm_pool_size": 3, "warm_pool_refill_per_s": 0.4, "cold_start_s": 3.0, "creates_per_s": 1.0},
], ids=["bucket", "starting_cap_lifetime", "warm_pool"])
def test_limits_on_a_pool_of_nodes_place_as_the_oracle_pass_on_the_slot_pool(limits):
    """``[fleet.limits]`` (the bucket, the starting cap, the warm pool, the lifetime cut): the node pool's
    attempts are the oracle pass's (``oracle/limits_pass``, another code path: one pass over the arrivals)
    on the slot pool, and the kernel's slot dispatch's."""
    from tests.simulate.engine.oracle.limits_pass import run_limits_pass

    from sandbox_fleet.simulate.engine.prepare import prepare

    lim = SandboxLimits(**limits)
    wl = Poisson(name="o", rate_per_s=1.5, n=600, holds=LogNormal(3.0, 0.8))
    slot = run_workloads(Fleet(cap=6, limits=lim), [wl], seed=11)
    if lim.places:  # (a lifetime alone is cut in the drawn holds: the one pass)
        oracle = run_limits_pass(prepare(Fleet(cap=6, limits=lim), [wl], 11))
        for key in ("arrival_s", "start_s", "finish_s", "state", "phase"):
            assert np.array_equal(getattr(slot, key), oracle.first[key], equal_nan=True), key
    node = run_workloads(Fleet(limits=lim, node_pools=_nodes_for(6)), [dataclasses.replace(wl, request=REQUEST)],
                         seed=11)
    assert node.engine == "admission-kernel"
    for key in ("arrival_s", "start_s", "finish_s", "state", "phase"):
        assert np.array_equal(getattr(slot, key), getattr(node, key), equal_nan=True), key
    assert np.nanmax(node.start_s - node.arrival_s) > 0  # the pool queued


def test_limits_and_a_policy_on_a_pool_of_nodes_compiled_and_plain_give_the_same_bits():
    from sandbox_fleet.simulate.engine.fast import admit_loop

    lim = SandboxLimits(creates_per_s=1.0, max_starting=2, cold_start_s=1.0, warm_pool_size=2,
                        warm_pool_refill_per_s=0.5)
    pools = [FleetNodePool(name="r", min_nodes=1, max_nodes=1, cpu=8.0, memory_mb=1e5, disk_mb=1e5),
             FleetNodePool(name="b", max_nodes=4, provision_s=5.0, scale_down_s=10.0, cpu=8.0, memory_mb=1e5,
                           disk_mb=1e5)]
    fl = Fleet(admission="priority", preempt=True, start_cap=3, queue_timeout_s=40.0, limits=lim, node_pools=pools)
    wls = [Poisson(name="hi", rate_per_s=0.8, n=300, holds=Exponential(6.0), priority=1, request=(3.0, 10.0, 10.0)),
           Closed(name="lo", population=6, n=300, holds=LogNormal(5.0, 0.6), request=(1.0, 10.0, 10.0))]
    a, b = (admit_loop.run(prepare(fl, wls, 5), compiled=c) for c in (False, True))
    assert _digest(a) == _digest(b) and a.nodes == b.nodes
    assert len(a.extra["rollout"]) > 0 and sum(row["waited"] for row in a.nodes) > 0


def _two_sizes(admission: str, preempt: bool = False):
    """One node of 4 cpu. ``big`` (3 cpu, class 0): two at t = 0, 10 s each; ``small`` (2 cpu, class 1):
    two at t = 1, 4 s each."""
    pools = [FleetNodePool(name="one", min_nodes=1, max_nodes=1, cpu=4.0, memory_mb=100.0, disk_mb=100.0)]
    fl = Fleet(admission=admission, preempt=preempt, node_pools=pools)
    cls = {"priority": 1} if admission == "priority" else {}
    wls = [Closed(name="big", population=2, n=2, holds=Deterministic(10.0), request=(3.0, 1.0, 1.0)),
           Closed(name="small", population=2, n=2, holds=Deterministic(4.0), request=(2.0, 1.0, 1.0), start_s=1.0,
                  **cls)]
    return run_workloads(fl, wls, seed=0)


def _schedule(res):
    return sorted((res.workloads[w].name, float(s), float(f))
                  for w, s, f in zip(res.workload, res.start_s, res.finish_s) if not np.isnan(s))


def test_requests_of_different_sizes_first_come_first_served_by_hand():
    """FIFO: big0 [0, 10] leaves 1 cpu, big1 waits at the front and blocks the smalls (that a slot pool
    of cap 2 would start at 1); at 10 big1 takes 3 cpu, the smalls (2 cpu) fit only at 20."""
    assert _schedule(_two_sizes("fifo")) == [("big", 0.0, 10.0), ("big", 10.0, 20.0),
                                             ("small", 20.0, 24.0), ("small", 20.0, 24.0)]


def test_requests_of_different_sizes_by_priority_by_hand():
    """Priority: at 1 the smalls (class 1) are best but 1 cpu is free; no eviction, so they wait. At 10
    big0 leaves: both smalls (2 + 2 cpu) start before big1, which starts when they end at 14."""
    assert _schedule(_two_sizes("priority")) == [("big", 0.0, 10.0), ("big", 14.0, 24.0),
                                                 ("small", 10.0, 14.0), ("small", 10.0, 14.0)]


def test_requests_of_different_sizes_by_priority_evicting_by_hand():
    """Priority with preempt: at 1 small0 finds 1 cpu free and evicts big0 (its 3 cpu leave the node;
    big0 re-queues, entering after big1); both smalls start at 1 and end at 5; then big1 (queued at 0)
    [5, 15], big0's re-run [15, 25]."""
    res = _two_sizes("priority", preempt=True)
    assert _schedule(res) == [("big", 0.0, 1.0), ("big", 5.0, 15.0), ("big", 15.0, 25.0),
                              ("small", 1.0, 5.0), ("small", 1.0, 5.0)]
    assert res.nodes[0]["attempts"] == 5 and res.nodes[0]["peak_nodes"] == 1


def test_a_released_round_takes_nodes_before_the_ending_attempt_leaves_its_node_by_hand():
    """Dynamic sampling, rounds of one group of 2 rollouts holding 100 s; one base node holding 2, burst
    nodes joining 10 s after launch. A step's first round starts together at its release t on the base
    node; they end together at t + 100, and the second end releases the next round before its room
    leaves the node (the slot pools' order, ``LoopState.terminal``): one rollout takes the room the first
    end freed, the other launches a burst node: (t + 100, t + 110). That round's second end (t + 210)
    releases the next round onto the empty base node: together again, and so on."""
    from sandbox_fleet.simulate.engine.dynamic_sampling import DynamicSampling
    from sandbox_fleet.simulate.engine.workloads import SyncRL

    node = {"cpu": 4.0, "memory_mb": 100.0, "disk_mb": 100.0}
    pools = [FleetNodePool(name="r", min_nodes=1, max_nodes=1, **node),
             FleetNodePool(name="b", max_nodes=3, provision_s=10.0, **node)]
    ds = DynamicSampling(groups=1, group_size=2, round_groups=1, task_pass=np.array([0.5]))
    wl = SyncRL(batch=2, steps=4, train_s=50.0, holds=Deterministic(100.0), request=(2.0, 1.0, 1.0), dynamic=ds)
    res = run_workloads(Fleet(node_pools=pools), [wl], seed=3)
    first = res.attempt == 0
    starts = res.start_s[first][np.argsort(res.rollout[first])]
    release = list(res.steps[0]["release_s"])
    want: list[float] = []
    t, together, step = release[0], True, 0
    for i in range(0, starts.size, 2):
        if i and starts[i] > 0 and step + 1 < len(release) and min(starts[i : i + 2]) >= release[step + 1]:
            step += 1  # a new step: its first round at the trainer's release, the base node empty
            t, together = release[step], True
        want += [t, t] if together else [t, t + 10.0]
        t = t + 100.0 if together else t + 110.0
        together = not together
    assert np.array_equal(starts, np.array(want))
    assert starts.size // 2 > 4  # some step released more than one round
    assert np.any(starts[1::2] - starts[0::2] == 10.0)  # a round launched a burst node for its second rollout
    assert res.nodes[1]["launched"] > 0

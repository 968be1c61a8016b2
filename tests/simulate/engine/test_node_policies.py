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
from tests.simulate.engine.builds import BOTH_BUILDS
from tests.simulate.engine.oracle_policies import run_oracle
from tests.simulate.engine.test_admit_kernel import CASES, RETRY, _digest

from sandbox_fleet.simulate import Closed, Exponential, Fleet, LogNormal, Poisson, SyncRL
from sandbox_fleet.simulate.engine.distributions import Deterministic
from sandbox_fleet.simulate.engine.entities import Build, Episode, FleetNodePool
from sandbox_fleet.simulate.engine.images import ImageCache, ImageCatalog
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits
from sandbox_fleet.simulate.engine.workloads import AsyncRL

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


@BOTH_BUILDS
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


def _tied_training(cap: int, batch: int, start_cap: int, build_s: float, evicts: bool, population: int):
    """Priority admission: asynchronous RL (class 1) whose build + agent ends with a training step (1 s;
    deterministic, so a released batch's ends tie with the next training's end) beside a closed workload of
    the same episodes, under a start cap: which of the two the ties start first is decided by the pushes'
    order (the oracle's: the released batch dispatched before the next training is pushed)."""
    ep = Episode(agent=Deterministic(1.0), build=Build(hit_p=1.0, hit=Deterministic(build_s), miss=Deterministic(1.0)),
                 exception_p={"agent": 0.3}, agent_timeout_s=5.0)
    rl = AsyncRL(batch=batch, steps=6, train_s=1.0, staleness=1, episode=ep, retry=RETRY, name="rl", priority=1)
    fl = Fleet(cap=cap, admission="priority", start_cap=start_cap, preempt=evicts)
    return fl, [rl, Closed(population=population, n=15, episode=ep, retry=RETRY, name="c")]


@BOTH_BUILDS
@pytest.mark.parametrize("case", [(6, 2, 2, 1.0, False, 1, 17), (3, 3, 1, 0.0, True, 3, 22)], ids=["start_cap", "evicting"])
def test_a_training_step_releases_onto_nodes_in_the_slot_pools_order(case, compiled):
    """``on_train_done``: the released batch is dispatched before the next training is pushed, on slot pools
    and pools made of nodes alike (``train_done``), so N nodes x k equal the oracle's slot pool of cap N x k
    with training ends that tie with a batch's ends (before, the nodes took the batch after the push: these
    two cases differed in their starts, the trainer's steps and the time integrals)."""
    from sandbox_fleet.simulate.engine.fast import admit_loop

    *shape, seed = case
    slots, wls, nodes, node_wls = _slot_and_node(*_tied_training(*shape))
    want = _digest(run_oracle(prepare(slots, wls, seed)))
    out = admit_loop.run(prepare(nodes, node_wls, seed), compiled=compiled)
    assert _digest(out) == want


def _images_case(nodes_n: int, k: int):
    """``[images]``: 4 images of 300 MB (shares 0.4 / 0.3 / 0.2 / 0.1) on nodes of 700 MB cache (two images),
    pulled at 100 MB/s; a FIFO pool of cap ``nodes_n * k`` fed by open arrivals."""
    cat = ImageCatalog(names=("a", "b", "c", "d"), shares=np.array([0.4, 0.3, 0.2, 0.1]),
                       size_mb=np.array([300.0] * 4), basis="test")
    ep = Episode(agent=Exponential(4.0), build=Build(hit=Deterministic(0.5),
                                                     images=ImageCache(catalog=cat, cache_mb=700.0, pull_mb_per_s=100.0)))
    return (Fleet(cap=nodes_n * k, slots_per_node=k), [Poisson(name="o", rate_per_s=1.0, n=300, episode=ep)])


@BOTH_BUILDS
def test_images_on_one_node_of_k_equal_the_slot_pool_of_cap_k(compiled):
    """``[images]``: a first attempt on a ready node builds and starts in ``node_dispatch`` (not at a
    ``NODE_JOIN`` event), as on a slot pool; with one node the slot pool's pre-pass (the k-th build on node
    k mod 1, in queue order = FIFO start order) and the engine's placement name the same node for every
    build, so every attempt and every hit is the oracle's on the slot pool."""
    from sandbox_fleet.simulate.engine.fast import admit_loop

    fl, wls = _images_case(1, 4)
    slot_prep = prepare([fl], wls, 9)
    want = _digest(run_oracle(slot_prep))
    one = FleetNodePool(name="n", cpu=REQUEST[0] * 4, memory_mb=REQUEST[1] * 4 + 1.0, disk_mb=REQUEST[2] * 4 + 1.0,
                        min_nodes=1, max_nodes=1)  # one node of 4 requests
    node_fl = Fleet(**{**fl.model_dump(exclude={"cap", "slots_per_node", "node_replace_s"}), "node_pools": [one]})
    prep = prepare([node_fl], [dataclasses.replace(wls[0], request=REQUEST)], 9)
    out = admit_loop.run(prep, compiled=compiled)
    assert _digest(out) == want
    assert slot_prep.images is not None
    hits = slot_prep.images.hit
    assert 0 < hits.sum() < hits.size  # some builds hit, some missed


def test_images_on_two_nodes_cannot_equal_the_slot_pools_k_mod_nodes_by_hand():
    """Why N > 1 nodes cannot equal the slot pool under ``[images]`` by construction: the slot pool's pre-pass
    puts the k-th build on node k mod N before the run; the engine places on the most-allocated node
    (``pack``; the oldest on ties). Two nodes of one unit request, one closed rollout at a time, image a
    every time: the slot pool builds on nodes 0, 1, 0, 1 (miss, miss, hit, hit); the nodes on node 0 every
    time (the oldest of two empty nodes): miss, hit, hit, hit."""
    cat = ImageCatalog(names=("a",), shares=np.array([1.0]), size_mb=np.array([100.0]), basis="test")
    ep = Episode(agent=Deterministic(10.0), build=Build(hit=Deterministic(1.0),
                                                        images=ImageCache(catalog=cat, cache_mb=100.0, pull_mb_per_s=10.0)))
    wl = Closed(name="c", population=1, n=4, episode=ep)
    slot = run_workloads(Fleet(cap=2, slots_per_node=1), [wl], seed=0)
    one = FleetNodePool(name="n", cpu=REQUEST[0], memory_mb=REQUEST[1] + 1.0, disk_mb=REQUEST[2] + 1.0, min_nodes=2,
                        max_nodes=2)
    node = run_workloads(Fleet(node_pools=[one]), [dataclasses.replace(wl, request=REQUEST)], seed=0)
    for res, nodes_want, builds in ((slot, [0, 1, 0, 1], [11.0, 11.0, 1.0, 1.0]), (node, [0, 0, 0, 0], [11.0, 1.0, 1.0, 1.0])):
        im = res.images
        assert im is not None
        assert im.node.tolist() == nodes_want
        assert res.build_s[np.argsort(res.rollout)].tolist() == builds


def _ceiling_mixed():
    """Timeout-ceiling on one node of 8 cpu: sync RL, batches of 2 of 4 cpu (agent 20 s, timeout 30 s, train
    10 s); a closed workload of 4 rollouts of 1 cpu (agent 50 s, timeout 60 s)."""
    pools = [FleetNodePool(name="one", min_nodes=1, max_nodes=1, cpu=8.0, memory_mb=100.0, disk_mb=100.0)]
    rl = SyncRL(batch=2, steps=2, train_s=10.0, episode=Episode(agent=Deterministic(20.0), agent_timeout_s=30.0),
                request=(4.0, 1.0, 1.0), name="rl")
    cl = Closed(population=4, n=4, episode=Episode(agent=Deterministic(50.0), agent_timeout_s=60.0),
                request=(1.0, 1.0, 1.0), name="c")
    return run_workloads(Fleet(admission="timeout-ceiling", node_pools=pools), [rl, cl], seed=0)


def test_a_timeout_ceiling_counts_what_the_nodes_hold_of_the_rl_request_by_hand():
    """Batch 0 takes the node's 8 cpu at 0 (RL first); the closed wait. At 20 it ends and the trainer runs
    until 30, the next release. A closed rollout admitted at 20 runs to 70, past 30. Counted in 1-cpu
    sandboxes (the smallest request, as before) the node holds 8: 4 closed + the batch's 2 <= 8, all admitted
    at 20, and at 30 the batch finds 4 cpu: one RL rollout [30, 50], the other [50, 70] (the batch the ceiling
    is there to protect waited 20 s). Counted in the RL's own request (4 cpu: the node holds 2, a closed one
    takes room for ceil(1 / 4) = 1): 2 - 2 = 0 left, so none is admitted; the batch starts whole at 30
    [30, 50] and the closed at 50, when no release is left [50, 100]."""
    res = _schedule(_ceiling_mixed())
    assert res == [("c", 50.0, 100.0)] * 4 + [("rl", 0.0, 20.0), ("rl", 0.0, 20.0), ("rl", 30.0, 50.0),
                                              ("rl", 30.0, 50.0)]


def test_ceiling_units_are_a_sound_count_of_the_rl_requests_left_by_brute_force():
    """``node_fleet.ceiling_units``: for nodes of 3 types, 2 request kinds, every way of placing up to 4
    sandboxes of ``u`` on the nodes (each where it fits), the RL's whole requests still fitting are at least
    the pool's count minus the units the placed ones take (brute force over placements, not the rule)."""
    import itertools

    from sandbox_fleet.simulate.engine import node_fleet

    types = [(8.0, 32.0, 100.0), (6.0, 64.0, 100.0), (16.0, 16.0, 100.0)]
    pools = [Fleet(admission="timeout-ceiling",
                   node_pools=[FleetNodePool(name=f"t{i}", max_nodes=1, cpu=c, memory_mb=m, disk_mb=d)
                               for i, (c, m, d) in enumerate(types)])]
    kinds = [(3.0, 5.0, 1.0), (1.0, 12.0, 1.0), (2.5, 2.0, 30.0)]
    for qv, qu in itertools.permutations(kinds, 2):
        wls = [Closed(name="v", population=1, n=1, holds=Deterministic(1.0), request=qv),
               Closed(name="u", population=1, n=1, holds=Deterministic(1.0), request=qu)]
        cap_v, units = node_fleet.ceiling_units(pools, wls, np.zeros(1))

        def fit(free, qv=qv):
            return min(int(f * (1 + 1e-12) // q) for f, q in zip(free, qv))

        assert cap_v[0] == sum(fit(t) for t in types)
        for n in range(5):
            for where in itertools.product(range(len(types)), repeat=n):
                free = [list(t) for t in types]
                ok = True
                for x in where:
                    free[x] = [f - q for f, q in zip(free[x], qu)]
                    ok = ok and min(free[x]) >= -1e-9
                if ok:
                    assert sum(fit(f) for f in free) >= cap_v[0] - units[1, 0] * n

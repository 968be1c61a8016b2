"""Pools made of nodes inside the engine (``Fleet.node_pools``; ``node_fleet``, the admission kernel's
``node_dispatch``) against independent truths: the node replay's brute force (``tests/simulate/
test_node_replay.oracle``) over the engine's own intervals, a closed form for fixed nodes, a hand-worked
sync-RL step, and the kernel's compiled and plain-Python runs."""

from __future__ import annotations

import numpy as np
import pytest
from tests.simulate.test_node_replay import KINDS, oracle

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate import Episode, Turns
from sandbox_fleet.simulate.engine.distributions import Deterministic, Exponential, LogNormal
from sandbox_fleet.simulate.engine.entities import Fleet, FleetNodePool
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import Closed, Poisson, SyncRL

NODE = {"cpu": 32.0, "memory_mb": 131072.0, "disk_mb": 409600.0}


def _three_kinds(rate_per_s=0.6, n=1500, hold_s=600.0):
    """Three open workloads sharing one pool, one request kind each (test_node_replay's KINDS)."""
    share = (0.5, 0.3, 0.2)
    return [Poisson(name=f"k{j}", rate_per_s=rate_per_s * share[j], n=int(n * share[j]), holds=Exponential(hold_s),
                    request=tuple(KINDS[j])) for j in range(3)]


def _rl_three_kinds(steps=8, batch=240):
    return [SyncRL(name=f"rl{j}", batch=batch // 3, steps=steps, train_s=120.0, holds=LogNormal(240.0, 1.1),
                   request=tuple(KINDS[j])) for j in range(3)]


def _pools(reserved=2, placement="pack", max_burst=40, scale_down_s=300.0):
    return [FleetNodePool(name="r", tier="reserved", usd_per_node_h=2.0, min_nodes=reserved, max_nodes=reserved,
                     placement=placement, **NODE),
            FleetNodePool(name="b", tier="spot", usd_per_node_h=3.0, max_nodes=max_burst, scale_down_s=scale_down_s,
                     placement=placement, **NODE)]


def _intervals(res):
    """Every attempt's (start, end, request) from the engine's own result."""
    ok = ~np.isnan(res.start_s)
    req = np.array([res.workloads[w].request for w in res.workload[ok]])
    return res.start_s[ok], res.finish_s[ok], req


def _spec(p: FleetNodePool) -> NodePoolSpec:
    return NodePoolSpec(p.name, p.cpu, p.memory_mb, p.disk_mb, usd_per_node_h=p.usd_per_node_h, tier=p.tier,
                        min_nodes=p.min_nodes, max_nodes=p.max_nodes, provision_s=p.provision_s,
                        scale_down_s=p.scale_down_s, placement=p.placement)


@pytest.mark.parametrize("placement", ["pack", "spread"])
@pytest.mark.parametrize("corpus", ["open", "rl", "closed", "rl-served"])
def test_with_no_provisioning_the_engine_bills_what_the_replay_and_the_brute_force_bill(placement, corpus):
    """provision_s = 0 and no reclaims: nothing feeds back, so the engine's node-hours and peaks are
    the node replay's over the engine's own intervals, and the brute force's."""
    pools = _pools(placement=placement)
    if corpus == "open":
        wls = _three_kinds()
    elif corpus == "rl":
        wls = _rl_three_kinds()
    elif corpus == "closed":
        wls = [Closed(name=f"c{j}", population=30, n=400, holds=LogNormal(300.0, 0.8), request=tuple(KINDS[j]))
               for j in range(3)]
    if corpus == "rl-served":  # the holds unfold turn by turn on an inference pool: placement is the same rule
        ep = Episode(turns=Turns(LogNormal(6, 0.5), None, Exponential(20.0), LogNormal(2000, 0.7), Exponential(300)))
        wls = [SyncRL(name=f"rl{j}", batch=60, steps=4, train_s=120.0, episode=ep, request=tuple(KINDS[j]))
               for j in range(3)]
        inf = Inference(replicas=4, prefill_tok_s=8000, decode_tok_s=600, routing="least-loaded")
        res = run_workloads(Fleet(name="f", node_pools=pools), wls, seed=3, inference=inf)
    else:
        res = run_workloads(Fleet(name="f", node_pools=pools), wls, seed=3)
    assert res.engine == "admission-kernel"
    s, e, q = _intervals(res)
    specs = [_spec(p) for p in pools]
    rep = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], specs)
    want = oracle(list(s), list(e), [tuple(r) for r in q], specs)
    assert want["waited"] == 0 and want["unplaced"] == 0
    for k, row in enumerate(res.nodes):
        assert row["node_hours"] == pytest.approx(rep.pools[k].node_hours, rel=1e-12)
        assert row["node_hours"] == pytest.approx(want["hours"][k], rel=1e-9)
        assert row["peak_nodes"] == rep.pools[k].peak_nodes == want["peak"][k]
        assert row["launched"] == rep.pools[k].launched
        assert row["usd"] == pytest.approx(row["node_hours"] * pools[k].usd_per_node_h, rel=1e-12)
    assert res.nodes[1]["peak_nodes"] > 1  # the burst pool was used, more than one node at once
    assert sum(row["waited"] for row in res.nodes) == 0


def test_min_equal_max_and_no_scale_down_costs_nodes_times_price_times_span():
    pools = [FleetNodePool(name="fixed", usd_per_node_h=1.7, min_nodes=6, max_nodes=6, **NODE)]
    res = run_workloads(Fleet(node_pools=pools), _three_kinds(rate_per_s=2.0, n=2000), seed=1)
    span_s = float(np.nanmax(res.finish_s) - np.nanmin(res.start_s))
    row = res.nodes[0]
    assert row["node_hours"] == pytest.approx(6 * span_s / 3600.0, rel=1e-12)
    assert row["usd"] == pytest.approx(6 * 1.7 * span_s / 3600.0, rel=1e-12)
    assert row["peak_nodes"] == 6 and row["launched"] == 0
    # at its max the pool queued: some attempts waited for room (not for a node)
    assert np.nanmax(res.start_s - res.arrival_s) > 0


def test_a_sync_rl_batch_waits_for_the_burst_nodes_to_join_by_hand():
    """B = 10 rollouts of 2 cpu; one reserved node of 8 cpu holds k = 4; the other 6 wait 60 s for two
    burst nodes (4 + 2) launched at the release. Holds 100 s, training 30 s, scale-down 0:
    each step lasts 60 + 100 = 160 s (not 100), the next release at 160 + 30 = 190, the run ends at 350.
    Billing: the reserved node 0 -> 350 s; each step's two burst nodes launch -> their last end, 160 s each."""
    node = {"cpu": 8.0, "memory_mb": 32768.0, "disk_mb": 100000.0}
    pools = [FleetNodePool(name="r", tier="reserved", usd_per_node_h=1.0, min_nodes=1, max_nodes=1, **node),
             FleetNodePool(name="b", tier="spot", usd_per_node_h=2.0, max_nodes=5, provision_s=60.0, **node)]
    wl = SyncRL(batch=10, steps=2, train_s=30.0, holds=Deterministic(100.0), request=(2.0, 4096.0, 1000.0))
    res = run_workloads(Fleet(node_pools=pools), [wl], seed=0)
    steps = res.steps[0]
    assert np.allclose(steps["release_s"], [0.0, 190.0])
    assert np.allclose(np.asarray(steps["batch_end_s"]) - np.asarray(steps["release_s"]), [160.0, 160.0])
    waits = np.sort(res.start_s - res.arrival_s)
    assert np.allclose(waits, [0.0] * 8 + [60.0] * 12)
    r, b = res.nodes
    assert r["node_hours"] == pytest.approx(350.0 / 3600.0) and r["usd"] == pytest.approx(350.0 / 3600.0)
    assert b["node_hours"] == pytest.approx(4 * 160.0 / 3600.0) and b["usd"] == pytest.approx(2 * 4 * 160.0 / 3600.0)
    assert (r["peak_nodes"], b["peak_nodes"], b["launched"]) == (1, 2, 4)
    assert (b["waited"], b["wait_s_total"], b["wait_s_max"]) == (12, 720.0, 60.0)


def test_at_max_nodes_the_front_of_the_queue_waits_for_room_by_hand():
    """One node of 4 cpu at most; three rollouts of 2 cpu arriving together at t = 0 with holds 100 s:
    two start at once, the third when the first room frees at 100; it ends at 200."""
    pools = [FleetNodePool(name="only", max_nodes=1, provision_s=10.0, cpu=4.0, memory_mb=1e5, disk_mb=1e5)]
    wl = Closed(population=3, n=3, holds=Deterministic(100.0), request=(2.0, 1.0, 1.0))
    res = run_workloads(Fleet(node_pools=pools), [wl], seed=0)
    assert np.allclose(np.sort(res.start_s), [10.0, 10.0, 110.0])  # the launched node joined at 10
    assert res.nodes[0]["node_hours"] == pytest.approx(210.0 / 3600.0)


def test_the_kernel_compiled_and_as_plain_python_give_the_same_bits():
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    pools = _pools()
    pools[1] = pools[1].model_copy(update={"provision_s": 45.0})
    outs = []
    for compiled in (False, True):
        prep = prepare(Fleet(name="f", node_pools=pools), _rl_three_kinds(steps=4, batch=150), 2)
        outs.append(admit_loop.run(prep, compiled=compiled))
    a, b = outs
    for key in a.first:
        assert np.array_equal(a.first[key], b.first[key], equal_nan=True), key
    assert a.nodes == b.nodes
    assert sum(row["waited"] for row in a.nodes) > 0


def test_a_missing_or_too_big_request_is_one_line_naming_the_workload():
    fl = Fleet(node_pools=[FleetNodePool(max_nodes=2, cpu=4.0, memory_mb=100.0, disk_mb=100.0)])
    with pytest.raises(InputError, match="workload w: its pool is made of nodes: give request"):
        run_workloads(fl, [Poisson(name="w", rate_per_s=1.0, n=3, holds=Deterministic(1.0))], seed=0)
    with pytest.raises(InputError, match="workload w: request .* fits no node type"):
        run_workloads(fl, [Poisson(name="w", rate_per_s=1.0, n=3, holds=Deterministic(1.0), request=(8.0, 1.0, 1.0))],
                      seed=0)
    with pytest.raises(InputError, match="provision_delay_s"):  # the node pools' provision_s is the delay
        Fleet(provision_delay_s=3.0, node_pools=[FleetNodePool(max_nodes=2, cpu=4.0, memory_mb=100.0, disk_mb=100.0)])


def test_reclaimed_nodes_rerun_work_matches_the_closed_form_per_hold():
    """One sandbox a node (its request is the node), nodes reclaimed as a Poisson process of rate lam
    each, replaced at once, every preempted attempt retried from scratch: a hold h costs
    T = (e^{lam h} - 1) / lam of sandbox time in expectation (restart from scratch), with variance
    (e^{2 lam h} - 1 - 2 lam h e^{lam h}) / lam^2; the engine's mean over n rollouts sits within four
    standard errors."""
    from sandbox_fleet.simulate.engine.entities import RetryPolicy

    lam_per_h, hold_s, n = 1.0, 1800.0, 3000
    lam = lam_per_h / 3600.0
    node = {"cpu": 4.0, "memory_mb": 1000.0, "disk_mb": 1000.0}
    pools = [FleetNodePool(name="spot", tier="spot", min_nodes=40, max_nodes=40, reclaim_per_node_h=lam_per_h, **node)]
    wl = Poisson(rate_per_s=40 * 0.5 / (hold_s * 1.6), n=n, holds=Deterministic(hold_s), request=(4.0, 1000.0, 1000.0),
                 retry=RetryPolicy(max_retries=60, on=("preemption",)))
    res = run_workloads(Fleet(node_pools=pools), [wl], seed=7)
    ran = np.nan_to_num(res.finish_s - res.start_s)
    per_rollout = np.bincount(res.rollout, weights=ran, minlength=n)
    assert np.all(np.isin(res.state[res.attempt == res.attempt.max()], [0]))  # every rollout completed
    x = lam * hold_s
    mean = (np.exp(x) - 1) / lam
    sd = np.sqrt((np.exp(2 * x) - 1 - 2 * x * np.exp(x)) / lam**2)
    assert abs(per_rollout.mean() - mean) < 4 * sd / np.sqrt(n)
    row = res.nodes[0]
    assert row["reclaims"] > 100 and row["sandboxes_lost"] == int(np.count_nonzero(res.phase == 4))
    assert row["launched"] == row["reclaims"]  # each reclaimed base node was replaced


def test_reclaims_compiled_and_as_plain_python_give_the_same_bits():
    from sandbox_fleet.simulate.engine.entities import RetryPolicy
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    pools = [p.model_copy(update={"reclaim_per_node_h": 2.0, "provision_s": 30.0}) for p in _pools()]
    outs = []
    for compiled in (False, True):
        wls = [SyncRL(name=f"rl{j}", batch=60, steps=3, train_s=60.0, holds=LogNormal(600.0, 0.8),
                      request=tuple(KINDS[j]), retry=RetryPolicy(max_retries=5, on=("preemption",))) for j in range(3)]
        outs.append(admit_loop.run(prepare(Fleet(name="f", node_pools=pools), wls, 4), compiled=compiled))
    a, b = outs
    for key in a.first:
        assert np.array_equal(a.first[key], b.first[key], equal_nan=True), key
    assert a.extra == b.extra and a.nodes == b.nodes
    assert sum(row["reclaims"] for row in a.nodes) > 0 and len(a.extra["rollout"]) > 0


def test_a_slot_pool_beside_a_pool_made_of_nodes_runs_as_it_runs_alone():
    """Pools are independent: the slot pool's attempts are the same bits with or without a node pool
    beside it (its workload keeps its index, so its draws)."""
    slot_wl = Poisson(name="s", rate_per_s=0.05, n=300, holds=Exponential(300.0))
    alone = run_workloads([Fleet(name="slots", cap=10)], [slot_wl], seed=5)
    node_wl = SyncRL(name="n", pool=1, batch=40, steps=3, train_s=60.0, holds=LogNormal(300.0, 0.7),
                     request=(2.0, 4096.0, 1000.0))
    both = run_workloads([Fleet(name="slots", cap=10), Fleet(name="nodes", node_pools=_pools(reserved=1))],
                         [slot_wl, node_wl], seed=5)
    mine = both.workload == 0
    for key in ("arrival_s", "start_s", "finish_s"):
        assert np.array_equal(getattr(alone, key), getattr(both, key)[mine], equal_nan=True), key
    assert both.nodes is not None and [row["pool"] for row in both.nodes] == ["nodes", "nodes"]


def test_only_the_admission_kernel_places_a_pool_made_of_nodes():
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.fifo import one_pass_refusal
    from sandbox_fleet.simulate.engine.prepare import prepare

    prep = prepare(Fleet(node_pools=[FleetNodePool(max_nodes=2, cpu=4.0, memory_mb=1.0, disk_mb=1.0)]),
                   [Poisson(rate_per_s=1.0, n=3, holds=Deterministic(1.0), request=(1.0, 1.0, 1.0))], 0)
    assert admit_loop.refusal(prep) is None
    assert one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry) == "the fleet has node pools"

"""A slot pool's node keys (``slots_per_node``, ``preempt_rate_per_node_s``, ``node_replace_s``) as a
one-pool node fleet (``node_fleet.as_node_fleet``, issue 37 item 1) against independent truths: the node
counts by hand, the restart-from-scratch closed form per hold (the expectation of a hold's sandbox time
under Poisson reclaims of rate lam per node), and the spread of the steps when losses are correlated
(a node's reclaim ends all its sandboxes at once) against the same rate with one sandbox a node."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.distributions import Deterministic, LogNormal
from sandbox_fleet.simulate.engine.entities import Fleet, RetryPolicy
from sandbox_fleet.simulate.engine.node_fleet import SLOT_REQUEST, as_node_fleet, room
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import SyncRL

BATCH, STEPS = 64, 4
HOLDS = LogNormal(median_s=600.0, sigma=0.8)
RATE = 1 / 7200.0  # one reclaim per node every two hours


def _wl(holds=HOLDS, batch=BATCH):
    return SyncRL(batch=batch, steps=STEPS, train_s=120.0, holds=holds,
                  retry=RetryPolicy(max_retries=1000, on=("preemption",)))


def test_the_keys_expand_to_base_nodes_of_unit_requests_and_a_partial_last_node():
    # async_rl_full.toml's keys without its provision_delay_s: 1024 slots of 96 a node = 10 full nodes + one of 64
    pl = Fleet(cap=1024, slots_per_node=96, preempt_rate_per_node_s=2e-6, node_replace_s=300.0, start_cap=256)
    pools, wls = as_node_fleet([pl], [_wl()])
    nps = pools[0].node_pools
    assert [(n.name, n.cpu, n.min_nodes, n.max_nodes) for n in nps] == [("nodes", 96.0, 10, 10), ("partial", 64.0, 1, 1)]
    assert all(n.reclaim_per_node_h == pytest.approx(0.0072) and n.provision_s == 300.0 for n in nps)
    assert pools[0].cap is None and pools[0].preempt_rate_per_node_s == 0 and pools[0].start_cap == 256
    assert wls[0].request == SLOT_REQUEST
    assert room(pools, wls) == [1024]  # the nodes hold exactly the slots
    # a multiple of slots_per_node: one node type; a pool without preemption is left as it is
    pools, _ = as_node_fleet([Fleet(cap=64, slots_per_node=8, preempt_rate_per_node_s=1e-4)], [_wl()])
    assert [(n.cpu, n.max_nodes) for n in pools[0].node_pools] == [(8.0, 8)]
    plain = Fleet(cap=64)
    assert as_node_fleet([plain], [_wl()])[0][0] is plain


def test_a_refill_delay_is_refused_naming_the_key():
    with pytest.raises(InputError, match="provision_delay_s = 2 .*no node-pool counterpart"):
        as_node_fleet([Fleet(cap=64, provision_delay_s=2.0, preempt_rate_per_node_s=1e-4)], [_wl()])


def _sandbox_and_steps(fleet: Fleet, seed: int, expand: bool, holds=HOLDS, batch=BATCH):
    """(the run's sandbox seconds minus the closed form's expectation over its own holds, each step's
    duration, the reclaims)."""
    pools, wls = as_node_fleet([fleet], [_wl(holds, batch)]) if expand else ([fleet], [_wl(holds, batch)])
    res = run_workloads(pools, wls, seed)
    ran = np.nan_to_num(res.finish_s - res.start_s)
    done = res.state == 0
    hold = np.zeros(int(res.rollout.max()) + 1)
    hold[res.rollout[done]] = ran[done]  # a retry keeps the agent duration: the completed attempt is the hold
    assert np.count_nonzero(done) == batch * STEPS
    lam = fleet.preempt_rate_per_node_s
    expected = float(np.sum((np.exp(lam * hold) - 1) / lam))  # restart from scratch, memoryless per attempt
    st = res.steps[0]
    steps = np.asarray(st["batch_end_s"]) - np.asarray(st["release_s"])
    lost = res.nodes[0]["reclaims"] if expand else res.preemptions
    return float(ran.sum()) - expected, steps, lost


@pytest.mark.parametrize("expand", [False, True], ids=["slot-rule", "node-fleet"])
def test_rerun_sandbox_hours_match_the_closed_form_per_hold(expand):
    """Either rule: over 24 seeds the sandbox time minus sum_r (e^{lam h_r} - 1) / lam sits within four
    standard errors of zero (the spread taken from the seeds: losses on one node are correlated)."""
    fleet = Fleet(cap=BATCH, slots_per_node=8, preempt_rate_per_node_s=RATE)
    diff, lost = [], 0
    for seed in range(24):
        d, _, n = _sandbox_and_steps(fleet, seed, expand)
        diff.append(d)
        lost += n
    diff = np.asarray(diff)
    assert lost > 20
    assert abs(diff.mean()) < 4 * diff.std(ddof=1) / np.sqrt(diff.size)


def test_correlated_losses_widen_the_step_time_spread():
    """Same per-node rate, so the same chance that a given attempt is lost; 32 sandboxes a node instead of
    one: losses come in bursts. Equal holds (1800 s), so a step is the latest of its nodes' completions,
    each h plus the partial runs before its last restart: the max of 8 such (32 a node) or of 256 (one a
    node). At lam h = 0.045 most 8-node steps lose nothing (e^{-8 x 0.045} = 70%) and the rest a node's
    worth, while nearly every 256-node step loses something: the steps spread wider with correlated
    losses (a Monte Carlo of that max gives sd 549 s against 434 s, ratio 1.27; with fewer, more often hit
    nodes the two come level, e.g. 4 nodes at lam h = 0.09: 0.93), and the run's re-run sandbox-hours
    spread several times wider (sum of correlated losses), around the same mean."""
    rate = 2.5e-5
    spread, work = {}, {}
    for spn in (1, 32):
        fleet = Fleet(cap=4 * BATCH, slots_per_node=spn, preempt_rate_per_node_s=rate)
        runs = [_sandbox_and_steps(fleet, seed, True, Deterministic(1800.0), batch=4 * BATCH) for seed in range(30)]
        spread[spn] = float(np.std(np.concatenate([r[1] for r in runs])))
        work[spn] = np.asarray([r[0] for r in runs])
    assert spread[32] > 1.1 * spread[1], spread
    assert work[32].std() > 2 * work[1].std()
    se = np.sqrt(work[32].var(ddof=1) / work[32].size + work[1].var(ddof=1) / work[1].size)
    assert abs(work[32].mean() - work[1].mean()) < 4 * se  # the same expectation (the closed form's)

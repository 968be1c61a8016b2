"""Retries re-run the task: preemption never shortens a synchronous step, and costs sandbox-hours."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.simulate.engine.distributions import LogNormal
from sandbox_fleet.simulate.engine.entities import Fleet, RetryPolicy
from sandbox_fleet.simulate.engine.node_fleet import as_node_fleet
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import SyncRL

BATCH, STEPS = 64, 4
HOLDS = LogNormal(median_s=1332.0, sigma=0.8)
RATE = 1 / 3600.0  # one reclaim per node-hour: most long attempts are hit at least once


def _run(seed: int, rate: float, redraw: bool = False, nodes: bool = False):
    """``nodes``: the slot keys written as a one-pool node fleet (``node_fleet.as_node_fleet``)."""
    wl = SyncRL(batch=BATCH, steps=STEPS, train_s=300.0, holds=HOLDS,
                retry=RetryPolicy(max_retries=1000, on=("preemption",), redraw=redraw))
    pools, wls = [Fleet(cap=BATCH, slots_per_node=8, preempt_rate_per_node_s=rate)], [wl]
    if nodes:
        pools, wls = as_node_fleet(pools, wls)
    res = run_workloads(pools, wls, seed)
    st = res.steps[0]
    step = float(np.mean(np.asarray(st["batch_end_s"]) - np.asarray(st["release_s"])))
    started = res.started
    return step, float(np.sum(res.finish_s[started] - res.start_s[started])) / 3600, res


def test_a_retry_keeps_the_agent_and_verifier_durations():
    _, _, res = _run(1, RATE)
    done = res.terminal & (res.attempt > 0)
    assert done.any()
    # a completed retry ran the first attempt's full agent phase (the first attempt's row may be cut)
    base = run_workloads(Fleet(cap=BATCH), [SyncRL(batch=BATCH, steps=STEPS, train_s=300.0, holds=HOLDS)], 1)
    full = dict(zip(base.rollout.tolist(), base.agent_s.tolist()))
    for r, a in zip(res.rollout[done], res.agent_s[done]):
        assert a == full[int(r)]


@pytest.mark.parametrize("nodes", [False, True], ids=["slot-rule", "node-fleet"])
def test_preemption_never_shortens_the_mean_step_over_many_seeds(nodes):
    slower = 0
    for seed in range(30):
        base, base_h, _ = _run(seed, 0.0)
        pre, pre_h, res = _run(seed, RATE, nodes=nodes)
        assert (res.nodes[0]["reclaims"] if nodes else res.preemptions) > 0
        # every rollout re-runs its own hold after a reclaim, with a slot always free (cap = batch):
        # no rollout ends earlier than without preemption, so neither does any step
        assert pre >= base - 1e-6, seed
        assert pre_h > base_h, seed
        slower += pre > base
    assert slower >= 25


def test_redraw_restores_the_old_length_biased_model():
    # the old model re-draws every phase: preempted attempts are long ones, so their redrawn
    # retries are shorter on average and the mean step can fall below the unpreempted one
    diffs = [(_run(s, RATE, redraw=True)[0] - _run(s, 0.0)[0]) for s in range(30)]
    assert min(diffs) < 0

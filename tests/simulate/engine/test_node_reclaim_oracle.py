"""The admission kernel's node reclaims (``node_dispatch``, ``node_reclaim``, ``node_join`` on the
one-pool node fleets ``node_fleet.as_node_fleet`` writes from a slot pool's node keys) against the pure
loop's own copy of those rules (``oracle/node_reclaims.py``): the same attempts, phases, trainer steps
and time integrals, byte for byte, compiled and as plain Python."""

from __future__ import annotations

import pytest
from tests.simulate.engine.builds import BOTH_BUILDS
from tests.simulate.engine.oracle_policies import run_oracle
from tests.simulate.engine.test_admit_kernel import CASES as KERNEL_CASES
from tests.simulate.engine.test_admit_kernel import RETRY, _digest, _flaky_episode

from sandbox_fleet.simulate import Closed, Fleet, LogNormal, Poisson, SyncRL
from sandbox_fleet.simulate.engine.entities import RetryPolicy
from sandbox_fleet.simulate.engine.node_fleet import as_node_fleet
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.workloads import AsyncRL

ON_PREEMPTION = RetryPolicy(max_retries=3, on=("build", "verifier", "preemption"))

CASES = {
    # the slot keys of test_admit_kernel's node preemption cases, as node fleets (no provision_delay_s)
    "open_and_closed_retries": lambda: (
        Fleet(cap=12, slots_per_node=4, preempt_rate_per_node_s=0.02, node_replace_s=5.0),
        [Poisson(rate_per_s=3.0, n=600, episode=_flaky_episode(2.0), retry=RETRY, name="open"),
         Closed(population=5, n=300, episode=_flaky_episode(3.0), retry=ON_PREEMPTION, name="closed")]),
    "partial_node_start_cap_queue_timeout": lambda: (  # 10 slots of 4 a node: two nodes of 4 and one of 2
        Fleet(cap=10, slots_per_node=4, preempt_rate_per_node_s=0.03, node_replace_s=4.0, start_cap=3,
              queue_timeout_s=6.0),
        [Poisson(rate_per_s=2.5, n=500, episode=_flaky_episode(2.0), retry=ON_PREEMPTION, name="hi"),
         Closed(population=6, n=400, holds=LogNormal(2.5, 0.8), name="lo")]),
    "sync_rl_waits_for_replacements": lambda: (
        Fleet(cap=16, slots_per_node=8, preempt_rate_per_node_s=0.01, node_replace_s=8.0),
        [SyncRL(batch=16, steps=12, train_s=2.0, episode=_flaky_episode(3.0), retry=ON_PREEMPTION, name="rl")]),
    "async_rl_staleness": lambda: (
        Fleet(cap=9, slots_per_node=3, preempt_rate_per_node_s=0.02, node_replace_s=3.0),
        [AsyncRL(batch=6, steps=20, train_s=1.5, staleness=2, episode=_flaky_episode(2.0), retry=ON_PREEMPTION,
                 name="arl")]),
    # shortest-timeout-first (the front put back where it was when no node has room), with dynamic sampling
    "dynamic_sampling_shortest_timeout_first": KERNEL_CASES["dynamic_sampling_async_rounds_preemption_shortest_timeout_first"],
    # the admission policies: priority evicting (a victim's request leaves its node), timeout-ceiling RL
    "priority_evicting_start_cap_timeout": KERNEL_CASES["node_preemption_priority_evicting_start_cap_timeout"],
    "ceiling_rl": KERNEL_CASES["node_preemption_ceiling_rl"],
    "shortest_timeout_first_start_cap_queue_timeout": lambda: (
        KERNEL_CASES["shortest_timeout_first_queue_timeout_retries"]()[0].model_copy(
            update={"slots_per_node": 2, "preempt_rate_per_node_s": 0.03, "node_replace_s": 3.0}),
        KERNEL_CASES["shortest_timeout_first_queue_timeout_retries"]()[1]),
}


def _both(name: str, compiled: bool):
    from sandbox_fleet.simulate.engine.fast import admit_loop

    pool, wls = CASES[name]()
    pools, wls = as_node_fleet([pool], wls)
    pure = run_oracle(prepare(pools, wls, 7))
    kernel = admit_loop.run(prepare(pools, wls, 7), compiled=compiled)
    return _digest(pure), _digest(kernel), kernel


@BOTH_BUILDS
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_kernel_reclaims_nodes_as_the_pure_loop(name, compiled):
    pure, kernel, out = _both(name, compiled)
    assert kernel == pure
    row = out.nodes
    assert sum(r["reclaims"] for r in row) >= 3 and sum(r["sandboxes_lost"] for r in row) > 0  # reclaims ended attempts
    if name.startswith("sync_rl"):
        assert sum(r["waited"] for r in row) > 0  # attempts waited for a replacement to join

"""The time an order's provisioning waits cost (plan/order_wait.py), against hand-computed histories.

The hand history: one reserved node of 2 cpu (always up) and a burst pool whose node joins 60 s after
launch, released as soon as it empties. Two synchronous steps:

- step 1, released at 0: A (0-100 s, 1 cpu) and B (0-50 s, 1 cpu) fill the reserved node; C (0-80 s,
  1 cpu) launches a burst node, waits 60 s for it and runs 60-140 s. The step measured 100 s (A's
  end); replayed it ends at 140 s: 40 s longer, less than C's 60 s wait.
- step 2, released at 1000: D (1000-1200 s, 2 cpu) fills the reserved node; E (1000-1030 s, 1 cpu)
  launches a burst node (step 1's was released at 140 s), waits 60 s and runs 1060-1090 s. The step
  still ends at D's 1200 s: the wait is hidden, 0 s longer.

Mean step: (40 + 0) / (100 + 200) = 13.33% longer; without steps, the mean rollout: the waits 120 s
over the holds 100 + 50 + 80 + 200 + 30 = 460 s = 26.09%.
"""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.plan.order_wait import wait_cost
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes

START = np.array([0.0, 0.0, 0.0, 1000.0, 1000.0])
END = np.array([100.0, 50.0, 80.0, 1200.0, 1030.0])
CPU = np.array([1.0, 1.0, 1.0, 2.0, 1.0])
RELEASE = np.array([0.0, 0.0, 0.0, 1000.0, 1000.0])
POOLS = [NodePoolSpec("reserved", 2.0, 1e6, 1e6, 1.0, tier="reserved", min_nodes=1, max_nodes=1),
         NodePoolSpec("burst", 2.0, 1e6, 1e6, 1.0, provision_s=60.0)]


def _replayed_ends():
    got = replay_nodes(START, END, CPU, np.ones(5), np.zeros(5), POOLS)
    assert got.waited == 2 and got.wait_s_total == pytest.approx(120.0)  # C and E, 60 s each
    return got.end_s


def test_the_mean_step_lengthens_by_each_steps_last_end_not_by_its_waits():
    w = wait_cost(START, END, _replayed_ends(), RELEASE)
    assert w.method == "steps" and w.steps == 2
    assert w.slowdown == pytest.approx(40.0 / 300.0)
    assert w.lengthening_s_mean == pytest.approx(20.0) and w.lengthening_s_max == pytest.approx(40.0)


def test_without_steps_the_mean_rollout_lengthens_by_the_share_of_time_waiting():
    w = wait_cost(START, END, _replayed_ends(), None)
    assert w.method == "rollouts" and w.steps is None
    assert w.slowdown == pytest.approx(120.0 / 460.0)
    assert w.lengthening_s_mean == pytest.approx(24.0) and w.lengthening_s_max == pytest.approx(60.0)


def test_all_nodes_up_costs_no_time():
    up = [NodePoolSpec("fleet", 2.0, 1e6, 1e6, 1.0, min_nodes=3, max_nodes=3)]
    got = replay_nodes(START, END, CPU, np.ones(5), np.zeros(5), up)
    assert wait_cost(START, END, got.end_s, RELEASE).slowdown == 0.0


def test_an_order_past_the_tolerance_is_not_chosen_and_is_named():
    """Hand-made lines: the cheaper mixed order lengthens the mean step 3% (tolerance 1%): spot is signed."""
    from sandbox_fleet.plan.model import OrderLine
    from sandbox_fleet.plan.order_replay import basis, choose_order

    spot = OrderLine(order="spot", tier="spot", node_type="t", nodes=2, all_in_per_h=1.7, slowdown=0.0,
                     over_tolerance=False, wait_basis="all up: no rollout waits for a node")
    burst = OrderLine(order="mixed_spot", tier="spot", node_type="t", nodes=3, reserved_nodes=0, burst_nodes=3,
                      all_in_per_h=0.9, slowdown=0.03, over_tolerance=True, wait_basis="mean step +3.0%")
    assert choose_order([spot, burst], None) is spot
    text = basis([spot, burst], spot, None, 10, None, 0.01)
    assert text.startswith("spot (all up: no rollout waits for a node), the cheapest all in with its provisioning "
                           "waits within --tolerance 1.0%")
    assert "not eligible, its waits slowing the step past --tolerance 1.0%: mixed spot (0 reserved + up to 3 " \
           "burst x t) $0.90/h (waits: mean step +3.0%)" in text


def test_the_r_ruled_out_is_the_cheapest_past_the_tolerance():
    from sandbox_fleet.plan.order_wait import ruled_out

    costs, slows = [1.0, 1.5, 2.0, 3.0], [0.05, 0.02, 0.0, 0.0]
    assert ruled_out(costs, slows, 2, 0.01) == 0
    assert ruled_out(costs, slows, 2, 0.10) is None  # nothing cheaper is past it
    assert ruled_out(costs, slows, 2, None) is None


def test_the_steps_read_once_give_the_hand_figure():
    from sandbox_fleet.plan.order_wait import index_steps

    w = wait_cost(START, END, _replayed_ends(), RELEASE, index_steps(END, RELEASE))
    assert (w.method, w.steps) == ("steps", 2)
    assert w.slowdown == pytest.approx(40.0 / 300.0, rel=1e-12)
    assert (w.lengthening_s_mean, w.lengthening_s_max) == pytest.approx((20.0, 40.0))


@pytest.mark.parametrize("seed", range(20))
def test_the_steps_read_once_are_the_same_figure_to_the_bit(seed):
    """The search reads the steps once for every R (index_steps); each figure equals the per-call one
    bit for bit, on unordered releases with ties, and unplaced rollouts fall back to it."""
    from sandbox_fleet.plan.order_wait import index_steps

    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    release = rng.choice(rng.uniform(0, 1e5, int(rng.integers(1, 30))), n)
    start = release + rng.choice([0.0, 1.0, 7.5], n)
    end = start + rng.lognormal(5.0, 1.0, n)
    got = end + np.where(rng.random(n) < 0.3, rng.uniform(0, 90, n), 0.0)
    index = index_steps(end, release)
    assert wait_cost(start, end, got, release, index) == wait_cost(start, end, got, release)
    if n > 1:
        got[int(rng.integers(n))] = np.nan  # not placed: the per-call figure, which leaves it out
        assert wait_cost(start, end, got, release, index) == wait_cost(start, end, got, release)

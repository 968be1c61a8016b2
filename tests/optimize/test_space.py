"""Pricing and the frontier, against hand-computed cases."""

from __future__ import annotations

import math

import pytest

from sandbox_fleet.optimize.evaluate import Result
from sandbox_fleet.optimize.search import Priced, frontier
from sandbox_fleet.optimize.space import Nodes, Option, cheapest_fleet, gpu_options
from sandbox_fleet.plan.catalog import NodeType


def _node(name, slots_cpu, reserved, on_demand, spot, rate=None):
    return Nodes(NodeType(name=name, vcpus=slots_cpu, memory_gb=1024, disk_gb=0, reserved_usd_h=reserved,
                          on_demand_usd_h=on_demand, spot_usd_h=spot, spot_interruptions_per_node_h=rate), slots_cpu)


def test_the_cheapest_fleet_is_nodes_times_the_cheapest_tier():
    small, big = _node("small", 10, 1.0, 2.0, None), _node("big", 96, 8.0, 12.0, None)
    # 95 sandboxes: 10 small nodes ($10) or 1 big node ($8), both reserved
    assert cheapest_fleet(95, 600.0, [small, big])[:4] == (8.0, "big", 1, "reserved")
    # 20 sandboxes: 2 small ($2) beat 1 big ($8)
    assert cheapest_fleet(20, 600.0, [small, big])[:4] == (2.0, "small", 2, "reserved")


def test_spot_carries_its_rerun_share():
    # spot $0.9 at 0.5 reclaims per node-hour, a 2 h hold: re-run share (e^{1} - 1)/0.5/2 - 1 = 0.71828
    n = _node("s", 10, 1.0, 2.0, 0.9, rate=0.5)
    share = math.expm1(1.0) / 0.5 / 2.0 - 1.0
    usd, name, k, tier, rework = cheapest_fleet(10, 7200.0, [n])
    assert tier == "reserved" and usd == pytest.approx(1.0)  # 0.9 x 1.718 = 1.55 > 1.0
    usd, _, _, tier, rework = cheapest_fleet(10, 60.0, [n])  # a 1-minute hold: spot is cheapest
    assert tier == "spot" and rework == pytest.approx(0.9 * (math.expm1(0.5 / 60) / 0.5 * 60 - 1), rel=1e-9)
    assert share > 0.7


def test_the_fewest_gpus_per_replica_that_hold_the_model():
    pruned: dict = {}
    opts = gpu_options({"model_params_b": 70}, ["h100-80gb", "l40s-48gb"], None, [True], [0.0], pruned)
    # 140 GB of weights: 2 x 80 GiB x 0.9 = 154.6 GB leaves 9% (> 5%); L40S: 4 x 48 GiB x 0.9 = 185.6 GB
    assert [(o.gpu, o.gpus_per_replica) for o in opts] == [("h100-80gb", 2), ("l40s-48gb", 4)]


def _p(usd, pph):
    o = Option("g", 1, True, 0.0, 1.0)
    return Priced(o, 1, 1, Result(pph, None, 0.0, 1.0, (pph,), ()), usd, (0.0, "n", 1, "spot", 0.0), True)


def test_the_frontier_keeps_only_points_no_cheaper_point_beats():
    pts = [_p(1.0, 10), _p(2.0, 8), _p(2.0, 15), _p(3.0, 15), _p(4.0, 30), _p(0.5, 5)]
    assert [(q.usd_per_h, q.result.passing_per_hour) for q in frontier(pts, False)] == [
        (0.5, 5), (1.0, 10), (2.0, 15), (4.0, 30)]

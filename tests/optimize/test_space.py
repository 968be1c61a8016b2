"""Pricing and the frontier, against hand-computed cases."""

from __future__ import annotations

import pytest

from sandbox_fleet.optimize.evaluate import Evaluation
from sandbox_fleet.optimize.search import Priced, frontier
from sandbox_fleet.optimize.space import Option, PricedNodes, cheapest_fleet, gpu_options, rework_hours
from sandbox_fleet.plan.catalog import NodeType
from summaries import as_measure


def _node(name, slots_cpu, reserved, on_demand, spot, rate=None):
    return PricedNodes(NodeType(name=name, vcpus=slots_cpu, memory_gb=1024, disk_gb=0, reserved_usd_h=reserved,
                          on_demand_usd_h=on_demand, spot_usd_h=spot, spot_interruptions_per_node_h=rate), slots_cpu)


def test_the_cheapest_fleet_is_nodes_times_the_cheapest_tier():
    small, big = _node("small", 10, 1.0, 2.0, None), _node("big", 96, 8.0, 12.0, None)
    # 95 sandboxes: 10 small nodes ($10) or 1 big node ($8), both reserved
    assert cheapest_fleet(95, None, [small, big])[:4] == (8.0, "big", 1, "reserved")
    # 20 sandboxes: 2 small ($2) beat 1 big ($8)
    assert cheapest_fleet(20, None, [small, big])[:4] == (2.0, "small", 2, "reserved")


def test_spot_rework_is_summed_over_the_holds_not_the_mean():
    """Holds of 1 h and 3 h at 0.5 reclaims per node-hour, by hand:
    1 h: (e^0.5 - 1)/0.5 - 1 = 0.2974425; 3 h: (e^1.5 - 1)/0.5 - 3 = 3.9633781; share 4.2608206 / 4 h = 1.0652052.
    On the mean hold (2 h) it would be ((e^1 - 1)/0.5 - 2) / 2 = 0.7182818: the tail costs more."""
    assert rework_hours([3600.0, 10800.0], 0.5) == pytest.approx(0.2974425 + 3.9633781, abs=1e-6)
    res = Evaluation(1.0, None, 0.0, 7200.0, (1.0,), (), rework=((0.5, 4.2608206 / 4),))
    n = _node("s", 10, 1.0, 2.0, 0.5, rate=0.5)
    # spot $0.50 x (1 + 1.0652) = $1.033 > reserved $1.00; on the mean hold it would be $0.859 (spot)
    usd, _, _, tier, rework = cheapest_fleet(10, res.rework_share, [n])
    assert (tier, usd) == ("reserved", pytest.approx(1.0)) and rework == 0.0
    on_mean = Evaluation(1.0, None, 0.0, 7200.0, (1.0,), (), rework=((0.5, 0.7182818),))
    usd, _, _, tier, rework = cheapest_fleet(10, on_mean.rework_share, [n])
    assert tier == "spot" and usd == pytest.approx(0.5 * 1.7182818) and rework == pytest.approx(0.5 * 0.7182818)
    # before simulating (the lower bound) spot is priced without re-runs
    assert cheapest_fleet(10, None, [n])[:4] == (0.5, "s", 1, "spot")


def test_replications_pool_their_rework_hours():
    """Two runs' holds: the share is all re-run hours over all hold hours (not a mean of shares)."""
    from sandbox_fleet.optimize.evaluate import CandidateRun, Evaluator, Goal
    from sandbox_fleet.simulate.model import SimulateSummary

    ev = object.__new__(Evaluator)
    ev.base = type("B", (), {"pass_rate": 1.0})()
    ev.goal, ev.scale, ev.spot_rates = Goal(passing_per_hour=1.0), 1.0, (0.5,)
    runs = []
    for holds in ([3600.0], [10800.0]):
        summary = SimulateSummary.build(completed=1, rollouts=1, concurrency={"peak": 1}, hold_s={"mean": holds[0]})
        runs.append(CandidateRun(summary, hold_h=sum(holds) / 3600, rework_h=(rework_hours(holds, 0.5),)))
    assert ev._result(runs, 1).rework_share(0.5) == pytest.approx(4.2608206 / 4, abs=1e-6)


def test_the_fewest_gpus_per_replica_that_hold_the_model():
    pruned: dict = {}
    opts = gpu_options({"model_params_b": 70}, ["h100-80gb", "l40s-48gb"], None, [True], [0.0], pruned)
    # 140 GB of weights: 2 x 80 GiB x 0.9 = 154.6 GB leaves 9% (> 5%); L40S: 4 x 48 GiB x 0.9 = 185.6 GB
    assert [(o.gpu, o.gpus_per_replica) for o in opts] == [("h100-80gb", 2), ("l40s-48gb", 4)]


def _p(usd, pph):
    o = Option("g", 1, True, 0.0, 1.0)
    return Priced(o, 1, 1, Evaluation(pph, None, 0.0, 1.0, (pph,), ()), usd, (0.0, "n", 1, "spot", 0.0), True)


def test_the_frontier_keeps_only_points_no_cheaper_point_beats():
    pts = [_p(1.0, 10), _p(2.0, 8), _p(2.0, 15), _p(3.0, 15), _p(4.0, 30), _p(0.5, 5)]
    assert [(q.usd_per_h, q.result.passing_per_hour) for q in frontier(pts, False)] == [
        (0.5, 5), (1.0, 10), (2.0, 15), (4.0, 30)]


def test_the_default_request_is_plans():
    from sandbox_fleet.optimize import inputs
    from sandbox_fleet.plan.build import DEFAULT_REQUEST

    assert (inputs.DEFAULT_REQUEST_CPU, inputs.DEFAULT_REQUEST_MEMORY_MB, inputs.DEFAULT_REQUEST_DISK_MB) == (
        DEFAULT_REQUEST.cpu, DEFAULT_REQUEST.memory, DEFAULT_REQUEST.disk)


def test_mixed_requests_are_weighted_by_sandbox_time():
    """Issue 22's case: 900 one-cpu rollouts of 600 s and 100 eight-cpu rollouts of 6,000 s at 1,000
    concurrent: shares of sandbox-time 150 h / 166.7 h -> 474 one-cpu and 526 eight-cpu sandboxes,
    4,682 cores: at least 49 nodes of 96 cores (a split by rollouts, 900 / 100, would need 18)."""
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.optimize.inputs import _measured_requests
    from sandbox_fleet.plan.catalog import NodeType as NT
    from sandbox_fleet.plan.packing import concurrent_mix

    m = MeasureSummary.build(tasks={"requests": [
        {"cpus": 1.0, "memory_mb": 2048, "storage_mb": 0, "tasks": 9, "rollouts": 900, "sandbox_hours": 150.0},
        {"cpus": 8.0, "memory_mb": 2048, "storage_mb": 0, "tasks": 1, "rollouts": 100, "sandbox_hours": 1000 / 6}]})
    reqs, weights = _measured_requests(m)
    assert concurrent_mix(weights, 1000) == [474, 526]
    node = NT(name="c96", vcpus=96, memory_gb=100000, disk_gb=1000, reserve_cpu=0.0, reserve_memory_gb=0.0,
              reserve_disk_gb=0.0, on_demand_usd_h=1.0)
    from sandbox_fleet.optimize.space import PricedNodes
    from sandbox_fleet.plan.reserve import node_reserve
    from sandbox_fleet.plan.slots import usable

    n = PricedNodes(node, 12, tuple(reqs), tuple(weights), tuple(sorted(usable(node, node_reserve(node)[0]).items())))
    assert n.count(1000) >= 49


def test_the_mix_is_plans(tmp_path):
    """The same requests and weights plan packs (its _requests), for a summary with sandbox-hours and
    one without (rollouts then)."""
    from sandbox_fleet.measure.model import MeasureSummary
    from sandbox_fleet.optimize.inputs import _measured_requests
    from sandbox_fleet.plan.build import PlanOptions, _requests
    from sandbox_fleet.plan.summary import Figures

    kinds = [{"cpus": 1.0, "memory_mb": 2048, "storage_mb": 100, "tasks": 9, "rollouts": 900, "sandbox_hours": 150.0},
             {"cpus": 8.0, "memory_mb": 4096, "storage_mb": 0, "tasks": 1, "rollouts": 100, "sandbox_hours": 1000 / 6}]
    for reqs in (kinds, [{k: v for k, v in q.items() if k != "sandbox_hours"} for q in kinds]):
        m = MeasureSummary.build(rows=1000, sandbox_s=3.6e6, hold_s={"mean": 3600.0}, tasks={"requests": reqs})
        ours = _measured_requests(m)
        theirs = _requests(Figures(as_measure(m)), PlanOptions(), [])
        assert ours == (theirs[0], theirs[1])

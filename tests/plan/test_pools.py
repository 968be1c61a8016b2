"""Mixed pools: GPU requests get their own pool, requests nothing holds are listed, the rest is planned."""

from __future__ import annotations

import functools
import json

import pytest

from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.catalog import load_catalog
from sandbox_fleet.plan.pools import route
from sandbox_fleet.plan.slots import ResourceRequest
from summaries import plan_json


@functools.lru_cache(maxsize=1)
def _measured() -> str:
    """measure's summary of the pools corpus (tests/producers.py), as JSON text."""
    from producers import pools_telemetry
    from summaries import measure_json

    return json.dumps(measure_json(pools_telemetry()))


def _summary():
    return json.loads(_measured())


def test_measure_counts_each_kinds_rollouts_and_sandbox_hours():
    got = [(r["cpus"], r["gpus"], r["tasks"], r["rollouts"], r["sandbox_hours"]) for r in _summary()["tasks"]["requests"]]
    assert sorted(got) == [(1.0, 0, 90, 9000, 900.0), (4.0, 1, 6, 600, 300.0), (200.0, 0, 4, 400, 100.0)]


def test_routing_sends_gpu_requests_to_the_gpu_type_and_lists_what_nothing_holds():
    reqs = [ResourceRequest(1, 2048, 6144), ResourceRequest(4, 16384, 20480, 1), ResourceRequest(200, 4096, 6144)]
    r = route(reqs, load_catalog(), "spot")
    assert (r.cpu, r.gpu, r.unplaced) == ([0], {"aws-g6.12xlarge": [1]}, [2])


def test_gpu_pool_and_unplaced_by_hand():
    p = plan_json(_summary(), PlanOptions(concurrency=1000, price_tier="on_demand"))
    # Little's law: shares of the concurrent sandboxes are shares of sandbox-TIME, 900 : 300 : 100 hours
    # (not of rollouts, 9,000 : 600 : 400): 1,000 x 9/13, 3/13, 1/13 = 692.3 / 230.8 / 76.9, largest
    # remainders to the last two -> 692 / 231 / 77
    (pool,) = p["node_pools"]
    # aws-g6.12xlarge (48 cpu, 192 GiB, 4 GPUs; reserve 0.19 cpu / 10.70 GiB): cpu 11, memory 11,
    # gpu 4 slots of (4 cpu, 16 GiB, 1 gpu) -> gpu binds, 4 a node, ceil(231 / 4) = 58 nodes x $4.60
    assert (pool["type"], pool["concurrent"], pool["binding"], pool["per_node"], pool["count"]) == ("aws-g6.12xlarge", 231, "gpu", 4, 58)
    assert pool["on_demand_per_h"] == pytest.approx(58 * 4.60)
    assert p["cost"]["node_pools_per_h"] == pytest.approx(266.8)
    (u,) = p["nodes"]["unplaced"]
    assert u["cpu"] == 200 and u["rollouts_share"] == pytest.approx(0.04) and u["sandbox_hours_share"] == pytest.approx(100 / 1300)
    # the CPU pool carries the 692 one-core sandboxes: 95 a node after the 0.31-core reserve -> 8 nodes
    assert p["nodes"]["mix"] is None and p["nodes"]["count"] == 8 and p["nodes"]["type"] != "aws-g6.12xlarge"

"""Cost figures against hand arithmetic; unpriced types are sized but not costed."""

from __future__ import annotations

import pytest

from sandbox_fleet.plan.catalog import NodeType
from sandbox_fleet.plan.cost import fleet_cost, inference_cost

PRICED = NodeType(name="p", vcpus=96, memory_gb=384, disk_gb=4096, on_demand_usd_h=5.0, reserved_usd_h=3.0, spot_usd_h=1.0)


def test_fleet_cost_hand_computed():
    c = fleet_cost(PRICED, 32, tier="on_demand", concurrency=3000, duty=0.2, sandbox_hours_per_pass=3.0, exception_share=0.25)
    assert (c.reserved_per_h, c.on_demand_per_h, c.spot_per_h) == (96.0, 160.0, 32.0)
    # 160 $/h carried by 3000 x 0.2 = 600 busy sandbox-hours per hour
    assert c.per_busy_sandbox_hour == pytest.approx(160 / 600)
    assert c.per_passing_trajectory == pytest.approx(160 / 600 * 3.0)
    assert c.per_passing_trajectory_by_tier.spot == pytest.approx(32 / 600 * 3.0)
    assert c.exception_waste_per_h == pytest.approx(40.0)


def test_unpriced_type_is_not_costed():
    node = NodeType(name="u", vcpus=96, memory_gb=384, disk_gb=4096)
    c = fleet_cost(node, 32, tier="spot", concurrency=3000, duty=0.2, sandbox_hours_per_pass=3.0, exception_share=0.3)
    assert not c.priced
    assert c.spot_per_h is None and c.per_passing_trajectory is None and c.exception_waste_per_h is None


def test_inference_cost_with_and_without_caching():
    assert (inference_cost(2.5, 10), inference_cost(2.5, 4)) == (25.0, 10.0)
    assert inference_cost(None, 10) is None and inference_cost(2.5, None) is None

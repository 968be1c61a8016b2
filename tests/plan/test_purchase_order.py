"""The purchase order's cost lines: the throughput identity, the default tier, reserves, all-in parts, assumptions."""

from __future__ import annotations

import copy
import json

import pytest

from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.cost_parts import all_in, passes_per_h
from sandbox_fleet.plan.reserve import kube_reserved
from summaries import plan_json

from .conftest import PUBLISHED

SUMMARY = json.loads(PUBLISHED.read_text())


@pytest.mark.parametrize("shape", ["measured", "smooth"])
def test_fleet_cost_over_cost_per_pass_is_the_throughput_asked_for(shape):
    p = plan_json(SUMMARY, PlanOptions(passing_per_hour=100, shape=shape, price_tier="on_demand"))
    co = p["cost"]
    # $/h / ($/h / (cap x duty) x sandbox-h per pass) = cap x duty / sandbox-h per pass = 100
    assert co["on_demand_per_h"] / co["per_passing_trajectory"] == pytest.approx(100, rel=1e-9)
    assert co["passing_per_h"] == pytest.approx(100, rel=1e-9)
    assert p["target"]["shape"] == shape


def test_measured_shape_buys_the_peak_not_the_mean():
    t = plan_json(SUMMARY, PlanOptions(passing_per_hour=400))["target"]
    # 400 x 3.0570527 = 1,222.82 busy; / 0.1558639 = 7,845.4 -> 7,846 (the mean alone would be 1,223)
    assert t["concurrency"] == 7846 and t["mean_busy"] == pytest.approx(1222.82, abs=0.01)


def test_default_tier_is_the_cheapest_all_in_whatever_the_duty():
    """Issue 38 item 1 replaced the duty rule (tests/plan/test_tier_choice.py has the hand cases)."""
    low = plan_json(SUMMARY, PlanOptions())["cost"]  # published duty 15.6%
    busy = copy.deepcopy(SUMMARY)
    busy["concurrency"]["duty"] = 0.8
    high = plan_json(busy, PlanOptions())["cost"]
    for co in (low, high):
        priced = [ln for ln in co["tier_choice"]["tiers"] if ln["all_in_per_h"] is not None]
        assert co["tier"] == min(priced, key=lambda ln: ln["all_in_per_h"])["tier"] == "spot"


def test_kube_reserved_by_hand():
    # cpu: 0.06 + 0.01 + 2 x 0.005 + 92 x 0.0025 = 0.31 cores
    # memory: 4 x .25 + 4 x .2 + 8 x .1 + 112 x .06 + 256 x .02 = 1 + .8 + .8 + 6.72 + 5.12 = 14.44 GiB + 100 MiB
    cpu, mem = kube_reserved(96, 384)
    assert cpu == pytest.approx(0.31) and mem == pytest.approx(14.44 + 100 / 1024)
    assert kube_reserved(1, 2) == pytest.approx((0.06, 0.5 + 100 / 1024))


def test_seed_type_keeps_no_reserve_and_priced_types_get_one():
    p = plan_json(SUMMARY, PlanOptions(node_type="seed-96c"))
    assert p["nodes"]["reserve"] == {"cpu": 0.0, "memory_mb": 0.0, "disk_mb": 0.0, "source": "catalog"}
    q = plan_json(SUMMARY, PlanOptions(node_type="aws-m6id.24xlarge"))
    assert q["nodes"]["reserve"]["source"] == "default" and q["nodes"]["per_node"] == 95


def test_all_in_parts_by_hand():
    # 374 x 0.2 / 3.0 = 24.93 passes/h; fleet $3.40, inference $10.00, trainer 8 x $2.50 = $20.00 an hour
    passes = passes_per_h(374, 0.2, 3.0)
    total, parts = all_in(passes, 3.4, 10.0, 20.0)
    assert passes == pytest.approx(24.9333, abs=1e-4)
    assert (parts.fleet, parts.inference, parts.trainer) == pytest.approx((3.4 / passes, 10 / passes, 20 / passes))
    assert total == pytest.approx(33.4 / passes)
    assert all_in(None, 1.0, 1.0, None)[0] is None


def test_every_assumption_names_a_known_source():
    p = plan_json(SUMMARY, PlanOptions(gpu_prefill_tok_s=9000, gpu_decode_tok_s=1000))
    names = {a["name"]: a for a in p["assumptions"]}
    assert {a["source"] for a in p["assumptions"]} <= {"default", "measured", "published", "flag", "catalog"}
    assert names["price_tier"]["source"] == "default" and names["price_tier"]["value"] == "spot"
    assert names["sandbox_hours_per_pass"]["source"] == "published"
    assert names["gpu_prefill_tok_s"]["source"] == "flag" and names["gpu_utilisation"]["value"] == 0.7
    assert names["system_reserve_cpu"]["source"] == "default"


def test_trajectory_storage_uses_the_median_record_and_is_omitted_otherwise():
    assert plan_json(SUMMARY, PlanOptions())["storage"]["trajectory_gb_per_day"] is None
    assert plan_json(SUMMARY, PlanOptions())["storage"]["trajectory_gb_per_day_upper"] is None
    s = copy.deepcopy(SUMMARY)
    s["trajectories"]["bytes_median"] = 2_000_000
    st = plan_json(s, PlanOptions(concurrency=1000))["storage"]
    assert st["trajectory_gb_per_day"] == pytest.approx(st["rollouts_per_day"] * 2e6 / 1e9)

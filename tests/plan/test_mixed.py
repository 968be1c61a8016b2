"""The mixed purchase (plan/mixed.py): a hand case, every split priced by brute force, and the mixed corpus."""

from __future__ import annotations

import json

import numpy as np
import pytest

from sandbox_fleet.measure.concurrency import sweep, time_at_level
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.catalog import find_type, load_catalog
from sandbox_fleet.plan.mixed import best_split, mixed_purchase, node_runs, node_shares, split_cost
from sandbox_fleet.plan.render import plan_lines
from summaries import as_plan, plan_json

from .conftest import MIXED

S = 1_000_000


def test_hand_case_reserves_the_nodes_busy_more_than_the_price_ratio():
    # 4 nodes busy 100%, 60%, 30%, 10% of the time; reserved $0.50/h, on-demand $1/h: ratio 50%.
    # R=0: 1+.6+.3+.1 = 2.0; R=1: .5+1.0 = 1.5; R=2: 1.0+.4 = 1.4; R=3: 1.5+.1 = 1.6; R=4: 2.0.
    shares = [1.0, 0.6, 0.3, 0.1]
    runs = [(1, s) for s in shares]
    assert best_split(runs, 0.5, 1.0) == 2
    assert [split_cost(runs, r, 0.5, 1.0) for r in range(5)] == pytest.approx([2.0, 1.5, 1.4, 1.6, 2.0])
    curve = ([1, 2, 3, 4], shares)  # peak 4 on 4 nodes: node k is needed at level >= k
    m = mixed_purchase(curve, 4, "on_demand", 0.5, 1.0, None)
    assert (m.reserved_nodes, m.burst_nodes, m.burst_tier) == (2, 2, "on_demand")
    assert m.usd_per_h == pytest.approx(1.4) and m.break_even_share == 0.5


def test_a_reserved_node_dearer_than_a_busy_burst_node_reserves_nothing():
    m = mixed_purchase(([1, 2], [1.0, 0.5]), 2, "spot", 3.0, 5.0, 1.0, rework_share=0.5)
    assert m.reserved_nodes == 0 and m.burst_usd_per_node_h == 1.5  # spot carries its re-runs
    assert m.usd_per_h == pytest.approx(1.5 * 1.5) and "nothing reserved" in m.basis


def test_missing_price_or_curve_gives_no_mixed_line():
    assert mixed_purchase(None, 4, "on_demand", 1.0, 2.0, None) is None
    assert mixed_purchase(([1], [1.0]), 4, "on_demand", None, 2.0, None) is None
    assert mixed_purchase(([1], [1.0]), 4, "spot", 1.0, 2.0, None) is None


def _needed_share_by_seconds(starts, finishes, peak: int, nodes: int, k: int) -> float:
    """Share of whole seconds of the span at which level x nodes / peak > k - 1 (node k is needed)."""
    t0, t1 = min(starts), max(finishes)
    hits = 0
    for t in range(t0, t1):
        level = sum(1 for a, b in zip(starts, finishes) if a <= t < b)
        hits += level * nodes > (k - 1) * peak
    return hits / (t1 - t0)


@pytest.mark.parametrize("seed,nodes", [(1, 5), (2, 9), (3, 13), (4, 1)])
def test_every_split_priced_by_brute_force_has_the_same_minimum(seed, nodes):
    rng = np.random.default_rng(seed)
    starts = [int(x) for x in rng.integers(0, 300, 80)]
    finishes = [a + int(h) for a, h in zip(starts, rng.integers(1, 120, 80))]
    tal = time_at_level(sweep(np.array(starts) * S, np.array(finishes) * S))
    peak = tal["levels"][-1]
    p_r, p_od = 0.62, 1.0
    truth = [_needed_share_by_seconds(starts, finishes, peak, nodes, k) for k in range(1, nodes + 1)]
    brute = min(p_r * r + p_od * sum(truth[r:]) for r in range(nodes + 1))
    m = mixed_purchase((tal["levels"], tal["share_at_or_above"]), nodes, "on_demand", p_r, p_od, None)
    assert m.node_share == pytest.approx(truth, abs=1e-12)
    assert m.usd_per_h == pytest.approx(brute, abs=1e-12)
    assert p_r * m.reserved_nodes + p_od * sum(truth[m.reserved_nodes:]) == pytest.approx(brute, abs=1e-12)


def test_runs_are_the_per_node_shares_for_any_fleet_and_a_huge_fleet_takes_one_pass():
    rng = np.random.default_rng(5)
    levels = sorted({1, 400} | {int(x) for x in rng.integers(1, 400, 60)})
    shares = sorted(rng.random(len(levels)), reverse=True)
    for nodes in (1, 3, 7, 64, 399, 400, 401, 1000):
        per_node = []
        for k in range(1, nodes + 1):  # the rule, node by node: the first grid level >= floor((k-1) P / N) + 1
            need = (k - 1) * 400 // nodes + 1
            per_node.append(next(s for lv, s in zip(levels, shares) if lv >= need))
        assert node_shares(levels, shares, 400, nodes) == per_node
        runs = node_runs(levels, shares, 400, nodes)
        for r in (0, nodes // 3, nodes):
            assert split_cost(runs, r, 0.4, 1.0) == pytest.approx(0.4 * r + sum(per_node[r:]))
    big = mixed_purchase((levels, shares), 10**7, "on_demand", 0.4, 1.0, None)
    assert big.node_share is None and big.reserved_nodes + big.burst_nodes == 10**7
    runs = node_runs(levels, shares, 400, 10**7)
    assert sum(c for c, _ in runs) == 10**7 and big.reserved_nodes == sum(c for c, s in runs if s > 0.4)


def test_node_shares_read_the_grid_at_the_first_level_each_node_needs():
    # peak 10 on 4 nodes: node k needed at level > 2.5 (k - 1): levels >= 1, 3, 6, 8
    levels = list(range(1, 11))
    shares = [1.0 - 0.1 * (lv - 1) for lv in levels]
    assert node_shares(levels, shares, 10, 4) == [shares[0], shares[2], shares[5], shares[7]]


def test_mixed_corpus_by_hand():
    """tests/producers.py's mixed corpus: 400 at once for 3,000 s, a gap to 4,000 s, then one start every
    30 s holding 1,500 s (50 at once) until 23,470 s. On 7 nodes node 1 runs whenever anything runs
    (22,470 s of 23,470) and nodes 2-7 (level above 57) only during the 400 (3,000 s)."""
    plan = plan_json(json.loads(MIXED.read_text(encoding="utf-8")), PlanOptions(price_tier="on_demand"))
    node = find_type(load_catalog(), plan["nodes"]["type"])
    n = plan["nodes"]["count"]
    assert n == 7
    m = plan["cost"]["mixed"]
    assert m["node_share"] == pytest.approx([22_470 / 23_470] + [3_000 / 23_470] * 6, abs=1e-15)
    ratio = node.reserved_usd_h / node.on_demand_usd_h
    assert 3_000 / 23_470 < ratio < 22_470 / 23_470  # so exactly node 1 is worth reserving
    assert (m["reserved_nodes"], m["burst_nodes"], m["burst_tier"]) == (1, 6, "on_demand")
    assert m["usd_per_h"] == pytest.approx(node.reserved_usd_h + 6 * 3_000 / 23_470 * node.on_demand_usd_h)
    assert m["usd_per_h"] < min(node.reserved_usd_h, node.on_demand_usd_h) * n
    line = next(x for x in plan_lines(as_plan(plan)) if "BUY mixed" in x)
    assert f"1 x {node.name} reserved + up to 6 x {node.name} on-demand" in line
    assert f"${m['usd_per_h']:,.2f}/h" in line


def test_mixed_corpus_on_spot_bursts_on_spot_with_its_reruns():
    """The default tier here is spot (duty 22.4%): spot with re-runs is below the reserved price even
    busy all the time, so nothing is reserved and all 7 nodes burst on spot (docs/plan.md)."""
    plan = plan_json(json.loads(MIXED.read_text(encoding="utf-8")), PlanOptions())
    node = find_type(load_catalog(), plan["nodes"]["type"])
    m, rework = plan["cost"]["mixed"], plan["cost"]["spot_rework"]["rework_share"]
    per_node = node.spot_usd_h * (1 + rework)
    assert per_node < node.reserved_usd_h and m["burst_tier"] == "spot" and m["reserved_nodes"] == 0
    assert m["usd_per_h"] == pytest.approx(per_node * (22_470 + 6 * 3_000) / 23_470)
    assert f"${m['usd_per_h']:,.2f}/h" == "$1.47/h"


def test_the_decision_block_offers_the_mixed_purchase_beside_the_single_tier_buy():
    plan = plan_json(json.loads(MIXED.read_text(encoding="utf-8")), PlanOptions(price_tier="on_demand"))
    lines = plan_lines(as_plan(plan))
    at = lines.index(f"  BUY 7 x {plan['nodes']['type']} at peak (lower bound 7)")
    assert lines[at + 1].startswith(f"  or BUY mixed: 1 x {plan['nodes']['type']} reserved + up to 6 x")
    assert lines[at + 1].strip()[3:] in [x.strip() for x in lines[at + 2:]]  # the same line in Line 4


def test_spot_bursts_carry_their_re_runs_and_are_unpriced_when_those_are_unbounded():
    from sandbox_fleet.plan.mixed import burst_price

    assert burst_price("spot", 3.0, 1.0, 0.25) == 1.25  # 1.0 x (1 + 0.25): the re-runs are part of the price
    assert burst_price("spot", 3.0, 1.0, None) == 1.0  # no reclaim rate known: the bare price, as stated
    assert burst_price("spot", 3.0, 1.0, None, reruns_unbounded=True) is None
    assert burst_price("on_demand", 3.0, 1.0, None, reruns_unbounded=True) == 3.0

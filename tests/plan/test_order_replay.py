"""The order chosen by replay (plan/order_replay.py): a brute force over every tier and every R.

The brute force replays the measured rollouts with the node-level oracle of
tests/simulate/test_node_replay.py (Python objects per node, its own rules, not the engine's
kernel) for each candidate: each single tier at the real mix's peaks (at least the slot sizing's
count), all up; the mixed purchase bursting on on-demand and on spot, for every R from 0 past the
peak. It prices each with the catalog's prices and times each R's waits (the slowdown of the mean
step against the measured one, in plain Python over the oracle's per-rollout ends: ``slowdown``); a
mixed order's R is the cheapest within the tolerance, and the order the cheapest whose slowdown is
within it; the plan must pick the same order, the same R, the same $/h and the same slowdown. The steps (each
rollout's release) are measure's step detection's, an input here. Inputs taken from the plan: each tier's node type and slot count
(the slot sizing, tested in test_slots/test_packing) and spot's re-run share (the closed form, tested
in test_rework); everything the replay decides is recomputed here.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulate"))
from test_node_replay import bursty_rl, oracle

from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.plan.catalog import MB_PER_GB, find_type, load_catalog
from sandbox_fleet.plan.render_short import SCREEN_LINES, short_lines
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

from .test_mixed_replay import plan_with_history

ORDERS = ("reserved", "on_demand", "spot", "mixed_on_demand", "mixed_spot")


def slowdown(start, end, ends, release):
    """The mean step's lengthening over its measured length (a step ends at its last rollout's end);
    without steps (``release`` None) the summed waits over the summed holds."""
    if release is None:
        return sum(ends[i] - end[i] for i in ends) / sum(end[i] - start[i] for i in ends)
    steps = {}
    for i in ends:
        steps.setdefault(release[i], []).append(i)
    longer = sum(max(ends[i] for i in ids) - max(end[i] for i in ids) for ids in steps.values())
    return longer / sum(max(end[i] for i in ids) - r for r, ids in steps.items())


def brute_force(plan, history, provision_s=60.0, scale_down_s=300.0, extra_r=2, tolerance=0.01):
    """{order: ($/h, R, slowdown)} for every candidate order, by the oracle; "<mixed order> by $": the
    cheapest R whatever its waits."""
    from sandbox_fleet.plan.order_wait import step_releases_of

    cap, res = plan.nodes.node_capacity, plan.nodes.reserve
    node = (cap.cpu - res.cpu, cap.memory_gb * MB_PER_GB - res.memory_mb, cap.disk_gb * MB_PER_GB - res.disk_mb)
    slot = {ln.tier: ln for ln in plan.cost.tier_choice.tiers}
    assert {ln.node_type for ln in slot.values()} == {plan.nodes.type}  # every tier's prices chose the plan's type
    price = find_type(load_catalog(None), plan.nodes.type, "bundled").price
    share = slot["spot"].rerun_share or 0.0
    start, end = list(history.start_s), list(history.end_s)
    req = list(zip(history.cpu, history.memory_mb, history.disk_mb))
    peak = oracle(start, end, req, [NodePoolSpec("one", *node, 0.0)])["peak"][0]
    out = {}
    for tier in ("reserved", "on_demand", "spot"):
        nodes = max(peak, slot[tier].nodes)
        out[tier] = (nodes * price(tier) * (1.0 + (share if tier == "spot" else 0.0)), None, 0.0)  # all up
    rel = step_releases_of(history.start_s, history.end_s)
    release = None if rel is None else list(rel)
    for burst in ("on_demand", "spot"):
        p_r, p_b = price("reserved"), price(burst) * (1.0 + (share if burst == "spot" else 0.0))
        by_r = []
        for r in range(peak + 1 + extra_r):
            pools = [NodePoolSpec("r", *node, p_r, min_nodes=r, max_nodes=r),
                     NodePoolSpec("b", *node, p_b, provision_s=provision_s, scale_down_s=scale_down_s)]
            got = oracle(start, end, req, pools)
            usd = (got["hours"][0] * p_r + got["hours"][1] * p_b) / (got["span"] / 3600.0)
            by_r.append((usd, r, slowdown(start, end, got["ends"], release)))
        out[f"mixed_{burst}"] = min((x for x in by_r if x[2] <= tolerance), key=lambda x: x[:2])
        out[f"mixed_{burst} by $"] = min(by_r, key=lambda x: x[:2])
    return out, peak


def _check(plan, history, tolerance=0.01, **kw):
    want, peak = brute_force(plan, history, tolerance=tolerance, **kw)
    best = min((o for o in ORDERS if want[o][2] <= tolerance), key=lambda o: (want[o][0], ORDERS.index(o)))
    tc, mx = plan.cost.tier_choice, plan.cost.mixed
    assert plan.cost.inference_per_h is None and not plan.node_pools  # nothing but the sandbox nodes is priced
    assert tc.order == best, (tc.order, want)
    lines = {ln.order: ln for ln in tc.replayed}
    for o in ORDERS:
        assert lines[o].all_in_per_h == pytest.approx(want[o][0], rel=1e-9), o
        assert lines[o].slot_curve_all_in_per_h <= lines[o].all_in_per_h * (1 + 1e-12), o  # the lower bound holds
        assert lines[o].slowdown == pytest.approx(want[o][2], rel=1e-9, abs=1e-12), o
        assert lines[o].over_tolerance == (want[o][2] > tolerance), o
        if want[o][1] is not None:
            assert lines[o].reserved_nodes == want[o][1], o
    assert plan.cost.tier == lines[best].tier
    if best.startswith("mixed"):
        assert mx.burst_tier == lines[best].tier and mx.reserved_nodes == want[best][1]
        assert mx.usd_per_h == pytest.approx(want[best][0], rel=1e-9)
    else:
        assert plan.nodes.count == max(peak, {ln.tier: ln for ln in tc.tiers}[best].nodes)
    return want, best


def test_the_bursty_rl_order_is_the_cheapest_of_every_tier_and_r_by_brute_force(tmp_path):
    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    plan, history = plan_with_history(tmp_path, start, end, req)
    want, best = _check(plan, history)
    # the slot ranking's cheapest single tier is spot (5 nodes all up); by replay the order is the spot burst,
    # cheaper than the 6 spot nodes the real mix's peaks need
    assert plan.cost.tier_choice.cheapest == "spot" and best == "mixed_spot"
    assert want["mixed_spot"][0] < want["spot"][0]
    assert "a lower bound" in plan.cost.tier_choice.basis and "by replaying the 2,000" in plan.cost.tier_choice.basis


@pytest.mark.parametrize("tolerance", [0.005, 0.001])
def test_an_r_whose_waits_slow_the_step_past_the_tolerance_is_not_chosen(tmp_path, tolerance):
    """The bursty corpus has synchronous steps: the spot burst at R = 0 (the cheapest by $) lengthens the
    mean step by ~0.7%; below that its R rises to one within the tolerance (the brute force's), and the
    basis says what the cheaper R would have cost and slowed."""
    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    plan, history = plan_with_history(tmp_path, start, end, req, rl_tolerance=tolerance)
    want, best = _check(plan, history, tolerance=tolerance)
    assert best == plan.cost.tier_choice.order
    cheap = want["mixed_spot by $"]
    assert cheap[1] == 0 and cheap[2] > tolerance and want["mixed_spot"][1] > 0  # R = 0 ruled out by its waits
    assert want["mixed_spot"][2] <= tolerance
    assert (f"R = 0 would be ${cheap[0]:,.2f}/h, its waits {cheap[2]:.1%}, past --tolerance {tolerance:.1%}"
            in plan.cost.tier_choice.basis)


def test_a_forced_tier_picks_among_the_orders_on_that_tier(tmp_path):
    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    plan, history = plan_with_history(tmp_path, start, end, req, price_tier="on_demand")
    want, _ = brute_force(plan, history)
    best = min(("on_demand", "mixed_on_demand"), key=lambda o: (want[o][0], ORDERS.index(o)))
    assert plan.cost.tier == "on_demand" and plan.cost.tier_choice.order == best == "mixed_on_demand"
    # here the split matters: R = 2 reserved, the brute force's cheapest of every R
    assert plan.cost.mixed.reserved_nodes == want[best][1] == 2
    assert plan.cost.mixed.usd_per_h == pytest.approx(want[best][0], rel=1e-9)
    assert plan.cost.tier_choice.basis.startswith("--price-tier on-demand: ")


def test_without_history_the_slot_ranking_stands(tmp_path):
    from sandbox_fleet.measure import measure_paths

    from .test_mixed_replay import write_corpus

    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    plan = make_plan(measure_paths([str(rollouts)], tasks=str(tasks), progress=False), PlanOptions())
    assert plan.cost.tier_choice.replayed is None and plan.cost.tier_choice.order is None


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    """The demo's corpus and plan (``./dev run demo``: the rst preset at scale 0.05, seed 1)."""
    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.measure.intervals import load_intervals
    from sandbox_fleet.synth import synth

    out = tmp_path_factory.mktemp("demo")
    synth(out, preset="rst", scale=0.05, seed=1, progress=False)
    paths, tasks = [str(out / "trajectories")], str(out / "tasks")
    history = load_intervals(paths, tasks=tasks)
    _DEMO[id(history)] = measure_paths(paths, tasks=tasks, progress=False)
    return _demo_plan(history), history


_DEMO: dict = {}  # the demo's measure summary, by its history


def _demo_plan(history, **opts):
    return make_plan(_DEMO[id(history)], PlanOptions(**opts), history=history)


def test_the_demo_order_is_the_cheapest_of_every_tier_and_r_by_brute_force(demo):
    plan, history = demo
    want, best = _check(plan, history, extra_r=1)
    # the demo: by $ alone the autoscaled spot burst (R = 0, $0.91/h) beats 2 spot nodes all up ($1.70/h),
    # but its rollouts wait for nodes to join: the demo has no synchronous steps, and the mean rollout is
    # longer by more than the default --tolerance (1%); within it the spot burst needs R = 1 ($3.32/h),
    # so the order is spot all up
    cheap = want["mixed_spot by $"]
    assert cheap[1] == 0 and cheap[0] < want["spot"][0] and cheap[2] > 0.01  # R = 0: cheaper, too slow
    assert want["mixed_spot"][1] == 1 and want["mixed_spot"][0] > want["spot"][0]  # R = 1: within, dearer
    assert best == "spot"
    tc = plan.cost.tier_choice
    assert tc.basis.startswith("spot (all up: no rollout waits for a node), the cheapest all in with its "
                               "provisioning waits within --tolerance 1.0%")
    assert f"R = 0 would be ${cheap[0]:,.2f}/h, its waits {cheap[2]:.1%}, past --tolerance 1.0%" in tc.basis
    assert f"mean rollout +{want['mixed_spot'][2]:.1%}" in tc.basis
    lines = short_lines(plan, width=80)
    assert len(lines) <= SCREEN_LINES and all(len(x) <= 80 for x in lines)
    buy = [x.strip() for x in lines if x.strip().startswith(("BUY", "or BUY"))]
    assert buy[0].startswith("BUY 2 x") and buy[1].startswith("or BUY mixed:")
    assert any(f"${want['spot'][0]:.2f}/h on spot," in x for x in lines)


def test_a_looser_tolerance_signs_the_demos_spot_burst(demo):
    """At --tolerance 2% the spot burst's waits are within it: it is the order signed, its BUY line first."""
    plan, history = demo
    plan = _demo_plan(history, rl_tolerance=0.02)
    want, best = _check(plan, history, tolerance=0.02, extra_r=1)
    assert best == "mixed_spot"
    lines = short_lines(plan, width=80)
    assert len(lines) <= SCREEN_LINES and all(len(x) <= 80 for x in lines)
    buy = [x.strip() for x in lines if x.strip().startswith(("BUY", "or BUY"))]
    assert buy[0].startswith("BUY mixed:") and buy[1].startswith("or BUY 2 x")
    assert any(f"${want[best][0]:.2f}/h on spot burst only" in x for x in lines)
    assert plan.cost.tier_choice.basis.startswith(f"mixed spot (mean rollout +{want[best][2]:.1%}")
    # $ per passing trajectory is the replayed order's $/h over the passes an hour (before spot's re-runs,
    # which the burst's node-hours carry already)
    co = plan.cost
    bare = co.passing_per_h * (1.0 + co.spot_rework.rework_share)
    assert co.per_passing_trajectory_all_in == pytest.approx(want[best][0] / bare, rel=1e-9)


def test_a_single_tier_order_is_replayed_and_emitted_as_one_pool(tmp_path):
    """--price-tier reserved: the only order on reserved is every node all up; simulate --replay and the
    NodePools follow it, not the mixed purchase the plan still prices beside it."""
    from sandbox_fleet.plan.fleet_replay import ReplayOptions, replay_telemetry
    from sandbox_fleet.plan.k8s.pools import pool_limits

    from .test_mixed_replay import write_corpus

    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    plan, _ = plan_with_history(tmp_path / "p", start, end, req, price_tier="reserved")
    assert plan.cost.tier_choice.order == "reserved" and plan.cost.mixed is not None
    assert [(p.suffix, p.nodes) for p in pool_limits(plan, "reserved")] == [("", plan.nodes.count)]
    got = replay_telemetry([rollouts], PlanOptions(price_tier="reserved"), ReplayOptions(), tasks=tasks).nodes
    assert [(p.name, p.min_nodes, p.max_nodes) for p in got.pools] == [("fleet", plan.nodes.count, plan.nodes.count)]
    price = find_type(load_catalog(None), plan.nodes.type, "bundled").price("reserved")
    assert got.usd_per_h == pytest.approx(plan.nodes.count * price, rel=1e-12)  # nodes x price, all up

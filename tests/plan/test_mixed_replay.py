"""The mixed purchase priced by replaying the measured rollouts on nodes (plan/mixed_replay.py).

Each figure is checked against the brute-force node replay in tests/simulate/test_node_replay.py
(its own rules, not the engine's kernel), run for every reserved count R.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulate"))
from test_node_replay import KINDS, bursty_rl, oracle

from sandbox_fleet.measure import measure_paths
from sandbox_fleet.measure.intervals import load_intervals
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

NAMES = ("small", "medium", "large")


def write_corpus(folder: Path, start, end, req) -> tuple[Path, Path]:
    """The rollouts as a Parquet table naming their task, and a tasks folder of three task.toml."""
    folder.mkdir(parents=True, exist_ok=True)
    kind = [int(np.flatnonzero((KINDS == r).all(axis=1))[0]) for r in req]
    t0 = 1_780_000_000_000_000
    ts = pa.timestamp("us", tz="UTC")
    pq.write_table(pa.table({
        "id": [f"r{i}" for i in range(len(start))], "task_id": [NAMES[k] for k in kind],
        "started_at": pa.array(np.round(t0 + start * 1e6).astype(np.int64), ts),
        "finished_at": pa.array(np.round(t0 + end * 1e6).astype(np.int64), ts),
    }), folder / "rollouts.parquet")
    for k, name in enumerate(NAMES):
        d = folder / "tasks" / name
        d.mkdir(parents=True)
        c, m, disk = KINDS[k]
        (d / "task.toml").write_text(f"[environment]\ncpus = {c:g}\nmemory_mb = {int(m)}\nstorage_mb = {int(disk)}\n")
    return folder / "rollouts.parquet", folder / "tasks"


def plan_with_history(tmp_path, start, end, req, **opts):
    rollouts, tasks = write_corpus(tmp_path / "corpus", start, end, req)
    measured = measure_paths([str(rollouts)], tasks=str(tasks), progress=False)
    history = load_intervals([str(rollouts)], tasks=str(tasks))
    return make_plan(measured, PlanOptions(**opts), history=history), history


def allocatable(plan) -> tuple[float, float, float]:
    cap, res = plan.nodes.node_capacity, plan.nodes.reserve
    return cap.cpu - res.cpu, cap.memory_gb * 1024.0 - res.memory_mb, cap.disk_gb * 1024.0 - res.disk_mb


def test_the_chosen_reserved_count_is_the_cheapest_by_brute_force_over_every_r(tmp_path):
    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    plan, history = plan_with_history(tmp_path, start, end, req, price_tier="on_demand")
    mx = plan.cost.mixed
    rp = mx.replay
    assert rp is not None and rp.placement == "pack" and rp.provision_s == 60.0 and rp.scale_down_s == 300.0
    cpu, mem, disk = allocatable(plan)
    reqs = list(zip(history.cpu, history.memory_mb, history.disk_mb))
    costs = []
    for r in range(rp.peak_nodes + 3):  # past the peak too: more reserved nodes never pay here
        pools = [NodePoolSpec("r", cpu, mem, disk, mx.reserved_usd_per_node_h, min_nodes=r, max_nodes=r),
                 NodePoolSpec("b", cpu, mem, disk, mx.burst_usd_per_node_h, provision_s=60.0, scale_down_s=300.0)]
        got = oracle(list(history.start_s), list(history.end_s), reqs, pools)
        costs.append((got["hours"][0] * mx.reserved_usd_per_node_h + got["hours"][1] * mx.burst_usd_per_node_h)
                     / (got["span"] / 3600.0))
    assert rp.usd_per_h_by_reserved == pytest.approx(costs[: rp.peak_nodes + 1], rel=1e-9)
    assert mx.reserved_nodes == int(np.argmin(costs))
    assert mx.usd_per_h == pytest.approx(min(costs), rel=1e-9)
    # the slot curve stays, as the lower bound it is
    assert rp.slot_curve_usd_per_h is not None and rp.slot_curve_usd_per_h < mx.usd_per_h


def test_the_bursty_rl_case_is_priced_about_three_times_the_slot_curve(tmp_path):
    """Issue 37's case re-made: synchronous RL steps with heavy-tailed holds and three request kinds.
    Even with best-case packing and no delays the replay costs 2.7-3.2x the slot curve's spot burst,
    and the real mix's peaks need a node more than the plan's mean-mix count (the count the plan buys)."""
    start, end, req = bursty_rl(seed=3, steps=40, batch=500)
    plan, _ = plan_with_history(tmp_path, start, end, req, price_tier="spot", node_provision_s=0.0,
                                node_scale_down_s=0.0)
    mx = plan.cost.mixed
    assert mx.burst_tier == "spot"
    ratio = mx.usd_per_h / mx.replay.slot_curve_usd_per_h
    assert 2.7 <= ratio <= 3.2, ratio
    # the plan buys the real mix's peaks; the mean-mix count stays as the lower bound it is (short 41 times)
    assert plan.nodes.count == mx.replay.peak_nodes == plan.nodes.replayed_peak > plan.nodes.slot_count
    assert plan.nodes.slot_count_short > 0
    assert "lower bound" in mx.basis and "most-allocated" in mx.replay.basis


def test_without_history_the_slot_curve_split_is_unchanged(tmp_path):
    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    measured = measure_paths([str(rollouts)], tasks=str(tasks), progress=False)
    plain = make_plan(measured, PlanOptions(price_tier="on_demand"))
    assert plain.cost.mixed.replay is None and "autoscaled" in plain.cost.mixed.basis


@pytest.mark.parametrize("bad", [{"node_provision_s": -1.0}, {"node_placement": "random"}])
def test_bad_replay_options_are_refused(tmp_path, bad):
    from sandbox_fleet.errors import InputError

    start, end, req = bursty_rl(seed=11, steps=2, batch=20)
    with pytest.raises(InputError, match="node_p"):
        plan_with_history(tmp_path, start, end, req, **bad)


def test_a_chosen_target_keeps_the_slot_curve_and_says_why(tmp_path):
    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    plan, _ = plan_with_history(tmp_path, start, end, req, price_tier="on_demand", concurrency=400)
    assert plan.cost.mixed.replay is None and "no node replay" in plan.cost.mixed.basis


def test_plan_on_telemetry_replays_it_and_on_a_summary_does_not(tmp_path, run_cli):
    import json

    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    got = run_cli("plan", rollouts, "--tasks", tasks, "--price-tier", "on-demand", "--node-scale-down-s", "120", "--json")
    assert got.code == 0, got.err
    replay = json.loads(got.out)["cost"]["mixed"]["replay"]
    assert replay["scale_down_s"] == 120.0 and replay["rollouts"] == 400
    text = run_cli("plan", rollouts, "--tasks", tasks, "--price-tier", "on-demand", "--detail")
    assert "node replay:" in text.out and "lower bound (slot curve)" in text.out
    summary = tmp_path / "m.json"
    assert run_cli("measure", rollouts, "--tasks", tasks, "-o", summary).code == 0
    assert json.loads(run_cli("plan", summary, "--json").out)["cost"]["mixed"]["replay"] is None
    bad = run_cli("plan", rollouts, "--tasks", tasks, "--node-placement", "random")
    assert bad.code == 2 and "--node-placement" in bad.err


def test_over_the_budget_r_is_searched_on_a_grid_and_says_so(tmp_path, monkeypatch):
    import sandbox_fleet.plan.mixed_replay as mr

    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    full, history = plan_with_history(tmp_path / "a", start, end, req, price_tier="on_demand")
    peak = full.cost.mixed.replay.peak_nodes
    monkeypatch.setattr(mr, "REPLAY_BUDGET", history.count * 4)  # a grid of 3 points, then around its best
    grid, _ = plan_with_history(tmp_path / "b", start, end, req, price_tier="on_demand")
    got = grid.cost.mixed.replay.usd_per_h_by_reserved
    assert len(got) == peak + 1
    for a, b in zip(got, full.cost.mixed.replay.usd_per_h_by_reserved):
        assert a is None or a == pytest.approx(b, rel=1e-12)
    assert grid.cost.mixed.usd_per_h == pytest.approx(min(c for c in got if c is not None), rel=1e-12)
    assert "not every R" in grid.cost.mixed.basis and "not every R" not in full.cost.mixed.basis


def test_the_report_draws_the_nodes_by_pool_and_tabulates_the_lower_bound(tmp_path):
    from sandbox_fleet.report.plan_sections import mixed_chart, mixed_table, replay_chart
    from summaries import report_html

    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    measured = measure_paths([str(rollouts)], tasks=str(tasks), progress=False)
    plan = make_plan(measured, PlanOptions(price_tier="on_demand"), history=load_intervals([str(rollouts)], tasks=str(tasks)))
    rp = plan.cost.mixed.replay
    series = rp.nodes_over_time
    assert len(series.t_h) == 400 and max(series.burst) == plan.cost.mixed.burst_nodes
    assert max(series.reserved) == plan.cost.mixed.reserved_nodes
    fig = replay_chart(plan)
    assert [list(t.y) for t in fig.data] == [series.reserved, series.burst]
    # the curve's chart keeps the curve's own split
    colors = list(mixed_chart(plan).data[0].marker.color)
    assert colors.count("#1f77b4") == rp.slot_curve_reserved_nodes
    html = mixed_table(plan)
    assert "lower bound" in html and f"{rp.slot_curve_usd_per_h:,.2f}" in html
    page = report_html(measured, plan)
    assert 'id="fig-nodes_replay"' in page and 'id="fig-mixed"' in page


def test_the_emitted_nodepools_consolidate_after_the_delay_priced(tmp_path):
    import yaml

    from sandbox_fleet.plan.k8s import NODE_CLASS, K8sOptions, build_manifests

    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    rollouts, tasks = write_corpus(tmp_path / "c", start, end, req)
    measured = measure_paths([str(rollouts)], tasks=str(tasks), progress=False)
    history = load_intervals([str(rollouts)], tasks=str(tasks))

    def consolidate_after(**opts) -> set[str]:
        plan = make_plan(measured, PlanOptions(price_tier="on_demand", node_providers=tuple(sorted(NODE_CLASS)), **opts),
                         history=history if opts else None)
        docs = [d for text in build_manifests(plan, K8sOptions(cluster="c1")).values() for d in yaml.safe_load_all(text) if d]
        return {d["spec"]["disruption"]["consolidateAfter"] for d in docs if d.get("kind") == "NodePool"}

    assert consolidate_after(node_scale_down_s=120.0) - {"Never"} == {"120s"}  # the burst pool (a reserved one is kept)
    assert consolidate_after() == {"5m"}  # without a replay: the default, the same 300 s the replay assumes
    from sandbox_fleet.plan.mixed_replay import SCALE_DOWN_S

    assert SCALE_DOWN_S == 5 * 60


@pytest.mark.parametrize("tier,written", [("on_demand", {"reserved", "burst"}), ("spot", {"burst"})])
def test_the_emitted_nodepools_are_limited_to_the_replayed_order(tmp_path, tier, written):
    """The reserved pool may launch R nodes and the burst pool the replay's peak burst nodes, both from
    the brute force; nothing else, so together they never pass what the mixed purchase pays for. On
    on-demand here R = 2 and the burst peaks at 4 (6 in all, where the slot curve's order is 5); on
    spot R = 0: no reserved pool is written."""
    import yaml

    from sandbox_fleet.plan.k8s import NODE_CLASS, K8sOptions, build_manifests

    start, end, req = bursty_rl(seed=11, steps=8, batch=250)
    plan, history = plan_with_history(tmp_path, start, end, req, price_tier=tier,
                                      node_providers=tuple(sorted(NODE_CLASS)))
    mx = plan.cost.mixed
    cpu, mem, disk = allocatable(plan)
    reqs = list(zip(history.cpu, history.memory_mb, history.disk_mb))
    best = None
    for r in range(mx.replay.peak_nodes + 1):
        pools = [NodePoolSpec("r", cpu, mem, disk, mx.reserved_usd_per_node_h, min_nodes=r, max_nodes=r),
                 NodePoolSpec("b", cpu, mem, disk, mx.burst_usd_per_node_h, provision_s=60.0, scale_down_s=300.0)]
        got = oracle(list(history.start_s), list(history.end_s), reqs, pools)
        cost = got["hours"][0] * mx.reserved_usd_per_node_h + got["hours"][1] * mx.burst_usd_per_node_h
        if best is None or cost < best[0] - 1e-9:
            best = (cost, r, got["peak"][1])
    _, r, burst_peak = best
    docs = [d for text in build_manifests(plan, K8sOptions(cluster="c1")).values() for d in yaml.safe_load_all(text) if d]
    pools = {d["metadata"]["name"].rsplit("-", 1)[1]: d["spec"] for d in docs if d["kind"] == "NodePool"}
    node_cpu, node_gb = plan.nodes.node_capacity.cpu, plan.nodes.node_capacity.memory_gb
    assert set(pools) == written and (r > 0) == ("reserved" in written)
    if r:
        assert pools["reserved"]["limits"] == {"cpu": f"{r * node_cpu:g}", "memory": f"{r * node_gb:g}Gi"}
        assert pools["reserved"]["template"]["spec"]["requirements"][1]["values"] == ["on-demand"]
        # the reserved base first (weight), kept (paid for anyway); the burst released after the delay priced
        assert pools["reserved"]["weight"] > pools["burst"]["weight"]
        assert pools["reserved"]["disruption"]["consolidateAfter"] == "Never"
        assert pools["reserved"]["disruption"]["budgets"] == [{"nodes": "0"}]  # never disrupted, as replayed
    assert pools["burst"]["limits"] == {"cpu": f"{burst_peak * node_cpu:g}", "memory": f"{burst_peak * node_gb:g}Gi"}
    assert pools["burst"]["template"]["spec"]["requirements"][1]["values"] == (
        ["spot", "on-demand"] if tier == "spot" else ["on-demand"])
    assert pools["burst"]["disruption"]["consolidateAfter"] == "300s"
    # the replay releases every empty burst node after the delay, however many at once, and never a busy one
    assert pools["burst"]["disruption"]["budgets"] == [{"nodes": "100%", "reasons": ["Empty"]},
                                                       {"nodes": "0", "reasons": ["Drifted", "Underutilized"]}]
    head = build_manifests(plan, K8sOptions(cluster="c1"))["nodepool.yaml"].split("---", 1)[0]
    assert "Empty 100%" in head and "outside any budget" in head
    assert f"the NodePools' limits sum to {r + burst_peak} nodes" in head
    from k8s_crd import crd_root, validate

    if crd_root() is not None:  # the real CRDs, as tests/plan/test_k8s.py reads them
        for d in docs:
            if d["kind"] == "NodePool":
                validate(d, f"set-{plan.nodes.provider}")


def test_the_headline_node_count_is_the_replayed_peak_of_the_real_mix(tmp_path):
    """A bursty corpus whose peaks are rich in large kinds: the slot sizing (the mix at its mean shares)
    buys fewer nodes than the measured rollouts need at their peaks; the plan buys the replayed peak, the
    brute force's, and keeps the slot count with the rollouts it could not place (the brute force's too)."""
    rng = np.random.default_rng(21)
    starts, ends, kinds = [], [], []
    for step in range(10):  # small kinds most of the time; a few steps of mostly large ones
        t = step * 4000.0
        share = [0.1, 0.1, 0.8] if step % 4 == 3 else [0.8, 0.15, 0.05]
        s = t + rng.uniform(0, 5.0, 200)
        starts.append(s)
        ends.append(s + rng.lognormal(np.log(600.0), 0.5, 200))
        kinds.append(rng.choice(3, 200, p=share))
    start, end, req = np.concatenate(starts), np.concatenate(ends), KINDS[np.concatenate(kinds)]
    plan, history = plan_with_history(tmp_path, start, end, req, price_tier="on_demand")
    nodes = plan.nodes
    cpu, mem, disk = allocatable(plan)
    reqs = list(zip(history.cpu, history.memory_mb, history.disk_mb))
    peak = oracle(list(history.start_s), list(history.end_s), reqs, [NodePoolSpec("f", cpu, mem, disk, 1.0)])["peak"][0]
    fixed = NodePoolSpec("f", cpu, mem, disk, 1.0, min_nodes=nodes.slot_count, max_nodes=nodes.slot_count)
    short = oracle(list(history.start_s), list(history.end_s), reqs, [fixed])["unplaced"]
    assert nodes.replayed_peak == peak and nodes.slot_count_short == short
    assert peak > nodes.slot_count and short > 0  # the corpus shows the defect
    assert nodes.count == peak and "lower bound" in nodes.count_basis
    # every cost figure follows the count bought
    from sandbox_fleet.plan.catalog import find_type, load_catalog

    price = find_type(load_catalog(), nodes.type).on_demand_usd_h
    assert plan.cost.on_demand_per_h == pytest.approx(peak * price, rel=1e-12)

"""``simulate --replay TELEMETRY``: the demo's rollouts replayed on the plan's order, checked against the
brute-force node replay of tests/simulate/test_node_replay.py (not the engine), a hand-priced fixed
fleet, and the reclaim trace's refusals."""

from __future__ import annotations

import json
from datetime import UTC
from pathlib import Path

import jsonschema
import numpy as np
import pytest

from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

from .test_node_replay import oracle

SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "schemas" / "simulate.schema.json"


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from sandbox_fleet.measure.intervals import load_intervals
    from sandbox_fleet.synth import synth

    root = tmp_path_factory.mktemp("replay") / "demo"
    synth(root, preset="rst", scale=0.01, seed=2, progress=False)
    iv = load_intervals([str(root / "trajectories")], tasks=str(root / "tasks"))
    return root, iv


def _replay(run_cli, root, *extra):
    got = run_cli("simulate", "--replay", root / "trajectories", "--tasks", root / "tasks", "--json", *extra)
    assert got.code == 0, got.err
    out = json.loads(got.out)
    jsonschema.validate(out, json.loads(SCHEMA.read_text(encoding="utf-8")))
    return out


def _specs(out):
    n = out["nodes"]
    return [NodePoolSpec(p["name"], p["cpu"], p["memory_gb"] * 1024, p["disk_gb"] * 1024, usd_per_node_h=p["usd_per_node_h"],
                         tier=p["tier"], min_nodes=p["min_nodes"], max_nodes=p["max_nodes"], provision_s=n["provision_s"],
                         scale_down_s=n["scale_down_s"], placement=n["placement"]) for p in n["pools"]]


def test_the_plans_order_replayed_agrees_with_the_brute_force(run_cli, demo):
    root, iv = demo
    out = _replay(run_cli, root, "--reclaim-per-node-h", "0")
    n = out["nodes"]
    assert n["configuration"] == "plan" and n["rollouts"] == iv.count and n["rollouts_assumed_request"] == 0
    req = np.stack([iv.cpu, iv.memory_mb, iv.disk_mb], axis=1)
    want = oracle(list(iv.start_s), list(iv.end_s), [tuple(r) for r in req], _specs(out))
    for k, p in enumerate(n["pools"]):
        assert p["node_hours"] == pytest.approx(want["hours"][k], rel=1e-9, abs=1e-9)
        assert p["peak_nodes"] == want["peak"][k]
        assert p["usd"] == pytest.approx(want["hours"][k] * p["usd_per_node_h"], rel=1e-9, abs=1e-9)
    assert n["waited"] == want["waited"] and n["unplaced"] == want["unplaced"]
    assert n["wait_s_total"] == pytest.approx(want["wait_total"], rel=1e-9)
    assert n["usd_per_h"] == pytest.approx(n["usd"] / (want["span"] / 3600), rel=1e-9)
    by_tier = {t: sum(p["usd"] for p in n["pools"] if p["tier"] == t) for t in n["by_tier"]}
    assert {t: v["usd"] for t, v in n["by_tier"].items()} == pytest.approx(by_tier)
    s = n["series"]
    assert sum(s["stranded_cpu_h"]) == pytest.approx(sum(p["stranded_cpu_h"] for p in n["pools"]), rel=1e-9)
    assert max(max(v) for v in s["nodes_by_pool"].values()) == max(p["peak_nodes"] for p in n["pools"])
    assert n["cap"]["cap_detected"] is True and "capped history" in n["cap"]["basis"]  # the demo ran under a cap


def test_min_equal_max_and_no_scale_down_cost_nodes_times_price_times_span(run_cli, demo):
    root, iv = demo
    out = _replay(run_cli, root, "--reserved-nodes", "5", "--burst-nodes", "0", "--node-scale-down-s", "0",
                  "--reclaim-per-node-h", "0")
    n = out["nodes"]
    reserved = n["pools"][0]
    span_h = (iv.end_s.max() - iv.start_s.min()) / 3600
    assert n["configuration"] == "options" and n["unplaced"] == 0 and n["waited"] == 0
    assert n["usd"] == pytest.approx(5 * reserved["usd_per_node_h"] * span_h, rel=1e-12)
    assert n["node_hours"] == pytest.approx(5 * span_h, rel=1e-12)


def test_a_reclaim_trace_ends_sandboxes_and_is_counted(run_cli, demo, tmp_path):
    root, _ = demo
    trace = tmp_path / "reclaims.csv"
    trace.write_text("time_s,pool\n3600,burst\n7200,reserved\n-50,burst\n", encoding="utf-8")
    out = _replay(run_cli, root, "--reserved-nodes", "1", "--reclaim-trace", trace)
    n = out["nodes"]
    assert n["reclaim_model"] == "trace" and n["reclaim_trace_rows"] == 3
    assert n["reclaims"] + n["reclaim_trace_missed"] == 3
    assert n["reclaim_trace_missed"] >= 1  # at -50 s no node was up yet
    assert n["sandboxes_lost"] == sum(p["sandboxes_lost"] for p in n["pools"])
    assert out["attempts"] == out["rollouts"] + n["sandboxes_lost"]


def test_a_trace_of_iso_timestamps_replays_as_its_seconds_do(run_cli, demo, tmp_path):
    """The same reclaims as seconds from the first start and as timestamps (Z, an offset, none: UTC)
    give the same replay; the first start is read from the release's own Parquet file here."""
    from datetime import datetime, timedelta, timezone

    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    root, _ = demo
    first = pc.min(pq.read_table(root / "trajectories" / "metadata" / "trajectories.parquet",
                                 columns=["started_at"]).column("started_at")).as_py()
    assert first.tzinfo is not None
    seconds = [3600.0, 7200.5, 20000.0, -50.0]
    stamps = [first + timedelta(seconds=s) for s in seconds]
    as_s, as_iso = tmp_path / "s.csv", tmp_path / "iso.csv"
    pools = ["reserved", "burst", "reserved", "burst"]  # the reserved node is up all the history
    as_s.write_text("time_s,pool\n" + "".join(f"{s},{p}\n" for s, p in zip(seconds, pools)), encoding="utf-8")
    cells = [stamps[0].astimezone(UTC).isoformat().replace("+00:00", "Z"),
             stamps[1].astimezone(timezone(timedelta(hours=2))).isoformat(),
             stamps[2].astimezone(UTC).replace(tzinfo=None).isoformat(sep=" "),
             str(seconds[3])]
    as_iso.write_text("time,pool\n" + "".join(f"{c},{p}\n" for c, p in zip(cells, pools)), encoding="utf-8")
    a = _replay(run_cli, root, "--reserved-nodes", "1", "--reclaim-trace", as_s)["nodes"]
    b = _replay(run_cli, root, "--reserved-nodes", "1", "--reclaim-trace", as_iso)["nodes"]
    assert b["reclaim_trace_rows"] == 4 and b["reclaim_trace_timestamps"] == 3 and b["reclaim_trace_naive"] == 1
    assert a["reclaim_trace_timestamps"] == 0
    for key in ("reclaims", "reclaim_trace_missed", "sandboxes_lost", "rerun_sandbox_h", "usd", "node_hours"):
        assert a[key] == b[key], key
    assert a["reclaims"] >= 1
    assert datetime.fromisoformat(cells[0]) == stamps[0]


@pytest.mark.parametrize("body, says", [
    ("when,pool\n1,burst\n", "row 1: a reclaim trace starts with the header 'time,pool'"),
    ("time_s,pool\nsoon,burst\n", "1 of 1 reclaim rows unusable, none used (time: 1 (first row 2: time 'soon' is neither"),
    ("time_s,pool\n5,gpu\n", "(pool: 1 (first row 2: pool 'gpu' is not one of"),
    ("time_s,pool\n5,burst,x\n", "(columns: 1 (first row 2: expected 2 columns"),
    ("time,pool\n5,burst\nlater,burst\n2026-13-01T00:00:00Z,burst\n7,gpu\n",
     "3 of 4 reclaim rows unusable, none used (time: 2 (first row 3: time 'later'"),
])
def test_a_bad_trace_is_one_line_exit_2(run_cli, demo, tmp_path, body, says):
    root, _ = demo
    trace = tmp_path / "t.csv"
    trace.write_text(body, encoding="utf-8")
    got = run_cli("simulate", "--replay", root / "trajectories", "--tasks", root / "tasks", "--reclaim-trace", trace)
    assert got.code == 2 and says in got.err and "Traceback" not in got.err
    assert len(got.err.strip().splitlines()) == 1


def test_simulate_without_a_scenario_or_replay_is_refused(run_cli):
    got = run_cli("simulate")
    assert got.code == 2 and "SCENARIO" in got.err


def test_the_text_view_names_the_pools_and_the_cap(run_cli, demo):
    root, _ = demo
    got = run_cli("simulate", "--replay", root / "trajectories", "--tasks", root / "tasks", "--reclaim-per-node-h", "0")
    assert got.code == 0, got.err
    for words in ("waits caused by provisioning", "reclaims (none)", "cap: the history ran under a cap", "basis:"):
        assert words in got.out


def test_a_measure_summary_is_refused_in_one_line(run_cli, tmp_path):
    summary = tmp_path / "m.json"
    summary.write_text('{"schema_version": 7, "kind": "measure"}', encoding="utf-8")
    got = run_cli("simulate", "--replay", summary)
    assert got.code == 2 and "needs the telemetry itself" in got.err and len(got.err.strip().splitlines()) == 1


def test_the_report_shows_the_replay_by_pool_with_its_chart(run_cli, demo, tmp_path):
    root, _ = demo
    rep = tmp_path / "replay.json"
    got = run_cli("simulate", "--replay", root / "trajectories", "--tasks", root / "tasks", "--reclaim-per-node-h", "0",
                  "-o", rep)
    assert got.code == 0, got.err
    measured = tmp_path / "m.json"
    assert run_cli("measure", root / "trajectories", "--tasks", root / "tasks", "-o", measured).code == 0
    html = tmp_path / "r.html"
    got = run_cli("report", measured, "--simulate", rep, "-o", html)
    assert got.code == 0, got.err
    text = html.read_text(encoding="utf-8")
    out = json.loads(rep.read_text(encoding="utf-8"))["nodes"]
    assert "Replay on nodes" in text and 'id="fig-replay_nodes"' in text
    assert all(f">{p['name']}<" in text for p in out["pools"])
    assert f"{out['usd_per_h']:,.2f}/h" in text


def _capped_steps(cap=40, steps=12, batch=120, seed=8):
    """Synchronous steps of ``batch`` rollouts released at once behind a cap of ``cap`` (a FIFO queue:
    a queued rollout starts when a slot frees), an hour's pause after each step drains."""
    import heapq

    rng = np.random.default_rng(seed)
    starts, ends, kinds, releases = [], [], [], []
    t = 0.0
    for _ in range(steps):
        holds = rng.lognormal(np.log(300.0), 0.4, batch)
        free = [t] * cap
        for h in holds:
            s = heapq.heappop(free)
            starts.append(s)
            ends.append(s + h)
            releases.append(t)
            heapq.heappush(free, s + h)
        kinds.extend(rng.choice(3, batch, p=[0.6, 0.3, 0.1]))
        t = max(ends) + 3600.0
    from .test_node_replay import KINDS

    return np.array(starts), np.array(ends), KINDS[np.array(kinds)], np.array(releases)


def test_a_capped_step_history_is_also_replayed_un_queued_at_its_releases(run_cli, tmp_path):
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "plan"))
    from test_mixed_replay import write_corpus

    start, end, req, release = _capped_steps()
    rollouts, tasks = write_corpus(tmp_path / "capped", start, end, req)
    got = run_cli("simulate", "--replay", rollouts, "--tasks", tasks, "--reclaim-per-node-h", "0", "--json")
    assert got.code == 0, got.err
    n = json.loads(got.out)["nodes"]
    cap = n["cap"]
    assert cap["cap_detected"] is True and cap["steps_detected"] is True
    assert cap["rollouts_moved"] == int(np.count_nonzero(start > release + 1e-6))  # every queued start
    pools = _specs({"nodes": n})
    hold = end - start
    want = oracle(list(release), list(release + hold), [tuple(r) for r in req], pools)
    assert cap["demand_peak_nodes"] == {p.name: want["peak"][k] for k, p in enumerate(pools)}
    assert cap["demand_unplaced"] == want["unplaced"] and cap["demand_waited"] == want["waited"]
    assert sum(cap["demand_peak_nodes"].values()) >= sum(p["peak_nodes"] for p in n["pools"])

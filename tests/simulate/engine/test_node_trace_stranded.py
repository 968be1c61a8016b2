"""A pool made of nodes with a reclaim trace (``[fleet] reclaim_trace``, the replay's reader), and the engine's
stranded cpu / memory / disk (``metrics.node_figures``), against hand-worked cases and a brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from tests.simulate.test_node_replay import KINDS

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.distributions import Deterministic, LogNormal
from sandbox_fleet.simulate.engine.entities import Fleet, FleetNodePool, RetryPolicy
from sandbox_fleet.simulate.engine.metrics import node_figures
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes
from sandbox_fleet.simulate.engine.run import run_workloads
from sandbox_fleet.simulate.engine.workloads import Closed, SyncRL

NODE = {"cpu": 32.0, "memory_mb": 131072.0, "disk_mb": 409600.0}
SMALL = {"cpu": 8.0, "memory_mb": 1e5, "disk_mb": 1e5}


def _trace(tmp_path, rows):
    path = tmp_path / "reclaims.csv"
    path.write_text("time,pool\n" + "".join(f"{t},{k}\n" for t, k in rows))
    return str(path)


def _hand_fleet(tmp_path):
    """One base node of 8 cpu ('spot', min = max = 1, replaced 30 s after a reclaim) and an unused burst pool;
    the trace: before the run, at 40 and 120 on the base, at 50 on the burst pool, after the run."""
    trace = _trace(tmp_path, [(-5, "spot"), (40, "spot"), (50, "burst"), (120, "spot"), (1000, "spot")])
    pools = [FleetNodePool(name="spot", tier="spot", usd_per_node_h=3.6, min_nodes=1, max_nodes=1, provision_s=30.0,
                           **SMALL),
             FleetNodePool(name="burst", tier="spot", usd_per_node_h=1.0, max_nodes=2, provision_s=30.0, **SMALL)]
    return Fleet(name="f", node_pools=pools, reclaim_trace=trace)


def _hand_workload():
    return Closed(population=4, n=4, holds=Deterministic(100.0), request=(2.0, 1.0, 1.0),
                  retry=RetryPolicy(max_retries=2, on=("preemption",)))


def test_a_reclaim_trace_ends_every_sandbox_on_its_node_by_hand(tmp_path):
    """Four rollouts of 2 cpu fill the base node at 0 (holds 100 s). The trace reclaims it at 40: the four
    attempts end (40 s run each), are retried at once and wait for the replacement, launched at 40, which
    joins at 70; they run 70 -> 120, when the trace reclaims that node too: retried again, they wait for
    the next replacement (joins 150) and finish 150 -> 250. The burst row at 50 finds no burst node up
    (missed), so does the row before the run; the row at 1000 comes after the run (never reached).
    Billing: the base nodes 0 -> 40, 40 -> 120 and 120 -> 250 (the last end): 250 s at $3.6/h = $0.25.
    Stranded cpu: 8 cpu x 250 s billed, 4 x 2 cpu x (40 + 50 + 100) s requested: 480 cpu-s, the two
    30-s joins."""
    res = run_workloads(_hand_fleet(tmp_path), [_hand_workload()], seed=0)
    order = np.lexsort((res.rollout, res.attempt))
    start, finish, arrival = res.start_s[order], res.finish_s[order], res.arrival_s[order]
    assert np.array_equal(res.attempt[order], [0] * 4 + [1] * 4 + [2] * 4)
    assert np.allclose(start, [0.0] * 4 + [70.0] * 4 + [150.0] * 4)
    assert np.allclose(finish, [40.0] * 4 + [120.0] * 4 + [250.0] * 4)
    assert np.allclose(arrival, [0.0] * 4 + [40.0] * 4 + [120.0] * 4)
    assert np.array_equal(res.phase[order][:8], [4] * 8)  # preemption
    spot, burst = res.nodes
    assert (spot["reclaims"], spot["sandboxes_lost"], spot["launched"], spot["trace_missed"]) == (2, 8, 2, 1)
    assert (burst["reclaims"], burst["launched"], burst["trace_missed"]) == (0, 0, 1)
    assert spot["node_hours"] == pytest.approx(250.0 / 3600.0, rel=1e-12)
    assert spot["usd"] == pytest.approx(0.25, rel=1e-12)
    assert spot["node_launch_s"] == [0.0, 40.0, 120.0] and spot["node_release_s"] == [40.0, 120.0, 250.0]
    block = node_figures(res)
    assert block["reclaim_trace_missed"] == 2
    assert block["stranded_cpu_h"] == pytest.approx(480.0 / 3600.0, rel=1e-9)
    assert block["stranded_cpu_share"] == pytest.approx(480.0 / 2000.0, rel=1e-9)


def test_a_reclaim_trace_compiled_and_as_plain_python_give_the_same_bits(tmp_path):
    from sandbox_fleet.simulate.engine.fast import admit_loop
    from sandbox_fleet.simulate.engine.prepare import prepare

    rng = np.random.default_rng(3)
    rows = [(float(t), ["r", "b"][int(k)]) for t, k in zip(np.sort(rng.uniform(0, 4000, 40)), rng.integers(0, 2, 40))]
    trace = _trace(tmp_path, rows)
    pools = [FleetNodePool(name="r", tier="reserved", usd_per_node_h=2.0, min_nodes=2, max_nodes=2, provision_s=20.0,
                           **NODE),
             FleetNodePool(name="b", tier="spot", usd_per_node_h=3.0, max_nodes=40, scale_down_s=120.0, provision_s=45.0,
                           **NODE)]
    outs = []
    for compiled in (False, True):
        wls = [SyncRL(name=f"rl{j}", batch=60, steps=3, train_s=60.0, holds=LogNormal(600.0, 0.8),
                      request=tuple(KINDS[j]), retry=RetryPolicy(max_retries=5, on=("preemption",))) for j in range(3)]
        outs.append(admit_loop.run(prepare(Fleet(name="f", node_pools=pools, reclaim_trace=trace), wls, 4),
                                   compiled=compiled))
    a, b = outs
    for key in a.first:
        assert np.array_equal(a.first[key], b.first[key], equal_nan=True), key
    assert a.extra == b.extra and a.nodes == b.nodes
    assert sum(row["reclaims"] for row in a.nodes) > 5 and len(a.extra["rollout"]) > 0


def test_a_bad_reclaim_trace_is_one_line_naming_the_file_and_row(tmp_path):
    pools = [FleetNodePool(name="spot", max_nodes=1, **SMALL)]
    bad = _trace(tmp_path, [(10, "spot"), ("2026-01-01T00:00:00Z", "spot"), (20, "nope")])
    with pytest.raises(InputError, match=r"reclaims.csv: 2 of 3 reclaim rows unusable.*timestamp; give seconds.*"
                                         r"pool 'nope' is not one of"):
        run_workloads(Fleet(node_pools=pools, reclaim_trace=bad), [_hand_workload()], seed=0)
    with pytest.raises(InputError, match="reclaim_trace.*needs a pool made of nodes"):
        Fleet(cap=3, reclaim_trace=bad)


def _brute_stranded(launch, release, cap, begin, end, req, edges):
    """Allocatable up minus requested running, integrated bin by bin over every elementary interval between
    consecutive breakpoints (a sweep that asks each node and each attempt whether it covers the interval)."""
    points = np.unique(np.concatenate([launch, release, begin, end, edges]))
    out = np.zeros((3, edges.size - 1))
    for a, b in itertools.pairwise(points):
        mid = 0.5 * (a + b)
        live = cap[(launch <= mid) & (mid < release)].sum(axis=0)
        used = req[(begin <= mid) & (mid < end)].sum(axis=0)
        x = int(np.searchsorted(edges, mid, side="right") - 1)
        if 0 <= x < edges.size - 1:
            out[:, x] += (live - used) * (b - a) / 3600.0
    return out


@pytest.mark.parametrize("provision_s", [0.0, 45.0])
def test_the_engines_stranded_series_is_the_brute_force_over_its_nodes_and_attempts(provision_s, tmp_path):
    """The stranded series (the replay's computation over the engine's intervals) equals a brute-force sweep;
    the nodes' billed spans add up to each pool's node-hours (accumulated apart, in the kernel); with no
    provisioning (nothing feeds back) the total is the node replay's over the same attempts."""
    pools = [FleetNodePool(name="r", tier="reserved", usd_per_node_h=2.0, min_nodes=2, max_nodes=2, **NODE),
             FleetNodePool(name="b", tier="spot", usd_per_node_h=3.0, max_nodes=40, scale_down_s=300.0,
                           provision_s=provision_s, **NODE)]
    wls = [SyncRL(name=f"rl{j}", batch=80, steps=4, train_s=120.0, holds=LogNormal(240.0, 1.1), request=tuple(KINDS[j]))
           for j in range(3)]
    res = run_workloads(Fleet(name="f", node_pools=pools), wls, seed=3)
    block = node_figures(res)
    for k, row in enumerate(res.nodes):
        spans = np.asarray(row["node_release_s"]) - np.asarray(row["node_launch_s"])
        assert spans.sum() / 3600.0 == pytest.approx(row["node_hours"], rel=1e-12)
        assert len(spans) == row["launched"] + pools[k].min_nodes
    launch = np.concatenate([row["node_launch_s"] for row in res.nodes])
    release = np.concatenate([row["node_release_s"] for row in res.nodes])
    cap = np.array([[p.cpu, p.memory_mb, p.disk_mb] for p in pools])[
        np.concatenate([[k] * len(row["node_launch_s"]) for k, row in enumerate(res.nodes)]).astype(int)]
    req = np.array([res.workloads[w].request for w in res.workload])
    ran = ~np.isnan(res.start_s)
    s = block["series"]
    width = s["span_h"] * 3600.0
    edges = launch.min() + width * np.arange(len(s["t_h"]) + 1)
    edges[-1] = max(edges[-1], release.max())
    want = _brute_stranded(launch, release, cap, res.start_s[ran], res.finish_s[ran], req[ran], edges)
    assert np.allclose(s["stranded_cpu_h"], want[0], rtol=1e-9, atol=1e-9)
    assert np.allclose(np.asarray(s["stranded_memory_gb_h"]) * 1024, want[1], rtol=1e-9, atol=1e-6)
    assert np.allclose(np.asarray(s["stranded_disk_gb_h"]) * 1024, want[2], rtol=1e-9, atol=1e-6)
    assert block["stranded_cpu_h"] == pytest.approx(want[0].sum(), rel=1e-9)
    assert min(s["stranded_cpu_h"]) >= -1e-9  # never more requested than up
    if provision_s == 0.0:
        specs = [NodePoolSpec(p.name, p.cpu, p.memory_mb, p.disk_mb, p.usd_per_node_h, min_nodes=p.min_nodes, max_nodes=p.max_nodes,
                              scale_down_s=p.scale_down_s) for p in pools]
        rep = replay_nodes(res.start_s[ran], res.finish_s[ran], req[ran, 0], req[ran, 1], req[ran, 2], specs)
        assert block["stranded_cpu_h"] == pytest.approx(sum(p.stranded_cpu_h for p in rep.pools), rel=1e-9)


def test_a_scenarios_reclaim_trace_is_relative_to_its_file_and_reaches_the_summary(tmp_path):
    """The hand-worked case as a scenario file: the trace path is relative to the file, and the summary's
    node block carries the reclaims, the missed rows and the stranded cpu worked out above."""
    from sandbox_fleet.simulate.scenario.run import simulate_scenario

    (tmp_path / "traces").mkdir()
    _trace(tmp_path / "traces", [(-5, "spot"), (40, "spot"), (50, "burst"), (120, "spot"), (1000, "spot")])
    (tmp_path / "s.toml").write_text("""
[fleet]
name = "f"
reclaim_trace = "traces/reclaims.csv"

[[fleet.node_pools]]
name = "spot"
tier = "spot"
cpu = 8.0
memory_mb = 100000
disk_mb = 100000
usd_per_node_h = 3.6
min_nodes = 1
max_nodes = 1
provision_s = 30

[[fleet.node_pools]]
name = "burst"
tier = "spot"
cpu = 8.0
memory_mb = 100000
disk_mb = 100000
max_nodes = 2
provision_s = 30

[workload]
kind = "closed"
population = 4
count = 4
request = { cpu = 2.0, memory_mb = 1, disk_mb = 1 }

[hold]
dist = "deterministic"
value_s = 100

[retry]
max_retries = 2
on = ["preemption"]
""")
    s = simulate_scenario(tmp_path / "s.toml")
    nodes = s.node_pools
    assert nodes is not None and nodes.pools is not None
    assert [(p.reclaims, p.sandboxes_lost, p.trace_missed) for p in nodes.pools] == [(2, 8, 1), (0, 0, 1)]
    assert nodes.reclaim_trace_missed == 2
    assert nodes.usd == pytest.approx(0.25, rel=1e-12)
    assert nodes.stranded_cpu_h == pytest.approx(480.0 / 3600.0, rel=1e-9)


REPLAY_T0_US = 1_796_638_500_000_000  # the telemetry's first start: 2026-12-07T10:15:00Z


def _replay_scenario(tmp_path, trace_header: str, trace_rows: list[str], start_s: float = 0.0):
    """The hand-worked fleet (one 8-cpu base node, replaced 30 s after a reclaim; an unused burst pool) fed
    by a replay of telemetry: 4 rollouts of 100 s, all starting at ``REPLAY_T0_US``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from sandbox_fleet.telemetry import ROLLOUT_SCHEMA

    n = 4
    start = np.full(n, REPLAY_T0_US, dtype="int64")
    cols = {"id": pa.array([f"r{i}" for i in range(n)]),
            "started_at": pa.array(start).cast(pa.timestamp("us", tz="UTC")),
            "finished_at": pa.array(start + 100_000_000).cast(pa.timestamp("us", tz="UTC"))}
    pq.write_table(pa.Table.from_arrays([cols.get(f.name, pa.nulls(n, f.type)) for f in ROLLOUT_SCHEMA],
                                        schema=ROLLOUT_SCHEMA), tmp_path / "runs.parquet")
    (tmp_path / "reclaims.csv").write_text(trace_header + "\n" + "".join(r + "\n" for r in trace_rows))
    node = "cpu = 8.0\nmemory_mb = 100000\ndisk_mb = 100000\nprovision_s = 30\n"
    (tmp_path / "s.toml").write_text(f"""
[fleet]
name = "f"
reclaim_trace = "reclaims.csv"

[[fleet.node_pools]]
name = "spot"
tier = "spot"
usd_per_node_h = 3.6
min_nodes = 1
max_nodes = 1
{node}
[[fleet.node_pools]]
name = "burst"
max_nodes = 2
{node}
[workload]
kind = "replay"
telemetry = "runs.parquet"
start_s = {start_s}
request = {{ cpu = 2.0, memory_mb = 1, disk_mb = 1 }}

[retry]
max_retries = 2
on = ["preemption"]
""")
    return tmp_path / "s.toml"


def _reclaim_figures(path):
    from sandbox_fleet.simulate.scenario.run import simulate_scenario

    pools = simulate_scenario(path).node_pools
    assert pools is not None and pools.pools is not None
    return [(p.reclaims, p.sandboxes_lost, p.trace_missed) for p in pools.pools], pools.usd


@pytest.mark.parametrize("header,rows", [
    ("time,pool", ["2026-12-07T10:14:55Z,spot", "2026-12-07T10:15:40Z,spot", "2026-12-07 11:15:50+01:00,burst",
                   "2026-12-07T10:17:00,spot"]),
    ("epoch_s,pool", ["1796638495,spot", "1796638540,spot", "1796638550.0,burst", "1796638620,spot"]),
], ids=["iso8601", "epoch"])
def test_a_scenarios_reclaim_trace_takes_timestamps_from_the_replayed_telemetrys_first_start(tmp_path, header, rows):
    """The hand-worked case (reclaims at -5, 40 on the base node, 50 on the burst pool, 120 on the base)
    with its times as wall-clock instants: the replayed telemetry starts at 10:15:00Z, so 10:14:55Z is -5 s,
    10:15:40Z 40 s, 11:15:50+01:00 (= 10:15:50Z) 50 s, a naive 10:17:00 (read as UTC) 120 s; in Unix seconds
    1796638500 is 10:15:00Z. Same figures as the seconds: 2 reclaims, 8 sandboxes lost, a row missed on
    each pool, $0.25 (250 s of the base node at $3.6/h). With ``start_s = 20`` the telemetry's first start
    is run time 20, and so is the origin: every reclaim is 20 s later in run time, as the starts and the
    base node's launch, so the bill is again 20 -> 270 = 250 s (an origin at run time 0 would reclaim at 40
    and 120, 20 s and 100 s after the launch, and bill 20 -> 250 = 230 s)."""
    for sub in "abc":
        (tmp_path / sub).mkdir()
    secs = _reclaim_figures(_replay_scenario(tmp_path / "a", "time,pool", ["-5,spot", "40,spot", "50,burst", "120,spot"]))
    stamps = _reclaim_figures(_replay_scenario(tmp_path / "b", header, rows))
    assert secs == stamps == ([(2, 8, 1), (0, 0, 1)], pytest.approx(0.25, rel=1e-12))
    later = _reclaim_figures(_replay_scenario(tmp_path / "c", header, rows, start_s=20.0))
    assert later == ([(2, 8, 1), (0, 0, 1)], pytest.approx(0.25, rel=1e-12))


def test_a_timestamp_without_a_replayed_telemetry_is_one_line_naming_the_file_and_row(tmp_path, run_cli):
    """The same trace in a scenario of closed rollouts (no telemetry, so no wall-clock origin): exit 2, one
    line naming the file, the row and why; the epoch header likewise."""
    for header, row in (("time,pool", "2026-12-07T10:15:40Z,spot"), ("epoch_s,pool", "1796638540,spot")):
        (tmp_path / "reclaims.csv").write_text(f"{header}\n40,spot\n{row}\n" if header == "time,pool" else f"{header}\n{row}\n")
        scen = tmp_path / "s.toml"
        scen.write_text('[fleet]\nname = "f"\nreclaim_trace = "reclaims.csv"\n[[fleet.node_pools]]\nname = "spot"\n'
                        'cpu = 8.0\nmemory_mb = 100000\ndisk_mb = 100000\nmax_nodes = 1\n[workload]\nkind = "closed"\n'
                        'population = 2\ncount = 2\nrequest = { cpu = 2.0, memory_mb = 1, disk_mb = 1 }\n'
                        '[hold]\ndist = "deterministic"\nvalue_s = 10\n')
        out = run_cli("simulate", scen)
        assert out.code == 2, out
        line = out.err.strip()
        assert "\n" not in line and "Traceback" not in line
        first = 3 if header == "time,pool" else 2
        assert "reclaims.csv" in line and f"first row {first}" in line and "replayed telemetry's first start" in line

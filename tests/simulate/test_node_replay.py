"""The node replay (simulate/engine/nodes.py) against an independent node-level brute force.

The oracle below is written from the rules in the module's docstring, not from its kernel: nodes
are Python objects holding the set of their running rollouts, every start re-derives which nodes
are gone by looking at each node's own history, and billing is summed per node at the end.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes

KINDS = np.array([[1.0, 2048.0, 6144.0], [2.0, 8192.0, 10240.0], [8.0, 16384.0, 51200.0]])


class _Node:
    def __init__(self, ident, pool, launch, ready, permanent):
        self.id, self.pool, self.launch, self.ready, self.permanent = ident, pool, launch, ready, permanent
        self.running: dict[int, float] = {}  # rollout -> its end
        self.emptied_at: float | None = None  # when its last sandbox ended (None while busy or never used)
        self.gone_at: float | None = None


def oracle(start, end, req, pools):
    """Node-hours and peak per pool, waits and unplaced, by brute force."""
    n = len(start)
    order = sorted(range(n), key=lambda i: (start[i], i))
    t0 = start[order[0]]
    nodes: list[_Node] = []
    for k, p in enumerate(pools):
        for _ in range(p.min_nodes):
            nodes.append(_Node(len(nodes), k, t0, t0, True))
    peak = [p.min_nodes for p in pools]
    waited, wait_total, unplaced = 0, 0.0, 0
    ends = {}
    for i in order:
        t = start[i]
        for nd in nodes:
            if nd.gone_at is not None:
                continue
            done = [j for j, e in nd.running.items() if e <= t]
            for j in done:
                del nd.running[j]
            if done and not nd.running:
                nd.emptied_at = max(ends[j] for j in done)
            if not nd.running and not nd.permanent and nd.emptied_at is not None \
                    and nd.emptied_at + pools[nd.pool].scale_down_s < t:
                nd.gone_at = nd.emptied_at + pools[nd.pool].scale_down_s
        live = [nd for nd in nodes if nd.gone_at is None]

        def fits(nd, i=i):
            p = pools[nd.pool]
            capv = (p.cpu, p.memory_mb, p.disk_mb)
            return all(sum(req[j][r] for j in nd.running) + req[i][r] <= capv[r] * (1 + 1e-12) for r in range(3))

        def score(nd):
            p = pools[nd.pool]
            s = sum(req[j][0] for j in nd.running) / p.cpu + sum(req[j][1] for j in nd.running) / p.memory_mb
            return -s if p.placement == "spread" else s

        chosen = None
        for k in range(len(pools)):
            cands = [nd for nd in live if nd.pool == k and fits(nd)]
            if cands:
                chosen = sorted(cands, key=lambda nd: (-score(nd), nd.id))[0]
                break
        if chosen is None:
            for k, p in enumerate(pools):
                count = sum(1 for nd in live if nd.pool == k)
                if p.max_nodes is not None and count >= p.max_nodes:
                    continue
                if any(req[i][r] > (p.cpu, p.memory_mb, p.disk_mb)[r] * (1 + 1e-12) for r in range(3)):
                    continue
                chosen = _Node(len(nodes), k, t, t + p.provision_s, False)
                nodes.append(chosen)
                peak[k] = max(peak[k], count + 1)
                break
        if chosen is None:
            unplaced += 1
            continue
        begin = max(t, chosen.ready)
        if begin > t:
            waited += 1
            wait_total += begin - t
        ends[i] = begin + (end[i] - start[i])
        chosen.running[i] = ends[i]
        chosen.emptied_at = None
    last = max(ends.values())
    hours = [0.0] * len(pools)
    for nd in nodes:
        if nd.gone_at is None:
            if nd.permanent:
                nd.gone_at = last
            else:
                nd.gone_at = max(nd.running.values(), default=nd.emptied_at) + pools[nd.pool].scale_down_s
        hours[nd.pool] += (nd.gone_at - nd.launch) / 3600.0
    return {"hours": hours, "peak": peak, "waited": waited, "wait_total": wait_total, "unplaced": unplaced,
            "span": last - t0, "ends": ends}


def bursty_rl(seed=3, steps=40, batch=300, sigma=1.1):
    """Synchronous RL steps: a batch released at once, heavy-tailed holds (most short, a few long), the
    next step when the whole batch has ended plus a training pause; three request kinds."""
    rng = np.random.default_rng(seed)
    starts, ends, kinds = [], [], []
    t = 0.0
    for _ in range(steps):
        holds = rng.lognormal(np.log(240.0), sigma, batch)
        s = t + rng.uniform(0, 5.0, batch)
        starts.append(s)
        ends.append(s + holds)
        kinds.append(rng.choice(3, batch, p=[0.7, 0.2, 0.1]))
        t = float((s + holds).max()) + 120.0
    return np.concatenate(starts), np.concatenate(ends), KINDS[np.concatenate(kinds)]


def smooth_open(seed=5, n=4000, rate_per_s=0.5, hold_s=600.0):
    """Poisson arrivals, exponential holds: an open, smooth load of three request kinds."""
    rng = np.random.default_rng(seed)
    s = np.cumsum(rng.exponential(1.0 / rate_per_s, n))
    return s, s + rng.exponential(hold_s, n), KINDS[rng.choice(3, n, p=[0.5, 0.3, 0.2])]


def pools_two(reserved=2, placement="pack", provision_s=60.0, scale_down_s=300.0, cap=(32.0, 131072.0, 409600.0)):
    return [NodePoolSpec("r", *cap, usd_per_node_h=2.0, tier="reserved", min_nodes=reserved, max_nodes=reserved,
                         placement=placement),
            NodePoolSpec("b", *cap, usd_per_node_h=3.0, tier="spot", provision_s=provision_s,
                         scale_down_s=scale_down_s, placement=placement)]


def _compare(start, end, req, pools):
    got = replay_nodes(start, end, req[:, 0], req[:, 1], req[:, 2], pools)
    want = oracle(list(start), list(end), [tuple(r) for r in req], pools)
    for k, p in enumerate(got.pools):
        assert p.node_hours == pytest.approx(want["hours"][k], rel=1e-9, abs=1e-9)
        assert p.peak_nodes == want["peak"][k]
    assert got.waited == want["waited"]
    assert got.wait_s_total == pytest.approx(want["wait_total"], rel=1e-9, abs=1e-9)
    assert got.unplaced == want["unplaced"]
    assert got.span_s == pytest.approx(want["span"], rel=1e-12)
    return got


@pytest.mark.parametrize("placement", ["pack", "spread"])
@pytest.mark.parametrize("delays", [(0.0, 0.0), (60.0, 300.0), (45.0, 0.0)])
def test_bursty_rl_corpus_agrees_with_the_brute_force(placement, delays):
    s, e, q = bursty_rl(steps=12, batch=200)
    got = _compare(s, e, q, pools_two(reserved=3, placement=placement, provision_s=delays[0], scale_down_s=delays[1]))
    assert got.pools[1].launched > 0  # the burst pool did launch and release nodes


@pytest.mark.parametrize("placement", ["pack", "spread"])
def test_smooth_open_corpus_agrees_with_the_brute_force(placement):
    s, e, q = smooth_open(n=2500)
    _compare(s, e, q, pools_two(reserved=4, placement=placement))


def test_the_demo_corpus_agrees_with_the_brute_force(tmp_path):
    from sandbox_fleet.measure.intervals import load_intervals
    from sandbox_fleet.synth import synth

    synth(tmp_path / "demo", preset="rst", scale=0.01, seed=2, progress=False)
    iv = load_intervals([str(tmp_path / "demo" / "trajectories")], tasks=str(tmp_path / "demo" / "tasks"))
    assert iv.unknown_request == 0 and iv.count > 1000
    req = np.stack([iv.cpu, iv.memory_mb, iv.disk_mb], axis=1)
    small = (8.0, 32768.0, 102400.0)  # a small node, so the demo needs several
    _compare(iv.start_s, iv.end_s, req, pools_two(reserved=1, cap=small))


def test_min_equal_max_and_no_scale_down_costs_nodes_times_price_times_span():
    s, e, q = bursty_rl(steps=6, batch=100)
    pool = NodePoolSpec("fixed", 64.0, 262144.0, 1e6, usd_per_node_h=1.7, tier="reserved", min_nodes=7, max_nodes=7)
    got = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], [pool])
    span_h = (e.max() - s.min()) / 3600.0
    assert got.unplaced == 0 and got.waited == 0
    assert got.span_s == e.max() - s.min()
    assert got.usd == pytest.approx(7 * 1.7 * span_h, rel=1e-12)
    assert got.pools[0].node_hours == pytest.approx(7 * span_h, rel=1e-12)


def test_a_hand_case():
    """Two 4-cpu rollouts on 4-cpu nodes, overlapping: two nodes; the second joins 10 s late and lingers 5 s."""
    pool = NodePoolSpec("b", 4.0, 1e6, 1e6, usd_per_node_h=3600.0, provision_s=10.0, scale_down_s=5.0)
    start, end = np.array([0.0, 20.0]), np.array([100.0, 50.0])
    got = replay_nodes(start, end, np.array([4.0, 4.0]), np.zeros(2), np.zeros(2), [pool])
    # node 1: launch 0, ready 10, rollout 10..110, released 115 -> 115 s; node 2: launch 20, rollout 30..60, gone 65 -> 45 s
    assert got.pools[0].node_hours * 3600 == pytest.approx(115.0 + 45.0)
    assert got.usd == pytest.approx(160.0)
    assert got.waited == 2 and got.wait_s_total == pytest.approx(20.0)
    assert got.pools[0].peak_nodes == 2 and got.span_s == pytest.approx(110.0)
    assert got.pools[0].stranded_cpu_h * 3600 == pytest.approx(4 * 160.0 - 4 * 100.0 - 4 * 30.0)


def test_zero_length_holds_and_ties_agree_with_the_brute_force():
    """Starts and ends on a coarse grid (many ties, zero-length holds): ends come before starts at one instant."""
    rng = np.random.default_rng(9)
    s = rng.integers(0, 200, 1500).astype(float) * 10.0
    e = s + rng.integers(0, 4, 1500).astype(float) * 10.0
    q = KINDS[rng.choice(3, 1500)]
    for delays in ((0.0, 0.0), (10.0, 10.0)):
        _compare(s, e, q, pools_two(reserved=1, provision_s=delays[0], scale_down_s=delays[1], cap=(16.0, 65536.0, 204800.0)))


def test_a_rollout_too_big_for_every_node_is_counted_unplaced():
    pool = NodePoolSpec("b", 4.0, 1e6, 1e6, usd_per_node_h=1.0)
    got = replay_nodes(np.array([0.0, 1.0]), np.array([5.0, 6.0]), np.array([2.0, 8.0]), np.zeros(2), np.zeros(2), [pool])
    assert got.unplaced == 1 and got.placed == 1 and list(got.node_of) == [0, -1]


@pytest.mark.parametrize("bad", [{"cpu": -1.0}, {"min_nodes": 3, "max_nodes": 2}, {"placement": "random"},
                                 {"scale_down_s": math.inf}])
def test_bad_pools_are_refused_in_one_line(bad):
    from sandbox_fleet.errors import InputError

    kw = {"name": "p", "cpu": 4.0, "memory_mb": 1.0, "disk_mb": 1.0, "usd_per_node_h": 1.0} | bad
    with pytest.raises(InputError, match="node pool 'p'"):
        NodePoolSpec(**kw)


def test_nodes_over_time_is_the_most_up_in_each_bin_counted_directly():
    s, e, q = bursty_rl(steps=6, batch=150)
    got = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], pools_two(reserved=2))
    bins = 50
    edges, up = got.nodes_over_time(bins)
    width = edges[1] - edges[0]
    assert got.node_pool.size == 2 + got.pools[1].launched
    for k in range(2):
        mine = got.node_pool == k
        launch, release = got.node_launch_s[mine], got.node_release_s[mine]
        hours = float(np.sum(release - launch)) / 3600.0
        assert hours == pytest.approx(got.pools[k].node_hours, rel=1e-12)  # the billed intervals are the node-hours
        events = np.concatenate([launch, release])
        for b in range(bins):
            lo = edges[b]
            hi = lo + width if b < bins - 1 else np.inf
            probes = [lo, *events[(events >= lo) & (events < hi)]]
            most = max(int(np.sum((launch <= t) & (release > t))) for t in probes)
            assert up[k, b] == most, (k, b)
    assert up[0].max() == 2 and up[1].max() == got.pools[1].peak_nodes


# --- reclaims ------------------------------------------------------------------------------------------


def test_a_traced_reclaim_ends_every_sandbox_on_its_node_by_hand():
    """Two 2-cpu rollouts on one 4-cpu node (0..100 and 20..50); a reclaim at 40 ends both; they restart
    at 40 on a new node (no join delay): 40..140 and 40..70; the new node is released at 140."""
    pool = NodePoolSpec("spot", 4.0, 1e6, 1e6, usd_per_node_h=3600.0, tier="spot")
    got = replay_nodes(np.array([0.0, 20.0]), np.array([100.0, 50.0]), np.array([2.0, 2.0]), np.zeros(2), np.zeros(2),
                       [pool], reclaim_trace=(np.array([40.0]), np.array([0])))
    p = got.pools[0]
    assert (p.reclaims, p.sandboxes_lost, p.most_lost) == (1, 2, 2)
    assert p.rerun_sandbox_h * 3600 == pytest.approx(40.0 + 20.0)  # what the two attempts had run
    assert p.node_hours * 3600 == pytest.approx(40.0 + 100.0)  # billed launch to reclaim, then 40..140
    assert list(got.end_s) == [140.0, 70.0] and got.span_s == 140.0
    assert p.launched == 2 and p.peak_nodes == 1
    # stranded: 4 cpu x 140 s billed; requested 2 x (40 + 20) lost + 2 x (100 + 30) re-run
    assert p.stranded_cpu_h * 3600 == pytest.approx(4 * 140.0 - 2 * 60.0 - 2 * 130.0)


def test_a_reclaimed_base_node_is_replaced_and_its_rerun_waits_for_the_join():
    pool = NodePoolSpec("base", 4.0, 1e6, 1e6, usd_per_node_h=1.0, tier="spot", min_nodes=1, max_nodes=1,
                        provision_s=10.0)
    got = replay_nodes(np.array([0.0]), np.array([100.0]), np.array([1.0]), np.zeros(1), np.zeros(1), [pool],
                       reclaim_trace=(np.array([50.0, 1000.0]), np.array([0, 0])))
    # node 0 billed 0..50; its replacement launched at 50, joins at 60: the re-run runs 60..160
    assert got.waited == 1 and got.wait_s_total == pytest.approx(10.0)
    assert list(got.end_s) == [160.0]
    assert got.pools[0].node_hours * 3600 == pytest.approx(50.0 + 110.0)
    assert got.pools[0].reclaims == 1 and got.trace_missed == 0  # the reclaim at 1000 s comes after the work


def test_a_trace_reclaim_of_a_pool_with_no_node_up_is_counted_missed():
    pools = pools_two(reserved=1)
    got = replay_nodes(np.array([0.0]), np.array([10.0]), np.array([1.0]), np.zeros(1), np.zeros(1), pools,
                       reclaim_trace=(np.array([5.0]), np.array([1])))
    assert got.trace_missed == 1 and got.reclaims == 0


def _restart_moments(lam_per_s, hold_s):
    """Restart from scratch under Poisson reclaims at rate lam on a hold h: the mean and variance of the
    work lost before the attempt that finishes, E[T] - h with E[T] = (e^{lam h} - 1) / lam, and
    Var[T] = (e^{2 lam h} - 2 lam h e^{lam h} - 1) / lam^2 (T the time to finish)."""
    x = lam_per_s * hold_s
    mean = math.expm1(x) / lam_per_s - hold_s
    var = (math.exp(2 * x) - 2 * x * math.exp(x) - 1) / lam_per_s**2
    return mean, var


@pytest.mark.parametrize("per_node", [1, 4])
def test_rerun_sandbox_hours_match_the_closed_form_per_hold(per_node):
    """Two holds (300 s and 1,200 s) at 2 reclaims per node-h: each hold's mean re-run work matches the
    closed form, whether sandboxes lose alone (a node holds one) or four at a time (same expectation)."""
    rng = np.random.default_rng(11)
    n = 24_000
    start = np.sort(rng.uniform(0, 200 * 3600.0, n))
    hold = np.where(rng.random(n) < 0.5, 300.0, 1200.0)
    pool = NodePoolSpec("spot", float(per_node), 1e9, 1e9, usd_per_node_h=1.0, tier="spot", reclaim_per_node_h=2.0)
    got = replay_nodes(start, start + hold, np.ones(n), np.zeros(n), np.zeros(n), [pool], seed=5)
    assert got.unplaced == 0 and got.pools[0].reclaims > 0
    lost = np.zeros(n)
    np.add.at(lost, got.lost_rollout, got.lost_end_s - got.lost_begin_s)
    assert got.pools[0].rerun_sandbox_h * 3600 == pytest.approx(lost.sum(), rel=1e-12)
    for h in (300.0, 1200.0):
        mine = hold == h
        mean, var = _restart_moments(2.0 / 3600, h)
        # rollouts sharing a node are correlated: the standard error is widened by the node's sandboxes
        se = math.sqrt(var * per_node / mine.sum())
        assert abs(lost[mine].mean() - mean) < 4 * se, (h, lost[mine].mean(), mean, se)
        ends = got.end_s[mine] - start[mine]  # every rollout finished its whole hold after its re-runs
        assert np.all(ends >= h - 1e-9)


def test_correlated_per_node_losses_widen_the_spread_of_a_steps_rerun_work():
    """Synchronous steps of 64 rollouts (600 s holds) at 0.6 reclaims per node-h: on nodes of one sandbox
    the per-step re-run work is a sum of 64 independent losses (sd sqrt(64) sigma); on one 64-sandbox
    node a reclaim ends them all (sd 64 sigma): same mean, 8x the spread, both as the closed form says.
    The step's makespan goes the other way on an elastic fleet: independent losses hit some sandbox of
    almost every step (each extends the step), correlated ones few steps (the mean step is shorter)."""
    steps, batch, hold_s, lam_h = 1000, 64, 600.0, 0.6
    start = np.repeat(np.arange(steps) * 36_000.0, batch)
    n = start.size
    mean, var = _restart_moments(lam_h / 3600, hold_s)
    got = {}
    for per_node in (1, batch):
        pool = NodePoolSpec("spot", float(per_node), 1e9, 1e9, usd_per_node_h=1.0, tier="spot", reclaim_per_node_h=lam_h)
        r = replay_nodes(start, start + hold_s, np.ones(n), np.zeros(n), np.zeros(n), [pool], seed=7)
        work = np.zeros(steps)
        np.add.at(work, r.lost_rollout // batch, r.lost_end_s - r.lost_begin_s)
        makespan = r.end_s.reshape(steps, batch).max(axis=1) - start[::batch]
        got[per_node] = (work, makespan)
    for per_node, sd_want in ((1, math.sqrt(batch * var)), (batch, batch * math.sqrt(var))):
        work = got[per_node][0]
        assert abs(work.mean() - batch * mean) < 4 * sd_want / math.sqrt(steps)
        assert work.std(ddof=1) == pytest.approx(sd_want, rel=0.15)
    assert got[batch][0].std(ddof=1) > 5 * got[1][0].std(ddof=1)
    assert got[batch][1].mean() < got[1][1].mean()


def test_compiled_and_interpreted_replays_give_the_same_bits(monkeypatch):
    """worth_it sends small replays to the plain-Python kernel: the same source, the same figures."""
    from sandbox_fleet.simulate.engine import nodes

    s, e, q = bursty_rl(steps=6, batch=120)
    pools = [NodePoolSpec("r", 32.0, 131072.0, 409600.0, usd_per_node_h=2.0, min_nodes=2, max_nodes=2,
                          reclaim_per_node_h=0.5),
             NodePoolSpec("b", 32.0, 131072.0, 409600.0, usd_per_node_h=3.0, tier="spot", provision_s=30.0,
                          scale_down_s=60.0, reclaim_per_node_h=3.0)]
    trace = (np.array([500.0, 900.0, 2000.0]), np.array([1, 0, 1]))
    runs = []
    for compiled in (False, True):
        monkeypatch.setattr(nodes, "_compiled", None)
        monkeypatch.setattr(nodes, "MIN_WORK", 0 if compiled else 10**12)
        r = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], pools, reclaim_trace=trace, seed=4)
        assert nodes.loaded() == compiled
        runs.append(r)
    a, b = runs
    assert a.reclaims > 3 and a.pools == b.pools
    for key in ("node_of", "end_s", "lost_begin_s", "lost_end_s", "node_launch_s", "node_release_s"):
        assert np.array_equal(getattr(a, key), getattr(b, key), equal_nan=True), key


def test_stranded_over_time_sums_to_the_totals_and_matches_a_direct_count():
    s, e, q = bursty_rl(steps=5, batch=150)
    pools = pools_two(reserved=2)
    pools[1] = NodePoolSpec("b", 32.0, 131072.0, 409600.0,
                            usd_per_node_h=3.0, tier="spot", provision_s=60.0, scale_down_s=300.0, reclaim_per_node_h=2.0)
    got = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], pools, seed=1)
    assert got.reclaims > 0
    edges, stranded = got.stranded_over_time(40)
    totals = [sum(p.stranded_cpu_h for p in got.pools), sum(p.stranded_memory_mb_h for p in got.pools),
              sum(p.stranded_disk_mb_h for p in got.pools)]
    for r in range(3):
        assert stranded[r].sum() == pytest.approx(totals[r], rel=1e-9)
    # one bin by hand: billed capacity-seconds minus requested-seconds clipped to [lo, hi)
    b = 17
    lo, hi = edges[b], edges[b + 1]
    cap = np.array([[p.cpu, p.memory_mb, p.disk_mb] for p in pools])

    def clip(a, z):
        return np.clip(np.minimum(z, hi) - np.maximum(a, lo), 0, None)

    billed = sum(clip(a, z) * cap[k] for a, z, k in zip(got.node_launch_s, got.node_release_s, got.node_pool))
    ok = got.node_of >= 0
    used = sum(clip(z - hd, z) * rq for z, hd, rq in zip(got.end_s[ok], got.hold_s[ok], q[ok]))
    used = used + sum(clip(a, z) * q[i] for i, a, z in zip(got.lost_rollout, got.lost_begin_s, got.lost_end_s))
    assert np.allclose(stranded[:, b], (billed - used) / 3600.0, rtol=1e-9)


def test_a_small_replay_runs_interpreted_without_loading_numba():
    """worth_it: a replay below MIN_WORK rollouts pays neither numba's import nor the kernel's load."""
    import subprocess
    import sys

    code = ("import sys, numpy as np\n"
            "from sandbox_fleet.simulate.engine import nodes as N\n"
            "s = np.arange(500.0); e = s + 30.0; q = np.ones(500)\n"
            "r = N.replay_nodes(s, e, q, q, q, [N.NodePoolSpec('p', 4.0, 8.0, 8.0, usd_per_node_h=1.0)])\n"
            "assert r.placed == 500 and not N.loaded() and 'numba' not in sys.modules, sorted(sys.modules)\n"
            "assert 500 < N.MIN_WORK\n")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert got.returncode == 0, got.stderr


def oracle_reclaims(start, end, req, pools, seed):
    """Node-hours, reclaims, lost sandboxes and re-run hours under Poisson reclaims, by brute force and
    from the module's rules: node k (in launch order) is reclaimed at its launch + E_k / rate, E_k the
    k-th standard exponential of ``default_rng([seed, 1])``; at one instant ends, then reclaims, then
    re-runs (by rollout), then measured starts; a reclaim ends every sandbox on the node (each restarts
    there and then), the node is billed launch to reclaim, a min_nodes node is replaced (joining
    provision_s later). Rollouts are dicts, nodes objects; every event re-derives the state."""
    draws = np.random.default_rng([seed, 1]).standard_exponential(100_000)
    n = len(start)
    nodes: list[_Node] = []

    def launch(k, t, ready, permanent):
        nd = _Node(len(nodes), k, t, ready, permanent)
        rate = pools[k].reclaim_per_node_h / 3600.0
        nd.reclaim_at = t + draws[nd.id] / rate if rate > 0 else math.inf
        nodes.append(nd)
        return nd

    t0 = min(start)
    for k, p in enumerate(pools):
        for _ in range(p.min_nodes):
            launch(k, t0, t0, True)
    pending = sorted((start[i], 1, i) for i in range(n))  # (time, 0 re-run / 1 measured, rollout)
    begin, final_end, lost, rerun_s = {}, {}, [0] * len(pools), [0.0] * len(pools)
    reclaims = [0] * len(pools)
    waited = 0

    def settle(t):  # ends at or before t leave; emptied nodes past their delay are gone
        for nd in nodes:
            if nd.gone_at is not None:
                continue
            done = [j for j, e in nd.running.items() if e <= t]
            for j in done:
                del nd.running[j]
            if done and not nd.running:
                nd.emptied_at = max(final_end[j] for j in done)
            if not nd.running and not nd.permanent and nd.emptied_at is not None \
                    and nd.emptied_at + pools[nd.pool].scale_down_s < t:
                nd.gone_at = nd.emptied_at + pools[nd.pool].scale_down_s

    while True:
        ts = pending[0][0] if pending else math.inf
        live = [nd for nd in nodes if nd.gone_at is None]
        cands = [nd for nd in live if nd.reclaim_at <= ts]
        nd = min(cands, key=lambda x: (x.reclaim_at, x.id)) if cands else None
        # a reclaim matters while a start is to come or a sandbox still runs at it
        if nd is not None and (pending or any(e > nd.reclaim_at for x in live for e in x.running.values())):
            tr = nd.reclaim_at
            settle(tr)
            if nd.gone_at is not None or not (pending or any(x.running for x in nodes if x.gone_at is None)):
                nd.reclaim_at = math.inf  # gone before its reclaim, or nothing left to lose
                continue
            reclaims[nd.pool] += 1
            for j in sorted(nd.running):
                lost[nd.pool] += 1
                rerun_s[nd.pool] += max(0.0, tr - begin[j])
                del final_end[j]
                pending.append((tr, 0, j))
            pending.sort()
            nd.running = {}
            nd.gone_at = tr
            if nd.permanent:
                launch(nd.pool, tr, tr + pools[nd.pool].provision_s, True)
            continue
        if not pending:
            break
        t, _, i = pending.pop(0)
        settle(t)
        live = [nd for nd in nodes if nd.gone_at is None]

        def fits(nd, i=i):
            p = pools[nd.pool]
            capv = (p.cpu, p.memory_mb, p.disk_mb)
            return all(sum(req[j][r] for j in nd.running) + req[i][r] <= capv[r] * (1 + 1e-12) for r in range(3))

        def score(nd):
            p = pools[nd.pool]
            return sum(req[j][0] for j in nd.running) / p.cpu + sum(req[j][1] for j in nd.running) / p.memory_mb

        chosen = None
        for k in range(len(pools)):
            c = [nd for nd in live if nd.pool == k and fits(nd)]
            if c:
                chosen = sorted(c, key=lambda nd: (-score(nd), nd.id))[0]
                break
        if chosen is None:
            for k, p in enumerate(pools):
                if p.max_nodes is not None and sum(1 for nd in live if nd.pool == k) >= p.max_nodes:
                    continue
                chosen = launch(k, t, t + p.provision_s, False)
                break
        b = max(t, chosen.ready)
        waited += b > t
        begin[i] = b
        final_end[i] = b + (end[i] - start[i])
        chosen.running[i] = final_end[i]
        chosen.emptied_at = None
    last = max(final_end.values())
    hours = [0.0] * len(pools)
    for nd in nodes:
        if nd.gone_at is None:
            nd.gone_at = last if nd.permanent else nd.emptied_at + pools[nd.pool].scale_down_s
        hours[nd.pool] += (nd.gone_at - nd.launch) / 3600.0
    return {"hours": hours, "reclaims": reclaims, "lost": lost, "rerun_h": [x / 3600 for x in rerun_s],
            "end": [final_end[i] for i in range(n)], "waited": waited,
            "spans": [(nd.launch, nd.gone_at, nd.pool) for nd in nodes]}


@pytest.mark.parametrize("corpus", ["bursty", "smooth"])
def test_poisson_reclaims_agree_with_the_brute_force(corpus):
    """Two pools, both reclaimed (the base replaced on a reclaim), a join delay and a scale-down: node-hours,
    reclaims, sandboxes lost, re-run hours, waits and every rollout's last end match the brute force."""
    if corpus == "bursty":
        s, e, q = bursty_rl(steps=4, batch=120)
    else:
        s, e, q = smooth_open(n=500)
    cap = (32.0, 131072.0, 409600.0)
    pools = [NodePoolSpec("r", *cap, usd_per_node_h=2.0, min_nodes=2, max_nodes=2, provision_s=30.0,
                          reclaim_per_node_h=0.3),
             NodePoolSpec("b", *cap, usd_per_node_h=3.0, tier="spot", provision_s=30.0, scale_down_s=120.0,
                          reclaim_per_node_h=1.5)]
    got = replay_nodes(s, e, q[:, 0], q[:, 1], q[:, 2], pools, seed=6)
    want = oracle_reclaims(list(s), list(e), [tuple(r) for r in q], pools, seed=6)
    assert sum(want["reclaims"]) >= 3 and sum(want["lost"]) > 0  # the case exercises reclaims
    for k, p in enumerate(got.pools):
        assert p.node_hours == pytest.approx(want["hours"][k], rel=1e-9)
        assert (p.reclaims, p.sandboxes_lost) == (want["reclaims"][k], want["lost"][k])
        assert p.rerun_sandbox_h == pytest.approx(want["rerun_h"][k], rel=1e-9, abs=1e-12)
    assert got.waited == want["waited"]
    assert np.allclose(got.end_s, want["end"], rtol=0, atol=1e-6)

"""The burst limit on a capped history (plan/censored_burst.py), against a history whose uncapped demand is known.

The corpus: synchronous steps of 120 rollouts released at once behind a cap of 40 (a first-come,
first-served queue), so the release times and the uncapped demand are known by construction. The
plan's censored demand (issue 38, tested in test_censored) is the input; everything else is
recomputed here: the history queued again at the known releases on the demand's slots (this file's
own queue), replayed by the node-level oracle of tests/simulate/test_node_replay.py.
"""

from __future__ import annotations

import heapq
import math
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulate"))
from test_node_replay import KINDS, oracle

from sandbox_fleet.plan import censored_burst
from sandbox_fleet.plan.k8s.pools import pool_limits
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

from .test_mixed_replay import allocatable, plan_with_history

CAP, BATCH = 40, 120


def fifo(release, hold, slots):
    """Starts when rollouts released at ``release`` (in index order within a release) queue on ``slots`` slots."""
    free: list[float] = []
    out = np.empty_like(release)
    for i in sorted(range(len(release)), key=lambda i: (release[i], i)):
        t = release[i] if len(free) < slots else max(release[i], heapq.heappop(free))
        out[i] = t
        heapq.heappush(free, t + hold[i])
    return out


def _capped_steps(cap, steps, batch, seed=8):
    """Synchronous steps of ``batch`` rollouts released at once behind ``cap`` slots (first come, first
    served), an hour's pause after each step drains; three request kinds. Returns the releases too."""
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
    return np.array(starts), np.array(ends), KINDS[np.array(kinds)], np.array(releases)


def pools(node, reserved, burst_max, rp):
    return [NodePoolSpec("r", *node, 1.0, min_nodes=reserved, max_nodes=reserved),
            NodePoolSpec("b", *node, 1.0, max_nodes=burst_max, provision_s=rp.provision_s, scale_down_s=rp.scale_down_s)]


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    start, end, req, release = _capped_steps(cap=CAP, steps=12, batch=BATCH)
    # on-demand: the mixed order signed (by default, priced on the demand's history, spot all up wins)
    plan, history = plan_with_history(tmp_path_factory.mktemp("capped"), start, end, req, price_tier="on_demand")
    return plan, history, start, end, req, release


def test_the_requeue_at_the_old_cap_gives_back_the_measured_starts(capped):
    _, _, start, end, _, release = capped
    assert np.array_equal(censored_burst.requeue(release, start, end - start, CAP), start)


def test_the_burst_limit_covers_the_censored_demand_the_plan_buys(capped):
    plan, _, start, end, req, release = capped
    c, mx = plan.target.censored, plan.cost.mixed
    assert c.chosen == "demand" and CAP < c.demand <= BATCH  # the demand bought, below the known uncapped release
    rp, cb = mx.replay, mx.replay.capped
    node, hold, reqs = allocatable(plan), end - start, [tuple(r) for r in req]
    r = mx.reserved_nodes
    as_ran = oracle(list(start), list(end), reqs, pools(node, r, None, rp))
    demand_start = fifo(release, hold, c.demand)
    at_demand = oracle(list(demand_start), list(demand_start + hold), reqs, pools(node, r, None, rp))
    # the split is replayed on the demand's history (plan/censored_order.py); the capped peak at R is kept
    assert cb.method == "demand-replayed" and cb.burst_peak_replayed == as_ran["peak"][1]
    assert mx.burst_nodes == cb.burst_limit == max(as_ran["peak"][1], at_demand["peak"][1])
    assert cb.burst_limit > cb.burst_peak_replayed  # the capped replay under-states the demand's nodes
    # the demand's history runs within the limit; within the capped replay's peak it does not
    within = oracle(list(demand_start), list(demand_start + hold), reqs, pools(node, r, cb.burst_limit, rp))
    short = oracle(list(demand_start), list(demand_start + hold), reqs, pools(node, r, cb.burst_peak_replayed, rp))
    assert within["unplaced"] == 0 and short["unplaced"] > 0
    assert f"the burst limit is {cb.burst_limit:,}" in cb.basis and "demand's history" in cb.basis
    # the emitted burst NodePool carries the limit (the order here is the mixed purchase)
    assert plan.cost.tier_choice.order.startswith("mixed")
    assert [p.nodes for p in pool_limits(plan, plan.cost.tier) if p.suffix == "-burst"] == [cb.burst_limit]


def test_without_steps_the_limit_is_a_node_per_largest_requests_past_the_cap(tmp_path, monkeypatch):
    """No steps to re-queue at: each extra sandbox fits on a node holding at least m of the largest request."""
    from sandbox_fleet.plan import censored_order

    monkeypatch.setattr(censored_burst, "_demand_peak", lambda *a, **k: None)
    monkeypatch.setattr(censored_order, "requeued", lambda *a, **k: None)  # the demand's history unknown too
    start, end, req, release = _capped_steps(cap=CAP, steps=12, batch=BATCH)
    plan, _ = plan_with_history(tmp_path, start, end, req)
    c, mx = plan.target.censored, plan.cost.mixed
    cb = mx.replay.capped
    node = allocatable(plan)
    m = min(math.floor(node[k] / KINDS[:, k].max()) for k in range(3))  # the largest kind: 8 cpu / 16 GiB / 50 GiB
    assert cb.method == "bound" and cb.sandboxes_per_node_largest == m
    assert mx.burst_nodes == cb.burst_peak_replayed + math.ceil((c.demand - CAP) / m)
    # it covers the demand's history too (re-queued at the known releases)
    hold = end - start
    s = fifo(release, hold, c.demand)
    got = oracle(list(s), list(s + hold), [tuple(r) for r in req], pools(node, mx.reserved_nodes, mx.burst_nodes, mx.replay))
    assert got["unplaced"] == 0


def test_an_uncapped_history_keeps_the_replayed_peak(tmp_path):
    from .test_order_replay import bursty_rl

    start, end, req = bursty_rl(seed=11, steps=4, batch=100)
    plan, _ = plan_with_history(tmp_path, start, end, req)
    assert plan.target.censored is None and plan.cost.mixed.replay.capped is None

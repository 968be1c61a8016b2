"""Both censored lines priced as the order signed, R chosen on the demand (plan/censored_order.py, issue 37).

The corpus (test_censored_burst's): synchronous steps of 120 rollouts released at once behind a cap of
40 (first come, first served), so the releases and the uncapped demand's history are known by
construction. The plan's censored demand D (issue 38, tested in test_censored) is the input; the rest
is recomputed here: the demand's history is this file's own queue of the known releases on D slots,
and every R is priced by the brute-force node replay of tests/simulate/test_node_replay.py, its
provisioning waits read as the slowdown of the mean step by hand (each step's last end).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "simulate"))
from test_node_replay import oracle

from sandbox_fleet.plan.render import plan_lines
from sandbox_fleet.plan.render_short import short_lines
from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

from .test_censored_burst import BATCH, CAP, _capped_steps, fifo, pools
from .test_mixed_replay import allocatable, plan_with_history


@pytest.fixture(scope="module")
def capped(tmp_path_factory):
    start, end, req, release = _capped_steps(cap=CAP, steps=12, batch=BATCH)
    plan, _ = plan_with_history(tmp_path_factory.mktemp("order"), start, end, req, price_tier="on_demand")
    return plan, start, end, req, release


def brute_force(plan, start, end, req, release):
    """($/h, step slowdown) at every R from 0 past the peak, by the oracle; the R the plan's rule picks
    (within the tolerance first, then the cheapest, then the fewest) and its $/h."""
    mx = plan.cost.mixed
    rp, node, reqs = mx.replay, allocatable(plan), [tuple(r) for r in req]
    keys = sorted(set(release.tolist()))
    step_of = {k: i for i, k in enumerate(keys)}
    measured_last = [max(end[j] for j in range(len(end)) if release[j] == k) for k in keys]
    length = sum(m - k for m, k in zip(measured_last, keys))
    # the real mix's peaks: one pool, packed, no delays
    peak = oracle(list(start), list(end), reqs, [NodePoolSpec("b", *node, 1.0)])["peak"][0]
    rows = []
    for r in range(peak + 1):
        got = oracle(list(start), list(end), reqs, pools(node, r, None, rp))
        usd = (got["hours"][0] * mx.reserved_usd_per_node_h + got["hours"][1] * mx.burst_usd_per_node_h) / (got["span"] / 3600.0)
        last = [-np.inf] * len(keys)
        for j, e in got["ends"].items():
            s = step_of[release[j]]
            last[s] = max(last[s], e)
        slow = sum(max(a - b, 0.0) for a, b in zip(last, measured_last)) / length
        rows.append((slow > plan.target.tolerance, usd, r))
    best = min(rows)
    return best[2], best[1], peak


def test_r_is_chosen_on_the_demand_not_on_the_cap(capped):
    plan, start, end, req, release = capped
    c, mx = plan.target.censored, plan.cost.mixed
    assert c.chosen == "demand" and CAP < c.demand <= BATCH
    assert plan.cost.tier_choice.order == "mixed_on_demand"
    hold = end - start
    demand_start = fifo(release, hold, c.demand)  # the demand's history, by this file's own queue
    r_demand, usd_demand, peak = brute_force(plan, demand_start, demand_start + hold, req, release)
    assert mx.reserved_nodes == r_demand
    assert mx.usd_per_h == pytest.approx(usd_demand, rel=1e-9)
    assert mx.replay.peak_nodes == peak
    assert "replayed on the demand's history" in mx.basis
    # the capped history would choose another split: R chosen there buys for the cap
    r_cap, usd_cap, _ = brute_force(plan, start, end, req, release)
    assert (r_cap, round(usd_cap, 9)) != (r_demand, round(usd_demand, 9))


def test_both_lines_are_priced_as_the_mixed_order_signed(capped):
    plan, start, end, req, release = capped
    c = plan.target.censored
    hold = end - start
    demand_start = fifo(release, hold, c.demand)
    r_d, usd_d, _ = brute_force(plan, demand_start, demand_start + hold, req, release)
    r_c, usd_c, _ = brute_force(plan, start, end, req, release)
    assert c.lines_form == "mixed_on_demand"
    assert c.usd_per_h_at_demand == pytest.approx(usd_d, rel=1e-9)
    assert c.usd_per_h_at_cap == pytest.approx(usd_c, rel=1e-9)
    assert (c.reserved_at_demand, c.reserved_at_cap) == (r_d, r_c)
    assert c.burst_at_demand == plan.cost.mixed.burst_nodes
    # the cap line's burst pool: its replay's peak at its own R
    node, reqs = allocatable(plan), [tuple(r) for r in req]
    assert c.burst_at_cap == oracle(list(start), list(end), reqs, pools(node, r_c, None, plan.cost.mixed.replay))["peak"][1]
    assert c.nodes_at_cap == r_c + c.burst_at_cap and c.nodes_at_demand == r_d + c.burst_at_demand
    assert "the cap line on the history as it ran, the demand line on the 1,440 measured rollouts re-queued" in c.lines_basis
    # shown on the first screen and in --detail, each line with its split and $/h
    for text in ("\n".join(short_lines(plan, width=80)), "\n".join(plan_lines(plan))):
        assert f"buy the cap:    {CAP} slots, ${c.usd_per_h_at_cap:,.2f}/h on {r_c} reserved + up to" in text
        assert f"buy the demand: {c.demand} slots, ${c.usd_per_h_at_demand:,.2f}/h on {r_d} reserved + up to" in text
    detail = "\n".join(plan_lines(plan))
    assert f"on {r_c} reserved + up to {c.burst_at_cap} burst: mean step" in detail
    assert f"on {r_d} reserved + up to {c.burst_at_demand} burst: mean step" in detail
    assert "lines priced: both lines priced as the order signed, mixed on-demand" in "\n".join(plan_lines(plan))
    # and in the HTML report's plan table: each line's split (the brute force's R) and its $/h
    from sandbox_fleet.report.tables import plan_table

    html = plan_table(plan)
    for label, r, b, usd in (("bought at the cap", r_c, c.burst_at_cap, usd_c),
                             ("bought at the demand", r_d, c.burst_at_demand, usd_d)):
        assert label in html
        assert f"{r + b:,} nodes ({r:,} reserved + up to {b:,} burst), ${usd:,.2f}/h" in html.split(label, 1)[1][:300]



def test_keeping_the_cap_chooses_r_on_the_cap_and_prices_the_demand_on_its_own_history(tmp_path):
    start, end, req, release = _capped_steps(cap=CAP, steps=12, batch=BATCH)
    plan, _ = plan_with_history(tmp_path, start, end, req, price_tier="on_demand", keep_cap=True)
    c, mx = plan.target.censored, plan.cost.mixed
    assert c.chosen == "cap" and plan.target.concurrency == CAP
    assert plan.cost.tier_choice.order == "mixed_on_demand"
    r_c, usd_c, _ = brute_force(plan, start, end, req, release)  # the history as it ran, under the cap bought
    assert (mx.reserved_nodes, c.reserved_at_cap) == (r_c, r_c)
    assert mx.usd_per_h == pytest.approx(usd_c, rel=1e-9) and c.usd_per_h_at_cap == pytest.approx(usd_c, rel=1e-9)
    hold = end - start
    demand_start = fifo(release, hold, c.demand)
    r_d, usd_d, _ = brute_force(plan, demand_start, demand_start + hold, req, release)
    assert c.reserved_at_demand == r_d and c.usd_per_h_at_demand == pytest.approx(usd_d, rel=1e-9)


ROW_TEXT = """
Array.from(document.querySelectorAll('tr')).filter(tr => tr.cells.length && tr.cells[0].innerText.trim() === %s)
  .map(tr => ({text: tr.innerText, height: tr.getBoundingClientRect().height,
               shown: getComputedStyle(tr).visibility === 'visible' && tr.offsetParent !== null}))
"""


def test_the_censored_lines_render_with_their_figures_in_headless_chromium(capped, tool, tmp_path):
    """The HTML report's plan table opened by headless Chromium (networking off, ``tests/report/cdp.py``):
    the rows "bought at the cap" and "bought at the demand" are laid out (visible, a height) and read, in
    the live DOM, each line's split and $/h as the brute-force replay over every R prices them."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "report"))
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    import json

    from cdp import Browser

    from sandbox_fleet.measure import measure_paths
    from summaries import report_file

    from .test_mixed_replay import write_corpus

    plan, start, end, req, release = capped
    c = plan.target.censored
    r_c, usd_c, _ = brute_force(plan, start, end, req, release)
    hold = end - start
    demand_start = fifo(release, hold, c.demand)
    r_d, usd_d, _ = brute_force(plan, demand_start, demand_start + hold, req, release)
    rollouts, tasks = write_corpus(tmp_path / "corpus", start, end, req)
    measured = measure_paths([str(rollouts)], tasks=str(tasks), progress=False)
    page = report_file(tmp_path / "report.html", measured, plan)
    with Browser(tool("chromium"), tmp_path / "profile") as b:
        b.attach()
        b.open(page.as_uri())
        rows = {label: b.evaluate(ROW_TEXT % json.dumps(label)) for label in ("bought at the cap", "bought at the demand")}
        assert b.errors() == []
    for label, r, burst, usd in (("bought at the cap", r_c, c.burst_at_cap, usd_c),
                                 ("bought at the demand", r_d, c.burst_at_demand, usd_d)):
        assert len(rows[label]) == 1, rows
        row = rows[label][0]
        assert row["shown"] and row["height"] > 0, row
        assert f"{r + burst:,} nodes ({r:,} reserved + up to {burst:,} burst), ${usd:,.2f}/h" in row["text"], row

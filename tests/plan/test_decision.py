"""The decision block at the top of plan's text: what to buy, $/h and $ per pass all in, what binds,
the failing gates, what the order rests on, what changed since an earlier plan; and the text folded
to 80 and 120 columns without cutting a number or a command."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.plan.decision import _censored_lines, changes, decide
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.plan.render import plan_lines
from sandbox_fleet.report.checks import CheckResult
from sandbox_fleet.report.decision import plan_risks, risk_lines
from sandbox_fleet.textout import wrap_line, wrap_lines
from summaries import as_measure, as_plan, plan_json

ROOT = Path(__file__).resolve().parents[2]
PUBLISHED = ROOT / "examples" / "rst-published.json"
NODES = ROOT / "src" / "sandbox_fleet" / "data" / "nodes.toml"
NODE = "gcp-n2d-standard-96-lssd"


def _node(name: str) -> dict:
    return next(n for n in tomllib.loads(NODES.read_text())["node"] if n["name"] == name)


@pytest.fixture(scope="module")
def gpu_plan() -> PlanSummary:
    """The published campaign with priced GPUs and a trainer (the roofline from the GPU catalog)."""
    from sandbox_fleet.plan.build import make_roofline
    from sandbox_fleet.plan.gpu_select import gpu_figures

    g = gpu_figures("h100-80gb", None, tflops=None, hbm_tbs=None, memory_gb=None, usd_h=2.5, model_given=True)
    opts = PlanOptions(node_type=NODE, price_tier="spot", gpu_usd_h=g.usd_h, gpu_name=g.name, gpu_note=g.note,
                       gpu_from_catalog=g.from_catalog, gpu_memory_gb=g.memory_gb, trainer_gpus=8,
                       roofline=make_roofline(gpu_tflops=g.tflops, gpu_hbm_tbs=g.hbm_tbs, model_params_b=27,
                                              kv_bytes_per_token=65536))
    return PlanSummary.model_validate(plan_json(json.loads(PUBLISHED.read_text()), opts))


def test_all_in_dollars_per_hour_and_per_pass_by_hand(gpu_plan):
    d = decide(gpu_plan)
    m = json.loads(PUBLISHED.read_text())
    nodes, gpus = gpu_plan.nodes.count, gpu_plan.inference.gpus
    # by hand: catalog spot price x nodes + $2.50 x inference GPUs + $2.50 x 8 trainer GPUs
    per_h = nodes * _node(NODE)["spot_usd_h"] + 2.5 * gpus + 2.5 * 8
    assert nodes == 32 and gpus is not None and gpus > 0
    assert d.cost[0].startswith(f"${per_h:,.2f}/h all in on spot (fleet spot ${nodes * 0.85:,.2f} + inference GPUs "
                                f"${2.5 * gpus:,.2f} + trainer $20.00), ${per_h * 720:,.2f} per 30 days")
    # passes/h at the peak target = peak x duty / sandbox-hours per pass = mean concurrency / sandbox-h per pass,
    # on spot less the share of sandbox-hours re-run after reclaims (the plan's stated rework share)
    rerun = gpu_plan.cost.spot_rework.rework_share
    assert 0 < rerun < 1e-3
    passes = m["concurrency"]["mean"] / m["outcomes"]["sandbox_hours_per_pass"] / (1 + rerun)
    assert d.cost[1] == f"${per_h / passes:,.2f} per passing trajectory all in ({passes:,.1f} passes/h)"


def test_buy_lines_are_the_purchase_orders_own_words(gpu_plan):
    lines = plan_lines(as_plan(gpu_plan))
    block = lines[1:lines.index("")]
    body = lines[lines.index(""):]
    buys = [x.strip() for x in block if x.strip().startswith("BUY")]
    assert buys[0] == f"BUY 32 x {NODE} at peak (lower bound 32)"
    assert buys[1].startswith(f"BUY {gpu_plan.inference.gpus} inference GPUs (")
    for buy in buys:
        assert f"  {buy}" in body  # the same line further down, under Line 1 / Line 3
    assert lines[0].startswith("PURCHASE ORDER")
    assert any(x.startswith("  binds: cpu, 95 sandboxes per node") for x in block)


def test_fleet_only_cost_says_so(produced):
    p = PlanSummary.model_validate(plan_json(produced.fleet, PlanOptions(price_tier="spot")))
    d = decide(p)
    assert "the fleet only (no inference GPUs or trainer priced)" in d.cost[0]
    assert d.cost[1].endswith("per passing trajectory, the fleet only")
    assert any(x.startswith("inference GPUs: not sized") for x in d.buy)


def test_rests_on_names_the_defaults_and_catalog_figures(gpu_plan):
    d = decide(gpu_plan)
    defaults = [a.name for a in gpu_plan.assumptions if a.source == "default"]
    assert defaults and f"default figures: {', '.join(defaults)}" in d.rests_on
    assert d.rests_on[0] == f"target: {gpu_plan.target.detail}"


def test_changed_since_names_the_order_and_the_figures_that_moved(gpu_plan):
    old = gpu_plan.model_copy(deep=True)
    old.nodes.count = 40
    old.target.concurrency = 3800
    old.measured.duty = 0.2
    old.cost.spot_per_h = 40 * 0.85
    got = changes(old, gpu_plan)
    assert got[0] == f"nodes: 40 x {NODE} -> 32 x {NODE}"
    assert got[1].startswith("$/h all in: $") and got[1].count("$") == 3
    assert got[2] == "moved by: target concurrency 3,800 -> 3,000; duty 20.0% -> 15.6%"
    assert changes(gpu_plan, gpu_plan) == ["nothing: the same nodes, GPUs and $/h on the same figures"]
    text = plan_lines(as_plan(gpu_plan), previous=as_plan(old), previous_name="old.json")
    assert "  changed since old.json:" in text


def test_risks_are_the_failing_gates_first_three():
    results = [CheckResult(f"gate{i}", s, None, None, f"message {i}") for i, s in
               enumerate(["pass", "fail", "warn", "fail", "fail", "fail", "skip"])]
    assert risk_lines(results) == ["gate1: message 1", "gate3: message 3", "gate4: message 4",
                                   "and 1 more failing gates (sandbox-fleet check)"]
    assert risk_lines(results[:3]) == ["gate1: message 1"]


def test_risks_on_the_published_campaign_name_its_known_failures():
    m = json.loads(PUBLISHED.read_text())
    p = plan_json(m, PlanOptions(node_type=NODE))
    risks = plan_risks(as_measure(m), as_plan(p))
    # the document's own findings: prefix caching off, 29.4% exceptions
    assert risks[0].startswith("prefix_cache_off: ")
    assert risks[1].startswith("exception_rate: 29.4% of rollouts")
    lines = plan_lines(as_plan(p), risks=risks)
    assert "  top risks (failing check gates):" in lines and f"    - {risks[0]}" in lines


def test_censored_demand_adds_its_two_lines(gpu_plan):
    """A cap that hid demand (issue 22's ``target.censored``): the block leads with the cap and the
    demand, both in plan's words, and the report shows the same two prices."""
    from sandbox_fleet.plan.model import Censored
    from sandbox_fleet.report.decision import decision_html

    p = gpu_plan.model_copy(deep=True)
    p.target.censored = Censored(cap=3000, touches=5000, demand=3400, demand_is_lower_bound=False, release=3600,
                                 step_s_at_cap=1300.0, step_s_at_demand=1010.0, step_s_uncapped=1000.0,
                                 chosen="demand", basis="the RL search on the cut release")
    got = _censored_lines(p)
    assert got[1].startswith("buy the cap:    3,000 slots: mean step 1,300 s (+30.0% over the uncapped 1,000 s)")
    assert got[2].startswith("buy the demand: 3,400 slots: mean step 1,010 s (+1.0%;") and got[2].endswith("<- chosen")
    lines = plan_lines(as_plan(p))
    assert lines[2] == f"    {got[1]}" and lines[3] == f"    {got[2]}"
    assert lines[5] == f"  BUY 32 x {NODE} at peak (lower bound 32)"
    html = decision_html(p, [])
    assert "buy the cap:    3,000 slots" in html and "buy the demand: 3,400 slots" in html
    p.target.censored = None
    assert _censored_lines(p) == []


# --- folding to a width -----------------------------------------------------------------------
def _words(lines: list[str]) -> list[str]:
    return " ".join(lines).split()


@pytest.mark.parametrize("width", [80, 120])
def test_folded_text_keeps_every_word_and_fits(gpu_plan, width):
    whole = plan_lines(as_plan(gpu_plan), risks=["exception_rate: " + "x " * 80])
    folded = plan_lines(as_plan(gpu_plan), risks=["exception_rate: " + "x " * 80], width=width)
    assert _words(folded) == _words(whole)  # only whitespace moved: no number cut, nothing dropped
    assert "…" not in "".join(folded)
    for line in folded:
        assert len(line) <= width or " " not in line.strip(), line  # over only as one unbreakable word
    assert max(len(x) for x in whole) > 120  # the test is not vacuous


def test_continuations_hang_under_their_line():
    line = "  spot re-runs: 0.0001 reclaims per node-h re-run 0.006% of sandbox-hours (0.00 sandbox-h/h): spot $1.70/h"
    got = wrap_line(line, 40)
    assert got[0].startswith("  spot") and all(x.startswith("      ") and x[6] != " " for x in got[1:])
    assert " ".join(got).split() == line.split()


def test_commands_to_copy_are_never_folded():
    cmd = "  sandbox-fleet measure /x/trajectories --tasks /x/tasks --latest-time 2026-12-01 -o m.json"
    assert wrap_lines([cmd, "$ sandbox-fleet plan " + "a" * 100], 40) == [cmd, "$ sandbox-fleet plan " + "a" * 100]
    assert wrap_line("1,234,567.89 " * 10, 20)[0] == "1,234,567.89"


def test_cli_plan_text_at_80_columns_piped_and_without_colour(tmp_path):
    """The real command's whole order (--detail), piped (not a terminal), at COLUMNS=80 and 120, with and without NO_COLOR."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    env.pop("NO_COLOR", None)
    outs = {}
    for width in (80, 120):
        for no_color in ("", "1"):
            e = {**env, "COLUMNS": str(width), **({"NO_COLOR": no_color} if no_color else {})}
            r = subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", "plan", str(PUBLISHED), "--node-type", NODE, "--detail"],
                               env=e, capture_output=True, text=True, check=True)
            outs[width, no_color] = r.stdout
        assert outs[width, ""] == outs[width, "1"]
        lines = outs[width, ""].splitlines()
        assert all(len(x) <= width for x in lines), [x for x in lines if len(x) > width]
        assert "…" not in outs[width, ""] and "\x1b[" not in outs[width, ""]
        assert f"  BUY 32 x {NODE} at peak (lower bound 32)" in lines[:12]  # after the cap/demand lines
    assert _words(outs[80, ""].splitlines()) == _words(outs[120, ""].splitlines())
    # every number of the plan's own text is printed whole
    numbers = set(re.findall(r"\d[\d,]*\.?\d*", "\n".join(plan_lines(as_plan(plan_json(json.loads(PUBLISHED.read_text()),
                                                                               PlanOptions(node_type=NODE)))))))
    printed = set(re.findall(r"\d[\d,]*\.?\d*", outs[80, ""]))
    assert numbers <= printed, sorted(numbers - printed)[:10]

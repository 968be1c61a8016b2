"""The HTML report: self-contained, plotly.js once, every chart titled, deterministic, tolerant."""

from __future__ import annotations

import json
import re
import shutil
import subprocess

import plotly.offline
import pytest

from producers import measure_doc
from sandbox_fleet.errors import InputError
from sandbox_fleet.report.charts import TITLES
from sandbox_fleet.report.plan_sections import TITLES as PLAN_TITLES
from summaries import as_plan, report_file, report_html

PLOTLY_BANNER = "* plotly.js v"



def _plain_cells(html: str) -> str:
    """``html`` with the grid cells' ``data-label`` (each cell's column name, for the phone layout) removed."""
    return re.sub(r' data-label="[^"]*"', "", html)

@pytest.fixture(scope="module")
def full_html(produced) -> str:
    return report_html(produced.fleet, produced.plan, produced.simulate, title="Fleet A")


def test_every_chart_is_drawn(full_html):
    for key, title in TITLES.items():
        assert f'id="fig-{key}" class="plotly-graph-div"' in full_html, key
        assert title in full_html  # in the figure's layout JSON
    assert "not measured</div>" not in full_html


def test_plotly_js_embedded_exactly_once_and_no_external_scripts(full_html):
    assert full_html.count(PLOTLY_BANNER) == 1
    assert full_html.count(plotly.offline.get_plotlyjs()) == 1
    assert not re.search(r"<script[^>]*\bsrc\s*=", full_html, re.I)
    assert not re.search(r"<link[^>]*\bhref\s*=", full_html, re.I)


def test_the_decision_comes_first_then_checks_plan_and_evidence(full_html):
    body = full_html[full_html.index("<body>"):]
    order = ["decision", "checks", "plan", "concurrency", "hold", "exceptions", "models", "context", "headline",
             "coverage", "tasks", "simulate"]
    at = [body.index(f'<section id="{a}">') for a in order]
    assert at == sorted(at), order
    assert body.index('class="buy">BUY ') < body.index('id="checks"')
    for anchor in ("plan", "simulate", "jobs", "models", "coverage", "tasks"):
        assert f'<section id="{anchor}">' in body
    assert "<title>Fleet A</title>" in full_html
    assert "seed-96c" in body and "events per second" in body


def test_byte_identical_across_builds(fleet, plan, simulate, full_html):
    assert report_html(fleet, plan, simulate, title="Fleet A") == full_html


def test_missing_inputs_show_not_measured():
    html = report_html(measure_doc())
    for key, title in TITLES.items():
        assert f'<div class="missing" id="fig-{key}"><strong>{title}</strong>: not measured</div>' in html
    assert 'class="plotly-graph-div"' not in html
    assert '<section id="plan">' not in html and '<section id="simulate">' not in html
    assert html.count(PLOTLY_BANNER) == 1


def test_published_figures_report(published):
    html = report_html(published)
    body = _plain_cells(html[html.index("<body>"):])
    # no series or histogram published: those two charts are not measured, the rest are drawn
    assert 'id="fig-concurrency"><strong>' in body and 'id="fig-hold"><strong>' in body
    assert 'id="fig-context" class="plotly-graph-div"' in body
    assert 'id="fig-models" class="plotly-graph-div"' in body
    assert '<span class="badge fail">fail</span></td><td>prefix_cache_off' in body
    assert ">29.4%</td>" in body  # exception rate, formatted
    assert '<td data-figure="exception_rate" data-value="0.29370486171601123">29.4%</td>' in body  # the headline row, marked


def test_hostile_names_are_escaped():
    m = measure_doc(rows=500, by_model={"<script>alert(1)</script>": {"rows": 500, "exception_rate": 0.5}},
                    source=["<b>x</b>"])
    html = report_html(m, title="<i>t</i>")
    body = html[html.index("<body>"):]
    assert "<script>alert(1)" not in body
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in body
    assert "<b>x</b>" not in body and "<i>t</i>" not in body


def test_write_report_creates_parent(tmp_path, fleet):
    out = report_file(tmp_path / "a" / "r.html", fleet)
    assert out.read_text(encoding="utf-8") == report_html(fleet)


_NODE_SMOKE = r"""
const fs = require('fs');
const html = fs.readFileSync(process.argv[2], 'utf8');
const scripts = [...html.matchAll(/<script[^>]*>([\s\S]*?)<\/script>/g)].map(m => m[1]);
const calls = [];
global.window = {};
global.document = { getElementById: id => ({ id }) };
global.Plotly = { newPlot: (id, data, layout) => calls.push([id, data.length, layout.title.text]) };
new Function(scripts[0]);
for (const s of scripts.slice(1)) new Function(s)();
console.log(JSON.stringify(calls));
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="node not installed")
def test_figure_scripts_run_in_node(tmp_path, full_html):
    """Without a browser: plotly.js parses, and every figure script calls newPlot with its data."""
    page, script = tmp_path / "r.html", tmp_path / "smoke.js"
    page.write_text(full_html, encoding="utf-8")
    script.write_text(_NODE_SMOKE)
    out = subprocess.run(["node", str(script), str(page)], capture_output=True, text=True, check=True).stdout
    calls = json.loads(out)
    assert [c[0] for c in calls] == [f"fig-{k}" for k in ("caching", "rent", "mixed", "concurrency", "hold", "hold_cdf", "exceptions", "models", "context", "turns", "coverage")]
    # a title past charts.TITLE_CHARS is broken onto two lines at a space (a phone's width)
    assert [c[2].replace("<br>", " ") for c in calls] == [{**TITLES, **PLAN_TITLES}[c[0][4:]] for c in calls]
    assert all(c[1] >= 1 for c in calls)


def test_other_kinds_are_refused(fleet, plan, simulate):
    """Each input is parsed into its stage's model: another kind is one line naming both."""
    with pytest.raises(InputError, match="kind 'plan'; expected a measure summary"):
        report_html(plan)
    with pytest.raises(InputError, match="kind 'measure'; expected a plan summary"):
        report_html(fleet, fleet)
    with pytest.raises(InputError, match="kind 'plan'; expected a simulate summary"):
        report_html(fleet, plan, plan)


def test_plan_section_draws_the_caching_saving_by_turns(fleet):
    import json as _json

    from sandbox_fleet.plan import PlanOptions
    from summaries import plan_json

    plan = plan_json(fleet, PlanOptions(node_type="seed-96c", price_tier="on_demand"))
    html = report_html(fleet, plan)
    assert "1 turns 1x, 2 turns 1.5x, 5 turns 3x" not in html  # a chart now, not a wall of text
    turns = sorted(int(k) for k in plan["caching"]["saving_by_turns"])
    assert turns[:3] == [1, 2, 5]
    # the saving of an n-turn rollout with a byte-identical prefix is (n + 1) / 2 (closed form)
    drawn = _json.dumps({"x": turns, "y": [(n + 1) / 2 for n in turns]}, separators=(",", ":"))[1:-1]
    assert 'id="fig-caching"' in html and drawn in html.replace(" ", "")
    html = _plain_cells(html)
    assert "<td>seed-96c</td>" in html and "<td>cpu 96, memory 192, disk 682, gpu n/a</td>" in html
    assert "<th>$/h on-demand</th>" in html and "spot_per_h" not in html  # the plan's tier only, in words
    assert "<h3>Runners-up</h3>" in html and "<td>not measured" not in html.split("Runners-up")[1].split("</table>")[0]


def test_phases_outcomes_steps_and_warnings_tables():
    m = measure_doc(
        rows=200,
        phases={"environment_setup": {"rows": 200, "median_s": 60.0, "p99_s": 600.0, "share_of_hold": 0.3}},
        hold_s={"by_outcome": {"exception": {"rows": 20, "median": 139.0, "mean": 150.0, "p99": 900.0}}},
        steps={"detected": True, "steps": 50, "batch_size": 512, "step_period_s": 1800.0},
        warnings=["naive timestamps taken as UTC"],
    )
    body = _plain_cells(report_html(m))
    assert "<td>environment_setup</td><td>200</td><td>60.0 s</td><td>600.0 s</td><td>30.0%</td>" in body
    assert "<td>exception</td><td>20</td><td>139.0 s</td>" in body
    assert "<th>batch size (median)</th><td>512</td>" in body
    assert "<li>naive timestamps taken as UTC</li>" in body


def test_the_decision_block_says_what_plan_says(fleet):
    """The report's first section carries plan's own BUY line, its failing gates and, with an older
    plan, what changed since; the all-in row is left out when only the fleet is priced."""
    from sandbox_fleet.plan import PlanOptions
    from sandbox_fleet.plan.render import plan_lines
    from summaries import plan_json

    plan = plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge"))
    old = plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge", concurrency=400))
    html = report_html(fleet, plan, previous=old)
    decision = html[html.index('<section id="decision">'):html.index('<section id="checks">')]
    buy = next(x.strip() for x in plan_lines(as_plan(plan)) if x.strip().startswith("BUY"))
    assert f'<p class="buy">{buy}</p>' in decision
    assert "No check gate fails." in decision or "<h3>Top risks (failing check gates)</h3><ul" in decision
    assert "Changed since the previous plan" in decision and "target concurrency 400 -&gt; " in decision
    assert "per passing trajectory, all in" not in html.split('<section id="plan">')[1].split("</section>")[0]

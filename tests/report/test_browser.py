"""The HTML report opened by a real browser: headless Chromium, networking off.

Asserts that every Plotly chart drew (its SVG surface exists in the live DOM), that nothing
logged an error or tried the network, and keeps a full-page screenshot in the test's folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from cdp import Browser

from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions
from summaries import plan_json, report_file

HERE = Path(__file__).parent

CHARTS_DRAWN = """
(async () => {
  const deadline = Date.now() + 15000;
  const read = () => Array.from(document.querySelectorAll('div.plotly-graph-div')).map(d => ({
      id: d.id, svgs: d.querySelectorAll('svg.main-svg').length,
      traces: d.querySelectorAll('g.trace, g.barlayer .point, g.scatterlayer .trace').length}));
  while (Date.now() < deadline) {
    const charts = read();
    if (charts.length && charts.every(c => c.svgs > 0)) return charts;
    await new Promise(r => setTimeout(r, 100));
  }
  return read();
})()
"""


@pytest.fixture
def browser(tool, tmp_path):
    with Browser(tool("chromium"), tmp_path / "profile") as b:
        b.attach()
        yield b


def _chart_ids(html: str) -> set[str]:
    import re

    return set(re.findall(r'<div id="(fig-[a-z_-]+)" class="plotly-graph-div"', html))


def test_report_charts_draw_offline_without_errors(browser, tmp_path, fleet, simulate):
    # a real plan of the producer-made fleet, so the plan charts (caching, rent vs buy) are in the page too
    plan = to_jsonable(plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge", prefix_break=0.1)))
    page = report_file(tmp_path / "report.html", fleet, plan, simulate)
    expected = _chart_ids(page.read_text())
    assert {"fig-concurrency", "fig-hold", "fig-hold_cdf", "fig-caching", "fig-rent", "fig-models"} <= expected
    browser.open(page.as_uri())
    charts = browser.evaluate(CHARTS_DRAWN)
    shot = browser.screenshot(tmp_path / "report.png")
    drawn = {c["id"] for c in charts if c["svgs"] > 0}
    assert drawn == expected, (sorted(expected - drawn), charts)
    assert all(c["traces"] > 0 for c in charts), charts
    assert browser.errors() == []
    # the model chart's x axis shows exactly the models (reference lines add no categories)
    ticks = browser.evaluate("Array.from(document.querySelectorAll('#fig-models .xtick text')).map(t => t.textContent)")
    assert ticks == sorted(fleet["by_model"]), ticks
    # every linear y axis labels its ticks distinctly (no "1%, 1%, 1%" from rounding); log axes
    # repeat their minor labels (2, 3, ... per decade) by design
    for fig in expected - {"fig-context"}:
        labels = browser.evaluate(f"Array.from(document.querySelectorAll('#{fig} .ytick text')).map(t => t.textContent)")
        assert len(labels) == len(set(labels)), (fig, labels)
    assert shot.stat().st_size > 10_000 and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_harness_sees_errors_and_network_attempts(browser, tmp_path):
    """Not vacuous: a script error, console.error and a remote fetch are all reported."""
    bad = tmp_path / "bad.html"
    bad.write_text("<!DOCTYPE html><html><body><div id='x'></div>"
                   "<script>console.error('boom');</script>"
                   "<img src='https://cdn.plot.ly/plotly-latest.min.js'>"
                   "<script>undefinedFunction();</script></body></html>")
    browser.open(bad.as_uri())
    browser.evaluate("new Promise(r => setTimeout(r, 300))")
    errors = browser.errors()
    assert any("boom" in e for e in errors), errors
    assert any("undefinedFunction" in e for e in errors), errors
    assert any("plot.ly" in e for e in errors), errors  # the network is off: a CDN fetch fails loudly
    assert browser.evaluate("document.querySelectorAll('svg.main-svg').length") == 0


FIRST_SCREEN = """
(() => {
  const buy = document.querySelector('#decision .buy');
  const r = buy ? buy.getBoundingClientRect() : null;
  const wide = Array.from(document.querySelectorAll('body *')).filter(e => {
    const b = e.getBoundingClientRect();
    // an element reaching past the viewport's right edge, unless a scrolling box clips it
    let p = e.parentElement, clipped = false;
    while (p && p !== document.body) {
      const s = getComputedStyle(p);
      if (s.overflowX === 'auto' || s.overflowX === 'scroll' || s.overflowX === 'hidden') { clipped = true; break; }
      p = p.parentElement;
    }
    return !clipped && b.width > 0 && b.right > window.innerWidth + 1;
  }).map(e => e.tagName + (e.id ? '#' + e.id : '') + '.' + e.className).slice(0, 10);
  return {buy: buy ? buy.textContent : null, top: r ? r.top : null, bottom: r ? r.bottom : null,
          innerWidth: window.innerWidth, innerHeight: window.innerHeight,
          scrollWidth: document.documentElement.scrollWidth, wide: wide,
          modebars: document.querySelectorAll('.modebar').length};
})()
"""


@pytest.mark.parametrize(("width", "height", "mobile"), [(1400, 900, False), (390, 844, True)])
def test_first_screen_says_what_to_buy_and_fits_the_width(browser, tmp_path, fleet, simulate, width, height, mobile):
    """At a desktop and a phone width: the first BUY line is on the first screen, nothing overflows
    the page sideways (tables scroll in their own box), every chart draws, no mode bar over titles."""
    plan = plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge", prefix_break=0.1))
    page = report_file(tmp_path / "report.html", fleet, to_jsonable(plan), simulate)
    expected = _chart_ids(page.read_text())
    browser.viewport(width, height, mobile=mobile)
    browser.open(page.as_uri())
    charts = browser.evaluate(CHARTS_DRAWN)
    got = browser.evaluate(FIRST_SCREEN)
    browser.screenshot(tmp_path / f"first-screen-{width}.png", full_page=False)  # kept as artefacts
    browser.screenshot(tmp_path / f"report-{width}.png")
    assert got["innerWidth"] == width
    assert got["buy"] == f"BUY {plan['nodes']['count']} x aws-m6id.24xlarge at peak (lower bound {plan['nodes']['lower_bound']})"
    assert 0 <= got["top"] and got["bottom"] <= height, got
    assert got["scrollWidth"] <= width, got
    assert got["wide"] == [], got
    assert got["modebars"] == 0
    assert {c["id"] for c in charts if c["svgs"] > 0} == expected and all(c["traces"] > 0 for c in charts), charts
    assert browser.errors() == []


READABLE = """
(() => {
  // every visible text run's rendered size in CSS px (an SVG text's font size times its transform's scale)
  const small = [];
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  while (walker.nextNode()) {
    const t = walker.currentNode;
    if (!t.textContent.trim()) continue;
    const e = t.parentElement, r = e.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    let px = parseFloat(getComputedStyle(e).fontSize);
    if (e instanceof SVGElement && e.getScreenCTM && e.getScreenCTM()) {
      const m = e.getScreenCTM();
      px *= Math.sqrt(Math.abs(m.a * m.d - m.b * m.c));
    }
    if (px < 10) small.push([e.closest('[id]') ? e.closest('[id]').id : '', t.textContent.slice(0, 40), px]);
  }
  const wide = Array.from(document.querySelectorAll('body *')).filter(e => {
    const b = e.getBoundingClientRect();
    return b.width > 0 && b.right > window.innerWidth + 1 && !e.closest('table');  // tables scroll in their box
  }).map(e => e.tagName + '.' + (e.className.baseVal ?? e.className)).slice(0, 10);
  const figures = Array.from(document.querySelectorAll('[data-figure]')).map(e => ({
    name: e.dataset.figure, value: e.dataset.value, text: e.innerText.replace(/\\s+/g, ' ').trim(),
    section: e.closest('section') ? e.closest('section').id : ''}));
  return {small, wide, figures, scrollWidth: document.documentElement.scrollWidth,
          footer: document.querySelector('footer') ? document.querySelector('footer').innerText : null};
})()
"""


@pytest.mark.parametrize(("width", "height", "mobile"), [(1400, 900, False), (390, 844, True)])
def test_demo_report_in_chromium_agrees_fits_reads_and_stays_offline(browser, demo_out, tmp_path, width, height, mobile):
    """The demo's page as a reader sees it: every shared figure shows one value and one text
    wherever it appears, nothing reaches past the right edge, no text is drawn under 10 px (the rent
    chart's bar label was 4.2 px at 390 px, the log axes' minor labels 9 px), no request leaves the
    page, and the footer names the version, the command and the inputs' digests."""
    browser.viewport(width, height, mobile=mobile)
    browser.open((demo_out / "report.html").as_uri())
    charts = browser.evaluate(CHARTS_DRAWN)
    got = browser.evaluate(READABLE)
    browser.screenshot(tmp_path / f"demo-{width}.png")
    assert charts and all(c["svgs"] > 0 for c in charts), charts
    assert got["scrollWidth"] <= width and got["wide"] == [], got["wide"]
    assert got["small"] == [], got["small"]
    shown: dict[str, set] = {}
    for f in got["figures"]:
        shown.setdefault(f["name"], set()).add((f["value"], f["text"]))
    assert {k for k, v in shown.items() if len(v) > 1} == set(), shown
    assert {"nodes", "target", "peak", "duty", "exception_rate", "steps"} <= set(shown)
    assert shown["steps"] == {("in 4 of 4 runs (by model)", "in 4 of 4 runs (by model)")}
    from sandbox_fleet import __version__

    assert f"sandbox-fleet {__version__}" in got["footer"] and "Command: sandbox-fleet demo" in got["footer"]
    assert "measure sha256:" in got["footer"] and "plan sha256:" in got["footer"]
    requests = [e["params"]["request"]["url"] for e in browser.events if e.get("method") == "Network.requestWillBeSent"]
    assert [u for u in requests if not u.startswith(("file:", "data:", "about:"))] == []
    assert browser.errors() == []

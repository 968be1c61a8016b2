"""The report agrees with itself: every section shows the decision block's figures, and the gates
show the value they tested.

The page marks each appearance of a shared figure (``data-figure``, ``data-value``: the headline
cards, the plan, headline and concurrency tables, the checks); these tests parse the HTML with the
standard library, compare every appearance with the others and with the summaries' own JSON, and
read the decision block's prose for the same figures. The demo's page (the published campaign
simulated at scale 0.05, four interleaved RL runs) is the case the issue found contradicting itself:
"steps detected" above, "batched steps detected: no" below.
"""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

import pytest

from sandbox_fleet.jsonio import to_jsonable
from sandbox_fleet.plan import PlanOptions
from summaries import plan_json, report_html

#: Figures that must appear in the cards and in at least one section below them.
SHARED = {"nodes", "target", "peak", "duty", "exception_rate", "steps"}


class _Figures(HTMLParser):
    """Every data-figure element's (name, raw value, visible text, the section it sits in)."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[dict] = []
        self._open: list[dict] = []  # figures whose text is being collected
        self._stack: list[str] = []
        self._section = ""
        self._cards_depth = 0  # inside the headline cards: their labels are not the decision's prose
        self.decision_text = ""

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "section":
            self._section = a.get("id", "")
        self._stack.append(tag)
        if a.get("class") == "cards":
            self._cards_depth = len(self._stack)
        if "data-figure" in a:
            self._open.append({"name": a["data-figure"], "value": a["data-value"], "text": "",
                               "section": self._section, "depth": len(self._stack), "card": False})

    def handle_endtag(self, tag):
        depth = len(self._stack)
        while self._open and self._open[-1]["depth"] >= depth:
            self.found.append(self._open.pop())
        if self._cards_depth >= depth:
            self._cards_depth = 0
        if self._stack:
            self._stack.pop()

    def handle_data(self, data):
        for f in self._open:
            f["text"] += data
        if self._section == "decision" and not self._cards_depth:
            self.decision_text += data + "\n"


def figures_of(html: str) -> tuple[list[dict], str]:
    p = _Figures()
    p.feed(html)
    return p.found, p.decision_text


def _agree(found: list[dict]) -> dict[str, tuple[str, str]]:
    """name -> (raw value, text), asserting every appearance of a name shows the same value and text."""
    by_name: dict[str, set[tuple[str, str]]] = {}
    for f in found:
        by_name.setdefault(f["name"], set()).add((f["value"], " ".join(f["text"].split())))
    disagree = {k: v for k, v in by_name.items() if len(v) > 1}
    assert not disagree, disagree
    return {k: next(iter(v)) for k, v in by_name.items()}


def _check_page(html: str, measure: dict, plan: dict) -> dict[str, tuple[str, str]]:
    found, decision = figures_of(html)
    shown = _agree(found)
    places = {name: {f["section"] for f in found if f["name"] == name} for name in shown}
    for name in SHARED:  # in the decision block's cards and in a section below
        assert "decision" in places[name] and len(places[name]) >= 2, (name, places[name])
    # the raw values are the summaries' own figures (read from their JSON, not from the page)
    assert float(shown["peak"][0]) == measure["concurrency"]["peak"]
    assert float(shown["duty"][0]) == measure["concurrency"]["duty"]
    assert float(shown["exception_rate"][0]) == measure["outcomes"]["exception_rate"]
    assert float(shown["nodes"][0]) == plan["nodes"]["count"]
    assert float(shown["target"][0]) == plan["target"]["concurrency"]
    # the decision block's prose says what the cards say
    buy = re.search(r"BUY (\d+) x ", decision)
    assert buy and buy.group(1) == shown["nodes"][1], (buy, shown["nodes"])
    duty = re.search(r"measured: duty ([\d.]+%)", decision)
    assert duty is None or duty.group(1) == shown["duty"][1], (duty, shown["duty"])
    if re.search(r"(?<!no )steps detected", decision):  # "demand chosen: steps detected"
        assert shown["steps"][0] not in ("no", ""), shown["steps"]
    return shown


def test_the_demo_report_agrees_with_itself(demo_out):
    """The demo's four interleaved runs each show steps; over all starts together there is no single
    pattern. The decision chose the demand because steps were detected, and the concurrency section
    now says so: "in 4 of 4 runs (by model)", with each run's steps below it."""
    measure = json.loads((demo_out / "measure.json").read_text())
    plan = json.loads((demo_out / "plan.json").read_text())
    html = (demo_out / "report.html").read_text()
    shown = _check_page(html, measure, plan)
    st = measure["steps"]
    assert st["detected"] is False and len(st["runs_with_steps"]) == st["runs"] == 4
    assert shown["steps"] == ("in 4 of 4 runs (by model)", "in 4 of 4 runs (by model)")
    assert "batched steps detected</th><td" in html and ">no</td>" not in html.split('id="concurrency"')[1].split("</section>")[0]
    # each run's own steps, as measure prints them, from by_model.<run>.steps
    for run in st["runs_with_steps"]:
        own = measure["by_model"][run]["steps"]
        assert f'<td data-label="run">{run}</td><td data-label="steps">{own["steps"]:,}</td>' in html


def test_a_producer_made_report_agrees_with_itself(fleet, simulate):
    plan = to_jsonable(plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge")))
    _check_page(report_html(fleet, plan, simulate), fleet, plan)


def test_the_agreement_check_catches_a_contradiction(fleet, simulate):
    """Not vacuous: a section that shows another value than the cards fails the comparison."""
    plan = to_jsonable(plan_json(fleet, PlanOptions(node_type="aws-m6id.24xlarge")))
    html = report_html(fleet, plan, simulate)
    found, _ = figures_of(html)
    peak = next(f for f in found if f["name"] == "peak" and f["section"] == "headline")
    forged = html.replace(f'<td data-figure="peak" data-value="{peak["value"]}">',
                          '<td data-figure="peak" data-value="1.0">', 1)
    with pytest.raises(AssertionError):
        _agree(figures_of(forged)[0])


#: How each gate compares its value with its threshold (from data/checks.toml's key names):
#: "above" fails/warns above the bound, "below" under it, "at_or_above" at it or above.
DIRECTION = {
    "small_sample": "below", "prefix_cache_off": "below", "exception_rate": "above",
    "exception_rate_by_model": "above", "exception_rate_by_job": "above", "exception_rate_by_task": "at_or_above",
    "exception_rate_by_node": "above", "missing_reward": "above", "missing_tokens": "above", "missing_turns": "above",
    "missing_trajectory": "above", "rejected_rows": "above", "cap_binding": "above", "duty_cycle": "below",
    "hold_tail": "above", "sandbox_hours_per_pass": "above", "build_share": "above", "plan_covers_peak": "below",
    "creation_rate_saturated": "above", "informative_groups": "below", "exceptions_scored_as_rewards": "above",
}


def _over(value: float, bound: float, direction: str) -> bool:
    return {"above": value > bound, "below": value < bound, "at_or_above": value >= bound}[direction]


def test_gates_show_the_value_they_tested(demo_out):
    """A gate that shows a value and a threshold passes exactly when the value is on the passing side
    (the demo's exception_rate_by_task showed PASS at 100% against 50%: that value was never tested,
    every task being within chance, and is now not shown)."""
    results = json.loads((demo_out / "checks.json").read_text())["results"]
    by_name = {r["name"]: r for r in results}
    task = by_name["exception_rate_by_task"]
    assert task["status"] == "pass" and task["value"] is None and "within chance" in task["message"]
    judged = 0
    for r in results:
        if r["value"] is None or r["threshold"] is None or r["name"] not in DIRECTION or r["status"] == "skip":
            continue
        judged += 1
        assert _over(r["value"], r["threshold"], DIRECTION[r["name"]]) == (r["status"] != "pass"), r
    assert judged >= 12


def test_mixed_chart_ticks_whole_nodes_and_break_even_above_one_reads_as_none(demo_out):
    plan = json.loads((demo_out / "plan.json").read_text())
    mx = plan["cost"]["mixed"]
    html = (demo_out / "report.html").read_text()
    mixed = html.split('<section id="mixed">')[1].split("</section>")[0]
    # the demo's spot fleet costs $1.70/h, reserved $5.86/h: reserved / spot = 3.447, never cheaper reserved
    assert mx["break_even_share"] == pytest.approx(plan["cost"]["reserved_per_h"] / plan["cost"]["spot_per_h"], rel=1e-3)
    assert mx["break_even_share"] > 1 and "344.7%" not in mixed
    assert f"none: reserved costs {mx['break_even_share']:.2f}x the spot price per hour" in mixed
    assert '"tickmode":"linear","tick0":1,"dtick":1' in mixed.replace(" ", "")

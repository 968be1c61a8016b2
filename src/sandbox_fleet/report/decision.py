"""The decision block's risks (``check``'s failing gates) and its HTML, the report's first screen.

The words come from ``plan.decision`` (one source for plan's text and the report); this module adds
what only report can: the gates, run on the same measure summary and plan.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.decision import decide
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.checks import CheckResult, run_checks
from sandbox_fleet.report.thresholds import Thresholds

#: Failing gates named in the block; the rest are counted and left to ``check`` and the report.
TOP_RISKS = 3


def risk_lines(results: list[CheckResult], most: int = TOP_RISKS) -> list[str]:
    """The first ``most`` failing gates as ``name: message``, then how many more fail."""
    failing = [r for r in results if r.status == "fail"]
    lines = [f"{r.name}: {r.message}" for r in failing[:most]]
    if len(failing) > most:
        lines.append(f"and {len(failing) - most} more failing gates (sandbox-fleet check)")
    return lines


def plan_risks(measure: MeasureSummary, plan: PlanSummary, thresholds: Optional[Thresholds] = None) -> list[str]:
    """``check``'s failing gates on the measure summary a plan was made from, with that plan."""
    return risk_lines(run_checks(measure, plan, thresholds))


def _items(lines: list[str], cls: str = "") -> str:
    from sandbox_fleet.textout import html_escape as escape  # controls shown, as on every line the user reads

    attr = f' class="{cls}"' if cls else ""
    return f"<ul{attr}>" + "".join(f"<li>{escape(x)}</li>" for x in lines) + "</ul>"


def decision_html(plan: PlanSummary, results: list[CheckResult], previous: Optional[PlanSummary] = None) -> str:
    """The decision block as the report's first section: BUY lines, cost, what binds, risks, basis."""
    d = decide(plan, previous, risk_lines(results))
    from sandbox_fleet.textout import html_escape as escape

    buy = "".join(f'<p class="{"buy" if x.startswith("BUY") else "unsized"}">{escape(x)}</p>' for x in d.buy)
    censored = "".join(f'<p class="censored">{escape(x)}</p>' for x in d.censored)
    parts = [buy, censored, _items([*d.cost, d.binds], "cost")]
    parts.append("<h3>Top risks (failing check gates)</h3>" + (_items(d.risks, "risks") if d.risks else "<p>No check gate fails.</p>"))
    parts.append("<h3>What the order rests on</h3>" + _items(d.rests_on))
    if previous is not None:
        parts.append("<h3>Changed since the previous plan</h3>" + _items(d.changed))
    return "".join(parts)

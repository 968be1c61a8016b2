"""The figures the report shows in more than one place, each read once: the headline cards at the
top of the decision block and the same figures in the sections below them.

Every place a shared figure appears carries ``data-figure="NAME"`` and ``data-value="RAW"`` (the
unformatted value), and its text is formatted by the same ``tables.fmt`` kind, so a test (and a
reader with the page's source) can check that the decision block and every section agree.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sandbox_fleet.measure.model import Concurrency, MeasureSummary, Outcomes, Slice, Steps
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.textout import html_escape as escape

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def raw(value: Any) -> str:
    """A value as ``data-value`` holds it: numbers at full precision, booleans yes/no, text as is."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    x = as_num(value)
    return repr(float(x)) if x is not None else str(value)


def attrs(name: str, value: Any) -> str:
    """The attributes that mark one appearance of a shared figure."""
    return f' data-figure="{escape(name, quote=True)}" data-value="{escape(raw(value), quote=True)}"'


def step_runs(m: MeasureSummary) -> list[tuple[str, Steps]]:
    """(run, its steps) for each run measure found synchronous steps in (``steps.runs_with_steps``,
    read from ``by_model`` or ``by_job`` as ``steps.runs_by`` says); [] when runs were not told apart."""
    st = m.steps
    if st is None or not st.runs_with_steps:
        return []
    slices: dict[str, Slice] = (m.by_job if st.runs_by == "job" else m.by_model) or {}
    out = []
    for run in st.runs_with_steps:
        steps = slices[run].steps if run in slices else None
        if steps is not None:
            out.append((run, steps))
    return out


def steps_verdict(m: MeasureSummary) -> str | None:
    """Whether batched RL steps were detected, in the words every section uses: "yes" (over all
    starts), "in K of N runs (by model)" (each run apart, the starts of interleaved runs together
    hold no single step pattern), "no", or None (not measured)."""
    st = m.steps
    if st is None or st.detected is None:
        return None
    if st.detected:
        return "yes"
    runs = st.runs_with_steps or []
    if runs:
        return f"in {len(runs)} of {st.runs if st.runs is not None else len(runs)} runs (by {st.runs_by or 'run'})"
    return "no"


@dataclass(frozen=True)
class Card:
    """One headline card: its figure name, its label, its raw value and its formatted text."""

    name: str
    label: str
    value: Any
    text: str


def cards(m: MeasureSummary, p: PlanSummary | None) -> list[Card]:
    """The headline cards: what to buy and for how much (with a plan), then the measured load."""
    from sandbox_fleet.plan.decision import all_in_per_h
    from sandbox_fleet.plan.decision import money as _money
    from sandbox_fleet.plan.model import Cost
    from sandbox_fleet.report.tables import fmt

    out: list[Card] = []
    if p is not None:
        co = p.cost or Cost()
        per_h, parts = all_in_per_h(co)
        per_pass = co.per_passing_trajectory_all_in
        basis = "the fleet only" if len(parts) == 1 else "all in"  # as the decision block's cost lines say
        out += [
            Card("nodes", f"nodes to buy ({p.nodes.type})", p.nodes.count, fmt(p.nodes.count, "int")),
            Card("usd_per_h", f"$/h, {basis}", per_h, f"{_money(per_h)}/h" if per_h is not None else fmt(None)),
            Card("usd_per_pass", f"$ per passing trajectory, {basis}", per_pass,
                 _money(per_pass) if per_pass is not None else fmt(None)),
            Card("target", "target concurrency", p.target.concurrency, fmt(p.target.concurrency, "int")),
        ]
    conc, out_m = m.concurrency or Concurrency(), m.outcomes or Outcomes()
    steps = steps_verdict(m)
    out += [
        Card("peak", "measured peak concurrency", conc.peak, fmt(conc.peak, "int")),
        Card("duty", "duty (mean / peak)", conc.duty, fmt(conc.duty, "pct")),
        Card("exception_rate", "rollouts ending in an exception", out_m.exception_rate, fmt(out_m.exception_rate, "pct")),
        Card("steps", "batched RL steps detected", steps, fmt(steps, "text")),
    ]
    return out


def cards_html(m: MeasureSummary, p: PlanSummary | None) -> str:
    body = "".join(f'<div class="card"><div class="v"{attrs(c.name, c.value)}>{c.text}</div>'
                   f'<div class="l">{escape(c.label)}</div></div>' for c in cards(m, p))
    return f'<div class="cards">{body}</div>'

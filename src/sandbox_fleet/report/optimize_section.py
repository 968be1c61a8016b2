"""The report's optimize section: the Pareto frontier (all-in $/h against throughput or step time)
and the winner with its basis, drawn from an ``OptimizeSummary``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Optional

import plotly.graph_objects as go

from sandbox_fleet.optimize.model import OptimizeSummary, Point
from sandbox_fleet.report.charts import LEGEND, MARGIN
from sandbox_fleet.report.tables import kv_table
from sandbox_fleet.textout import html_escape as escape

TITLES = {"frontier": "Cheapest configurations: all-in $/h against the target figure"}


def _axis(summary: OptimizeSummary) -> tuple[Callable[[Point], Optional[float]], str]:
    """(reader, label) of the figure the frontier trades cost against."""
    if summary.target.passing_per_hour is not None:
        return (lambda p: p.passing_per_hour), "passing trajectories per hour"
    return (lambda p: p.step_s), "mean step time (s)"


def _target_text(summary: OptimizeSummary) -> str:
    """The target with its unit (what the search had to meet)."""
    t = summary.target
    if t.passing_per_hour is not None:
        return f"{t.passing_per_hour:,.0f} passing trajectories per hour"
    if t.max_step_s is None:
        return "none"
    return f"mean step at most {t.max_step_s:,.0f} s" + (f" at a batch of {t.batch:,}" if t.batch else "")


def frontier_chart(summary: OptimizeSummary) -> go.Figure:
    """Frontier points as a step line, the winner marked; hover names each configuration."""
    figure, label = _axis(summary)
    pts = [p for p in summary.frontier if figure(p) is not None]
    text = [f"cap {p.sandbox_cap}, {p.nodes} x {p.node_type} ({p.tier}), {p.gpus} x {p.gpu}"
            f"{' cached' if p.caching else ''}" for p in pts]
    fig = go.Figure(go.Scatter(x=[figure(p) for p in pts], y=[p.usd_per_h for p in pts],
                               mode="lines+markers", line={"shape": "hv", "color": "#1f77b4"},
                               name="frontier", text=text, hovertemplate="%{text}<br>%{x:,.1f}: $%{y:,.2f}/h"))
    best = summary.best
    if figure(best) is not None:
        fig.add_trace(go.Scatter(x=[figure(best)], y=[best.usd_per_h], mode="markers",
                                 marker={"size": 14, "symbol": "star", "color": "#d62728"}, name="winner"))
    goal = summary.target.passing_per_hour if summary.target.passing_per_hour is not None else summary.target.max_step_s
    if goal is not None:  # the target as a vertical line: points right of it (or left, for a step time) meet it
        fig.add_vline(x=goal, line={"color": "#2ca02c", "dash": "dash"}, annotation_text=f"target {_target_text(summary)}",
                      annotation_position="top left")
    fig.update_layout(title={"text": TITLES["frontier"], "x": 0.01}, template="plotly_white", height=420,
                      margin=MARGIN, legend=LEGEND, xaxis_title=label, yaxis_title="all-in $ per hour")
    return fig


def winner_table(summary: OptimizeSummary) -> str:
    """The winner's configuration and cost parts, as the purchase order states them."""
    b = summary.best
    lo, hi = b.passing_per_hour_interval
    rows = [
        ("target", _target_text(summary), "text"),
        ("sandbox cap", b.sandbox_cap, "int"),
        ("nodes", f"{b.nodes} x {b.node_type} ({b.tier})", "text"),
        ("GPUs", f"{b.replicas} x {b.gpus_per_replica} {b.gpu}{' with prefix caching' if b.caching else ''}", "text"),
        ("all-in $ per hour", b.usd_per_h, "f2"),
        ("fleet / GPUs / spot re-runs $ per hour",
         f"{b.fleet_usd_per_h:,.2f} / {b.gpu_usd_per_h:,.2f} / {b.rework_usd_per_h:,.2f}", "text"),
        ("passing per hour (interval)", f"{b.passing_per_hour:,.1f} ({lo:,.1f} to {hi:,.1f}, "
         f"{b.replications} replications)", "text"),
        *([("95% lower bound of the mean", b.passing_per_hour_lower, "f1")] if b.passing_per_hour_lower is not None else []),
        *([("cheaper points set aside", len(b.stepped_up_from), "int")] if b.stepped_up_from else []),
        ("configurations evaluated", summary.evaluated, "int"),
    ]
    return kv_table(rows) + f'<p class="sub">Searched on the {escape(summary.backend)} backend.</p>'

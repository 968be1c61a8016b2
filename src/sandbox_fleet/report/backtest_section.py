"""The report's backtest section: the verdict, B's predicted vs actual concurrency over time, the
figures with their intervals and the drift tests, drawn from a ``BacktestSummary``."""

from __future__ import annotations

from html import escape

import plotly.graph_objects as go

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.report.charts import LEGEND, MARGIN
from sandbox_fleet.report.tables import fmt, grid_table

TITLES = {"backtest": "Part B: predicted vs actual sandboxes held over time"}


def concurrency_chart(bt: BacktestSummary) -> go.Figure | None:
    s = bt.series
    if s is None or not s.t_s:
        return None
    band = f"{bt.interval_level:.0%} of predicted runs"
    fig = go.Figure([
        go.Scatter(x=s.t_s, y=s.high, mode="lines", line={"width": 0}, showlegend=False, hoverinfo="skip"),
        go.Scatter(x=s.t_s, y=s.low, mode="lines", line={"width": 0}, fill="tonexty",
                   fillcolor="rgba(31,119,180,0.2)", name=band),
        go.Scatter(x=s.t_s, y=s.predicted, mode="lines", line={"color": "#1f77b4"}, name="predicted (median run)"),
        go.Scatter(x=s.t_s, y=s.actual, mode="lines", line={"color": "#d62728", "shape": "hv"}, name="actual"),
    ])
    fig.update_layout(title={"text": TITLES["backtest"], "x": 0.01}, template="plotly_white", height=420,
                      margin=MARGIN, legend=LEGEND, xaxis_title="seconds from part B's first start",
                      yaxis_title="sandboxes held")
    return fig


def verdict_html(bt: BacktestSummary) -> str:
    sp = bt.split
    how = f"first {sp.fraction:.0%} in start order" if sp.by == "fraction" else f"by {sp.by}"
    return (f"<p><strong>{escape(bt.verdict)}</strong></p><p class=\"sub\">split {escape(how)}: A {sp.a_rows:,} "
            f"rollouts, B {sp.b_rows:,}; B replayed on its measured peak, cap {sp.b_cap:,}; {bt.seeds} runs. "
            f"Basis: {escape(bt.basis)}</p>")


def figures_table(bt: BacktestSummary) -> str:
    rows = []
    for name, f in bt.figures.items():
        if f.actual is None and f.predicted is None:
            continue
        o = bt.oracle.get(name)
        iv = f"{fmt(f.interval[0], 'num')} to {fmt(f.interval[1], 'num')}" if f.interval else fmt(None, "num")
        rows.append([escape(name), fmt(f.actual, "num"), fmt(f.predicted, "num"), iv, fmt(f.error, "pct"),
                     fmt(o.error if o is not None else None, "pct"),
                     "" if f.within_interval is None else ("yes" if f.within_interval else "no")])
    return grid_table(["figure", "actual", "predicted", "interval", "error", "oracle error", "actual within"], rows)


def drift_table(bt: BacktestSummary) -> str:
    rows = [[escape(t.quantity + (f" ({t.model})" if t.model else "")), fmt(t.a_value, "num"), fmt(t.b_value, "num"),
             escape(f"{t.effect_name} {t.effect:+.3f}"), fmt(t.p_adjusted, "num"), "yes" if t.drifted else "no"]
            for t in bt.drift.tests]
    return grid_table(["quantity", "A", "B", "effect", "adjusted p", "drifted"], rows)

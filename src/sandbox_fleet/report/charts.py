"""Plotly figures for the report, one builder per chart.

Each builder takes the summary and returns a figure, or None when its inputs were not
measured. Reference lines are drawn as traces (not layout shapes) so they sit correctly
on log axes and appear in the legend with their values.
"""

from __future__ import annotations

from collections.abc import Callable

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from sandbox_fleet.measure.model import (
    Concurrency,
    Coverage,
    Exceptions,
    Histogram,
    Holds,
    MeasureSummary,
    Series,
    Tokens,
)
from sandbox_fleet.report.fields import as_num, numbers, turn_keyed

_TEMPLATE = "plotly_white"
_LINE = {"mean": "#2ca02c", "peak": "#d62728", "cap": "#9467bd", "median": "#2ca02c", "p99": "#d62728"}


#: Legends sit under the plot, left-aligned: at a phone's width a legend beside the title covers it.
LEGEND = {"orientation": "h", "yanchor": "top", "y": -0.22, "x": 0.0, "xanchor": "left"}
MARGIN = {"l": 70, "r": 20, "t": 60, "b": 110}
#: The turn histogram's x axis ends where this share of the rollouts is covered (its long thin tail
#: would otherwise stretch the axis over empty bins); the rest is counted in the title.
TURNS_SHOWN_SHARE = 0.995


def _layout(fig: go.Figure, title: str, **axes: object) -> go.Figure:
    fig.update_layout(
        title={"text": title, "x": 0.01},
        template=_TEMPLATE,
        height=420,
        margin=MARGIN,
        legend=LEGEND,
        **axes,
    )
    return fig


#: The smallest text a chart draws, in CSS px: readable on a phone (bar labels shrink to fit their bar otherwise).
MIN_TEXT_PX = 10
#: A title longer than this many characters is broken onto a second line (17 px glyphs across a 390 px phone).
TITLE_CHARS = 40


def readable(fig: go.Figure) -> go.Figure:
    """Every chart made readable at a phone's width, applied once where the page embeds it: bar and
    scatter labels never shrink below ``MIN_TEXT_PX`` (``uniformtext``), log axes label whole
    decades only (Plotly draws the 2 and 5 between them at three quarters of the tick font, 9 px),
    and a long title is broken onto two lines instead of running past the chart's right edge."""
    fig.update_layout(uniformtext={"minsize": MIN_TEXT_PX, "mode": "show"})
    for axis in (fig.layout.xaxis, fig.layout.yaxis):
        if axis.type == "log" and axis.dtick is None and axis.tickvals is None:
            axis.dtick = 1
    title = fig.layout.title.text
    if title and len(title) > TITLE_CHARS and "<br>" not in title:
        cut = title.rfind(" ", 0, TITLE_CHARS)
        if cut > 0:
            fig.layout.title.text = title[:cut] + "<br>" + title[cut + 1:]
            fig.layout.margin.t = max(fig.layout.margin.t or 0, MARGIN["t"] + 24)
    return fig


def _hline(fig: go.Figure, x0: float, x1: float, y: float, name: str, color: str, **kw: object) -> None:
    fig.add_trace(go.Scatter(x=[x0, x1], y=[y, y], mode="lines", name=name,
                             line={"color": color, "dash": "dash", "width": 1.5}, hoverinfo="name", **kw))


def _vline(fig: go.Figure, x: float, y0: float, y1: float, name: str, color: str) -> None:
    fig.add_trace(go.Scatter(x=[x, x], y=[y0, y1], mode="lines", name=name,
                             line={"color": color, "dash": "dash", "width": 1.5}, hoverinfo="name"))


def concurrency(m: MeasureSummary) -> go.Figure | None:
    """Step function of concurrency with its peak/cap and time-weighted mean."""
    conc = m.concurrency or Concurrency()
    series = conc.series or Series()
    t, level = numbers(series.t_s), numbers(series.level)
    if not t or not level or len(t) != len(level):
        return None
    hours = [x / 3600.0 for x in t]
    bucket = as_num(series.bucket_s)
    # A long campaign is summarised per time bucket (its maximum), so the peak is never lost.
    label = f"concurrency (max per {bucket:,.0f} s)" if bucket else "concurrency"
    fig = go.Figure(go.Scatter(x=hours, y=level, mode="lines", line_shape="hv", name=label,
                               line={"color": "#1f77b4", "width": 1}, fill="tozeroy"))
    x0, x1 = hours[0], hours[-1]
    mean, peak, cap = as_num(conc.mean), as_num(conc.peak), as_num(conc.configured_cap)
    if peak is not None:
        capped = " (cap detected)" if conc.cap_detected else ""
        _hline(fig, x0, x1, peak, f"peak {peak:,.0f}{capped}", _LINE["peak"])
    if cap is not None and cap != peak:
        _hline(fig, x0, x1, cap, f"configured cap {cap:,.0f}", _LINE["cap"])
    if mean is not None:
        _hline(fig, x0, x1, mean, f"mean {mean:,.1f}", _LINE["mean"])
    return _layout(fig, TITLES["concurrency"], xaxis_title="hours since first start", yaxis_title="sandboxes held")


def hold(m: MeasureSummary) -> go.Figure | None:
    """Histogram of hold times (log x when every edge is positive) with median and p99."""
    holds = m.hold_s or Holds()
    hist = holds.histogram or Histogram()
    edges, counts = numbers(hist.edges_s), numbers(hist.counts)
    if not edges or not counts or len(edges) != len(counts) + 1:
        return None
    log_x = edges[0] > 0
    # A step outline over the bin edges renders correctly on a log axis, unlike bars with widths.
    fig = go.Figure(go.Scatter(x=edges, y=counts + [counts[-1]], mode="lines", line_shape="hv", fill="tozeroy",
                               name="rollouts", line={"color": "#1f77b4", "width": 1}))
    top = max(counts) if counts else 1.0
    for label, value in (("median", as_num(holds.median)), ("p99", as_num(holds.p99))):
        if value is not None and (value > 0 or not log_x):
            _vline(fig, value, 0, top, f"{label} {value:,.0f} s", _LINE[label])
    return _layout(fig, TITLES["hold"], xaxis_type="log" if log_x else "linear",
                   xaxis_title="hold (s, log scale)" if log_x else "hold (s)", yaxis_title="rollouts")


def context(m: MeasureSummary) -> go.Figure | None:
    """Measured median input tokens per turn count against the fitted c*n(n+1)/2."""
    tok = m.tokens or Tokens()
    pairs = [(n, v) for n, v in turn_keyed(tok.median_input_by_turns) if n > 0 and v > 0]
    if not pairs:
        return None
    fig = go.Figure(go.Scatter(x=[n for n, _ in pairs], y=[v for _, v in pairs], mode="markers",
                               name="measured median", marker={"size": 7, "color": "#1f77b4"}))
    c = as_num(tok.turn_tokens)
    if c is not None and c > 0:
        top = max(n for n, _ in pairs)
        step = max(1, top // 400)  # a few hundred points draw a smooth curve
        grid = list(range(1, top + 1, step)) + ([top] if (top - 1) % step else [])
        r2 = as_num(tok.r2_quadratic)
        fit = f"fit {c:,.0f}·n(n+1)/2" + (f", R² {r2:.4f}" if r2 is not None else "")
        fig.add_trace(go.Scatter(x=grid, y=[c * n * (n + 1) / 2 for n in grid], mode="lines", name=fit,
                                 line={"color": _LINE["peak"], "dash": "dash"}))
    return _layout(fig, TITLES["context"], xaxis_type="log", yaxis_type="log",
                   xaxis_title="turns", yaxis_title="median input tokens (summed over turns)")


def turns(m: MeasureSummary) -> go.Figure | None:
    pairs = turn_keyed((m.tokens or Tokens()).turns_histogram)
    if not pairs:
        return None
    total = sum(v for _, v in pairs)
    shown, seen = [], 0.0
    for n, v in pairs:
        shown.append((n, v))
        seen += v
        if seen >= TURNS_SHOWN_SHARE * total:
            break
    rest = total - seen
    fig = go.Figure(go.Bar(x=[n for n, _ in shown], y=[v for _, v in shown], name="rollouts",
                           marker={"color": "#1f77b4"}))
    title = TITLES["turns"] + (f" ({rest:,.0f} rollouts above {shown[-1][0]} turns not drawn)" if rest > 0 else "")
    return _layout(fig, title, xaxis_title="turns", yaxis_title="rollouts", showlegend=False)


def exception_types(m: MeasureSummary) -> list[tuple[str, float | None, float | None]]:
    """(type, count, sandbox-hours) per exception type, most frequent first (both maps keyed by type)."""
    exc = m.exceptions or Exceptions()
    by_type, hours = exc.by_type or {}, exc.sandbox_hours_by_type or {}
    rows = [(str(name), as_num(count), as_num(hours.get(name))) for name, count in by_type.items()]
    return sorted(rows, key=lambda r: (-(r[1] or 0.0), r[0]))


def exceptions(m: MeasureSummary) -> go.Figure | None:
    rows = exception_types(m)
    if not rows or all(r[1] is None for r in rows) or all(r[0] == "(none)" for r in rows):
        return None  # "(none)" alone: exceptions were counted but no type was recorded
    names = [r[0] for r in rows][::-1]  # horizontal bars list top-down
    with_hours = any(r[2] is not None for r in rows)
    cols = 2 if with_hours else 1
    titles = ("rollouts", "sandbox-hours") if with_hours else ("rollouts",)
    fig = make_subplots(rows=1, cols=cols, shared_yaxes=True, subplot_titles=titles, horizontal_spacing=0.04)
    fig.add_trace(go.Bar(y=names, x=[r[1] or 0 for r in rows][::-1], orientation="h", name="rollouts",
                         marker={"color": "#d62728"}), row=1, col=1)
    if with_hours:
        fig.add_trace(go.Bar(y=names, x=[r[2] or 0 for r in rows][::-1], orientation="h", name="sandbox-hours",
                             marker={"color": "#ff7f0e"}), row=1, col=2)
    fig = _layout(fig, TITLES["exceptions"], showlegend=False)
    fig.update_layout(height=max(300, 120 + 28 * len(rows)), margin={"l": 180})
    return fig


def models(m: MeasureSummary, budget: float | None = None) -> go.Figure | None:
    """Exception rate per model slice (keyed by model name), with the budget line."""
    rates = [(str(k), as_num(v.exception_rate)) for k, v in sorted((m.by_model or {}).items())]
    pairs = [(k, v) for k, v in rates if v is not None]
    if not pairs:
        return None
    fig = go.Figure(go.Bar(x=[k for k, _ in pairs], y=[v for _, v in pairs], name="exception rate",
                           marker={"color": "#d62728"}, text=[f"{v:.1%}" for _, v in pairs], textposition="outside"))
    # Reference lines span the bars on a hidden linear axis: on the category axis itself the
    # numbers -0.5 and n-0.5 would become two extra categories (seen in the browser test).
    overall = as_num(m.outcomes.exception_rate) if m.outcomes is not None else None
    if overall is not None:
        _hline(fig, -0.5, len(pairs) - 0.5, overall, f"all rows {overall:.1%}", "#7f7f7f", xaxis="x2")
    if budget is not None:
        _hline(fig, -0.5, len(pairs) - 0.5, budget, f"fail budget {budget:.0%}", "#000000", xaxis="x2")
    top = max([v for _, v in pairs] + [overall or 0, budget or 0])
    return _layout(fig, TITLES["models"], yaxis_tickformat=".0%", yaxis_range=[0, min(1.0, top * 1.15) or 1.0],
                   yaxis_title="share of rollouts with an exception", xaxis_type="category",
                   xaxis2={"overlaying": "x", "range": [-0.5, len(pairs) - 0.5], "visible": False})


def coverage(m: MeasureSummary) -> go.Figure | None:
    rows = as_num(m.rows)
    cov = m.coverage or Coverage()
    missing = [("reward", as_num(cov.missing_reward)), ("tokens", as_num(cov.missing_tokens)),
               ("turns", as_num(cov.missing_turns)), ("trajectory", as_num(cov.missing_trajectory))]
    found = [(f, c) for f, c in missing if c is not None]
    if not found or not rows:
        return None
    shares = [c / rows for _, c in found]
    fig = go.Figure(go.Bar(x=[f for f, _ in found], y=shares, marker={"color": "#7f7f7f"}, name="missing",
                           text=[f"{s:.1%} ({c:,.0f})" for s, (_, c) in zip(shares, found)], textposition="outside"))
    # whole percents would label a 0-1% axis "0%, 0%, 1%, 1%": one decimal below 5%
    return _layout(fig, TITLES["coverage"], yaxis_tickformat=".1%" if max(shares) < 0.05 else ".0%", yaxis_range=[0, min(1.0, max(shares) * 1.25) or 0.05],
                   yaxis_title=f"share of {rows:,.0f} rows", xaxis_title="field missing", showlegend=False)


TITLES = {
    "concurrency": "Concurrency over time",
    "hold": "Hold time distribution",
    "context": "Median input tokens vs turns",
    "turns": "Turns per rollout",
    "exceptions": "Exceptions by type",
    "models": "Exception rate by model",
    "coverage": "Coverage: missing telemetry",
}

#: Measure-summary charts in report order (the model chart takes a budget, so it is built separately).
BUILDERS: dict[str, Callable[[MeasureSummary], go.Figure | None]] = {
    "concurrency": concurrency,
    "hold": hold,
    "context": context,
    "turns": turns,
    "exceptions": exceptions,
    "coverage": coverage,
}

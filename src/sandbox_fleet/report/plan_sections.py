"""Report sections for the purchase order: caching saving by turns, hold-time CDFs per model, rent vs buy,
the mixed purchase's curve and the substrates' worker-hours.

Charts are Plotly figures (None when their inputs are absent); tables are HTML strings (None when
absent). Hold-time CDFs are drawn through the percentiles measure reports per model (min, median,
p90, p99, max); the extreme points sit at 1/(2n) and 1 - 1/(2n) for n rollouts, so a lone maximum
is not drawn as if it were a probability-1 point.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import plotly.graph_objects as go

from sandbox_fleet.contract import HoldFigures
from sandbox_fleet.measure.model import HoldStats, MeasureSummary
from sandbox_fleet.report.charts import LEGEND, MARGIN
from sandbox_fleet.report.fields import as_num, turn_keyed
from sandbox_fleet.report.tables import Row, fmt, grid_table, kv_table
from sandbox_fleet.textout import html_escape as escape

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary

TITLES = {
    "caching": "Prefix-caching saving on prefill by turns",
    "hold_cdf": "Hold time CDF by model",
    "rent": "Rent vs buy: $ per hour at the target",
    "mixed": "Mixed purchase: share of the time each node is needed",
    "nodes_replay": "Mixed purchase: nodes by pool over the replayed history",
}
_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")


def _layout(fig: go.Figure, title: str, **axes: object) -> go.Figure:
    fig.update_layout(title={"text": title, "x": 0.01}, template="plotly_white", height=420,
                      margin=MARGIN, legend=LEGEND, **axes)
    return fig


def caching_chart(plan: PlanSummary | None) -> go.Figure | None:
    """Saving factor (n+1)/2 by turn count, with prefix breaks if planned, and the measured mix."""
    ca = plan.caching if plan is not None else None
    if ca is None:
        return None
    pairs = [(n, v) for n, v in turn_keyed(ca.saving_by_turns) if n > 0]
    if not pairs:
        return None
    fig = go.Figure(go.Scatter(x=[n for n, _ in pairs], y=[v for _, v in pairs], mode="lines+markers",
                               name="byte-identical prefix: (n+1)/2", line={"color": "#1f77b4"}))
    brk = as_num(ca.prefix_break)
    broken = [(n, v) for n, v in turn_keyed(ca.saving_by_turns_with_breaks) if n > 0]
    if brk and broken:
        fig.add_trace(go.Scatter(x=[n for n, _ in broken], y=[v for _, v in broken], mode="lines+markers",
                                 name=f"{brk:.0%} of turns break the prefix", line={"color": "#ff7f0e", "dash": "dot"}))
    mix = as_num(ca.saving_measured_mix)
    if mix is not None:
        x0, x1 = pairs[0][0], pairs[-1][0]
        fig.add_trace(go.Scatter(x=[x0, x1], y=[mix, mix], mode="lines", name=f"measured turn mix x{mix:.2f}",
                                 line={"color": "#2ca02c", "dash": "dash"}))
    return _layout(fig, TITLES["caching"], xaxis_type="log", xaxis_title="turns per rollout",
                   yaxis_title="prefill without caching / with caching (x)")


def cdf_points(holds: HoldFigures, rows: float | None) -> list[tuple[float, float]]:
    """(hold s, cumulative share) through the known percentiles, in order of hold."""
    n = rows if rows and rows > 0 else None
    pts = []
    for key, value, q in (("min", holds.min, None), ("median", holds.median, 0.5), ("p90", holds.p90, 0.9),
                          ("p99", holds.p99, 0.99), ("max", holds.max, None)):
        v = as_num(value)
        if v is None or v <= 0:
            continue
        if q is None:
            if n is None:
                continue
            q = 1 / (2 * n) if key == "min" else 1 - 1 / (2 * n)
        pts.append((v, q))
    pts.sort()
    # quantiles must rise with the hold: drop a point that would bend the curve back
    out: list[tuple[float, float]] = []
    for v, q in pts:
        if not out or q > out[-1][1]:
            out.append((v, q))
    return out


def hold_cdf_chart(m: MeasureSummary) -> go.Figure | None:
    """One CDF line per model from its hold percentiles (``hold_s.by_model``, else ``by_model``), by model name."""
    by_model = (m.hold_s.by_model if m.hold_s is not None else None) or {}
    slices = m.by_model or {}
    models = sorted(set(by_model) | set(slices), key=str)
    fig = go.Figure()
    fleet = cdf_points(m.hold_s or HoldStats(), as_num(m.hold_s.rows if m.hold_s else None) or as_num(m.rows))
    if len(fleet) >= 2 and models:
        fig.add_trace(go.Scatter(x=[v for v, _ in fleet], y=[q for _, q in fleet], mode="lines", name="all rollouts",
                                 line={"color": "#000000", "dash": "dash", "width": 1.5}))
    for i, model in enumerate(models):
        holds = by_model.get(model)
        s = slices.get(model)
        if holds is None:  # the slice's own median and p99 stand in
            holds = HoldStats(median=s.hold_median_s, p99=s.hold_p99_s) if s is not None else HoldStats()
        rows = as_num(holds.rows)
        if rows is None and s is not None:
            rows = as_num(s.rows)
        pts = cdf_points(holds, rows)
        if len(pts) < 2:
            continue
        fig.add_trace(go.Scatter(x=[v for v, _ in pts], y=[q for _, q in pts], mode="lines+markers",
                                 name=str(model), line={"color": _PALETTE[i % len(_PALETTE)]},
                                 hovertemplate="%{x:,.0f} s: %{y:.1%}<extra>" + escape(str(model)) + "</extra>"))
    if len(fig.data) <= (1 if len(fleet) >= 2 and models else 0):
        return None  # no model has a curve of its own
    return _layout(fig, TITLES["hold_cdf"], xaxis_type="log", xaxis_title="hold (s, log scale)",
                   yaxis_title="share held at most this long", yaxis_tickformat=".0%",
                   yaxis_range=[0, 1.02])


_TIER_LABEL = {"reserved": "buy reserved", "on_demand": "buy on-demand", "spot": "buy spot"}


def rent_chart(plan: PlanSummary | None) -> go.Figure | None:
    """Bars: the bought fleet per tier (paid at peak) against each provider (busy hours only)."""
    cost = plan.cost if plan is not None else None
    rent = cost.rent if cost is not None else None
    if not rent or cost is None:
        return None
    names, values, colors, texts = [], [], [], []
    for tier, price in (("reserved", cost.reserved_per_h), ("on_demand", cost.on_demand_per_h), ("spot", cost.spot_per_h)):
        v = as_num(price)
        if v is not None:
            names.append(_TIER_LABEL[tier])
            values.append(v)
            colors.append("#1f77b4")
            texts.append(f"${v:,.2f}")
    for name, r in rent.items():  # keyed by provider name
        v = as_num(r.usd_per_h)
        if v is None:
            continue
        ok = r.within_limits is True
        names.append(f"rent {name}")
        values.append(v)
        colors.append("#2ca02c" if ok else "#bbbbbb")
        texts.append(f"${v:,.2f}" + ("" if ok else " (over limits)"))
    if not values:
        return None
    fig = go.Figure(go.Bar(x=names, y=values, marker={"color": colors}, text=texts, textposition="outside",
                           name="$/h"))
    return _layout(fig, TITLES["rent"], yaxis_title="USD per hour at the target", showlegend=False,
                   yaxis_range=[0, max(values) * 1.2])


def rent_table(plan: PlanSummary | None) -> str | None:
    cost = plan.cost if plan is not None else None
    rent = cost.rent if cost is not None else None
    if not rent or cost is None:
        return None
    rows = []
    for name, r in rent.items():
        hit = r.limits_hit or []
        rows.append([escape(str(name)), fmt(r.usd_per_h, "usd"), fmt(r.usd_per_pass, "usd"),
                     "yes" if r.within_limits else "no",
                     escape("; ".join(str(h) for h in hit)) or "",
                     escape(f"{r.source} ({r.as_of})")])
    table = grid_table(["provider", "$/h at target", "$ per pass", "within limits", "limits hit", "prices from"], rows)
    verdict = cost.rent_verdict
    head = f"<p><strong>Verdict:</strong> {escape(verdict)}</p>" if verdict is not None else ""
    return head + table + '<p class="sub">Rental prices are illustrative list prices (see the source and date); ' \
        "replace them with your quote (<code>plan --providers FILE</code>).</p>"


#: Plan lines shown only when the plan carries them (an older plan has none of these).
def _memory(p: PlanSummary):
    return p.inference.memory if p.inference is not None else None


def _all_in_beyond_fleet(p: PlanSummary):
    """The all-in cost per pass, only when it holds more than the fleet (else it repeats the fleet's)."""
    co = p.cost
    parts = co.per_passing_trajectory_parts if co is not None else None
    if co is None or parts is None or (parts.inference is None and parts.trainer is None):
        return None
    return co.per_passing_trajectory_all_in


#: Plan lines shown only when the plan carries them; each reads None when its block is absent.
OPTIONAL_PLAN_ROWS: tuple[Row[PlanSummary], ...] = (
    ("peak start rate (per s)", lambda p: p.starts.peak_per_s if p.starts else None, "f3"),
    ("start rate basis", lambda p: p.starts.basis if p.starts else None, "text"),
    ("inference GPU", lambda p: p.inference.gpu if p.inference else None, "text"),
    ("GPU memory: weights (GiB)", lambda p: _memory(p).weights_gb if _memory(p) else None, "f1"),
    ("GPU memory: live KV (GiB)", lambda p: _memory(p).kv_gb_live if _memory(p) else None, "f1"),
    ("GPUs bound by memory", lambda p: _memory(p).gpus_memory_bound if _memory(p) else None, "int"),
    ("GPUs bound by memory, with caching", lambda p: _memory(p).gpus_memory_bound_cached if _memory(p) else None, "int"),
    ("$ per passing trajectory, all in", _all_in_beyond_fleet, "usd"),
)


def extra_plan_table(plan: PlanSummary | None) -> str | None:
    if plan is None:
        return None
    rows = [(label, value, kind) for label, read, kind in OPTIONAL_PLAN_ROWS if (value := read(plan)) is not None]
    return kv_table(rows) if rows else None


def assumptions_table(plan: PlanSummary | None) -> str | None:
    """Every default and carried-over figure the purchase order rests on, with its source."""
    items = plan.assumptions if plan is not None else None
    if not items:
        return None
    from sandbox_fleet.numfmt import with_unit

    # the value in its unit as the plan's text shows it (a fraction as a percentage)
    rows = [[escape(a.name), *(escape(x) if x else "" for x in with_unit(a.value, a.unit, none="")), escape(a.source),
             escape(a.detail)] for a in items]
    return grid_table(["assumption", "value", "unit", "source", "detail"], rows)


def mixed_chart(plan: PlanSummary | None) -> go.Figure | None:
    """Bars: the share of the measured span node k is needed, reserved ones apart, and the break-even line."""
    mx = plan.cost.mixed if plan is not None and plan.cost is not None else None
    shares = mx.node_share if mx is not None else None
    if mx is None or not shares:
        return None
    r = (mx.replay.slot_curve_reserved_nodes if mx.replay is not None else mx.reserved_nodes) or 0  # the curve's own split
    nodes = list(range(1, len(shares) + 1))
    burst = (mx.burst_tier or "burst").replace("_", "-")
    fig = go.Figure(go.Bar(x=nodes, y=shares, name="share of the time node k is needed",
                           marker={"color": ["#1f77b4" if k <= r else "#ff7f0e" for k in nodes]},
                           hovertext=["reserved" if k <= r else burst for k in nodes]))
    ratio = as_num(mx.break_even_share)
    if ratio is not None and ratio <= 1.0:
        fig.add_trace(go.Scatter(x=[0.5, len(shares) + 0.5], y=[ratio, ratio], mode="lines",
                                 name=f"break-even: reserved / {burst} price = {ratio:.1%}",
                                 line={"color": "#d62728", "dash": "dash"}))
    # whole nodes only: ticks at 1, 1 + d, ... with d growing so that at most ~10 labels fit a phone's width
    step = max(1, -(-len(shares) // 10))
    return _layout(fig, TITLES["mixed"], xaxis_title=f"node k ({r} reserved in blue, the rest {burst} in orange)",
                   yaxis_title="share of the measured span", yaxis_range=[0, 1.05],
                   xaxis={"tickmode": "linear", "tick0": 1, "dtick": step, "range": [0.5, len(shares) + 0.5]})


def break_even_text(ratio: float | None, burst: str) -> str | None:
    """The break-even share as a reader acts on it: a node needed more of the time than this is cheaper
    reserved; at or above 100% (reserved costs more per hour than the burst tier) no node ever is."""
    if ratio is None:
        return None
    if ratio >= 1.0:
        return f"none: reserved costs {ratio:.2f}x the {burst} price per hour, so no node is cheaper reserved"
    return fmt(ratio, "pct")


def replay_chart(plan: PlanSummary | None) -> go.Figure | None:
    """Stacked steps: the chosen split's reserved and burst nodes up over the replayed history (each span's most)."""
    mx = plan.cost.mixed if plan is not None and plan.cost is not None else None
    series = mx.replay.nodes_over_time if mx is not None and mx.replay is not None else None
    if series is None or not series.t_h:
        return None
    burst = (mx.burst_tier or "burst").replace("_", "-") if mx is not None else "burst"
    fig = go.Figure()
    for name, ys, color in (("reserved", series.reserved, "#1f77b4"), (burst, series.burst, "#ff7f0e")):
        fig.add_trace(go.Scatter(x=series.t_h, y=ys, name=name, mode="lines", line={"shape": "hv", "color": color},
                                 stackgroup="nodes"))
    return _layout(fig, TITLES["nodes_replay"], xaxis_title="hours from the first start",
                   yaxis_title="nodes up (the most in each span)")


def mixed_table(plan: PlanSummary | None) -> str | None:
    """The mixed purchase beside the single-tier lines, with its basis."""
    cost = plan.cost if plan is not None else None
    mx = cost.mixed if cost is not None else None
    if cost is None or mx is None:
        return None
    rows = [("reserved nodes", mx.reserved_nodes, "int"), ("burst nodes (at most)", mx.burst_nodes, "int"),
            ("burst tier", (mx.burst_tier or "").replace("_", "-"), "text"), ("mixed $/h", mx.usd_per_h, "usd"),
            ("all reserved $/h", cost.reserved_per_h, "usd"), ("all on-demand $/h", cost.on_demand_per_h, "usd"),
            ("all spot $/h", cost.spot_per_h, "usd"),
            ("break-even share", break_even_text(as_num(mx.break_even_share), (mx.burst_tier or "burst").replace("_", "-")),
             "text")]
    rp = mx.replay
    if rp is not None:
        rows += [("slot-curve $/h (lower bound)", rp.slot_curve_usd_per_h, "usd"),
                 ("slot-curve reserved nodes", rp.slot_curve_reserved_nodes, "int"),
                 ("nodes at the real mix's peaks", rp.peak_nodes, "int"),
                 ("burst node-hours", rp.burst_node_hours, "f2"), ("burst launches", rp.burst_launches, "int"),
                 ("rollouts that waited for a node", rp.waited, "int"), ("stranded cpu share", rp.stranded_cpu_share, "pct")]
    table = kv_table([(label, v, kind) for label, v, kind in rows if v is not None])
    replay = f'<p class="sub">{escape(rp.basis or "")}</p>' if rp is not None else ""
    return table + f'<p class="sub">{escape(mx.basis or "")}</p>' + replay


def substrates_table(plan: PlanSummary | None) -> str | None:
    """Worker-hours each execution substrate's overhead adds to this workload, side by side."""
    sb = plan.substrates if plan is not None else None
    if sb is None or not sb.by_substrate:
        return None
    rows = [[escape(name), escape(s.kind or ""), fmt(s.cold_start_s, "f2"), fmt(s.per_action_s, "f3"),
             fmt(s.overhead_s_per_rollout, "f2"), fmt(s.added_worker_hours_per_million, "int"),
             fmt(s.worker_hours_per_million, "int"), fmt(s.added_worker_hours_per_h, "f3"),
             escape(f"{s.source} ({s.as_of})")] for name, s in sb.by_substrate.items()]
    table = grid_table(["substrate", "kind", "cold start s", "per turn s", "+s per rollout", "+worker-h per 1M",
                        "worker-h per 1M", "+worker-h per h", "figures from"], rows)
    return table + f'<p class="sub">{escape(sb.basis or "")}. The substrate figures are illustrative: replace them ' \
        "with your own measurements (<code>plan --substrates FILE</code>).</p>"

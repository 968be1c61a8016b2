"""The report's section for ``simulate --replay`` (``SimulateSummary.nodes``): what the measured rollouts
cost and waited on the node configuration, by pool, with nodes and stranded cpu over the replayed history."""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from sandbox_fleet.report.charts import LEGEND, MARGIN
from sandbox_fleet.report.tables import fmt, grid_table
from sandbox_fleet.simulate.model import NodeReplayFigures
from sandbox_fleet.textout import html_escape as escape

TITLES = {"replay_nodes": "Replay on nodes: nodes by pool and stranded cpu over the replayed history"}
_COLORS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd")


def replay_chart(n: NodeReplayFigures | None) -> go.Figure | None:
    """Stacked steps of the most nodes up per pool in each span, and the stranded cpu core-h below."""
    s = n.series if n is not None else None
    if s is None or not s.t_h or not s.nodes_by_pool:
        return None
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.6, 0.4])
    for k, (name, ys) in enumerate(s.nodes_by_pool.items()):
        fig.add_trace(go.Scatter(x=s.t_h, y=ys, name=f"{name} nodes", mode="lines", stackgroup="nodes",
                                 line={"shape": "hv", "color": _COLORS[k % len(_COLORS)]}), row=1, col=1)
    if s.stranded_cpu_h:
        fig.add_trace(go.Bar(x=s.t_h, y=s.stranded_cpu_h, name="stranded cpu core-h in the span",
                             marker={"color": "#7f7f7f"}), row=2, col=1)
    fig.update_layout(title={"text": TITLES["replay_nodes"], "x": 0.01}, template="plotly_white", height=520,
                      margin=MARGIN, legend=LEGEND)
    fig.update_yaxes(title_text="nodes up (the most in each span)", row=1, col=1)
    fig.update_yaxes(title_text="stranded core-h", row=2, col=1)
    fig.update_xaxes(title_text="hours from the first start", row=2, col=1)
    return fig


def replay_html(n: NodeReplayFigures | None) -> str | None:
    """The pools' table, the totals and the basis."""
    if n is None:
        return None
    rows = [[escape(p.name or ""), escape((p.tier or "").replace("_", "-")),
             f"{fmt(p.min_nodes, 'int')}..{'unbounded' if p.max_nodes is None else fmt(p.max_nodes, 'int')}",
             fmt(p.peak_nodes, "int"), fmt(p.node_hours, "f2"), fmt(p.usd, "f2"), fmt(p.stranded_cpu_h, "f2"),
             fmt(p.reclaims, "int"), fmt(p.sandboxes_lost_per_reclaim, "f2"), fmt(p.rerun_sandbox_h, "f2")]
            for p in n.pools or []]
    table = grid_table(["pool", "tier", "nodes", "peak", "node-h", "$", "stranded cpu-h", "reclaims",
                        "lost / reclaim", "re-run sandbox-h"], rows)
    totals = (f"${fmt(n.usd_per_h, 'f2')}/h over {fmt(n.span_h, 'f2')} h; {fmt(n.waited, 'int')} rollouts waited for "
              f"a node to join (mean {fmt(n.wait_s_mean, 'f2')} s); {fmt(n.unplaced, 'int')} unplaced; "
              f"reclaims ({escape(n.reclaim_model or '')}): {fmt(n.reclaims, 'int')}")
    cap = f'<p class="sub">{escape(n.cap.basis or "")}</p>' if n.cap is not None and n.cap.basis else ""
    return table + f"<p>{totals}</p>" + cap + f'<p class="sub">{escape(n.basis or "")}</p>'

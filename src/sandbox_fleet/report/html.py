"""Assemble the self-contained HTML report: the decision block first, then checks, the plan and the evidence.

plotly.js is inlined once in the page head; each figure is a fragment with a fixed div id,
so the same summaries always give the same bytes and the page works offline.
"""

from __future__ import annotations

from pathlib import Path

import plotly.io as pio
import plotly.offline

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.optimize.model import OptimizeSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report import (
    backtest_section,
    charts,
    decision,
    figures,
    optimize_section,
    plan_sections,
    replay_section,
    simulate_section,
    tables,
)
from sandbox_fleet.report.checks import CheckResult, run_checks, worst_status
from sandbox_fleet.report.thresholds import Thresholds
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.textout import html_escape as escape

DEFAULT_TITLE = "Sandbox fleet report"

_CSS = """
*{box-sizing:border-box}
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;max-width:1180px;
padding:1.2em 2em;color:#222;line-height:1.4;overflow-wrap:anywhere}
h1{margin-bottom:.1em}h2{border-bottom:1px solid #ddd;padding-bottom:.2em;margin-top:1.6em}
.sub{color:#666;margin-top:0}
table{border-collapse:collapse;margin:.6em 0;font-size:.92em;display:block;max-width:100%;overflow-x:auto}
th,td{padding:.25em .7em;border-bottom:1px solid #eee;text-align:left;vertical-align:top;overflow-wrap:normal}
td{min-width:4em}
table.kv th{font-weight:normal;color:#555;min-width:17em}
table.grid thead th{background:#f5f5f5}
.badge{display:inline-block;min-width:3.2em;text-align:center;border-radius:3px;padding:0 .4em;
font-weight:bold;color:#fff;font-size:.85em;text-transform:uppercase}
.pass{background:#2e7d32}.warn{background:#ef8f00}.fail{background:#c62828}.skip{background:#9e9e9e}
.na{color:#999;font-style:italic}
.chart{margin:1em 0;max-width:100%;overflow:hidden}
.missing{border:1px dashed #bbb;color:#888;padding:1.5em;margin:1em 0;text-align:center}
#decision{border:2px solid #1f4e79;border-radius:6px;padding:.2em 1.2em 1em;background:#f7fafd}
#decision h2{margin-top:.6em;border:0}
#decision .buy{font-size:1.25em;font-weight:bold;margin:.3em 0;font-family:ui-monospace,Menlo,Consolas,monospace}
#decision ul{margin:.3em 0;padding-left:1.3em}
nav.toc{font-size:.9em;color:#555}nav.toc a{margin-right:.8em;white-space:nowrap}
.cards{display:grid;grid-template-columns:repeat(auto-fill,minmax(10.5em,1fr));gap:.5em;margin:.6em 0}
.card{background:#fff;border:1px solid #c9d6e3;border-radius:5px;padding:.35em .6em}
.card .v{font-size:1.35em;font-weight:bold;color:#1f4e79}.card .l{font-size:.85em;color:#555}
footer{border-top:1px solid #ddd;margin-top:2em;font-size:.85em}footer code{overflow-wrap:anywhere}
@media (max-width:640px){table.grid{display:block;overflow:visible}table.grid thead{display:none}
table.grid tbody,table.grid tr{display:block}table.grid tr{border-bottom:1px solid #ddd;padding:.3em 0}
table.grid td{display:block;border:0;padding:.05em .3em;min-width:0}
table.grid td::before{content:attr(data-label) ": ";color:#666}table.grid td:empty{display:none}
body{padding:.6em .8em}table.kv th{min-width:9em}h1{font-size:1.5em}
#decision{padding:.1em .7em .6em}#decision .buy{font-size:1.05em}th,td{padding:.2em .4em}
.cards{grid-template-columns:repeat(2,minmax(0,1fr))}.card .v{font-size:1.15em}}
"""


def _figure(key: str, fig) -> str:
    """One chart as an HTML fragment, or a 'not measured' box when its inputs are absent."""
    title = (charts.TITLES.get(key) or plan_sections.TITLES.get(key) or optimize_section.TITLES.get(key)
             or replay_section.TITLES.get(key) or backtest_section.TITLES[key])
    if fig is None:
        return f'<div class="missing" id="fig-{key}"><strong>{escape(title)}</strong>: not measured</div>'
    body = pio.to_html(charts.readable(fig), full_html=False, include_plotlyjs=False, div_id=f"fig-{key}",
                       default_width="100%", default_height=f"{fig.layout.height or 420}px",
                       config={"displaylogo": False, "displayModeBar": False, "responsive": True})
    return f'<div class="chart">{body}</div>'


def _section(title: str, *parts: str | None, anchor: str = "") -> str:
    ident = f' id="{anchor}"' if anchor else ""
    inner = "".join(p for p in parts if p)
    return f"<section{ident}><h2>{escape(title)}</h2>{inner}</section>\n"


def _or_missing(html: str | None, what: str) -> str:
    return html if html else f'<p class="na">{escape(what)}: not measured</p>'


def _checks_section(results: list[CheckResult]) -> str:
    counts = {s: sum(r.status == s for r in results) for s in ("fail", "warn", "pass", "skip")}
    worst = worst_status(results)
    summary = ", ".join(f"{n} {s}" for s, n in counts.items() if n)
    head = f'<p>Overall: <span class="badge {worst}">{worst}</span> ({escape(summary)})</p>'
    return _section("Checks", head, tables.checks_table(results), anchor="checks")



def _decision_section(m: MeasureSummary, p: PlanSummary | None, results: list[CheckResult],
                      old: PlanSummary | None) -> str:
    """The first screen: what to buy, for how much, what could go wrong (or how to get a plan),
    under the headline cards (the figures every later section repeats, marked to agree)."""
    if p is None:
        return _section("What to buy", '<p class="na">no plan given: run <code>sandbox-fleet plan SUMMARY -o '
                        'plan.json</code>, then <code>report --plan plan.json</code></p>', figures.cards_html(m, None),
                        anchor="decision")
    return _section(f"What to buy: {p.target.concurrency:,} concurrent sandboxes ({p.target.source})",
                    figures.cards_html(m, p), decision.decision_html(p, results, old), anchor="decision")


def _footer(command: str | None, digests: list[tuple[str, str]]) -> str:
    """What made the page: the version, the command line, and a digest of each input summary."""
    from sandbox_fleet import __version__

    lines = [f"Generated by sandbox-fleet {escape(__version__)} report."]
    if command:
        lines.append(f'Command: <code id="command">{escape(command)}</code>')
    lines.append('Inputs: <span id="inputs">' + escape("; ".join(f"{what} {d}" for what, d in digests)) + "</span>")
    return '<footer class="sub">' + "".join(f"<p>{x}</p>" for x in lines) + "</footer>"


def _plan_sections(p: PlanSummary | None) -> list[str]:
    """The purchase order's detail, its rent-vs-buy comparison, the mixed purchase, the substrates and its assumptions."""
    if p is None:
        return []
    parts = [_section("Plan: the purchase order in detail", tables.plan_table(p), plan_sections.extra_plan_table(p),
                      _figure("caching", plan_sections.caching_chart(p)), tables.alternatives_table(p), anchor="plan")]
    rent = plan_sections.rent_table(p)
    if rent:
        parts.append(_section("Rent vs buy", _figure("rent", plan_sections.rent_chart(p)), rent, anchor="rent"))
    mixed = plan_sections.mixed_table(p)
    if mixed:
        parts.append(_section("Mixed purchase: reserved base, burst for the rest", mixed,
                              _figure("mixed", plan_sections.mixed_chart(p)),
                              _figure("nodes_replay", plan_sections.replay_chart(p)) if p.cost and p.cost.mixed
                              and p.cost.mixed.replay else None, anchor="mixed"))
    substrates = plan_sections.substrates_table(p)
    if substrates:
        parts.append(_section("Execution substrates: worker-hours of overhead", substrates, anchor="substrates"))
    assumptions = plan_sections.assumptions_table(p)
    if assumptions:
        parts.append(_section("Assumptions", assumptions, anchor="assumptions"))
    return parts


def _evidence_sections(m: MeasureSummary, figs: dict) -> list[str]:
    """The measured figures, in the order a reader asks why: load, holds, failures, models, tokens, data."""
    parts = [
        _section("Concurrency", _figure("concurrency", figs["concurrency"]), tables.steps_table(m),
                 anchor="concurrency"),
        _section("Hold time", _figure("hold", figs["hold"]), tables.hold_by_outcome_table(m),
                 tables.phases_table(m), _figure("hold_cdf", plan_sections.hold_cdf_chart(m)), anchor="hold"),
        _section("Exceptions", _figure("exceptions", figs["exceptions"]),
                 "<h3>Tasks with the most exceptions</h3>",
                 _or_missing(tables.task_health_table(m), "exceptions per task"), anchor="exceptions"),
        _section("Per-model slices", _figure("models", figs["models"]),
                 _or_missing(tables.slice_table(m.by_model, tables.MODEL_COLS), "per-model slices"),
                 anchor="models"),
    ]
    if m.by_job:
        parts.append(_section("Per-job slices", tables.slice_table(m.by_job, tables.JOB_COLS), anchor="jobs"))
    parts += [
        _section("Context growth and turns", _figure("context", figs["context"]),
                 tables.context_table(m), _figure("turns", figs["turns"]), anchor="context"),
        _section("Headline figures", tables.headline_table(m), anchor="headline"),
        _section("Coverage", _figure("coverage", figs["coverage"]), tables.rejected_table(m), anchor="coverage"),
    ]
    warnings = tables.warnings_list(m)
    if warnings:
        parts.append(_section("Measurement warnings", warnings, anchor="warnings"))
    parts.append(_section("Task resource requests", _or_missing(tables.requests_table(m), "task requests"), anchor="tasks"))
    return parts


def _run_sections(sim: SimulateSummary | None, searched: OptimizeSummary | None, bt: BacktestSummary | None) -> list[str]:
    parts = []
    if sim is not None and sim.nodes is not None:  # simulate --replay: the measured rollouts on nodes
        parts.append(_section("Replay on nodes", replay_section.replay_html(sim.nodes),
                              _figure("replay_nodes", replay_section.replay_chart(sim.nodes)), anchor="simulate"))
    elif sim is not None:
        parts.append(_section("Simulation", tables.simulate_table(sim), simulate_section.dynamic_sampling_html(sim),
                              simulate_section.limits_html(sim), anchor="simulate"))
    if searched is not None:
        parts.append(_section("Optimize: the cheapest configuration meeting the target",
                              optimize_section.winner_table(searched),
                              _figure("frontier", optimize_section.frontier_chart(searched)), anchor="optimize"))
    if bt is not None:
        parts.append(_section("Backtest: the simulator on this history", backtest_section.verdict_html(bt),
                              _figure("backtest", backtest_section.concurrency_chart(bt)),
                              backtest_section.figures_table(bt), "<h3>Drift tests</h3>",
                              backtest_section.drift_table(bt), anchor="backtest"))
    return parts

def build_report(
    measure: MeasureSummary,
    plan: PlanSummary | None = None,
    simulate: SimulateSummary | None = None,
    title: str = DEFAULT_TITLE,
    thresholds: Thresholds | None = None,
    optimize: OptimizeSummary | None = None,
    backtest: BacktestSummary | None = None,
    previous: PlanSummary | None = None,
    command: str | None = None,
) -> str:
    """One self-contained HTML document for a measure summary (plus optional plan/simulate).

    The decision block comes first (what to buy, for how much, what could go wrong; with
    ``previous``, an earlier plan, what changed since), then the evidence. Each input is its stage's
    model (``contract.load`` reads one from its file); a figure it does not carry shows as "not
    measured"; identical inputs give byte-identical output. ``command``: the command line that made
    the page, shown in the footer with the version and each input summary's digest.
    """
    m, p, sim, searched, bt, old = measure, plan, simulate, optimize, backtest, previous
    t = thresholds if thresholds is not None else Thresholds.default()
    results = run_checks(m, p, t, bt, simulate=sim)

    source = ", ".join(m.source) if m.source is not None else None
    sub = " · ".join(x for x in (
        f"source: {source}" if source is not None else "",
        f"measure schema {m.schema_version}",
        "with plan" if p is not None else "",
        "with simulation" if sim is not None else "",
    ) if x)

    figs = {key: build(m) for key, build in charts.BUILDERS.items()}
    model_budget = t.exception_rate_by_model.fail_above if t.exception_rate_by_model.enabled else None
    figs["models"] = charts.models(m, model_budget)

    parts = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="sub">{escape(sub)}</p>' if sub else "",
        _decision_section(m, p, results, old),
        _checks_section(results),
        *_plan_sections(p),
        *_evidence_sections(m, figs),
    ]
    parts += _run_sections(sim, searched, bt)
    plotly_js = plotly.offline.get_plotlyjs()
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{escape(title)}</title>\n<style>{_CSS}</style>\n"
        f'<script type="text/javascript">{plotly_js}</script>\n</head>\n<body>\n'
        + "\n".join(p for p in parts if p)
        + "\n" + _footer(command, _digests(m, p, sim, searched, bt, old)) + "\n</body>\n</html>\n"
    )


def _digests(*summaries) -> list[tuple[str, str]]:
    """(kind, contract.fingerprint) of each input summary given, in the order build_report takes them."""
    from sandbox_fleet.contract import fingerprint

    names = ("measure", "plan", "simulate", "optimize", "backtest", "previous plan")
    return [(name, fingerprint(x)) for name, x in zip(names, summaries, strict=True) if x is not None]


def write_report(
    path: str | Path,
    measure: MeasureSummary,
    plan: PlanSummary | None = None,
    simulate: SimulateSummary | None = None,
    title: str = DEFAULT_TITLE,
    thresholds: Thresholds | None = None,
    optimize: OptimizeSummary | None = None,
    backtest: BacktestSummary | None = None,
    previous: PlanSummary | None = None,
    command: str | None = None,
) -> Path:
    """Build the report and write it to ``path`` atomically (parent folders created); returns the path."""
    from sandbox_fleet import atomic

    return atomic.write_text(Path(path), build_report(measure, plan, simulate, title, thresholds, optimize, backtest,
                                                      previous, command))

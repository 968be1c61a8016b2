"""A Grafana dashboard over the metrics ``--metrics-out`` writes (``check --grafana-dashboard FILE``).

Grafana's classic dashboard JSON model (``uid``, ``title``, ``panels`` with ``gridPos`` on a
24-column grid, ``targets`` with ``refId`` and a PromQL ``expr``, ``templating``; the model every
Grafana imports): one data-source variable, ``datasource`` (type ``prometheus``), that every panel
and target reads, so the file imports into any Grafana with a Prometheus data source.

Every expression reads only ``sandbox_fleet_*`` metrics of ``metrics.py`` and is aggregated
(``max``, ``max by (<slice label>)``): one summary may reach Prometheus by several ways at once
(textfile collector, a Pushgateway scraped with ``honor_labels`` true or false) and each way is
one series, the same figure. Threshold lines come from the same thresholds the gates and the
alerting rules use (``data/checks.toml`` or ``--thresholds``). The same thresholds give the
same bytes (keys sorted, no timestamps, a fixed ``uid``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sandbox_fleet.report.prometheus.metrics import JOB_LABEL, NODE_LABEL, PREFIX
from sandbox_fleet.report.thresholds import Above, Below, Thresholds

UID = "sandbox-fleet"
DATASOURCE = {"type": "prometheus", "uid": "${datasource}"}
#: Grafana's 24-column grid: panels per row by kind (stat panels are 4 wide, charts 12).
WIDTH = {"stat": 4, "timeseries": 12}
HEIGHT = {"stat": 4, "timeseries": 8}
GREEN, ORANGE, RED = "green", "orange", "red"


@dataclass(frozen=True)
class Query:
    expr: str
    legend: str = ""


@dataclass(frozen=True)
class Panel:
    title: str
    kind: str  # "stat" | "timeseries"
    unit: str  # Grafana's unit id: "short", "percentunit", "s", "dateTimeAsIso"
    queries: tuple[Query, ...]
    description: str
    #: (warn, fail, "above" | "below") threshold steps in base units, or None
    bands: tuple[float | None, float | None, str] | None = None


def _m(name: str) -> str:
    return PREFIX + name


def _above(band: Above) -> tuple[float | None, float | None, str] | None:
    return (band.warn_above, band.fail_above, "above") if band.enabled else None


def _below(band: Below) -> tuple[float | None, float | None, str] | None:
    return (band.warn_below, band.fail_below, "below") if band.enabled else None


def panels(t: Thresholds) -> list[Panel]:
    """The dashboard's panels, in reading order: the load, the money figures, failures, slices, data."""
    by_job, by_node = f"max by ({JOB_LABEL})", f"max by ({NODE_LABEL})"
    return [
        Panel("Peak concurrency", "stat", "short", (Query(f"max({_m('concurrency_peak')})"),),
              "Peak concurrent sandboxes measured."),
        Panel("Planned concurrency", "stat", "short", (Query(f"max({_m('plan_target_concurrency')})"),),
              "Concurrent sandboxes the plan buys for (check --plan)."),
        Panel("Duty (mean / peak)", "stat", "percentunit", (Query(f"max({_m('duty_cycle_ratio')})"),),
              "Time-weighted mean concurrency over the peak: capacity bought at the peak idles the rest.",
              _below(t.duty_cycle)),
        Panel("Exception rate", "stat", "percentunit", (Query(f"max({_m('exception_ratio')})"),),
              "Share of rollouts that raised an exception.", _above(t.exception_rate)),
        Panel("Prefix-cache hit ratio", "stat", "percentunit", (Query(f"max({_m('prefix_cache_hit_ratio')})"),),
              "Share of input tokens served from the prefix cache (0: caching is off).",
              (t.prefix_cache_off.warn_below_cached_fraction, None, "below") if t.prefix_cache_off.enabled else None),
        Panel("Telemetry age", "stat", "s", (Query(f"time() - max({_m('last_finished_timestamp_seconds')})"),),
              "Seconds since the last rollout the summary measured finished (data time).",
              (t.telemetry_stale.warn_above_s, t.telemetry_stale.fail_above_s, "above")
              if t.telemetry_stale.enabled else None),
        Panel("Concurrency: peak, mean and the plan", "timeseries", "short",
              (Query(f"max({_m('concurrency_peak')})", "peak"), Query(f"max({_m('concurrency_mean')})", "mean"),
               Query(f"max({_m('plan_target_concurrency')})", "planned"),
               Query(f"max({_m('configured_cap')})", "configured cap")),
              "The measured load against what the plan buys for."),
        Panel("Hold time per rollout", "timeseries", "s",
              tuple(Query(f"max({_m(f'hold_{q}_seconds')})", q) for q in ("median", "p90", "p99")),
              "Hold-time quantiles: a p99 far above the median stalls batched steps.", None),
        Panel("Exception rate by RL job", "timeseries", "percentunit",
              (Query(f"{by_job} ({_m('job_exception_ratio')})", "{{" + JOB_LABEL + "}}"),),
              "Per-job exception rates (jobs under min_rows warn only).", _above(t.exception_rate_by_job)),
        Panel("Exception rate by model", "timeseries", "percentunit",
              (Query(f"max by (model) ({_m('model_exception_ratio')})", "{{model}}"),),
              "Per-model exception rates.", _above(t.exception_rate_by_model)),
        Panel("Nodes raising beyond chance", "timeseries", "percentunit",
              (Query(f"{by_node} ({_m('node_exception_ratio')}) and on({NODE_LABEL}) "
                     f"({by_node} ({_m('node_beyond_chance')}) == 1)", "{{" + NODE_LABEL + "}}"),),
              "Exception rate of the nodes whose exceptions the fleet's rate does not explain (check's test).",
              _above(t.exception_rate_by_node)),
        Panel("Tasks failing", "timeseries", "short",
              (Query(f"max({_m('tasks_failing')})", "at or above the fail rate"),
               Query(f"max({_m('tasks_warning')})", "at or above the warn rate")),
              "Tasks whose exception rate reaches the band, beyond chance (check's test)."),
        Panel("Cap binding", "timeseries", "percentunit",
              (Query(f"max({_m('cap_binding_ratio')})", "fleet"),
               Query(f"{by_job} ({_m('job_cap_binding_ratio')})", "{{" + JOB_LABEL + "}}")),
              "Share of the span spent at a detected cap.", _above(t.cap_binding)),
        Panel("Sandbox time per passing rollout", "timeseries", "s",
              (Query(f"max({_m('sandbox_time_per_pass_seconds')})", "per pass"),),
              "Sandbox seconds spent per passing rollout.",
              (t.sandbox_hours_per_pass.warn_above * 3600 if t.sandbox_hours_per_pass.warn_above is not None else None,
               t.sandbox_hours_per_pass.fail_above * 3600 if t.sandbox_hours_per_pass.fail_above is not None else None,
               "above") if t.sandbox_hours_per_pass.enabled else None),
        Panel("Missing fields", "timeseries", "percentunit",
              (Query(f"max by (field) ({_m('missing_ratio')})", "{{field}}"),),
              "Share of rollouts missing a field (reward, tokens, turns, trajectory).", _above(t.missing_reward)),
        Panel("Rollouts and rejected rows", "timeseries", "short",
              (Query(f"max({_m('rollouts')})", "rollouts"),
               Query(f"max by (reason) ({_m('rejected_rows')})", "rejected: {{reason}}")),
              "Rows measured and rows the readers rejected, by reason."),
    ]


def _thresholds(bands: tuple[float | None, float | None, str] | None) -> dict:
    """Grafana's threshold steps (the first has value null: the base colour)."""
    if bands is None:
        return {"mode": "absolute", "steps": [{"color": GREEN, "value": None}]}
    warn, fail, side = bands
    if side == "above":  # green up to warn, orange up to fail, red beyond
        rising = [(ORANGE, warn), (RED, fail)]
        base = GREEN
    else:  # below: the worst colour under the lowest bound, green from warn (or fail) up
        rising = [(ORANGE, fail if warn is not None else None), (GREEN, warn if warn is not None else fail)]
        base = RED if fail is not None else ORANGE
    return {"mode": "absolute",
            "steps": [{"color": base, "value": None}, *({"color": c, "value": v} for c, v in rising if v is not None)]}


def _panel_json(i: int, p: Panel, x: int, y: int) -> dict:
    return {
        "id": i,
        "type": p.kind,
        "title": p.title,
        "description": p.description,
        "datasource": DATASOURCE,
        "gridPos": {"h": HEIGHT[p.kind], "w": WIDTH[p.kind], "x": x, "y": y},
        "fieldConfig": {"defaults": {"unit": p.unit, "thresholds": _thresholds(p.bands),
                                     **({"custom": {"thresholdsStyle": {"mode": "line"}}}
                                        if p.kind == "timeseries" and p.bands else {})},
                        "overrides": []},
        "options": {},
        "targets": [{"refId": chr(ord("A") + k), "datasource": DATASOURCE, "expr": q.expr, "legendFormat": q.legend,
                     "instant": p.kind == "stat", "range": p.kind != "stat"} for k, q in enumerate(p.queries)],
    }


def dashboard(t: Thresholds) -> dict:
    """The dashboard as Grafana's classic JSON model."""
    out, x, y, row_h = [], 0, 0, 0
    for i, p in enumerate(panels(t), start=1):
        w = WIDTH[p.kind]
        if x + w > 24:
            x, y, row_h = 0, y + row_h, 0
        out.append(_panel_json(i, p, x, y))
        x, row_h = x + w, max(row_h, HEIGHT[p.kind])
    return {
        "uid": UID,
        "title": "Sandbox fleet",
        "description": "The figures sandbox-fleet check --metrics-out exports (docs/operate.md).",
        "tags": ["sandbox-fleet"],
        "timezone": "utc",
        "editable": True,
        "graphTooltip": 1,
        "time": {"from": "now-7d", "to": "now"},
        "refresh": "5m",
        "schemaVersion": 39,
        "version": 1,
        "links": [],
        "annotations": {"list": []},
        "templating": {"list": [{"name": "datasource", "label": "Prometheus", "type": "datasource",
                                 "query": "prometheus", "current": {}, "hide": 0, "refresh": 1}]},
        "panels": out,
    }


def dashboard_json(t: Thresholds) -> str:
    return json.dumps(dashboard(t), indent=2, sort_keys=True) + "\n"

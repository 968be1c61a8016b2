"""The purchase order and its assumptions as rows (section, key, value, unit, basis): ``plan --csv``.

A spreadsheet reads the order's figures raw (a fraction as 0.2937 with the unit "fraction", money
in USD per hour), each with the basis the plan states for it, so the sheet can recompute the
totals. Rows come from the plan model only, in a fixed order: the same plan writes the same bytes.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Union

from sandbox_fleet.plan.model import Cost, CostParts, Measured, PlanInference, PlanSummary, Storage

Cell = Union[float, int, str, None]
#: The header row.
COLUMNS = ("section", "key", "value", "unit", "basis")


def plan_rows(p: PlanSummary) -> list[tuple[str, str, Cell, str, str]]:
    """The order (target, nodes, GPU pools, inference, storage, cost, measured) then every assumption."""
    from sandbox_fleet.plan.decision import all_in_per_h

    t, nd = p.target, p.nodes
    co, inf, st = p.cost or Cost(), p.inference or PlanInference(), p.storage or Storage()
    m = p.measured or Measured()
    rows: list[tuple[str, str, Cell, str, str]] = [
        ("target", "concurrency", t.concurrency, "sandboxes", t.detail or t.source),
        ("nodes", "type", nd.type, "node type", "the cheapest that fits at the headline tier, or --node-type"),
        ("nodes", "count", nd.count, "nodes", f"at peak; {nd.binding} binds"),
        ("nodes", "lower_bound", nd.lower_bound, "nodes", "resources alone, no packing"),
        ("nodes", "per_node", nd.per_node, "sandboxes per node", f"{nd.binding} binds"),
    ]
    mx = co.mixed
    if mx is not None and mx.usd_per_h is not None:
        rows += [("mixed", "reserved_nodes", mx.reserved_nodes, "nodes", mx.basis or ""),
                 ("mixed", "burst_nodes", mx.burst_nodes, "nodes", f"{mx.burst_tier or 'burst'}, as the load needs them"),
                 ("mixed", "usd_per_h", mx.usd_per_h, "USD/h", mx.basis or "")]
    for pl in p.node_pools or []:
        rows.append((f"gpu_pool:{pl.type}", "count", pl.count, "nodes", f"{pl.concurrent} sandboxes, {pl.binding} binds"))
    if inf.gpus is not None:
        rows.append(("inference", "gpus", inf.gpus, "GPUs", f"{inf.bound_by}-bound, {inf.binding} binds compute"))
    if inf.gpus_cached is not None:
        rows.append(("inference", "gpus_with_caching", inf.gpus_cached, "GPUs", f"{inf.bound_by_cached}-bound with prefix caching"))
    if st.scratch_gb is not None:
        rows.append(("storage", "scratch_gb", st.scratch_gb, "GiB", f"{st.per_node_gb} GiB per node"))
    rows.append(("cost", "tier", co.tier, "tier", t.tier_basis or ""))
    for tier in ("reserved", "on_demand", "spot"):
        v = {"reserved": co.reserved_per_h, "on_demand": co.on_demand_per_h, "spot": co.spot_per_h}[tier]
        if v is not None:
            rows.append(("cost", f"fleet_{tier}_usd_per_h", v, "USD/h", f"{nd.count} x {nd.type} at peak"))
    if co.node_pools_per_h is not None:
        rows.append(("cost", "gpu_pools_usd_per_h", co.node_pools_per_h, "USD/h", f"{co.tier} tier"))
    if co.inference_per_h is not None:
        rows.append(("cost", "inference_usd_per_h", co.inference_per_h, "USD/h", "inference GPUs at the GPU price"))
    total, parts = all_in_per_h(co)
    if total is not None:
        rows.append(("cost", "all_in_usd_per_h", total, "USD/h", " + ".join(parts)))
        rows.append(("cost", "all_in_usd_per_30_days", total * 24 * 30, "USD", "all in x 720 h"))
    rows.append(("cost", "usd_per_passing_trajectory", co.per_passing_trajectory, "USD", co.per_pass_basis or ""))
    pp = co.per_passing_trajectory_parts or CostParts()
    if co.per_passing_trajectory_all_in is not None:
        parts_txt = ", ".join(f"{k} {v}" for k, v in (("fleet", pp.fleet), ("inference", pp.inference), ("trainer", pp.trainer)) if v is not None)
        rows.append(("cost", "usd_per_passing_trajectory_all_in", co.per_passing_trajectory_all_in, "USD", parts_txt))
    rows += [("measured", "concurrency_mean", m.concurrency_mean, "sandboxes", "carried over from the input"),
             ("measured", "peak", m.peak, "sandboxes", "carried over from the input"),
             ("measured", "duty", m.duty, "fraction", "carried over from the input"),
             ("measured", "pass_rate", m.pass_rate, "fraction", "carried over from the input"),
             ("measured", "sandbox_hours_per_pass", m.sandbox_hours_per_pass, "sandbox-h", "carried over from the input")]
    for a in p.assumptions or []:
        rows.append(("assumption", a.name, a.value, a.unit, a.source + (f": {a.detail}" if a.detail else "")))
    return rows


def _cell(v: Cell) -> str:
    if v is None:
        return ""
    if isinstance(v, float):
        return repr(v) if v != int(v) or abs(v) >= 1e16 else str(int(v))  # full precision, 3.0 as 3
    return str(v)


def csv_text(p: PlanSummary) -> str:
    """``plan_rows`` as CSV text (RFC 4180 quoting, ``\\n`` line ends), the header first."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for row in plan_rows(p):
        w.writerow([_cell(x) for x in row])
    return buf.getvalue()


def write_csv(p: PlanSummary, path: Path) -> Path:
    """Write ``csv_text(p)`` to ``path`` atomically; returns ``path``."""
    from sandbox_fleet import atomic

    atomic.write_text(path, csv_text(p))
    return path



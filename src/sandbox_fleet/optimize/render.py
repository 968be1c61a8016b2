"""``optimize`` on a terminal: the winner with its basis, then the Pareto frontier (read through ``OptimizeSummary``)."""

from __future__ import annotations

from rich.console import Console

from sandbox_fleet.optimize.model import OptimizeSummary, Point
from sandbox_fleet.termtable import grid, show
from sandbox_fleet.textout import number


def _gpus(p: Point) -> str:
    cache = ("cache" + (f" +{p.kv_offload_gb:g} GiB offload" if p.kv_offload_gb else "")) if p.caching else "no cache"
    return f"{p.replicas} x {p.gpus_per_replica} {p.gpu} ({cache})"


def render_optimize(s: OptimizeSummary, console: Console) -> None:
    """Print an optimize summary."""
    b, t = s.best, s.target
    want = (f"{t.passing_per_hour:g} passing/h" if t.passing_per_hour is not None
            else f"batch {t.batch} step <= {t.max_step_s:g} s (train {t.train_s:g} s)")
    console.print(f"[bold]optimize[/bold] {s.input}: cheapest loop for {want}")
    console.print(f"  sandboxes  cap {b.sandbox_cap:,} on {b.nodes} x {b.node_type} ({b.tier}): "
                  f"${b.fleet_usd_per_h:.2f}/h (spot re-run ${b.rework_usd_per_h:.4f}/h)")
    console.print(f"  GPUs       {_gpus(b)} = {b.gpus} GPUs: ${b.gpu_usd_per_h:.2f}/h")
    lo, hi = b.passing_per_hour_interval
    sd = f" (sd {b.passing_per_hour_sd:.1f})" if b.passing_per_hour_sd is not None else ""
    console.print(f"  all in     ${b.usd_per_h:.2f}/h for {b.passing_per_hour:,.1f} passing/h{sd} over "
                  f"{b.replications} replications; one run in [{lo:,.1f}, {hi:,.1f}] (95%)"
                  + (f"; step {b.step_s:.1f} s" if b.step_s is not None else ""))
    if b.passing_per_hour_lower is not None:
        console.print(f"  confident  mean >= {b.passing_per_hour_lower:,.1f} passing/h (95% lower bound) "
                      f">= target {t.passing_per_hour:g}")
    elif b.step_s_upper is not None:
        console.print(f"  confident  mean step <= {b.step_s_upper:,.1f} s (95% upper bound) "
                      f"<= target {t.max_step_s:g}")
    if b.confirmation_rollouts is not None and b.holds_per_sandbox is not None:
        console.print(f"  confirmed  on {b.confirmation_rollouts:,} rollouts a run, at least {b.holds_per_sandbox:,.1f} "
                      "holds per sandbox in its steady window")
    r = b.runner_up
    if r is not None:
        verdict = "bought instead" if r.bought else "misses"
        console.print(f"  runner-up  cap {r.sandbox_cap:,} with {_gpus(r)} at ${r.usd_per_h:.2f}/h (screened "
                      f"{r.passing_per_hour:,.1f}): re-run {r.reevaluated:,.1f}, bound {r.bound:,.1f}: {verdict}")
    for q in b.stepped_up_from:
        console.print(f"  set aside  cap {q.sandbox_cap:,} with {_gpus(q)} at ${q.usd_per_h:.2f}/h: "
                      f"re-evaluated {q.reevaluated:,.1f}, bound {q.bound:,.1f} misses the target")
    console.print(f"  searched   {s.evaluated} configurations ({s.simulations} simulations, {s.backend}); "
                  f"pruned {', '.join(f'{v} {k}' for k, v in s.pruned.items()) or 'none'}")
    for line in s.basis:
        console.print(f"  basis      {line}")
    tab = grid(f"Pareto frontier ($/h against {s.frontier_axis})",
               ("$/h", "passing/h", "step s", "cap", "nodes", "GPUs", "meets"), left=("nodes", "GPUs"))
    for p in s.frontier:
        tab.add_row(f"{p.usd_per_h:.2f}", f"{p.passing_per_hour:,.1f}",
                    number(p.step_s, ".1f", none=""), f"{p.sandbox_cap:,}",
                    f"{p.nodes} x {p.node_type} ({p.tier})", _gpus(p), "yes" if p.meets else "no")
    show(console, tab)

"""``simulate --replay TELEMETRY``: these exact rollouts, with no draws, replayed on a node configuration.

The configuration is the purchase order ``plan`` makes of the same telemetry (its node type and
system reserve; the mixed purchase's R reserved nodes, always up, and a burst pool of at most the
order's burst nodes on the burst tier, as the emitted NodePools limit them; one fixed pool of the
order's nodes when the order signed is a single tier, or the plan has no mixed purchase), each option
overriding one part of it. Every
measured rollout is placed on it by the engine's node replay (``simulate.engine.nodes``) at its
measured start with its measured hold and request. Spot pools lose nodes to reclaims: Poisson per
node at the catalog's rate (``spot_interruptions_per_node_h``), or as a trace says (a CSV file of
``time,pool`` rows: seconds from the first measured start or ISO timestamps, and ``reserved`` /
``burst`` / ``fleet``: ``simulate/engine/reclaim_trace.py``); each reclaim ends every sandbox on its node, run
again from scratch.

It lives in ``plan/`` because its default configuration is the plan's order; its output is the
simulate output model's ``nodes`` block (``SimulateSummary``).

The replayed starts are the history as it ran: where a cap bound, rollouts queued behind it and
started late. The replay prices that capped history; the censored demand (``plan/censored.py``,
issue 38) is stated beside it, from the plan's own target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from sandbox_fleet.contract import TelemetryFilter, filter_used
from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import MB_PER_GB, find_type, load_catalog
from sandbox_fleet.plan.mixed_replay import requests_of
from sandbox_fleet.plan.slots import Reserve, ResourceRequest, usable
from sandbox_fleet.simulate.engine.reclaim_trace import Trace, check_header, load_trace
from sandbox_fleet.simulate.model import (
    NodeReplayFigures,
    ReplayCap,
    ReplayPool,
    ReplaySeries,
    SimulateSummary,
    TierCost,
)

if TYPE_CHECKING:
    import numpy as np

    from sandbox_fleet.measure.intervals import RolloutIntervals
    from sandbox_fleet.plan import PlanOptions
    from sandbox_fleet.plan.model import PlanSummary
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, NodeReplay

#: spans of the nodes-by-pool and stranded series
SERIES_BINS = 200
TIERS = ("reserved", "on_demand", "spot")


@dataclass(frozen=True)
class ReplayOptions:
    """What overrides the plan's order (None: the plan's), and the reclaim model."""

    reserved_nodes: Optional[int] = None
    burst_nodes: Optional[int] = None
    burst_tier: Optional[str] = None
    #: reclaims per node-hour on the spot pools (None: the node type's catalog rate; 0: none)
    reclaim_per_node_h: Optional[float] = None
    reclaim_trace: Optional[str] = None
    seed: int = 0


def check_options(opts: ReplayOptions) -> None:
    """Refuse bad options in one line, before any reading."""
    for key in ("reserved_nodes", "burst_nodes"):
        v = getattr(opts, key)
        if v is not None and v < 0:
            raise InputError(f"--{key.replace('_', '-')}: must be a whole number >= 0, got {v}")
    if opts.burst_tier is not None and opts.burst_tier not in ("on_demand", "spot"):
        raise InputError(f"--burst-tier: must be on-demand or spot, got {opts.burst_tier.replace('_', '-')!r}")
    if opts.reclaim_per_node_h is not None and not opts.reclaim_per_node_h >= 0:
        raise InputError(f"--reclaim-per-node-h: must be a number >= 0, got {opts.reclaim_per_node_h}")
    if opts.reclaim_trace is not None and opts.reclaim_per_node_h is not None:
        raise InputError("--reclaim-trace and --reclaim-per-node-h: give one reclaim model, not both")


def replay_telemetry(paths: Sequence[str | Path], plan_opts: PlanOptions, opts: ReplayOptions, *,
                     tasks: str | Path | None = None, read: Any = None,
                     cache_dir: str | Path | None = None, progress: bool = False,
                     models: Sequence[str] | None = None, since: str | None = None,
                     until: str | None = None) -> SimulateSummary:
    """The simulate summary of replaying the rollouts of ``paths`` (those of ``models`` started in
    [``since``, ``until``), as measure keeps them) on the plan's order (``plan_opts``) as ``opts``
    overrides it; its ``nodes`` block carries the figures."""
    from sandbox_fleet.measure.intervals import load_intervals
    from sandbox_fleet.measure.load import is_summary_file, load_measure
    from sandbox_fleet.plan.build import make_plan

    check_options(opts)
    for p in paths:
        if is_summary_file(p):
            raise InputError(f"{p}: a measure summary; --replay needs the telemetry itself (each rollout's start, "
                             "end and task)")
    if opts.reclaim_trace is not None:
        check_header(opts.reclaim_trace)  # before the telemetry is read
    given = [str(p) for p in paths]
    kept = list(models) if models else None
    measured = load_measure(given, tasks=tasks, read=read, cache_dir=cache_dir, progress=progress, models=kept,
                            since=since, until=until)
    history = load_intervals(given, tasks=tasks, read=read, cache_dir=cache_dir, models=kept, since=since, until=until)
    planned = make_plan(measured, plan_opts, input_path=given[0] if len(given) == 1 else None, history=history)
    pools, configuration = _pools(planned, plan_opts, opts)
    trace = (load_trace(opts.reclaim_trace, int(history.origin_us or 0), [p.name for p in pools])
             if opts.reclaim_trace is not None else None)
    cc = measured.concurrency
    cap_detected = bool(cc.cap_detected) if cc is not None else False
    return summarise(history, pools, planned, opts, configuration, trace, given, cap_detected=cap_detected,
                     telemetry_filter=filter_used(kept, since, until))


def _pools(planned: PlanSummary, plan_opts: PlanOptions, opts: ReplayOptions) -> tuple[list[NodePoolSpec], str]:
    """The plan's order as node pools, with the options' overrides."""
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec

    node = find_type(load_catalog(plan_opts.nodes_file), planned.nodes.type,
                     plan_opts.nodes_file or "bundled node catalog")
    r = planned.nodes.reserve
    reserve = Reserve(cpu=r.cpu or 0.0, memory=r.memory_mb or 0.0, disk=r.disk_mb or 0.0) if r is not None else Reserve()
    alloc = usable(node, reserve)
    shape = (alloc["cpu"], alloc["memory"], alloc["disk"])
    spot_rate = opts.reclaim_per_node_h
    if spot_rate is None:
        spot_rate = 0.0 if opts.reclaim_trace is not None else float(node.spot_interruptions_per_node_h or 0.0)
    overridden = any(v is not None for v in (opts.reserved_nodes, opts.burst_nodes, opts.burst_tier))
    configuration = "options" if overridden else "plan"
    mixed = planned.cost.mixed if planned.cost is not None else None
    tc = planned.cost.tier_choice if planned.cost is not None else None
    if tc is not None and tc.order is not None and not tc.order.startswith("mixed"):
        mixed = None  # the order by replay is a single tier all up (plan/order_replay.py)
    common = {"provision_s": plan_opts.node_provision_s, "scale_down_s": plan_opts.node_scale_down_s,
              "placement": plan_opts.node_placement}
    if mixed is None and not overridden:  # one pool of the order's nodes at the plan's tier, all up
        tier = (planned.cost.tier if planned.cost is not None else None) or "on_demand"
        count = int(planned.nodes.count)
        return [NodePoolSpec("fleet", *shape, usd_per_node_h=_price(node, tier), tier=tier, min_nodes=count,
                             max_nodes=count, reclaim_per_node_h=spot_rate if tier == "spot" else 0.0,
                             **common)], configuration
    reserved = opts.reserved_nodes if opts.reserved_nodes is not None else int((mixed.reserved_nodes if mixed else 0) or 0)
    burst_max = opts.burst_nodes if opts.burst_nodes is not None else (
        int(mixed.burst_nodes) if mixed is not None and mixed.burst_nodes is not None else None)
    burst_tier = opts.burst_tier or (mixed.burst_tier if mixed is not None else None) or "on_demand"
    pools = [NodePoolSpec("reserved", *shape, usd_per_node_h=_price(node, "reserved"), tier="reserved",
                          min_nodes=reserved, max_nodes=reserved, **common),
             NodePoolSpec("burst", *shape, usd_per_node_h=_price(node, burst_tier), tier=burst_tier,
                          max_nodes=burst_max, reclaim_per_node_h=spot_rate if burst_tier == "spot" else 0.0, **common)]
    return pools, configuration


def _price(node, tier: str) -> float:
    price = node.price(tier)
    if price is None:
        raise InputError(f"node type {node.name!r}: no {tier.replace('_', '-')} price in the catalog to replay it at")
    return float(price)


def summarise(history: RolloutIntervals, pools: list[NodePoolSpec], planned: PlanSummary, opts: ReplayOptions,
              configuration: str, trace: Optional[Trace], telemetry: list[str], *,
              cap_detected: bool = False, telemetry_filter: Optional[TelemetryFilter] = None) -> SimulateSummary:
    """Replay ``history`` on ``pools`` and say what it cost and waited."""
    import numpy as np

    from sandbox_fleet.simulate.engine.nodes import replay_nodes

    q = planned.nodes.request
    fallback = ResourceRequest(cpu=(q.cpu if q else None) or 1.0, memory=(q.memory if q else None) or 2048.0,
                               disk=(q.disk if q else None) or 0.0)
    cpu, memory, disk, assumed = requests_of(history, fallback)
    arrays = (trace.time_s, trace.pool) if trace is not None else None
    got = replay_nodes(history.start_s, history.end_s, cpu, memory, disk, pools, reclaim_trace=arrays, seed=opts.seed)
    done = got.node_of >= 0
    need_h = float(np.sum(got.hold_s)) / 3600.0
    rerun_h = sum(p.rerun_sandbox_h for p in got.pools)
    lost = sum(p.sandboxes_lost for p in got.pools)
    figures = NodeReplayFigures(
        telemetry=telemetry, configuration=configuration, placement=pools[0].placement,
        provision_s=pools[-1].provision_s, scale_down_s=pools[-1].scale_down_s, rollouts=history.count,
        rollouts_assumed_request=assumed, placed=got.placed, unplaced=got.unplaced, span_h=got.span_s / 3600.0,
        node_hours=got.node_hours, usd=got.usd, usd_per_h=got.usd_per_h,
        pools=[_pool(spec, p, planned.nodes.type) for spec, p in zip(pools, got.pools)],
        by_tier=_by_tier(got), waited=got.waited, wait_s_total=got.wait_s_total,
        wait_s_mean=got.wait_s_total / got.waited if got.waited else None, wait_s_max=got.wait_s_max if got.waited else None,
        reclaim_model="trace" if trace is not None else ("poisson" if any(p.reclaim_per_node_h > 0 for p in pools) else "none"),
        reclaim_trace=opts.reclaim_trace, reclaim_trace_rows=trace.rows if trace is not None else None,
        reclaim_trace_missed=got.trace_missed if trace is not None else None, reclaims=got.reclaims,
        sandboxes_lost=lost, sandboxes_lost_per_reclaim=lost / got.reclaims if got.reclaims else None,
        rerun_sandbox_h=rerun_h, rerun_share=rerun_h / need_h if need_h > 0 else None,
        series=_series(got, pools), basis=_basis(pools, configuration, assumed, fallback, trace),
        reclaim_trace_timestamps=trace.timestamps if trace is not None else None,
        reclaim_trace_naive=trace.naive if trace is not None else None,
    )
    cap = _cap(planned, cap_detected)
    figures.cap = _uncapped(cap, history, (cpu, memory, disk), pools, arrays, opts.seed) if cap_detected else cap
    return SimulateSummary.build(
        seed=opts.seed, rollouts=history.count, attempts=history.count + lost, completed=int(done.sum()),
        dropped=got.unplaced, sim_time_s=got.span_s, sandbox_hours=float(np.sum(got.hold_s[done])) / 3600.0 + rerun_h,
        nodes=figures, telemetry_filter=telemetry_filter,
    )


def _pool(spec: NodePoolSpec, p, node_type: str) -> ReplayPool:
    return ReplayPool(
        name=p.name, tier=p.tier, node_type=node_type, cpu=spec.cpu, memory_gb=spec.memory_mb / MB_PER_GB,
        disk_gb=spec.disk_mb / MB_PER_GB, usd_per_node_h=spec.usd_per_node_h, min_nodes=spec.min_nodes,
        max_nodes=spec.max_nodes, reclaim_per_node_h=spec.reclaim_per_node_h, node_hours=p.node_hours, usd=p.usd,
        peak_nodes=p.peak_nodes, launched=p.launched, rollouts=p.rollouts, stranded_cpu_h=p.stranded_cpu_h,
        stranded_memory_gb_h=p.stranded_memory_mb_h / MB_PER_GB, stranded_disk_gb_h=p.stranded_disk_mb_h / MB_PER_GB,
        reclaims=p.reclaims, sandboxes_lost=p.sandboxes_lost,
        sandboxes_lost_per_reclaim=p.sandboxes_lost / p.reclaims if p.reclaims else None,
        most_lost_in_one_reclaim=p.most_lost, rerun_sandbox_h=p.rerun_sandbox_h,
    )


def _by_tier(got: NodeReplay) -> dict[str, TierCost]:
    out: dict[str, TierCost] = {}
    for tier in TIERS:
        mine = [p for p in got.pools if p.tier == tier]
        if mine:
            out[tier] = TierCost(node_hours=sum(p.node_hours for p in mine), usd=sum(p.usd for p in mine))
    return out


def _series(got: NodeReplay, pools: list[NodePoolSpec]) -> ReplaySeries:
    edges, up = got.nodes_over_time(SERIES_BINS)
    _, stranded = got.stranded_over_time(SERIES_BINS)
    t0 = float(edges[0]) if edges.size else 0.0
    width = float(edges[1] - edges[0]) if edges.size > 1 else 0.0
    return ReplaySeries(
        t_h=[(float(t) - t0) / 3600.0 for t in edges], span_h=width / 3600.0,
        nodes_by_pool={p.name: [int(v) for v in up[k]] for k, p in enumerate(pools)},
        stranded_cpu_h=[float(v) for v in stranded[0]],
        stranded_memory_gb_h=[float(v) / MB_PER_GB for v in stranded[1]],
        stranded_disk_gb_h=[float(v) / MB_PER_GB for v in stranded[2]],
    )


def _cap(planned: PlanSummary, detected: bool) -> ReplayCap:
    c = planned.target.censored
    if c is None:
        return ReplayCap(cap_detected=detected, basis=(
            "no binding cap detected: the replayed starts are the demand as it ran" if not detected else
            "a cap was detected but the plan found no demand behind it: the starts are replayed as they ran"))
    lower = "at least " if c.demand_is_lower_bound else ""
    return ReplayCap(
        cap_detected=True, cap=c.cap, touches=c.touches, demand=c.demand, demand_is_lower_bound=c.demand_is_lower_bound,
        basis=(f"the history ran under a cap of {c.cap:,} (reached {c.touches:,} times): rollouts queued behind it "
               f"started late, so this replay prices the capped history, its peak nodes are the cap's; the "
               f"censored demand (plan/censored.py) is {lower}{c.demand:,} concurrent, which the plan's order is "
               f"sized for ({c.chosen} chosen)"))


def _uncapped(cap: ReplayCap, history: RolloutIntervals, req: tuple[np.ndarray, np.ndarray, np.ndarray],
              pools: list[NodePoolSpec], trace, seed: int) -> ReplayCap:
    """Where the cap bound and the history has synchronous steps, the rollouts replayed at their step's
    release (what the cap queued starts when a slot freed; the holds kept), on the same pools."""
    import numpy as np

    from sandbox_fleet.measure.steps import measure_steps, step_releases
    from sandbox_fleet.simulate.engine.nodes import replay_nodes

    start_us = np.round(history.start_s * 1e6).astype(np.int64)
    steps = measure_steps(start_us, np.round(history.end_s * 1e6).astype(np.int64))
    if not steps.get("detected"):
        return cap.model_copy(update={"steps_detected": False, "basis": (cap.basis or "") + (
            f"; not replayed un-queued: no synchronous steps to release at ({steps.get('reason')})")})
    release_s = step_releases(start_us, float(steps["gap_threshold_s"])) / 1e6
    moved = int(np.count_nonzero(release_s < history.start_s - 1e-6))
    hold = history.end_s - history.start_s
    got = replay_nodes(release_s, release_s + hold, req[0], req[1], req[2], pools, reclaim_trace=trace, seed=seed)
    return cap.model_copy(update={
        "steps_detected": True, "rollouts_moved": moved,
        "demand_peak_nodes": {p.name: p.peak_nodes for p in got.pools}, "demand_usd_per_h": got.usd_per_h,
        "demand_unplaced": got.unplaced, "demand_waited": got.waited,
        "basis": (cap.basis or "") + (
            f"; un-queued (the demand the cap hid): each of the {int(steps['steps']):,} steps' rollouts started at "
            f"its release ({moved:,} moved earlier), holds kept, on the same pools")})


def _basis(pools: list[NodePoolSpec], configuration: str, assumed: int, fallback: ResourceRequest, trace) -> str:
    rule = ("packed onto the most-allocated node that fits (MostAllocated, as Karpenter's consolidation prefers)"
            if pools[0].placement == "pack" else "spread onto the least-allocated node that fits (the scheduler's default)")
    parts = []
    for p in pools:
        limit = "unbounded" if p.max_nodes is None else f"{p.min_nodes:,}..{p.max_nodes:,} nodes"
        parts.append(f"{p.name} ({p.tier.replace('_', '-')}, {limit})")
    reclaim = ("reclaims from the trace (one node of the pool up then, drawn uniformly)" if trace is not None else
               "; ".join(f"{p.name} nodes reclaimed at {p.reclaim_per_node_h:g} per node-h (Poisson per node)"
                         for p in pools if p.reclaim_per_node_h > 0) or "no reclaims")
    unknown = (f"; {assumed:,} rollouts without a task request run at {fallback.cpu:g} cpu / {fallback.memory:g} MB / "
               f"{fallback.disk:g} MB" if assumed else "")
    source = "the plan's order" if configuration == "plan" else "the plan's order as the options override it"
    return (f"each measured rollout at its measured start and hold, no draws, {rule}, on {source}: "
            f"{', '.join(parts)}, pools tried in that order; never migrated; a launched node joins "
            f"{pools[-1].provision_s:g} s later (assumed: Karpenter documents no figure) and is released "
            f"{pools[-1].scale_down_s:g} s after its last sandbox ends (consolidateAfter); billed launch to release; "
            f"{reclaim}, each ending every sandbox on its node, run again from scratch{unknown}")

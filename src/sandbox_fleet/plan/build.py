"""Assemble a plan: target -> tier -> nodes (and GPU pools) -> storage -> caching -> inference -> cost
-> assumptions, as one ``PlanSummary``."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from sandbox_fleet import contract
from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_range
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan import censored_burst, order_replay
from sandbox_fleet.plan import cost as costmod
from sandbox_fleet.plan import inference as inf
from sandbox_fleet.plan import rent as rentmod
from sandbox_fleet.plan.assumptions import Source, collect_assumptions
from sandbox_fleet.plan.catalog import TIERS, NodeType, find_type, load_catalog
from sandbox_fleet.plan.cost_parts import all_in, passes_per_h
from sandbox_fleet.plan.inference_sizing import size_inference
from sandbox_fleet.plan.mixed import burst_tier_for, mixed_purchase
from sandbox_fleet.plan.mixed_replay import (
    PLACEMENT,
    PROVISION_S,
    SCALE_DOWN_S,
    replay_mixed,
    replayed_peak,
    requests_of,
    short_at,
)
from sandbox_fleet.plan.model import (
    Alternative,
    BacktestLine,
    Caching,
    Censored,
    Context,
    Cost,
    Input,
    Mixed,
    MixEntry,
    NodePool,
    NodeReserve,
    Nodes,
    PlanInference,
    PlanSummary,
    Request,
    Resources,
    Starts,
    Storage,
    Target,
    TierChoice,
    WarmPoolSizing,
)
from sandbox_fleet.plan.packing import concurrent_mix, ffd
from sandbox_fleet.plan.pools import route, unplaced_block
from sandbox_fleet.plan.provider_limits import limits_block
from sandbox_fleet.plan.reserve import node_reserve
from sandbox_fleet.plan.rework import rework_share, spot_rework
from sandbox_fleet.plan.signal import DEFAULT_CONFIDENCE, signal_block
from sandbox_fleet.plan.slots import Reserve, ResourceRequest, size_uniform, usable
from sandbox_fleet.plan.starts import start_rate
from sandbox_fleet.plan.storage import storage_plan
from sandbox_fleet.plan.substrates import load_substrates, rent_overheads, substrate_block
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.plan.target import HoldSampler, fitted_holds, resolve_target
from sandbox_fleet.plan.tier import TierOffer, choose_tier
from sandbox_fleet.plan.turns import TurnMoments, histogram_moments, turn_moments
from sandbox_fleet.plan.warm_pool import MAX_SHARE as WARM_MAX_SHARE
from sandbox_fleet.plan.warm_pool import warm_pool_block

if TYPE_CHECKING:
    from sandbox_fleet.measure.intervals import RolloutIntervals

#: the source document's request, used only when the input lists none (and the plan says so)
DEFAULT_REQUEST = ResourceRequest(cpu=1.0, memory=2048.0, disk=6144.0, gpu=0.0)


@dataclass
class PlanOptions:
    """Everything ``sandbox-fleet plan`` can be told; defaults reproduce the document's sizing."""

    concurrency: Optional[int] = None
    batch: Optional[int] = None
    train_s: Optional[float] = None
    passing_per_hour: Optional[float] = None
    rl_tolerance: float = 0.01
    seed: int = 0
    nodes_file: Optional[str] = None
    node_type: Optional[str] = None
    reserve: Optional[Reserve] = None  # None: each node type's own (catalog, else plan/reserve.py's formula)
    request: Optional[ResourceRequest] = None  # overrides the input's task requests
    price_tier: Optional[str] = None  # None: the cheapest single tier all in (plan/tier.py)
    prefix_break: float = 0.0
    gpu_prefill_tok_s: Optional[float] = None
    gpu_decode_tok_s: Optional[float] = None
    roofline: Optional[inf.Roofline] = None
    gpu_usd_h: Optional[float] = None
    turns: Optional[float] = None  # turn count for the caching saving when the input has no histogram
    shape: str = "auto"  # --passing-per-hour: from the measured step structure, or "measured" / "smooth"
    max_wait_s: float = 60.0  # --shape smooth: allowed mean queue wait
    gpu_name: Optional[str] = None
    gpu_note: Optional[str] = None  # why a named GPU was not sized
    gpu_from_catalog: frozenset[str] = frozenset()  # figures the GPU catalog gave (for assumptions)
    gpu_memory_gb: Optional[float] = None  # per GPU, GiB; enables the memory model
    gpu_memory_fraction: float = 0.9
    gpu_utilisation: float = 0.7  # headroom on top of the per-GPU rates
    max_tp: int = 8
    kv_offload_gb: float = 0.0
    trainer_gpus: Optional[int] = None
    providers_file: Optional[str] = None  # managed-sandbox catalog replacing data/providers.toml
    rent_providers: Optional[list[str]] = None  # price only these providers (default: all)
    substrates_file: Optional[str] = None  # execution-substrate catalog replacing data/substrates.toml
    #: without --node-type, choose only among types of these clouds (--emit-k8s: the Karpenter-supported ones)
    node_providers: Optional[tuple[str, ...]] = None
    #: the node replay of the mixed purchase (with telemetry): a burst node's join delay and its
    #: lingering once empty (the NodePools' consolidateAfter), seconds, and the placement rule
    node_provision_s: float = PROVISION_S
    node_scale_down_s: float = SCALE_DOWN_S
    node_placement: str = PLACEMENT
    #: a binding cap above the estimated demand: buy the cap anyway (default: the demand, plan/censored.py)
    keep_cap: bool = False
    budgets_file: Optional[str] = None  # --budgets: lifetime, rollout timeout and phase budgets (plan/lifetime.py)
    #: the signal block (plan/signal.py): G (default: measure's), B informative groups a step trains on
    #: (default: --batch / G, else the measured step batch / G) and the chance a release holds them
    group_size: Optional[int] = None
    groups_per_batch: Optional[int] = None
    signal_confidence: float = DEFAULT_CONFIDENCE
    #: the warm pool (plan/warm_pool.py): a sandbox's cold start when not claimed warm (--emit-k8s: its
    #: --k8s-provision-s; default: the catalog's self-hosted entry) and the step lengthening it keeps within
    warm_cold_start_s: Optional[float] = None
    warm_max_share: float = WARM_MAX_SHARE


def _requests(fig: Figures, opts: PlanOptions, notes: list[str]) -> tuple[list[ResourceRequest], list[float], list[Optional[float]], list[float], str]:
    """The task requests, each kind's weight in the concurrent mix, its sandbox-hours (None where not
    measured), its rollouts (tasks when no rollout names its task) and what the weights are.

    By Little's law a kind's share of the concurrent sandboxes is its share of sandbox-TIME, not of
    rollouts: a kind whose rollouts hold ten times longer is ten times as present. The weights are the
    measured sandbox-hours when every kind has them; else rollouts (then tasks), stated as equal holds.
    """
    if opts.request is not None:
        return [opts.request], [1.0], [None], [1.0], "one request (--request)"
    if not fig.requests:
        notes.append("input lists no task requests: assumed 1 cpu / 2048 MB / 6144 MB per sandbox (pass --request)")
        return [DEFAULT_REQUEST], [1.0], [None], [1.0], "one request (default)"
    by_rollouts = any(r.rollouts is not None and r.rollouts > 0 for r in fig.requests)
    by_hours = all(r.sandbox_hours is not None for r in fig.requests) and any((r.sandbox_hours or 0) > 0 for r in fig.requests)
    key = "sandbox_hours" if by_hours else ("rollouts" if by_rollouts else "tasks")
    reqs, weights, hours, runs = [], [], [], []
    for i, r in enumerate(fig.requests):
        def val(key: str, default: float | None = None, r=r, i=i) -> float:  # called in this iteration only
            v = getattr(r, key)
            if v is None:
                if default is None:
                    raise InputError(f"summary key tasks.requests[{i}].{key}: missing; expected a number")
                return default
            if v < 0 or v != v:
                raise InputError(f"summary key tasks.requests[{i}].{key}: expected a non-negative number, got {v!r}")
            return float(v)

        q = ResourceRequest(cpu=val("cpus"), memory=val("memory_mb"), disk=val("storage_mb", 0.0), gpu=val("gpus", 0.0))
        if q.cpu <= 0 and q.memory <= 0:
            raise InputError(f"summary key tasks.requests[{i}]: a request needs cpus or memory_mb above zero")
        w = val(key if key != "rollouts" or r.rollouts is not None else "tasks", 1.0)
        if w > 0:
            reqs.append(q)
            weights.append(w)
            hours.append(val("sandbox_hours") if r.sandbox_hours is not None else None)
            runs.append(val("rollouts" if by_rollouts and r.rollouts is not None else "tasks", 1.0))
    if not reqs:
        raise InputError("summary key 'tasks.requests': every request has a zero weight")
    basis = {
        "sandbox_hours": "sandbox-hours per kind (Little's law: share of concurrent sandboxes = share of sandbox-time)",
        "rollouts": "rollouts per kind: no per-kind sandbox-hours measured, so equal holds are assumed",
        "tasks": "tasks per kind: no per-kind rollouts or sandbox-hours measured, so equal use and holds are assumed",
    }[key] + f"; {MIX_AT}"
    if len(reqs) > 1 and key != "sandbox_hours":
        notes.append(f"mixed requests weighted by {basis}")
    return reqs, weights, hours, runs, basis


#: which mix the nodes are sized on (issue 38 item 7: the peaks' own mix can need more nodes)
MIX_AT = ("the mean mix over the whole measured span, not the mix at the concurrency peaks "
          "(a peak richer in large kinds needs more nodes than this mix packs)")


@dataclass
class _SizedNodeType:
    """One node type sized for the pool: the figures of its ``nodes`` block and what later blocks need."""

    node: NodeType
    count: int
    binding: str
    slots_per_node: dict[str, Optional[int]]
    per_node: int
    lower_bound: int
    lower_bound_by_resource: dict[str, int]
    stranded: Resources
    scratch_per_node_mb: float
    reserve: Reserve
    reserve_source: Source  # flag, catalog or default (plan/reserve.py)

    @property
    def type(self) -> str:
        return self.node.name

    def price(self, tier: str) -> Optional[float]:
        """The pool's $/h on ``tier`` (None when the type has no price there)."""
        p = self.node.price(tier)
        return p * self.count if p is not None else None

    def figures(self) -> dict[str, Any]:
        """The fields a ``nodes`` (or ``node_pools``) entry shares with every sized type."""
        return {"type": self.type, "count": self.count, "binding": self.binding, "slots_per_node": self.slots_per_node,
                "per_node": self.per_node, "lower_bound": self.lower_bound,
                "lower_bound_by_resource": self.lower_bound_by_resource, "stranded": self.stranded,
                "reserve": NodeReserve(cpu=self.reserve.cpu, memory_mb=self.reserve.memory, disk_mb=self.reserve.disk,
                                       source=self.reserve_source)}


def _size_type(node: NodeType, reqs: list[ResourceRequest], counts: list[int], dominant: int, opts: PlanOptions) -> _SizedNodeType:
    """Size one node type (after its system reserve); raises InputError if a request does not fit it."""
    reserve, reserve_src = node_reserve(node, opts.reserve)
    sizing = size_uniform(node, reqs[dominant], max(counts[dominant], 1), reserve)
    for q in reqs:
        size_uniform(node, q, 1, reserve)  # every request must fit an empty node
    cap = usable(node, reserve)
    pack = ffd(reqs, counts, cap)
    return _SizedNodeType(
        node=node, count=pack.nodes, binding=sizing.binding, slots_per_node=sizing.slots, per_node=sizing.per_node,
        lower_bound=pack.lower_bound, lower_bound_by_resource=pack.lower_bound_by_resource,
        stranded=Resources(cpu=pack.stranded["cpu"], memory_mb=pack.stranded["memory"], disk_mb=pack.stranded["disk"]),
        scratch_per_node_mb=(
            max(sum(reqs[i].disk * k for i, k in g.load.items()) for g in pack.groups) if len(reqs) > 1 and pack.groups
            else sizing.per_node * reqs[dominant].disk
        ),
        reserve=reserve, reserve_source=reserve_src,
    )


def _choose(sized: list[_SizedNodeType], opts: PlanOptions, notes: list[str]) -> tuple[_SizedNodeType, list[_SizedNodeType]]:
    def key(s: _SizedNodeType) -> tuple:
        price = s.price(_tier(opts))
        return price is None, price or 0.0, s.count, s.type

    ranked = sorted(sized, key=key)
    if opts.node_type is not None:
        chosen = next(s for s in sized if s.type == opts.node_type)
    else:
        chosen = ranked[0]
        if chosen.price(_tier(opts)) is None:
            notes.append(f"no node type has a {opts.price_tier} price: chose the type needing fewest nodes")
            chosen = min(sized, key=lambda s: (s.count, s.type))
    others = [s for s in ranked if s is not chosen]
    return chosen, others


def _alt(s: _SizedNodeType, tier: str) -> Alternative:
    return Alternative.model_validate({"type": s.type, "count": s.count, "binding": s.binding, "per_node": s.per_node,
                                       f"{tier}_per_h": s.price(tier), "priced": s.node.priced})


def _pool_block(s: _SizedNodeType, reqs: list[ResourceRequest], weights: list[float], counts: list[int], top: int, tier: str,
                mix_basis: str) -> NodePool:
    """One ``node_pools`` entry: the ``nodes`` shape for a pool packed on its own."""
    mixed = len(reqs) > 1
    price = s.price(tier)  # the pool is priced at the plan's tier only
    return NodePool(
        **s.figures(),
        request=Request(**reqs[top].as_dict()),
        mix=[MixEntry(**q.as_dict(), weight=w, concurrent=c) for q, w, c in zip(reqs, weights, counts)] if mixed else None,
        packing="first-fit-decreasing" if mixed else "uniform",
        mix_basis=mix_basis if mixed else None,
        reserved_per_h=price if tier == "reserved" else None,
        on_demand_per_h=price if tier == "on_demand" else None,
        spot_per_h=price if tier == "spot" else None,
        concurrent=sum(counts),
    )


def _check_options(opts: PlanOptions) -> None:
    # checked with or without the target that uses them: a bad value is never silently ignored
    check_range("`tolerance`", opts.rl_tolerance)
    check_range("`trainer_gpus`", opts.trainer_gpus, whole=True)
    check_range("`max_wait_s`", opts.max_wait_s)
    check_range("`kv_offload_gb`", opts.kv_offload_gb)
    check_range("`max_tp`", opts.max_tp, minimum=1, whole=True)
    check_range("`node_provision_s`", opts.node_provision_s)
    check_range("`node_scale_down_s`", opts.node_scale_down_s)
    if opts.node_placement not in ("pack", "spread"):
        raise InputError(f"`node_placement` {opts.node_placement!r}: expected pack or spread")
    check_range("`group_size`", opts.group_size, minimum=2, whole=True)
    check_range("`groups_per_batch`", opts.groups_per_batch, minimum=1, whole=True)
    if not 0.0 < opts.signal_confidence < 1.0:
        raise InputError(f"`signal_confidence` {opts.signal_confidence!r}: expected a probability in (0, 1)")
    check_range("`gpu_memory_fraction`", opts.gpu_memory_fraction, above=True)
    if opts.gpu_memory_fraction > 1:
        raise InputError(f"`gpu_memory_fraction` {opts.gpu_memory_fraction}: expected a fraction in (0, 1]")
    if opts.price_tier is not None and opts.price_tier not in TIERS:
        raise InputError(f"`price_tier` {opts.price_tier!r}: expected one of {', '.join(TIERS)}")
    if not 0.0 <= opts.prefix_break <= 1.0:
        raise InputError(f"`prefix_break` must be a fraction in [0, 1], got {opts.prefix_break!r}")
    for name, v in (("`gpu_prefill_tok_s`", opts.gpu_prefill_tok_s), ("`gpu_decode_tok_s`", opts.gpu_decode_tok_s), ("`gpu_usd_h`", opts.gpu_usd_h), ("`turns`", opts.turns)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{name} must be a positive number, got {v!r}")


@dataclass
class _Nodes:
    """What sizing the nodes decides, for the blocks after it."""

    block: Nodes
    chosen: _SizedNodeType
    node: NodeType
    reqs: list[ResourceRequest]
    counts: list[int]
    pools: list[NodePool]
    request_source: str  # flag, default or input: where the sandbox requests came from


def _tier(opts: PlanOptions) -> str:
    """The price tier: ``make_plan`` resolves it (the cheapest all in, plan/tier.py) before the cost is priced."""
    assert opts.price_tier is not None, "the price tier is resolved before pricing"
    return opts.price_tier


def _sized_pools(catalog: list[NodeType], gpu: dict[str, list[int]], reqs: list[ResourceRequest], weights: list[float],
                 counts: list[int], opts: PlanOptions, mix_basis: str) -> list[NodePool]:
    """One ``node_pools`` entry per GPU node type, each packed on its own (counts, like ``nodes``)."""
    pools = []
    for name, idx in gpu.items():
        sub = [reqs[i] for i in idx]
        # a kind that runs at all needs a slot in its own pool, even when its share rounds to none
        sub_counts = [max(counts[i], 1) for i in idx]
        top = max(range(len(sub)), key=lambda i: (weights[idx[i]], -i))
        s = _size_type(find_type(catalog, name), sub, sub_counts, top, opts)
        pools.append(_pool_block(s, sub, [weights[i] for i in idx], sub_counts, top, _tier(opts), mix_basis))
    return pools


def _of_providers(catalog: list[NodeType], providers: tuple[str, ...], notes: list[str]) -> list[NodeType]:
    kept = [t for t in catalog if t.provider in providers]
    if not kept:
        raise InputError(f"`emit_k8s`: no node type in the catalog is on {', '.join(providers)}; "
                         "add one or name it with `node_type`")
    notes.append(f"node types limited to {', '.join(providers)} (--emit-k8s writes Karpenter manifests for these "
                 "clouds only): the cheapest of them was chosen")
    return kept


def plan_nodes(fig: Figures, n: int, opts: PlanOptions, notes: list[str],
               catalog: Optional[list[NodeType]] = None) -> _Nodes:
    """Size every catalog type for ``n`` concurrent sandboxes and choose one (the ``nodes`` block);
    without --node-type, GPU requests get their own pools and requests no type holds are listed.
    ``catalog``: the node catalog already loaded (default: ``opts.nodes_file`` or the bundled one)."""
    catalog = catalog if catalog is not None else load_catalog(opts.nodes_file)
    if opts.node_type is not None:
        find_type(catalog, opts.node_type, opts.nodes_file or "bundled node catalog")
    elif opts.node_providers is not None:
        catalog = _of_providers(catalog, opts.node_providers, notes)
    all_reqs, all_weights, all_hours, all_runs, mix_basis = _requests(fig, opts, notes)
    request_source = "flag" if opts.request is not None else ("input" if fig.requests else "default")
    all_counts = concurrent_mix(all_weights, n)
    # GPU requests and requests no type holds leave `nodes` (the CPU pool) when the CPU pool has any
    routing = route(all_reqs, catalog, _tier(opts), opts.reserve) if opts.node_type is None else None
    split = routing is not None and bool(routing.cpu) and bool(routing.gpu or routing.unplaced)
    keep = routing.cpu if routing is not None and split else list(range(len(all_reqs)))
    reqs, weights, counts = [all_reqs[i] for i in keep], [all_weights[i] for i in keep], [all_counts[i] for i in keep]
    # the CPU pool considers GPU node types only when one of its requests asks for a GPU (or --node-type names one)
    cpu_only = all(q.gpu <= 0 for q in reqs)
    pool_catalog = [t for t in catalog if t.gpus == 0 or t.name == opts.node_type] if cpu_only else catalog
    dominant = max(range(len(reqs)), key=lambda i: (weights[i], -i))
    sized, skipped = [], []
    for candidate in pool_catalog:
        try:
            sized.append(_size_type(candidate, reqs, counts, dominant, opts))
        except InputError as exc:
            if candidate.name == opts.node_type:
                raise
            skipped.append({"type": candidate.name, "reason": str(exc)})
    if not sized:
        raise InputError("no node type in the catalog fits one sandbox request: " + skipped[0]["reason"])
    pools = _sized_pools(catalog, routing.gpu, all_reqs, all_weights, all_counts, opts, mix_basis) if routing is not None and split else []
    chosen, others = _choose(sized, opts, notes)
    node = chosen.node
    if not node.priced:
        notes.append(f"node type {node.name!r} has no prices: sized but not costed")
    mixed = len(reqs) > 1
    block = Nodes.model_validate(chosen.figures() | {
        "request": reqs[dominant].as_dict(),
        "mix": [{**q.as_dict(), "weight": w, "concurrent": c} for q, w, c in zip(reqs, weights, counts)] if mixed else None,
        "packing": "first-fit-decreasing" if mixed else "uniform",
        "mix_basis": mix_basis if mixed else None,
        "provider": node.provider,
        "instance_type": node.instance_type,
        "node_capacity": {"cpu": node.vcpus, "memory_gb": node.memory_gb, "disk_gb": node.scratch_gb, "gpus": node.gpus},
        "alternatives": [_alt(s, _tier(opts)) for s in others],
        "too_small": skipped,
        "unplaced": unplaced_block(all_reqs, all_runs, all_hours, routing.unplaced) if routing is not None and split else [],
    })
    return _Nodes(block, chosen, node, reqs, counts, pools, request_source)


def plan_storage(fig: Figures, n: int, duty: Optional[float], nodes: _Nodes, opts: PlanOptions) -> Storage:
    """Scratch, image cache and record growth for the chosen nodes (the ``storage`` block)."""
    rollouts_per_day = (n * (duty if duty else 1.0) / fig.hold_mean_s * 86400.0) if fig.hold_mean_s else None
    return storage_plan(
        nodes=nodes.chosen.count, per_node_mb=nodes.chosen.scratch_per_node_mb,
        at_target_mb=sum(q.disk * k for q, k in zip(nodes.reqs, nodes.counts)),
        node_disk_mb=nodes.node.capacity["disk"], reserve_disk_mb=nodes.chosen.reserve.disk,
        # the median record when measured; never the largest record times every rollout
        rollouts_per_day=rollouts_per_day, trajectory_bytes_mean=fig.trajectory_bytes_median,
        trajectory_bytes_max=None, bundle_median=fig.bundle_median,
        bundle_max=fig.bundle_max, bundle_total=fig.bundle_total, task_count=fig.task_count,
    )


def plan_turns(fig: Figures, opts: PlanOptions) -> Optional[TurnMoments]:
    """The turn distribution context and caching are averaged over: the measured histogram, else a
    --turns point, else the stated lognormal through the measured median and p90."""
    if fig.turns_histogram:
        found = histogram_moments(fig.turns_histogram)
        if found is not None:
            return found
    if opts.turns:
        return TurnMoments(opts.turns, opts.turns * (opts.turns + 1) / 2.0, f"{opts.turns:g} turns (--turns)")
    return turn_moments({}, fig.turns_median, fig.turns_p90)


def plan_caching(fig: Figures, opts: PlanOptions, turns: Optional[TurnMoments]) -> tuple[Context, Caching]:
    """The context model's fit and the prefix-caching saving (the ``context`` and ``caching`` blocks)."""
    c = fig.turn_tokens
    context = Context(
        turn_tokens=c,
        model_error_by_turns={str(k): v for k, v in inf.model_error(fig.median_input_by_turns, c).items()} if c else {},
        turns_mean=turns.mean if turns is not None else None,
        turns_basis=turns.basis if turns is not None else None,
    )
    turn_set = sorted(set(inf.DOC_SAVING_TURNS) | {int(t) for t in fig.turns_histogram})
    f = opts.prefix_break
    mix = inf.mix_saving(fig.turns_histogram) if fig.turns_histogram else None
    mix_f = inf.mix_saving(fig.turns_histogram, f) if fig.turns_histogram else None
    applied: Optional[float]
    if mix_f is not None:
        applied, basis = mix_f, "measured turn histogram"
    elif turns is not None:
        applied, basis = turns.saving(f), turns.basis
    else:
        applied, basis = None, "no turn histogram or median: pass --turns"
    caching = Caching(
        saving_by_turns={str(t): inf.cache_saving(t) for t in turn_set},
        saving_measured_mix=mix,
        prefix_break=f,
        saving_by_turns_with_breaks={str(t): inf.cache_saving(t, f) for t in turn_set},
        saving_measured_mix_with_breaks=mix_f,
        cached_fraction_measured=fig.cached_fraction,
        saving_applied=applied,
        saving_basis=basis,
    )
    return context, caching


def plan_inference(fig: Figures, n: int, saving: Optional[float], opts: PlanOptions, notes: list[str],
                   turns: Optional[TurnMoments] = None) -> PlanInference:
    """Token rates at the target and the GPUs they need by compute and memory, with and without
    caching (the ``inference`` block, ``inference_sizing.size_inference``)."""
    if opts.gpu_note:
        notes.append(opts.gpu_note)
    return size_inference(fig, n, saving, fig.cached_fraction, opts, notes, turns)


def _rework(fig: Figures, nodes: _Nodes, n: int, duty: Optional[float]):
    """Spot's re-run figures on ``nodes``' type (None when its reclaim rate or the holds are unknown)."""
    rate = nodes.node.spot_interruptions_per_node_h
    return spot_rework(
        fitted_holds(fig) if rate is not None else None,
        rate, n * duty if duty else None, nodes.chosen.price("spot"), nodes.node.spot_interruptions_source,
    )


def plan_cost(fig: Figures, n: int, duty: Optional[float], nodes: _Nodes, inference: PlanInference, opts: PlanOptions,
              notes: list[str], history: Optional[RolloutIntervals] = None,
              replayed_mixed: Optional[dict[str, Optional[Mixed]]] = None, censored: Optional[Censored] = None) -> Cost:
    """The fleet's price on each tier, per passing trajectory (fleet and all in), exception waste,
    GPUs, the GPU pools and spot re-runs (the ``cost`` block).

    On spot the re-runs are part of the price of a pass: the same busy sandbox-hours carry
    ``1 + rework share`` times the work, so a spot fleet delivers that many times fewer passes an
    hour, and every part of the cost per pass (fleet, inference, trainer) divides by that rate.
    """
    exc_share = None
    if fig.exception_sandbox_hours is not None and fig.sandbox_hours:
        exc_share = fig.exception_sandbox_hours / fig.sandbox_hours
    elif fig.exception_rate is not None:
        exc_share = fig.exception_rate
        notes.append("exception waste uses the exception share of rows: the input has no exception sandbox-hours")
    rate = nodes.node.spot_interruptions_per_node_h
    rework = _rework(fig, nodes, n, duty)
    share = rework.rework_share if rework is not None else None
    # a known reclaim rate whose restarts have no finite expected work: spot is not priced per pass
    unbounded = rework is not None and rework.unbounded
    tier = _tier(opts)
    inference_per_h = costmod.inference_cost(opts.gpu_usd_h, inference.gpus)
    pool_prices = [getattr(pl, f"{tier}_per_h") for pl in nodes.pools]
    passes = passes_per_h(n, duty, fig.sandbox_hours_per_pass)
    rerun = share if tier == "spot" and share is not None else None
    if rerun is not None and passes is not None:
        passes /= 1.0 + rerun
    if tier == "spot" and unbounded:
        passes = None  # no finite rate of passes: every figure per pass on spot stays unpriced
    trainer_per_h = opts.trainer_gpus * opts.gpu_usd_h if opts.trainer_gpus and opts.gpu_usd_h else None
    if opts.trainer_gpus and not opts.gpu_usd_h:
        notes.append("--trainer-gpus needs a GPU price (--gpu or --gpu-usd-h): trainer not costed")
    total, parts = all_in(passes, nodes.chosen.price(tier), inference_per_h, trainer_per_h)
    return costmod.fleet_cost(
        nodes.node, nodes.chosen.count, tier=tier, concurrency=n, duty=duty,
        sandbox_hours_per_pass=fig.sandbox_hours_per_pass, exception_share=exc_share, spot_rework_share=share,
        spot_reruns_unbounded=unbounded, inference_per_h=inference_per_h,
        inference_per_h_cached=costmod.inference_cost(opts.gpu_usd_h, inference.gpus_cached),
        node_pools_per_h=sum(p for p in pool_prices if p is not None) if pool_prices and None not in pool_prices else None,
        passing_per_h=passes, per_passing_trajectory_all_in=total, per_passing_trajectory_parts=parts,
        spot_rework=rework,
        mixed=(replayed_mixed[tier] if replayed_mixed is not None and tier in replayed_mixed
               else plan_mixed(fig, nodes, opts, share, unbounded, history, censored)),
        per_pass_basis=_per_pass_basis(tier, rerun, rate, unbounded),
    )


def _per_pass_basis(tier: str, rerun: Optional[float], rate: Optional[float], unbounded: bool) -> str:
    if tier == "spot" and unbounded:
        return (f"spot not priced per pass: at {rate:.2g} reclaims per node-h the re-runs from scratch are unbounded "
                "(see the spot re-runs line); the other tiers are")
    if rerun is not None:
        return f"spot re-runs included: +{rerun * 100:.3g}% sandbox-hours per pass ({rate:.2g} reclaims per node-h, restart from scratch)"
    return f"{tier.replace('_', '-')} price, no re-runs"


def plan_mixed(fig: Figures, nodes: _Nodes, opts: PlanOptions, rework_share: Optional[float],
               reruns_unbounded: bool = False, history: Optional[RolloutIntervals] = None,
               censored: Optional[Censored] = None) -> Optional[Mixed]:
    """``cost.mixed``: the sandbox nodes split into reserved and burst on the measured concurrency curve,
    re-priced by a node replay of ``history`` (the measured rollouts) when given, its burst limit
    covering the ``censored`` demand the plan buys where a cap bound (plan/censored_burst.py)."""
    node = nodes.node
    mixed = mixed_purchase(fig.time_at_level, nodes.chosen.count, burst_tier_for(opts.price_tier),
                           node.price("reserved"), node.price("on_demand"), node.price("spot"), rework_share,
                           reruns_unbounded)
    chosen = _chosen_target(opts)
    if mixed is not None and history is not None and chosen:
        mixed.basis = (mixed.basis or "") + ("; no node replay: it prices the measured history as it ran, "
                                             "not a chosen target (--concurrency, --batch, --passing-per-hour)")
    elif mixed is not None and history is not None:
        fallback = nodes.reqs[max(range(len(nodes.reqs)), key=lambda i: nodes.counts[i])]
        alloc = usable(node, nodes.chosen.reserve)
        mixed = replay_mixed(mixed, history, alloc, fallback, provision_s=opts.node_provision_s,
                             scale_down_s=opts.node_scale_down_s, placement=opts.node_placement,
                             tolerance=opts.rl_tolerance)
        cpu, memory, disk, _ = requests_of(history, fallback)
        mixed = censored_burst.cover(mixed, censored, (alloc["cpu"], alloc["memory"], alloc["disk"]), (cpu, memory, disk),
                                     history)
        mixed.basis = (mixed.basis or "") + _requeued_note(history)
    if mixed is not None and nodes.pools:
        mixed.basis = (mixed.basis or "") + f"; the sandbox nodes only: the GPU pools stay on {(opts.price_tier or '').replace('_', '-')}"
    return mixed


def _requeued_note(history: RolloutIntervals) -> str:
    """Where ``history`` is the demand's (re-queued past a cap, plan/censored_order.py), the basis says so."""
    from sandbox_fleet.plan.censored_order import RequeuedIntervals

    if not isinstance(history, RequeuedIntervals):
        return ""
    return f"; replayed on the demand's history, not the capped one: {history.describe()}"


def _chosen_target(opts: PlanOptions) -> bool:
    """A target the user chose: the measured history, replayed as it ran, does not price it."""
    return opts.concurrency is not None or opts.batch is not None or opts.passing_per_hour is not None


def replayed_count(nodes: _Nodes, history: Optional[RolloutIntervals], opts: PlanOptions, notes: list[str]) -> _Nodes:
    """The sandbox nodes bought at the measured rollouts' peaks (issue 37): with telemetry whose tasks
    set requests and the measured history as the target, the count is the replay's peak when it is
    above the slot sizing's (which packs the mix at its mean shares); the slot count stays, labelled."""
    if history is None or _chosen_target(opts):
        return nodes
    fallback = nodes.reqs[max(range(len(nodes.reqs)), key=lambda i: nodes.counts[i])]
    if requests_of(history, fallback)[3] == history.count:
        return nodes  # no rollout's task sets a request: the real mix is not known
    alloc = usable(nodes.node, nodes.chosen.reserve)
    slot = nodes.chosen.count
    peak = replayed_peak(history, alloc, fallback, opts.node_placement)
    short = short_at(history, alloc, fallback, slot, opts.node_placement)
    count = max(slot, peak)
    basis = (f"{peak:,} nodes at the measured rollouts' peaks (each request placed at its start on the most-"
             f"allocated node that fits, never migrated, no delays); the slot sizing's {slot:,} (the mix at its mean "
             f"shares) " + (f"is a lower bound: {short:,} rollouts found no room on {slot:,} node{'' if slot == 1 else 's'} at their start"
                            if peak > slot else "holds every rollout at its start, and is kept"))
    if peak > slot:
        notes.append(f"nodes: {count:,}, the measured rollouts' peaks, not the slot sizing's {slot:,} "
                     f"({short:,} rollouts found no room on {slot:,})")
    block = nodes.block.model_copy(update={"count": count, "replayed_peak": peak, "slot_count": slot,
                                           "slot_count_short": short, "count_basis": basis})
    return replace(nodes, block=block, chosen=replace(nodes.chosen, count=count))


def _holds_or_none(fig: Figures) -> Optional[HoldSampler]:
    """The fitted holds, or None when the input has none to fit (a ramp is then judged on its bound)."""
    try:
        return fitted_holds(fig)
    except InputError:
        return None


def _kinds(nodes: _Nodes) -> list[tuple[dict, float]]:
    """(request, share of the running sandboxes) pairs, as rent vs buy weighs them."""
    counts, reqs = nodes.counts, nodes.reqs
    shares = [k / sum(counts) for k in counts] if sum(counts) else [1.0 / len(reqs)] * len(reqs)
    return [(q.as_dict(), sh) for q, sh in zip(reqs, shares)]


def plan_rent(fig: Figures, n: int, duty: Optional[float], nodes: _Nodes, cost: Cost, starts: Starts,
              providers: list[rentmod.Provider], opts: PlanOptions, overhead_s: Optional[dict[str, float]] = None) -> Cost:
    """``cost`` with renting the busy sandbox-hours on each provider vs buying (``cost.rent`` and
    ``cost.rent_verdict``); bought spot is compared with its re-runs, which a rented sandbox does not have,
    and each rented hold carries its substrate's cold start and per-turn overhead (``overhead_s``,
    provider -> seconds)."""
    buy, label = getattr(cost, f"{opts.price_tier}_per_h"), f"{nodes.chosen.count:,} x {nodes.node.name}"
    rw = cost.spot_rework
    if opts.price_tier == "spot" and rw is not None and rw.unbounded:
        buy = None  # unbounded re-runs: the bare spot price is not what the bought fleet's work costs
    elif opts.price_tier == "spot" and rw is not None and rw.spot_per_h_with_rework is not None:
        assert rw.rework_share is not None  # set with the price it raises
        buy, label = rw.spot_per_h_with_rework, label + f" with spot re-runs (+{rw.rework_share * 100:.3g}% sandbox-hours)"
    rent, verdict = rentmod.rent_block(
        providers, _kinds(nodes), target=n, duty=duty,
        sandbox_hours_per_pass=fig.sandbox_hours_per_pass, starts=starts,
        buy_usd_h=buy, tier=_tier(opts), node_label=label, ramp_max_share=opts.rl_tolerance,
        overhead_s=overhead_s, hold_mean_s=fig.hold_mean_s, holds=_holds_or_none(fig) if starts.batch else None,
    )
    # both are built and typed: a copy that sets them needs no second validation
    return cost.model_copy(update={"rent": rent, "rent_verdict": verdict})


def plan_tier(fig: Figures, n: int, duty: Optional[float], inference: PlanInference, opts: PlanOptions,
              notes: list[str], history: Optional[RolloutIntervals] = None, censored: Optional[Censored] = None
              ) -> tuple[_Nodes, PlanOptions, TierChoice, Optional[dict[str, Optional[Mixed]]]]:
    """The nodes sized on each single tier (each tier's prices choose its own type), ranked all in with
    spot's re-runs (plan/tier.py): the headline tier's nodes, ``opts`` with that tier, the ranking, and
    (with ``history``, the measured target) the mixed purchases the replay priced, by burst tier. With
    ``history`` every candidate order is priced by replay and the cheapest is the order (``_by_replay``)."""
    by_tier: dict[str, tuple[_Nodes, list[str]]] = {}
    catalog = load_catalog(opts.nodes_file)
    for t in TIERS:
        own: list[str] = []
        by_tier[t] = (plan_nodes(fig, n, replace(opts, price_tier=t), own, catalog), own)
    fit = None
    offers = []
    for t, (sized, _) in by_tier.items():
        per_h = _nodes_per_h(sized, t)[1]
        rate = sized.node.spot_interruptions_per_node_h if t == "spot" else None
        if rate is not None and fit is None:
            fit = fitted_holds(fig)
        share_at = (lambda r, f=fit: rework_share(f, r)) if rate is not None else None
        offers.append(TierOffer(tier=t, node_type=sized.node.name, nodes=sized.chosen.count, fleet_per_h=per_h,
                                share_at=share_at, interruptions_per_node_h=rate))
    inference_per_h = costmod.inference_cost(opts.gpu_usd_h, inference.gpus) or 0.0
    trainer_per_h = opts.trainer_gpus * opts.gpu_usd_h if opts.trainer_gpus and opts.gpu_usd_h else 0.0
    tier, choice = choose_tier(offers, other_per_h=inference_per_h + trainer_per_h,
                               passes_per_h=passes_per_h(n, duty, fig.sandbox_hours_per_pass), duty=duty,
                               forced=opts.price_tier)
    if history is not None and not _chosen_target(opts):
        return _by_replay(fig, n, duty, by_tier, choice, opts, notes, history, inference_per_h + trainer_per_h, censored)
    nodes, own = by_tier[tier]
    notes.extend(own)
    return nodes, replace(opts, price_tier=tier), choice, None


def _by_replay(fig: Figures, n: int, duty: Optional[float], by_tier: dict[str, tuple[_Nodes, list[str]]],
               choice: TierChoice, opts: PlanOptions, notes: list[str], history: RolloutIntervals, rest_per_h: float,
               censored: Optional[Censored] = None) -> tuple[_Nodes, PlanOptions, TierChoice, dict[str, Optional[Mixed]]]:
    """Every candidate order priced by replaying ``history`` (plan/order_replay.py): each single tier at its
    replayed count, the mixed purchase bursting on on-demand and on spot; the cheapest all in is the order."""
    counted = {t: replayed_count(sized, history, replace(opts, price_tier=t), own) for t, (sized, own) in by_tier.items()}
    lines, mixes = [], {}
    for t in TIERS:
        nd = counted[t]
        rw = _rework(fig, nd, n, duty)
        share, unbounded = (rw.rework_share, bool(rw.unbounded)) if rw is not None else (None, False)
        pool_prices = [getattr(pl, f"{t}_per_h") for pl in nd.pools]
        pools_per_h = None if None in pool_prices else float(sum(p for p in pool_prices if p is not None))
        slot = nd.block.slot_count if nd.block.slot_count is not None else nd.chosen.count
        lines.append(order_replay.single_line(t, nd.node.name, nd.chosen.count, slot, nd.node.price(t), pools_per_h,
                                              rest_per_h, share, unbounded))
        if t != "reserved":  # a mixed order bursts on on-demand or spot
            mixes[t] = plan_mixed(fig, nd, replace(opts, price_tier=t), share, unbounded, history, censored)
            lines.append(order_replay.mixed_line(mixes[t], t, nd.node.name, pools_per_h, rest_per_h, share,
                                                 opts.rl_tolerance))
    lines.sort(key=lambda ln: order_replay.ORDERS.index(ln.order or ""))
    won = order_replay.choose_order(lines, opts.price_tier)
    tier = won.tier if won is not None and won.tier is not None else choice.chosen or "on_demand"
    notes.extend(by_tier[tier][1])
    choice = choice.model_copy(update={
        "chosen": tier, "replayed": lines, "order": won.order if won is not None else None,
        "basis": order_replay.basis(lines, won, opts.price_tier, history.count, choice.basis,
                                   opts.rl_tolerance)})
    return counted[tier], replace(opts, price_tier=tier), choice, mixes


def mixed_order_per_pass(cost: Cost) -> Cost:
    """``cost`` with its all-in $ per passing trajectory on the mixed purchase's fleet $/h, when the
    order signed is the mixed one (its spot burst's node-hours already carry the re-runs)."""
    mx, pp, tc = cost.mixed, cost.per_passing_trajectory_parts, cost.tier_choice
    if (tc is None or not (tc.order or "").startswith("mixed") or mx is None or mx.usd_per_h is None
            or not cost.passing_per_h or pp is None):
        return cost
    rw = cost.spot_rework
    s = (rw.rework_share or 0.0) if cost.tier == "spot" and rw is not None else 0.0
    parts = pp.model_copy(update={"fleet": mx.usd_per_h / (cost.passing_per_h * (1.0 + s))})
    total = sum(v for v in (parts.fleet, parts.inference, parts.trainer) if v is not None)
    return cost.model_copy(update={"per_passing_trajectory_all_in": total, "per_passing_trajectory_parts": parts})


def _nodes_per_h(nodes: _Nodes, tier: str) -> tuple[int, Optional[float]]:
    """Sandbox nodes (the CPU pool and the GPU pools) and their $/h on ``tier`` (None if one is unpriced)."""
    count = nodes.chosen.count + sum(pl.count or 0 for pl in nodes.pools)
    prices = [nodes.chosen.price(tier)] + [getattr(pl, f"{tier}_per_h") for pl in nodes.pools]
    return count, (sum(p for p in prices if p is not None) if None not in prices else None)


def _line_histories(history: Optional[RolloutIntervals], censored: Optional[Censored], opts: PlanOptions):
    """Each censored line's history (plan/censored_order.py), or None (no history, or a chosen target)."""
    if history is None or _chosen_target(opts):
        return None
    from sandbox_fleet.plan.censored_order import histories

    return histories(history, censored)


def _price_censored(fig: Figures, target: Target, nodes: _Nodes, opts: PlanOptions, cost: Optional[Cost] = None,
                    lines: Any = None, duty: Optional[float] = None) -> None:
    """The cap line and the demand line in nodes and $/h on the order form signed (``target.censored``):
    the line bought is the order; the other is sized and priced the same way at its own concurrency, on
    its own history where the order was replayed (plan/censored_order.py)."""
    c = target.censored
    if c is None or c.cap is None or c.demand is None or c.demand_is_lower_bound:
        return
    tier = _tier(opts)
    tc = cost.tier_choice if cost is not None else None
    order = tc.order if tc is not None and tc.order is not None else tier
    mixed_form = order.startswith("mixed") and cost is not None and cost.mixed is not None
    bought_at = "cap" if c.chosen == "cap" else "demand"
    other_at = "demand" if bought_at == "cap" else "cap"
    other_n = c.demand if bought_at == "cap" else c.cap
    hist = None
    if lines is not None:
        hist = lines.at_cap if other_at == "cap" else (lines.at_demand or lines.at_cap)

    # the other line on the order's node type (a CPU-only order: the GPU pools route by their own types)
    line_opts = replace(opts, node_type=nodes.node.name) if opts.node_type is None and not nodes.pools else opts

    def sized(n_line: int) -> _Nodes:
        out = plan_nodes(fig, n_line, line_opts, [])
        return replayed_count(out, hist, line_opts, []) if hist is not None else out

    if other_n == target.concurrency:  # the two lines are one (a demand at the cap)
        mixed_form = False
    if mixed_form:
        assert cost is not None and cost.mixed is not None
        mx = cost.mixed
        b_r, b_b, b_usd = mx.reserved_nodes, mx.burst_nodes, _with_pools(mx.usd_per_h, nodes, tier)
        other = sized(other_n)
        rw = _rework(fig, other, other_n, duty)
        share, unbounded = (rw.rework_share, bool(rw.unbounded)) if rw is not None else (None, False)
        om = plan_mixed(fig, other, line_opts, share, unbounded, hist, c if other_at == "demand" else None)
        o_r, o_b = (om.reserved_nodes, om.burst_nodes) if om is not None else (None, None)
        o_usd = _with_pools(om.usd_per_h, other, tier) if om is not None else None
        bought = (_split_nodes(b_r, b_b, nodes), b_usd)
        priced = (_split_nodes(o_r, o_b, other), o_usd)
        splits = {bought_at: (b_r, b_b), other_at: (o_r, o_b)}
    else:
        bought = _nodes_per_h(nodes, tier)
        priced = bought if other_n == target.concurrency else _nodes_per_h(sized(other_n), tier)
        splits = {}
    at = {bought_at: bought, other_at: priced}
    c.nodes_at_cap, c.usd_per_h_at_cap = at["cap"]
    c.nodes_at_demand, c.usd_per_h_at_demand = at["demand"]
    c.lines_form = order
    c.reserved_at_cap, c.burst_at_cap = splits.get("cap", (None, None))
    c.reserved_at_demand, c.burst_at_demand = splits.get("demand", (None, None))
    c.lines_basis = _lines_basis(order, lines, mixed_form) + (f"; both on {nodes.node.name}" if line_opts is not opts else "")


def _with_pools(usd_per_h: Optional[float], nodes: _Nodes, tier: str) -> Optional[float]:
    """A mixed split's sandbox-node $/h plus the GPU pools on ``tier`` (None if either is unpriced)."""
    pools = [getattr(pl, f"{tier}_per_h") for pl in nodes.pools]
    if usd_per_h is None or None in pools:
        return None
    return usd_per_h + sum(p for p in pools if p is not None)


def _split_nodes(reserved: Optional[int], burst: Optional[int], nodes: _Nodes) -> Optional[int]:
    """The most sandbox nodes a mixed split runs (R + its burst limit) plus the GPU pools'."""
    if reserved is None or burst is None:
        return None
    return reserved + burst + sum(pl.count or 0 for pl in nodes.pools)


def _lines_basis(order: str, lines: Any, mixed_form: bool) -> str:
    form = order.replace("mixed_", "mixed ").replace("_", "-")
    how = ("each line's reserved base R chosen by its own replayed cost (within --tolerance of its waits), its burst "
           "billed launch to release" if mixed_form else "each line's node count at its own concurrency"
           + (" and its history's replayed peaks" if lines is not None else ""))
    if lines is None:
        return f"both lines priced as the order signed, {form}: {how}"
    if lines.at_demand is None:
        return (f"both lines priced as the order signed, {form}: {how}; both on the history as it ran (no synchronous "
                f"steps to re-queue it at the demand's slots: the demand line's replay is the cap's, an under-statement)")
    return (f"both lines priced as the order signed, {form}: {how}; the cap line on the history as it ran, the demand "
            f"line on {lines.at_demand.describe()}")


def make_plan(summary: MeasureSummary, opts: PlanOptions | None = None, *, input_path: str | Path | None = None,
              backtest: BacktestLine | None = None, history: RolloutIntervals | None = None) -> PlanSummary:
    """A purchase-order plan for the measure summary ``summary`` under ``opts``, as its model.

    ``input_path``: the file ``summary`` came from (the plan names it; a summary without holds, or
    with a bad figure, is reported against it). ``backtest``: a backtest's verdict
    (``backtest_line.backtest_block``) the purchase order carries. ``history``: the measured rollouts'
    intervals and requests (``measure.intervals``): the mixed purchase is then priced by replaying them on
    nodes (``plan/mixed_replay.py``).
    """
    opts = opts or PlanOptions()
    _check_options(opts)
    providers = rentmod.select(rentmod.load_providers(opts.providers_file, opts.substrates_file), opts.rent_providers,
                               opts.providers_file or "bundled provider catalog")
    notes: list[str] = []
    try:
        fig = Figures(summary)
    except InputError as exc:
        raise InputError(f"{input_path}: {exc}" if input_path is not None else str(exc)) from None
    target = resolve_target(
        fig, concurrency=opts.concurrency, batch=opts.batch, train_s=opts.train_s,
        passing_per_hour=opts.passing_per_hour, tolerance=opts.rl_tolerance, seed=opts.seed,
        shape=opts.shape, max_wait_s=opts.max_wait_s, keep_cap=opts.keep_cap,
    )
    if target.note:
        notes.append(target.note)
    n = target.concurrency
    # An RL schedule or a throughput shape runs at its own duty; every other target at the measured one.
    duty = target.duty if target.duty is not None else fig.duty
    turns = plan_turns(fig, opts)
    context, caching = plan_caching(fig, opts, turns)
    inference_notes: list[str] = []  # after the nodes' notes, in the order the order reads
    inference = plan_inference(fig, n, caching.saving_applied, opts, inference_notes, turns)
    tier_source: Source = "flag" if opts.price_tier is not None else "default"
    lines = _line_histories(history, target.censored, opts)
    bought = lines.bought if lines is not None else history
    nodes, opts, tier_choice, replayed_mixed = plan_tier(fig, n, duty, inference, opts, notes, bought, target.censored)
    notes.extend(inference_notes)
    target.tier_basis = tier_choice.basis
    storage = plan_storage(fig, n, duty, nodes, opts)
    cost = plan_cost(fig, n, duty, nodes, inference, opts, notes, bought, replayed_mixed, target.censored)
    cost = mixed_order_per_pass(cost.model_copy(update={"tier_choice": tier_choice}))
    _price_censored(fig, target, nodes, opts, cost, lines, duty)
    source = fig.summary.source or ["measured"]
    assumptions = collect_assumptions(
        fig, opts, "published" if "published" in source else "measured", target=target, tier_source=tier_source,
        node=nodes.node, reserve=nodes.chosen.reserve, reserve_source=nodes.chosen.reserve_source,
        inference=inference, caching=caching, request_source=nodes.request_source,
    )
    starts = start_rate(fig, target, duty)
    substrates = load_substrates(opts.substrates_file)
    turns_mean = turns.mean if turns is not None else None
    cost = plan_rent(fig, n, duty, nodes, cost, starts, providers, opts, rent_overheads(substrates, turns_mean))
    limits = limits_block(fig.summary, _kinds(nodes), n, starts, providers_file=opts.providers_file,
                          names=opts.rent_providers, budgets_file=opts.budgets_file,
                          holds=_holds_or_none(fig) if starts.batch else None, substrates_file=opts.substrates_file)
    substrate = substrate_block(substrates, target=n, duty=duty, hold_mean_s=fig.hold_mean_s,
                                turns_mean=turns_mean, turns_basis=turns.basis if turns is not None else None)
    return PlanSummary.build(
        input=Input(source=source, rows=int(fig.rows), path=str(input_path) if input_path is not None else None,
                    fingerprint=contract.fingerprint(fig.summary)),
        target=target,
        measured=fig.measured_block(),
        nodes=nodes.block,
        node_pools=nodes.pools,
        storage=storage,
        context=context,
        caching=caching,
        inference=inference,
        cost=cost,
        assumptions=assumptions,
        starts=starts,
        substrates=substrate,
        notes=notes,
        backtest=backtest,
        limits=limits,
        signal=plan_signal(fig, nodes, cost, opts),
        warm_pool=plan_warm_pool(fig, starts, opts),
    )


def plan_warm_pool(fig: Figures, starts: Starts, opts: PlanOptions) -> Optional[WarmPoolSizing]:
    """The warm pool on the catalog's self-hosted entry with a refill rate (agent-sandbox), or None."""
    hosted = [p for p in rentmod.load_providers(opts.providers_file, opts.substrates_file)
              if not p.rented and p.warm_pool_refill_per_s]
    if not hosted or not starts.batch:
        return None
    source = "--k8s-provision-s" if opts.warm_cold_start_s is not None else None
    return warm_pool_block(starts, hosted[0], _holds_or_none(fig), cold_start_s=opts.warm_cold_start_s,
                           cold_start_source=source, max_share=opts.warm_max_share, seed=opts.seed)


def plan_signal(fig: Figures, nodes: _Nodes, cost: Cost, opts: PlanOptions):
    """The ``signal`` block: informative groups, dynamic sampling's release on the chosen node type."""
    same_type = replace(opts, node_type=nodes.chosen.type)

    def size(n: int) -> tuple[int, Optional[float]]:
        chosen = plan_nodes(fig, n, same_type, []).chosen
        return chosen.count, chosen.price(_tier(opts))

    return signal_block(fig.summary, group_size=opts.group_size, groups_per_batch=opts.groups_per_batch,
                        batch=opts.batch, confidence=opts.signal_confidence, hold_mean_s=fig.hold_mean_s,
                        sandbox_hours_per_pass=fig.sandbox_hours_per_pass,
                        usd_per_busy_sandbox_h=cost.per_busy_sandbox_hour, usd_per_pass=cost.per_passing_trajectory,
                        node_type=nodes.chosen.type, size=size)


def parse_request(text: str) -> ResourceRequest:
    """``"CPUS,MEMORY_MB,STORAGE_MB[,GPUS]"`` -> ResourceRequest (the ``--request`` option)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (3, 4):
        raise InputError(f"`request` {text!r}: expected CPUS,MEMORY_MB,STORAGE_MB[,GPUS]")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise InputError(f"`request` {text!r}: expected numbers CPUS,MEMORY_MB,STORAGE_MB[,GPUS]") from None
    if any(v < 0 or not math.isfinite(v) for v in vals) or vals[0] <= 0:
        raise InputError(f"`request` {text!r}: cpus must be positive and the rest non-negative")
    return ResourceRequest(cpu=vals[0], memory=vals[1], disk=vals[2], gpu=vals[3] if len(vals) == 4 else 0.0)


def make_reserve(cpu: Optional[float] = None, memory_gb: Optional[float] = None, disk_gb: Optional[float] = None) -> Optional[Reserve]:
    """Per-node system reserve from cores and GiB (the CLI's units); None when none is given
    (each node type then uses its own, see plan/reserve.py). A part left out is zero."""
    if cpu is None and memory_gb is None and disk_gb is None:
        return None
    cpu, memory_gb, disk_gb = cpu or 0.0, memory_gb or 0.0, disk_gb or 0.0
    for name, v in (("`reserve_cpu`", cpu), ("`reserve_memory_gb`", memory_gb), ("`reserve_disk_gb`", disk_gb)):
        if not (v >= 0 and math.isfinite(v)):
            raise InputError(f"{name} must be zero or positive, got {v!r}")
    return Reserve(cpu=cpu, memory=memory_gb * 1024.0, disk=disk_gb * 1024.0)


def make_roofline(
    *,
    gpu_tflops: Optional[float],
    gpu_hbm_tbs: Optional[float],
    model_params_b: Optional[float],
    kv_bytes_per_token: Optional[float],
    utilisation: float = 0.4,
    bytes_per_param: float = 2.0,
    decode_batch: int = 64,
    context_tokens: float = 32_768.0,
) -> Optional[inf.Roofline]:
    """A roofline from CLI units (TFLOP/s, TB/s, billions of parameters), or None if not asked for.

    All four of FLOPs, bandwidth, parameters and KV bytes per token are needed; some but not all
    is an InputError naming the missing ones.
    """
    given = {"`gpu_tflops`": gpu_tflops, "`gpu_hbm_tbs`": gpu_hbm_tbs, "`model_params_b`": model_params_b, "`kv_bytes_per_token`": kv_bytes_per_token}
    # the roofline's own flags are checked even when no roofline is asked for: never silently ignored
    for name, v in (("`utilisation`", utilisation), ("`bytes_per_param`", bytes_per_param),
                    ("`context_tokens`", context_tokens)):
        check_range(name, v, above=True)
    check_range("`decode_batch`", decode_batch, minimum=1, whole=True)
    if all(v is None for v in given.values()):
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise InputError(f"a roofline estimate needs {', '.join(missing)} as well")
    assert gpu_tflops is not None and gpu_hbm_tbs is not None and model_params_b is not None  # none is missing
    assert kv_bytes_per_token is not None
    known = {k: v for k, v in given.items() if v is not None}  # all of given: none is missing
    for k, v in list(known.items()) + [("`utilisation`", utilisation), ("`bytes_per_param`", bytes_per_param), ("`decode_batch`", decode_batch), ("`context_tokens`", context_tokens)]:
        if not (v > 0 and math.isfinite(v)):
            raise InputError(f"{k} must be a positive number, got {v!r}")
    if utilisation > 1:
        raise InputError(f"`utilisation` is a fraction of peak in (0, 1], got {utilisation!r}")
    return inf.Roofline(
        flops=gpu_tflops * 1e12, hbm_bytes_s=gpu_hbm_tbs * 1e12, params=model_params_b * 1e9,
        kv_bytes_per_token=kv_bytes_per_token, utilisation=utilisation, bytes_per_param=bytes_per_param,
        decode_batch=int(decode_batch), context_tokens=context_tokens,
    )

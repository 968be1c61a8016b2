"""Assemble a plan: target -> nodes -> storage -> caching -> inference -> cost, as one ``PlanSummary``."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan import cost as costmod
from sandbox_fleet.plan import inference as inf
from sandbox_fleet.plan.catalog import TIERS, NodeType, find_type, load_catalog
from sandbox_fleet.plan.packing import concurrent_mix, ffd
from sandbox_fleet.plan.slots import Request, Reserve, size_uniform, usable
from sandbox_fleet.plan.storage import storage_plan
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.plan.summary import Figures, load_input
from sandbox_fleet.plan.target import resolve_target

#: the source document's request, used only when the input lists none (and the plan says so)
DEFAULT_REQUEST = Request(cpu=1.0, memory=2048.0, disk=6144.0, gpu=0.0)


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
    reserve: Reserve = field(default_factory=Reserve)
    request: Optional[Request] = None  # overrides the input's task requests
    price_tier: str = "on_demand"
    prefix_break: float = 0.0
    gpu_prefill_tok_s: Optional[float] = None
    gpu_decode_tok_s: Optional[float] = None
    roofline: Optional[inf.Roofline] = None
    gpu_usd_h: Optional[float] = None
    turns: Optional[float] = None  # turn count for the caching saving when the input has no histogram


def _requests(fig: Figures, opts: PlanOptions, notes: list[str]) -> tuple[list[Request], list[float]]:
    """The task requests and how many tasks ask for each (the weight of each in the mix)."""
    if opts.request is not None:
        return [opts.request], [1.0]
    if not fig.requests:
        notes.append("input lists no task requests: assumed 1 cpu / 2048 MB / 6144 MB per sandbox (pass --request)")
        return [DEFAULT_REQUEST], [1.0]
    reqs, weights = [], []
    for i, r in enumerate(fig.requests):
        def val(key: str, default: float | None = None) -> float:
            v = getattr(r, key)
            if v is None:
                if default is None:
                    raise InputError(f"summary key tasks.requests[{i}].{key}: missing; expected a number")
                return default
            if v < 0 or v != v:
                raise InputError(f"summary key tasks.requests[{i}].{key}: expected a non-negative number, got {v!r}")
            return float(v)

        q = Request(cpu=val("cpus"), memory=val("memory_mb"), disk=val("storage_mb", 0.0), gpu=val("gpus", 0.0))
        if q.cpu <= 0 and q.memory <= 0:
            raise InputError(f"summary key tasks.requests[{i}]: a request needs cpus or memory_mb above zero")
        w = val("tasks", 1.0)
        if w > 0:
            reqs.append(q)
            weights.append(w)
    if not reqs:
        raise InputError("summary key 'tasks.requests': every request has a zero weight")
    return reqs, weights


def _size_type(node: NodeType, reqs: list[Request], counts: list[int], dominant: int, opts: PlanOptions) -> dict:
    """Size one node type; raises InputError if a request does not fit it."""
    sizing = size_uniform(node, reqs[dominant], max(counts[dominant], 1), opts.reserve)
    for q in reqs:
        size_uniform(node, q, 1, opts.reserve)  # every request must fit an empty node
    cap = usable(node, opts.reserve)
    pack = ffd(reqs, counts, cap)
    return {
        "type": node.name,
        "count": pack.nodes,
        "binding": sizing.binding,
        "slots_per_node": sizing.slots,
        "per_node": sizing.per_node,
        "lower_bound": pack.lower_bound,
        "lower_bound_by_resource": pack.lower_bound_by_resource,
        "stranded": {"cpu": pack.stranded["cpu"], "memory_mb": pack.stranded["memory"], "disk_mb": pack.stranded["disk"]},
        "scratch_per_node_mb": (
            max(sum(reqs[i].disk * k for i, k in g.load.items()) for g in pack.groups) if len(reqs) > 1 and pack.groups
            else sizing.per_node * reqs[dominant].disk
        ),
        "node": node,
    }


def _choose(sized: list[dict], opts: PlanOptions, notes: list[str]) -> tuple[dict, list[dict]]:
    def price(s: dict) -> Optional[float]:
        p = s["node"].price(opts.price_tier)
        return p * s["count"] if p is not None else None

    ranked = sorted(sized, key=lambda s: (price(s) is None, price(s) or 0.0, s["count"], s["type"]))
    if opts.node_type is not None:
        chosen = next(s for s in sized if s["type"] == opts.node_type)
    else:
        chosen = ranked[0]
        if price(chosen) is None:
            notes.append(f"no node type has a {opts.price_tier} price: chose the type needing fewest nodes")
            chosen = min(sized, key=lambda s: (s["count"], s["type"]))
    others = [s for s in ranked if s is not chosen]
    return chosen, others


def _alt(s: dict, tier: str) -> dict:
    p = s["node"].price(tier)
    return {
        "type": s["type"],
        "count": s["count"],
        "binding": s["binding"],
        "per_node": s["per_node"],
        f"{tier}_per_h": p * s["count"] if p is not None else None,
        "priced": s["node"].priced,
    }


def _check_options(opts: PlanOptions) -> None:
    if opts.price_tier not in TIERS:
        raise InputError(f"--price-tier {opts.price_tier!r}: expected one of {', '.join(TIERS)}")
    if not 0.0 <= opts.prefix_break <= 1.0:
        raise InputError(f"--prefix-break must be a fraction in [0, 1], got {opts.prefix_break!r}")
    for name, v in (("--gpu-prefill-tok-s", opts.gpu_prefill_tok_s), ("--gpu-decode-tok-s", opts.gpu_decode_tok_s), ("--gpu-usd-h", opts.gpu_usd_h), ("--turns", opts.turns)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            raise InputError(f"{name} must be a positive number, got {v!r}")


@dataclass
class _Nodes:
    """What sizing the nodes decides, for the blocks after it."""

    block: dict
    chosen: dict
    node: NodeType
    reqs: list[Request]
    counts: list[int]


def plan_nodes(fig: Figures, n: int, opts: PlanOptions, notes: list[str]) -> _Nodes:
    """Size every catalog type for ``n`` concurrent sandboxes and choose one (the ``nodes`` block)."""
    catalog = load_catalog(opts.nodes_file)
    if opts.node_type is not None:
        find_type(catalog, opts.node_type, opts.nodes_file or "bundled node catalog")
    reqs, weights = _requests(fig, opts, notes)
    counts = concurrent_mix(weights, n)
    dominant = max(range(len(reqs)), key=lambda i: (weights[i], -i))
    sized, skipped = [], []
    for node in catalog:
        try:
            sized.append(_size_type(node, reqs, counts, dominant, opts))
        except InputError as exc:
            if node.name == opts.node_type:
                raise
            skipped.append({"type": node.name, "reason": str(exc)})
    if not sized:
        raise InputError("no node type in the catalog fits one sandbox request: " + skipped[0]["reason"])
    chosen, others = _choose(sized, opts, notes)
    node: NodeType = chosen["node"]
    if not node.priced:
        notes.append(f"node type {node.name!r} has no prices: sized but not costed")
    mixed = len(reqs) > 1
    block = {k: v for k, v in chosen.items() if k not in ("node", "scratch_per_node_mb")}
    block |= {
        "reserve": {"cpu": opts.reserve.cpu, "memory_mb": opts.reserve.memory, "disk_mb": opts.reserve.disk},
        "request": reqs[dominant].as_dict(),
        "mix": [{**q.as_dict(), "weight": w, "concurrent": c} for q, w, c in zip(reqs, weights, counts)] if mixed else None,
        "packing": "first-fit-decreasing" if mixed else "uniform",
        "alternatives": [_alt(s, opts.price_tier) for s in others],
        "too_small": skipped,
    }
    return _Nodes(block, chosen, node, reqs, counts)


def plan_storage(fig: Figures, n: int, duty: Optional[float], nodes: _Nodes, opts: PlanOptions) -> dict:
    """Scratch, image cache and record growth for the chosen nodes (the ``storage`` block)."""
    rollouts_per_day = (n * (duty if duty else 1.0) / fig.hold_mean_s * 86400.0) if fig.hold_mean_s else None
    return storage_plan(
        nodes=nodes.chosen["count"], per_node_mb=nodes.chosen["scratch_per_node_mb"],
        at_target_mb=sum(q.disk * k for q, k in zip(nodes.reqs, nodes.counts)),
        node_disk_mb=nodes.node.capacity["disk"], reserve_disk_mb=opts.reserve.disk,
        rollouts_per_day=rollouts_per_day, trajectory_bytes_mean=fig.trajectory_bytes_mean,
        trajectory_bytes_max=fig.trajectory_bytes_max, bundle_median=fig.bundle_median,
        bundle_max=fig.bundle_max, bundle_total=fig.bundle_total, task_count=fig.task_count,
    )


def plan_caching(fig: Figures, opts: PlanOptions) -> tuple[dict, dict]:
    """The context model's fit and the prefix-caching saving (the ``context`` and ``caching`` blocks)."""
    c = fig.turn_tokens
    context = {
        "turn_tokens": c,
        "model_error_by_turns": {str(k): v for k, v in inf.model_error(fig.median_input_by_turns, c).items()} if c else {},
    }
    turn_set = sorted(set(inf.DOC_SAVING_TURNS) | {int(t) for t in fig.turns_histogram})
    f = opts.prefix_break
    mix = inf.mix_saving(fig.turns_histogram) if fig.turns_histogram else None
    mix_f = inf.mix_saving(fig.turns_histogram, f) if fig.turns_histogram else None
    caching = {
        "saving_by_turns": {str(t): inf.cache_saving(t) for t in turn_set},
        "saving_measured_mix": mix,
        "prefix_break": f,
        "saving_by_turns_with_breaks": {str(t): inf.cache_saving(t, f) for t in turn_set},
        "saving_measured_mix_with_breaks": mix_f,
        "cached_fraction_measured": fig.cached_fraction,
    }
    applied, basis = mix_f, "measured turn histogram"
    if applied is None:
        turns = opts.turns or fig.turns_median
        if turns:
            applied, basis = inf.cache_saving(turns, f), f"{turns:g} turns ({'--turns' if opts.turns else 'measured median'}); no turn histogram"
        else:
            basis = "no turn histogram or median: pass --turns"
    caching["saving_applied"], caching["saving_basis"] = applied, basis
    return context, caching


def _per_gpu(fig: Figures, opts: PlanOptions) -> tuple[Optional[float], Optional[float], str]:
    """Per-GPU prefill and decode tokens/s: given, else from the roofline at the measured mean context."""
    gpu_p, gpu_d, gpu_src = opts.gpu_prefill_tok_s, opts.gpu_decode_tok_s, "given"
    if (gpu_p is None or gpu_d is None) and opts.roofline is not None:
        rl, c, hist = opts.roofline, fig.turn_tokens, fig.turns_histogram
        if c and hist:
            ctx = c * sum(h * t * (t + 1) / 2 for t, h in hist.items()) / max(sum(h * t for t, h in hist.items()), 1e-9)
        elif c and (opts.turns or fig.turns_median):
            ctx = c * ((opts.turns or fig.turns_median) + 1) / 2
        else:
            ctx = rl.context_tokens
        rl = inf.Roofline(**{**rl.__dict__, "context_tokens": ctx})
        gpu_p = gpu_p if gpu_p is not None else rl.prefill_tok_s()
        gpu_d = gpu_d if gpu_d is not None else rl.decode_tok_s()
        gpu_src = f"roofline (utilisation {rl.utilisation:g}, mean context {ctx:,.0f} tokens, decode batch {rl.decode_batch})"
    return gpu_p, gpu_d, gpu_src


def plan_inference(fig: Figures, n: int, saving: Optional[float], opts: PlanOptions, notes: list[str]) -> dict:
    """Token rates at the target and the GPUs they need, with and without caching (the ``inference`` block)."""
    prefill = fig.prefill_per_s * n if fig.prefill_per_s is not None else None
    decode = fig.decode_per_s * n if fig.decode_per_s is not None else None
    prefill_cached = prefill / saving if prefill is not None and saving else None
    gpu_p, gpu_d, gpu_src = _per_gpu(fig, opts)
    inference = {
        "prefill_tok_s": prefill,
        "decode_tok_s": decode,
        "prefill_tok_s_cached": prefill_cached,
        "prefill_decode_ratio": prefill / decode if prefill is not None and decode else None,
        "per_gpu": {"prefill_tok_s": gpu_p, "decode_tok_s": gpu_d, "source": gpu_src if gpu_p and gpu_d else None},
        "gpus": None, "gpus_cached": None, "binding": None, "binding_cached": None,
    }
    if gpu_p and gpu_d and prefill is not None and decode is not None:
        g = inf.gpus_needed(prefill, decode, gpu_p, gpu_d)
        inference |= {"gpus": g["gpus"], "binding": g["binding"], "prefill_gpu_share": g["prefill_gpu_share"], "decode_gpu_share": g["decode_gpu_share"]}
        if prefill_cached is not None:
            gc = inf.gpus_needed(prefill_cached, decode, gpu_p, gpu_d)
            inference |= {"gpus_cached": gc["gpus"], "binding_cached": gc["binding"]}
    elif prefill is not None:
        notes.append("no per-GPU throughput given (--gpu-prefill-tok-s/--gpu-decode-tok-s or a roofline): GPUs not sized")
    return inference


def plan_cost(fig: Figures, n: int, duty: Optional[float], nodes: _Nodes, inference: dict, opts: PlanOptions,
              notes: list[str]) -> dict:
    """The fleet's price on each tier, per passing trajectory, exception waste and GPUs (the ``cost`` block)."""
    exc_share = None
    if fig.exception_sandbox_hours is not None and fig.sandbox_hours:
        exc_share = fig.exception_sandbox_hours / fig.sandbox_hours
    elif fig.exception_rate is not None:
        exc_share = fig.exception_rate
        notes.append("exception waste uses the exception share of rows: the input has no exception sandbox-hours")
    cost = costmod.fleet_cost(
        nodes.node, nodes.chosen["count"], tier=opts.price_tier, concurrency=n, duty=duty,
        sandbox_hours_per_pass=fig.sandbox_hours_per_pass, exception_share=exc_share,
    )
    cost["duty"] = duty
    cost["exception_share"] = exc_share
    return cost | costmod.inference_cost(opts.gpu_usd_h, inference["gpus"], inference["gpus_cached"])


def make_plan(summary: MeasureSummary | dict | Figures, opts: PlanOptions | None = None) -> dict:
    """A purchase-order plan for ``summary`` under ``opts``, as a ``PlanSummary``'s JSON dict."""
    opts = opts or PlanOptions()
    _check_options(opts)
    notes: list[str] = []
    fig = summary if isinstance(summary, Figures) else Figures(summary)
    target = resolve_target(
        fig, concurrency=opts.concurrency, batch=opts.batch, train_s=opts.train_s,
        passing_per_hour=opts.passing_per_hour, tolerance=opts.rl_tolerance, seed=opts.seed,
    )
    if target.get("note"):
        notes.append(target["note"])
    n = target["concurrency"]
    nodes = plan_nodes(fig, n, opts, notes)
    # An RL schedule runs at its own simulated duty; every other target at the measured one.
    duty = target.get("duty") if target.get("duty") is not None else fig.duty
    storage = plan_storage(fig, n, duty, nodes, opts)
    context, caching = plan_caching(fig, opts)
    inference = plan_inference(fig, n, caching["saving_applied"], opts, notes)
    cost = plan_cost(fig, n, duty, nodes, inference, opts, notes)
    return PlanSummary.build(
        input={"source": fig.summary.source or ["measured"], "rows": int(fig.rows)},
        target=target,
        measured=fig.measured_block(),
        nodes=nodes.block,
        storage=storage,
        context=context,
        caching=caching,
        inference=inference,
        cost=cost,
        notes=notes,
    ).to_json()


def plan_path(path: str | Path, opts: PlanOptions | None = None, *, tasks: Optional[str] = None,
              measure_options: dict | None = None) -> dict:
    """Plan from a ``measure --json`` summary file or from telemetry measured on the fly
    (``measure_options``: the reader flags, passed to ``measure_paths``)."""
    summary = load_input(path, tasks=tasks, **(measure_options or {}))
    try:
        fig = Figures(summary)  # a summary without holds, or with a bad figure, is reported against its file
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
    plan = make_plan(fig, opts)
    plan["input"]["path"] = str(path)
    return plan


def parse_request(text: str) -> Request:
    """``"CPUS,MEMORY_MB,STORAGE_MB[,GPUS]"`` -> Request (the ``--request`` option)."""
    parts = [p.strip() for p in text.split(",")]
    if len(parts) not in (3, 4):
        raise InputError(f"--request {text!r}: expected CPUS,MEMORY_MB,STORAGE_MB[,GPUS]")
    try:
        vals = [float(p) for p in parts]
    except ValueError:
        raise InputError(f"--request {text!r}: expected numbers CPUS,MEMORY_MB,STORAGE_MB[,GPUS]") from None
    if any(v < 0 or not math.isfinite(v) for v in vals) or vals[0] <= 0:
        raise InputError(f"--request {text!r}: cpus must be positive and the rest non-negative")
    return Request(cpu=vals[0], memory=vals[1], disk=vals[2], gpu=vals[3] if len(vals) == 4 else 0.0)


def make_reserve(cpu: float = 0.0, memory_gb: float = 0.0, disk_gb: float = 0.0) -> Reserve:
    """Per-node system reserve from cores and GiB (the CLI's units)."""
    for name, v in (("--reserve-cpu", cpu), ("--reserve-memory-gb", memory_gb), ("--reserve-disk-gb", disk_gb)):
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
    given = {"--gpu-tflops": gpu_tflops, "--gpu-hbm-tbs": gpu_hbm_tbs, "--model-params-b": model_params_b, "--kv-bytes-per-token": kv_bytes_per_token}
    if all(v is None for v in given.values()):
        return None
    missing = [k for k, v in given.items() if v is None]
    if missing:
        raise InputError(f"a roofline estimate needs {', '.join(missing)} as well")
    for k, v in list(given.items()) + [("--utilisation", utilisation), ("--bytes-per-param", bytes_per_param), ("--decode-batch", decode_batch), ("--context-tokens", context_tokens)]:
        if not (v > 0 and math.isfinite(v)):
            raise InputError(f"{k} must be a positive number, got {v!r}")
    if utilisation > 1:
        raise InputError(f"--utilisation is a fraction of peak in (0, 1], got {utilisation!r}")
    return inf.Roofline(
        flops=gpu_tflops * 1e12, hbm_bytes_s=gpu_hbm_tbs * 1e12, params=model_params_b * 1e9,
        kv_bytes_per_token=kv_bytes_per_token, utilisation=utilisation, bytes_per_param=bytes_per_param,
        decode_batch=int(decode_batch), context_tokens=context_tokens,
    )

"""The ``inference`` block: demand at the target, per-GPU rates, and GPUs by compute and memory.

Demand is the measured tokens per sandbox-second times the target concurrency. Prefill the GPUs
compute is the input less measured cache hits (``prefill.py``); with caching planned it is
``max(input / S, input - cached)``. Per-GPU rates are given or come from the roofline; GPU counts
are ``gpu_memory.size_memory`` when the GPU's memory and the model are known, else compute only.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan import inference as inf
from sandbox_fleet.plan.gpu_memory import MemoryModel, check_fraction, compute_bound, size_memory
from sandbox_fleet.plan.model import PerGpu, PlanInference
from sandbox_fleet.plan.prefill import computed_prefill, mean_context, planned_cached_prefill
from sandbox_fleet.plan.summary import Figures
from sandbox_fleet.plan.turns import TurnMoments, measured_context

if TYPE_CHECKING:
    from sandbox_fleet.plan.build import PlanOptions


def _rates(fig: Figures, opts: PlanOptions, ctx: float) -> tuple[Optional[float], Optional[float], str]:
    gpu_p, gpu_d, src = opts.gpu_prefill_tok_s, opts.gpu_decode_tok_s, "given"
    if (gpu_p is None or gpu_d is None) and opts.roofline is not None:
        rl = inf.Roofline(**{**opts.roofline.__dict__, "context_tokens": ctx})
        gpu_p = gpu_p if gpu_p is not None else rl.prefill_tok_s()
        gpu_d = gpu_d if gpu_d is not None else rl.decode_tok_s()
        src = f"roofline (utilisation {rl.utilisation:g}, mean context {ctx:,.0f} tokens, decode batch {rl.decode_batch})"
    return gpu_p, gpu_d, src


def _context_basis(fig: Figures, turns: Optional[TurnMoments], measured: Optional[tuple[float, float, str]],
                   modelled: float) -> str:
    """Where the mean context came from: the measured inputs over the turn histogram (the quadratic
    fit's figure beside it), else the fit over the turn distribution, else the roofline's context."""
    if measured is not None:
        beside = (f"; the quadratic fit (c = {fig.turn_tokens:g} tok/turn) over the {turns.basis} would say {modelled:,.0f}"
                  if fig.turn_tokens and turns is not None else "")
        return measured[2] + beside
    if fig.turn_tokens and turns is not None:
        return turns.basis
    return "no turn curve or turn counts: the roofline's context"


def size_inference(
    fig: Figures, n: int, saving: Optional[float], cached_fraction: Optional[float], opts: PlanOptions, notes: list[str],
    turns: Optional[TurnMoments] = None,
) -> PlanInference:
    """The plan's ``inference`` block at ``n`` concurrent sandboxes."""
    check_fraction("`gpu_utilisation`", opts.gpu_utilisation)
    prefill = fig.prefill_per_s * n if fig.prefill_per_s is not None else None
    decode = fig.decode_per_s * n if fig.decode_per_s is not None else None
    computed = computed_prefill(prefill, cached_fraction) if prefill is not None else None
    cached = planned_cached_prefill(prefill, saving, cached_fraction) if prefill is not None and saving else None
    fallback = opts.roofline.context_tokens if opts.roofline is not None else 32_768.0
    measured = measured_context(fig.turns_histogram, fig.median_input_by_turns) if fig.turns_histogram else None
    modelled = mean_context(fig.turn_tokens, turns, fallback)
    ctx = measured[0] if measured is not None else modelled
    gpu_p, gpu_d, src = _rates(fig, opts, ctx)
    g = gc = None
    if gpu_p and gpu_d and computed is not None and decode is not None:
        g = inf.gpus_needed(computed, decode, gpu_p, gpu_d)
        gc = inf.gpus_needed(cached, decode, gpu_p, gpu_d) if cached is not None else None
    elif prefill is not None:
        notes.append("no per-GPU throughput given (--gpu-prefill-tok-s/--gpu-decode-tok-s or a roofline): GPUs not sized")
    counts = _gpu_counts(g, gc, ctx, n, opts, notes)
    return PlanInference(
        prefill_tok_s=prefill,
        decode_tok_s=decode,
        prefill_tok_s_computed=computed,
        prefill_tok_s_cached=cached,
        prefill_decode_ratio=prefill / decode if prefill is not None and decode else None,
        per_gpu=PerGpu(prefill_tok_s=gpu_p, decode_tok_s=gpu_d, source=src if gpu_p and gpu_d else None),
        gpu=opts.gpu_name,
        context_tokens_mean=ctx,
        context_basis=_context_basis(fig, turns, measured, modelled),
        utilisation_target=opts.gpu_utilisation,
        gpus=counts.gpus, gpus_cached=counts.gpus_cached,
        binding=g.binding if g is not None else None, binding_cached=gc.binding if gc is not None else None,
        prefill_gpu_share=g.prefill_gpu_share if g is not None else None,
        decode_gpu_share=g.decode_gpu_share if g is not None else None,
        gpus_compute_bound=counts.gpus_compute_bound, gpus_compute_bound_cached=counts.gpus_compute_bound_cached,
        bound_by=counts.bound_by, bound_by_cached=counts.bound_by_cached,
        memory=counts.memory, replica_gpus=counts.replica_gpus, replica_gpus_cached=counts.replica_gpus_cached,
        kv_offload_gb=counts.kv_offload_gb,
    )


def _gpu_counts(g: Optional[inf.GpuShares], gc: Optional[inf.GpuShares], ctx: float, n: int, opts: PlanOptions,
                notes: list[str]) -> PlanInference:
    """The GPU counts (and, when the GPU's memory is known, the memory model's fields) for the loads ``g``
    (uncached) and ``gc`` (cached); None where a load is unknown."""
    load = g.prefill_gpu_share + g.decode_gpu_share if g is not None else None
    load_cached = gc.prefill_gpu_share + gc.decode_gpu_share if gc is not None else None
    mm = memory_model(opts)
    if mm is not None and (load is not None or opts.gpu_name):
        return size_memory(
            mm, context_tokens=ctx, live_rollouts=n, load_gpus=load, load_gpus_cached=load_cached,
            utilisation_target=opts.gpu_utilisation,
        )
    if load is None:
        return PlanInference()
    c = compute_bound(load, 1, opts.gpu_utilisation)
    c_cached = compute_bound(load_cached, 1, opts.gpu_utilisation) if load_cached is not None else None
    notes.append(
        "GPU memory not modelled (needs --gpu or --gpu-memory-gb with a roofline's --model-params-b and --kv-bytes-per-token): "
        "GPU counts are compute-bound only"
    )
    return PlanInference(gpus_compute_bound=c, gpus=c, bound_by="compute", gpus_compute_bound_cached=c_cached,
                         gpus_cached=c_cached, bound_by_cached="compute" if c_cached is not None else None)


def memory_model(opts: PlanOptions) -> Optional[MemoryModel]:
    """The memory model's inputs when the GPU's memory and the model are known, else None."""
    rl = opts.roofline
    if opts.gpu_memory_gb is None or rl is None:
        return None
    return MemoryModel(
        memory_gb=opts.gpu_memory_gb, params=rl.params, kv_bytes_per_token=rl.kv_bytes_per_token,
        bytes_per_param=rl.bytes_per_param, decode_batch=rl.decode_batch,
        memory_fraction=opts.gpu_memory_fraction, max_tp=opts.max_tp, kv_offload_gb=opts.kv_offload_gb,
    )

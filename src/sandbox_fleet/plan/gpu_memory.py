"""Inference GPUs bounded by compute AND memory: weights, KV cache, tensor-parallel replicas.

All sizes are GiB (2**30 bytes). A GPU offers ``memory_gb x memory_fraction`` to the server.

- weights = params x bytes per param.
- A replica is the smallest power-of-two group of GPUs (at most ``max_tp``) that holds the weights
  plus the in-flight KV of ``decode_batch`` sequences at the mean context. Its compute is that many
  GPUs' (tensor parallelism splits weights and KV, so each GPU's roofline rate is unchanged).
- KV without caching: ``decode_batch`` sequences per replica, which the replica holds by
  construction, so the memory bound is one replica.
- KV with caching: every live rollout keeps its prefix between turns, ``live x context x KV bytes``,
  spread over the room each GPU has left after its share of the weights plus ``kv_offload_gb`` of
  host memory per GPU (an offloaded prefix tier).
- compute bound = whole replicas for ``load / utilisation_target`` GPU-equivalents, where
  load = prefill/p + decode/d (``gpus_needed``) and the target leaves headroom for bursts.

GPUs = max(compute bound, memory bound), each a whole number of replicas. With caching, a larger
replica can need fewer GPUs (each spends its weights once over more memory), so the cached count
is the least over the replica sizes from the smallest that fits up to ``max_tp``
(``replica_gpus_cached``). Both counts therefore never fall as context, KV bytes or the number of
live rollouts rise: a larger figure only removes replica sizes and raises each size's count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import GpuMemory, PlanInference

GIB = float(2**30)


@dataclass(frozen=True)
class MemoryModel:
    """What the memory model needs, in plain units."""

    memory_gb: float  # per GPU, GiB
    params: float  # model parameters
    kv_bytes_per_token: float
    bytes_per_param: float = 2.0
    decode_batch: int = 64
    memory_fraction: float = 0.9
    max_tp: int = 8
    kv_offload_gb: float = 0.0


def weights_gb(params: float, bytes_per_param: float) -> float:
    return params * bytes_per_param / GIB


def kv_gb(sequences: float, context_tokens: float, kv_bytes_per_token: float) -> float:
    return sequences * context_tokens * kv_bytes_per_token / GIB


def replica_gpus(weights: float, inflight_kv: float, usable_per_gpu: float, max_tp: int) -> int:
    """Smallest power of two ``t <= max_tp`` with ``t x usable >= weights + in-flight KV``."""
    t = 1
    while t <= max_tp:
        if t * usable_per_gpu >= weights + inflight_kv:
            return t
        t *= 2
    raise InputError(
        f"the model does not fit a replica of up to `max_tp` {max_tp} GPUs: weights {weights:,.1f} GiB + "
        f"in-flight KV {inflight_kv:,.1f} GiB > {max_tp} x {usable_per_gpu:,.1f} GiB usable; "
        "raise `max_tp`, pick a larger `gpu` or lower `decode_batch`"
    )


def whole_replicas(gpus: float, replica: int) -> int:
    """``gpus`` rounded up to whole replicas, at least one."""
    return replica * max(math.ceil(gpus / replica - 1e-9), 1)


def memory_bound_cached(kv_live: float, free_per_gpu: float, offload_per_gpu: float, replica: int) -> int:
    """GPUs whose spare memory (plus host offload) holds every live prefix."""
    room = free_per_gpu + offload_per_gpu
    return whole_replicas(kv_live / room, replica)


def compute_bound(load_gpus: float, replica: int, utilisation_target: float) -> int:
    """Whole replicas carrying ``load_gpus`` GPU-equivalents at ``utilisation_target``."""
    return whole_replicas(load_gpus / utilisation_target, replica)


def check_fraction(name: str, v: float) -> None:
    if not (0 < v <= 1 and math.isfinite(v)):
        raise InputError(f"{name} must be a fraction in (0, 1], got {v!r}")


def size_memory(
    mm: MemoryModel,
    *,
    context_tokens: float,
    live_rollouts: float,
    load_gpus: Optional[float],
    load_gpus_cached: Optional[float],
    utilisation_target: float,
) -> PlanInference:
    """The ``inference`` memory fields and the combined counts (None where a load is unknown)."""
    check_fraction("`gpu_memory_fraction`", mm.memory_fraction)
    check_fraction("`gpu_utilisation`", utilisation_target)
    if mm.max_tp < 1 or mm.max_tp & (mm.max_tp - 1):
        raise InputError(f"`max_tp` must be a power of two >= 1, got {mm.max_tp!r}")
    if not (mm.kv_offload_gb >= 0 and math.isfinite(mm.kv_offload_gb)):
        raise InputError(f"`kv_offload_gb` must be zero or positive, got {mm.kv_offload_gb!r}")
    usable = mm.memory_gb * mm.memory_fraction
    w = weights_gb(mm.params, mm.bytes_per_param)
    inflight = kv_gb(mm.decode_batch, context_tokens, mm.kv_bytes_per_token)
    t = replica_gpus(w, inflight, usable, mm.max_tp)
    free = usable - w / t
    live = kv_gb(live_rollouts, context_tokens, mm.kv_bytes_per_token)
    counts: dict[str, Any] = {}
    if load_gpus is not None:
        # uncached: compute and memory both only grow with the replica, so the smallest is best
        c = compute_bound(load_gpus, t, utilisation_target)
        counts |= {"gpus_compute_bound": c, "gpus": max(c, t), "bound_by": "compute" if c >= t else "memory"}
    size, m_cached = t, memory_bound_cached(live, free, mm.kv_offload_gb, t)
    if load_gpus_cached is not None:
        best = None
        size = t
        while size <= mm.max_tp:
            f = usable - w / size
            m = memory_bound_cached(live, f, mm.kv_offload_gb, size)
            c = compute_bound(load_gpus_cached, size, utilisation_target)
            if best is None or max(c, m) < max(best[1], best[2]):
                best = (size, c, m, f)
            size *= 2
        assert best is not None  # replica_gpus gives t <= max_tp, so the loop ran
        size, c, m_cached, f = best
        counts |= {"gpus_compute_bound_cached": c, "gpus_cached": max(c, m_cached),
                   "bound_by_cached": "compute" if c >= m_cached else "memory"}
    memory = GpuMemory(weights_gb=w, kv_gb_inflight=inflight, kv_gb_live=live, free_gb_per_gpu=free,
                       gpus_memory_bound=t, gpus_memory_bound_cached=m_cached)
    return PlanInference(replica_gpus=t, replica_gpus_cached=size, kv_offload_gb=mm.kv_offload_gb,
                         utilisation_target=utilisation_target, memory=memory, **counts)

"""Inference demand at a target concurrency, the context-growth model, prefix caching, GPUs.

Context model. A rollout that re-sends its transcript every turn, adding ``c`` tokens per turn,
prefills ``c * n(n+1)/2`` input tokens over ``n`` turns. With a byte-identical prefix cached, each
turn prefills only its new ``c`` tokens: ``c * n``. The saving is the ratio, ``(n+1)/2``.

Broken prefixes. Suppose each turn, independently with probability ``f``, changes something
before the cached prefix (a timestamp, reordered tools, front truncation), so that turn prefills
its whole context ``c * k`` instead of ``c``; the turns after it hit the cache again. Then

    cached cost(n, f) = sum_k [(1-f) c + f c k] = c [ (1-f) n + f n(n+1)/2 ]
    saving(n, f)      = (n+1)/2 / [ (1-f) + f (n+1)/2 ]

which is (n+1)/2 at f = 0 and 1 (no saving) at f = 1. Over a turn histogram ``h`` the saving is
the ratio of the sums, ``sum h(n) n(n+1)/2 / sum h(n) [(1-f) n + f n(n+1)/2]``: long rollouts
dominate because their uncached cost is quadratic.

GPUs. Prefill ``P`` and decode ``D`` tok/s against a per-GPU prefill ``p`` and decode ``d`` tok/s.
A GPU serving both spends ``P/p + D/d`` GPU-seconds per second, so ``ceil(P/p + D/d)`` GPUs, and the
larger term binds. Roofline per-GPU rates: prefill is compute-bound, ``p = u * FLOP/s / (2 N)``
for ``N`` parameters; decode is bandwidth-bound, each step reading the weights once for a batch of
``b`` sequences plus each sequence's KV cache, ``d = u * BW / (W / b + kv * L)`` for weight bytes
``W``, KV bytes per token ``kv`` and mean context ``L``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple, Optional

#: the turn counts the source document reports caching savings for
DOC_SAVING_TURNS = (1, 5, 11, 21, 50)


def uncached_prefill(turns: float, c: float) -> float:
    return c * turns * (turns + 1) / 2.0


def model_error(median_by_turns: dict[int, float], c: float) -> dict[int, float]:
    """Quadratic model over measured median input tokens, minus one, per turn count."""
    return {n: uncached_prefill(n, c) / m - 1.0 for n, m in sorted(median_by_turns.items()) if m and m > 0}


def cache_saving(turns: float, break_fraction: float = 0.0) -> float:
    """Prefill saving from a prefix cache at ``turns`` turns with a fraction of turns breaking it."""
    half = (turns + 1) / 2.0
    return half / ((1.0 - break_fraction) + break_fraction * half)


def mix_saving(histogram: dict[int, float], break_fraction: float = 0.0) -> Optional[float]:
    """Saving over a turn histogram (turn count -> rollouts); None if it holds no turns."""
    num = sum(w * n * (n + 1) / 2.0 for n, w in histogram.items() if n > 0)
    den = sum(w * ((1 - break_fraction) * n + break_fraction * n * (n + 1) / 2.0) for n, w in histogram.items() if n > 0)
    return num / den if den > 0 else None


@dataclass(frozen=True)
class Roofline:
    """Inputs for a roofline estimate of one GPU's prefill and decode rates."""

    flops: float  # peak dense FLOP/s
    hbm_bytes_s: float  # HBM bandwidth, bytes/s
    params: float  # model parameters
    kv_bytes_per_token: float
    utilisation: float = 0.4
    bytes_per_param: float = 2.0
    decode_batch: int = 64
    context_tokens: float = 32_768.0

    def prefill_tok_s(self) -> float:
        return self.utilisation * self.flops / (2.0 * self.params)

    def decode_tok_s(self) -> float:
        per_token_bytes = self.params * self.bytes_per_param / self.decode_batch + self.kv_bytes_per_token * self.context_tokens
        return self.utilisation * self.hbm_bytes_s / per_token_bytes


class GpuShares(NamedTuple):
    """A shared pool's load: GPUs' worth of prefill and of decode, their sum rounded up, and which binds."""

    gpus: int
    prefill_gpu_share: float
    decode_gpu_share: float
    binding: str


def gpus_needed(prefill: float, decode: float, gpu_prefill: float, gpu_decode: float) -> GpuShares:
    """GPUs for a shared pool: ceil(prefill share + decode share); the larger share binds."""
    p_share = prefill / gpu_prefill
    d_share = decode / gpu_decode
    return GpuShares(math.ceil(p_share + d_share - 1e-9), p_share, d_share, "prefill" if p_share >= d_share else "decode")

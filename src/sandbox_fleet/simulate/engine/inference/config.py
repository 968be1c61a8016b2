"""``Inference``: one pool of model replicas shared by every workload.

Iteration model (continuous batching). One iteration takes ``iteration_base_s`` plus
its prompt tokens / ``prefill_tok_s`` plus its decoding sequences / ``decode_tok_s``;
each decoding sequence gains one token per iteration, and a prompt is prefilled whole
in the iteration that admits it (prompts first, in arrival order). In work units of
``tokens / decode_tok_s``, each of ``n`` decoding sequences then progresses at
``1 / (n + iteration_base_s * decode_tok_s)``, and not at all while a prompt is
prefilled: with ``iteration_base_s = 0`` and no prompts, exactly processor sharing.
At most ``max_num_seqs`` sequences are in service (prefilling or decoding); later
calls wait FIFO for a seat.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sandbox_fleet.errors import InputError

ROUTINGS = ("sticky", "least-loaded")


@dataclass
class Inference:
    """Resolved pool parameters (per replica unless said otherwise).

    - ``kv_cache_bytes``: prefix cache per replica; ``None`` unlimited, ``0`` no caching.
    - ``kv_bytes_per_token``: KV bytes a cached token occupies.
    - ``kv_offload_bytes``: host-memory tier per replica for prefixes evicted from GPU memory.
    - ``gpus_per_replica``: GPUs behind one replica (reported only).
    """

    replicas: int
    prefill_tok_s: float
    decode_tok_s: float
    iteration_base_s: float = 0.0
    max_num_seqs: int | None = None
    routing: str = "sticky"
    kv_cache_bytes: float | None = None
    kv_bytes_per_token: float = 0.0
    kv_offload_bytes: float = 0.0
    gpus_per_replica: int = 1

    def __post_init__(self) -> None:
        if int(self.replicas) != self.replicas or self.replicas < 1:
            raise InputError(f"inference replicas must be a positive integer, got {self.replicas}")
        for name in ("prefill_tok_s", "decode_tok_s"):
            v = getattr(self, name)
            if not (v > 0 and math.isfinite(v)):
                raise InputError(f"inference {name} must be a finite number > 0, got {v}")
        if not (self.iteration_base_s >= 0 and math.isfinite(self.iteration_base_s)):
            raise InputError(f"inference iteration_base_s must be >= 0, got {self.iteration_base_s}")
        if self.max_num_seqs is not None and (int(self.max_num_seqs) != self.max_num_seqs or self.max_num_seqs < 1):
            raise InputError(f"inference max_num_seqs must be a positive integer, got {self.max_num_seqs}")
        if self.routing not in ROUTINGS:
            raise InputError(f"inference routing must be one of {', '.join(ROUTINGS)}, got {self.routing!r}")
        if self.kv_cache_bytes is not None and not (self.kv_cache_bytes >= 0 and math.isfinite(self.kv_cache_bytes)):
            raise InputError(f"inference kv_cache_gb must be >= 0, got {self.kv_cache_bytes}")
        if not (self.kv_bytes_per_token >= 0 and math.isfinite(self.kv_bytes_per_token)):
            raise InputError(f"inference kv_bytes_per_token must be >= 0, got {self.kv_bytes_per_token}")
        if self.kv_cache_bytes and not self.kv_bytes_per_token > 0:
            raise InputError("inference kv_cache_gb needs kv_bytes_per_token > 0")
        if not (self.kv_offload_bytes >= 0 and math.isfinite(self.kv_offload_bytes)):
            raise InputError(f"inference kv_offload_gb must be >= 0, got {self.kv_offload_bytes}")

    @property
    def base_units(self) -> float:
        """``b`` in the per-sequence rate ``1 / (n + b)``: the iteration base in decode-token times."""
        return self.iteration_base_s * self.decode_tok_s

    @property
    def caching(self) -> bool:
        return self.kv_cache_bytes is None or self.kv_cache_bytes > 0

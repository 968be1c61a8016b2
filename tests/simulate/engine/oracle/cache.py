"""Per-replica prefix cache: LRU by bytes, with an optional host-memory (offload) tier.

A rollout's prefix is one entry, keyed by rollout, sized ``context tokens x KV bytes
per token``. While the rollout's call is in service its entry is taken out (pinned in
the batch, never evicted); when the call ends the grown prefix goes back in at the
most-recently-used end and least-recently-used prefixes are evicted until the GPU tier
fits: to the host tier when one is configured (itself LRU), else dropped. A prefix in
either tier is a hit.
"""

from __future__ import annotations

from collections import OrderedDict


class PrefixCache:
    __slots__ = ("cap", "evicted_bytes", "gpu", "gpu_used", "host", "host_cap", "host_used")

    def __init__(self, cap_bytes: float | None, host_bytes: float = 0.0):
        self.cap = cap_bytes  # None: unlimited; 0: no caching
        self.host_cap = host_bytes
        self.gpu: OrderedDict[int, float] = OrderedDict()
        self.host: OrderedDict[int, float] = OrderedDict()
        self.gpu_used = 0.0
        self.host_used = 0.0
        self.evicted_bytes = 0.0  # bytes pushed out of the GPU tier (offloaded or dropped)

    def take(self, key: int) -> bool:
        """Remove ``key``'s prefix for service; whether it was cached (either tier)."""
        size = self.gpu.pop(key, None)
        if size is not None:
            self.gpu_used -= size
            return True
        size = self.host.pop(key, None)
        if size is not None:
            self.host_used -= size
            return True
        return False

    def put(self, key: int, nbytes: float) -> None:
        """Store ``key``'s prefix (``nbytes``) as most recently used, then evict to fit."""
        cap = self.cap
        if cap == 0:
            return
        self.gpu[key] = nbytes
        self.gpu_used += nbytes
        if cap is None:
            return
        gpu = self.gpu
        while self.gpu_used > cap and gpu:
            k, size = gpu.popitem(last=False)
            self.gpu_used -= size
            self.evicted_bytes += size
            if self.host_cap > 0:
                self.host[k] = size
                self.host_used += size
        host = self.host
        while self.host_used > self.host_cap and host:
            _, size = host.popitem(last=False)
            self.host_used -= size

    def __contains__(self, key: int) -> bool:
        return key in self.gpu or key in self.host

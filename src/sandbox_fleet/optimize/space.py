"""What the search may buy: GPU options (type, GPUs per replica, caching, offload) and node prices.

Node type and tier do not change the simulated loop, only its price, so they are chosen in closed
form for each simulated (cap, GPUs) point: the cheapest of every priced node type x tier, each packed
as ``plan`` packs it (the measured requests, the node's system reserve, first-fit-decreasing), spot
including its re-run work (``plan.rework``: a hold restarts when its node is reclaimed), summed
over the simulated holds as plan's rework line sums it over measured ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

from sandbox_fleet.errors import InputError
from sandbox_fleet.gpus import GPU, kv_free_bytes, load_gpus
from sandbox_fleet.plan.catalog import TIERS, NodeType, load_catalog
from sandbox_fleet.plan.packing import concurrent_mix, ffd
from sandbox_fleet.plan.reserve import node_reserve
from sandbox_fleet.plan.rework import rework_h
from sandbox_fleet.plan.slots import ResourceRequest, size_uniform, usable

TP_SIZES = (1, 2, 4, 8)


@dataclass(frozen=True)
class Option:
    """One GPU side of the loop; the search bisects its replica count and the sandbox cap."""

    gpu: str
    gpus_per_replica: int
    caching: bool
    kv_offload_gb: float
    usd_per_gpu_h: float

    @property
    def label(self) -> str:
        cache = f"cache+{self.kv_offload_gb:g}GiB offload" if self.caching and self.kv_offload_gb else (
            "cache" if self.caching else "no cache")
        return f"{self.gpu} x{self.gpus_per_replica}/replica, {cache}"


def gpu_options(inference: dict, gpu_names: list[str] | None, gpus_per_replica: int | None,
                caching: list[bool], offload_gb: list[float], pruned: dict[str, int]) -> list[Option]:
    """Every option to search; a named GPU whose replica cannot hold the model is an error."""
    if gpus_per_replica is not None and (isinstance(gpus_per_replica, bool) or gpus_per_replica < 1):
        raise InputError(f"`gpus_per_replica` {gpus_per_replica}: expected a whole number >= 1")
    cat = load_gpus(inference.get("gpu_catalog"))
    names = gpu_names or sorted(cat)
    params = float(inference["model_params_b"])
    bpp = float(inference.get("bytes_per_param", 2.0))
    frac = float(inference.get("memory_fraction", 0.9))
    out = []
    for name in names:
        if name not in cat:
            raise InputError(f"`gpu` {name!r}: not in the GPU catalog; expected one of {', '.join(sorted(cat))}")
        g = _replica_size(cat[name], params, bpp, frac, gpus_per_replica)
        if g is None:
            if gpu_names:  # asked for by name: say why it cannot be used
                sizes = str(gpus_per_replica) if gpus_per_replica else "1-8"
                raise InputError(f"`gpu` {name}: a replica of {sizes} GPU(s) cannot hold the model "
                                 f"(inference.model_params_b = {params:g}, {bpp:g} bytes per parameter, "
                                 f"{cat[name].memory_gib:g} GiB per GPU at memory_fraction {frac:g})")
            pruned["gpu_cannot_hold_model"] = pruned.get("gpu_cannot_hold_model", 0) + 1
            continue
        for on in caching:
            for off in (offload_gb if on else [0.0]):
                out.append(Option(name, g, on, off, cat[name].usd_per_gpu_h))
    if not out:
        raise InputError(f"no GPU type in the catalog can hold the model (inference.model_params_b = {params:g})")
    return out


def _replica_size(gpu: GPU, params: float, bpp: float, frac: float, fixed: int | None) -> int | None:
    # the weights plus a working margin of 5% of the replica's memory for the prefix cache
    sizes = (fixed,) if fixed else TP_SIZES
    for g in sizes:
        if kv_free_bytes(gpu, params, g, bytes_per_param=bpp, memory_fraction=frac) > 0.05 * g * gpu.memory_gib * 2**30:
            return g
    return None


@dataclass(frozen=True)
class PricedNodes:
    """A priced node type and how plan packs sandboxes onto it (``plan.packing``, after ``plan.reserve``).

    ``slots`` is the sandboxes of one request per node after the reserve; with several requests
    (``requests``/``weights``), ``count`` splits the cap over them as plan does and packs them first-fit-decreasing.
    """

    node: NodeType
    slots: int
    requests: tuple[ResourceRequest, ...] = ()
    weights: tuple[float, ...] = ()
    usable: tuple[tuple[str, float], ...] = ()

    def count(self, cap: int) -> int:
        """Nodes for ``cap`` concurrent sandboxes: what ``plan --concurrency cap --node-type`` buys."""
        if len(self.requests) <= 1:
            return math.ceil(cap / self.slots)
        return _packed(self, cap)


@lru_cache(maxsize=4096)
def _packed(nodes: PricedNodes, cap: int) -> int:
    return ffd(list(nodes.requests), concurrent_mix(list(nodes.weights), cap), dict(nodes.usable)).nodes


def node_types(requests: list[ResourceRequest], weights: list[float], names: list[str] | None = None) -> list[PricedNodes]:
    """Priced catalog node types that hold every request, each with plan's reserve and packing."""
    catalog = load_catalog()
    unknown = [x for x in names or [] if x not in {n.name for n in catalog if n.priced}]
    if unknown:
        raise InputError(f"`node_type` {unknown[0]!r}: not a priced node type of the catalog; expected one of "
                         f"{', '.join(sorted(n.name for n in catalog if n.priced))}")
    out = []
    for n in catalog:
        if not n.priced or (names and n.name not in names):
            continue
        res, _ = node_reserve(n)
        try:
            slots = min(size_uniform(n, q, 1, res).per_node for q in requests)
        except InputError:  # a request this type cannot hold once
            continue
        out.append(PricedNodes(n, slots, tuple(requests), tuple(weights), tuple(sorted(usable(n, res).items()))))
    if not out:
        raise InputError("`node_type`: no priced node type holds a sandbox of this size")
    return out


def spot_rates(nodes: list[PricedNodes]) -> tuple[float, ...]:
    """The distinct reclaim rates of the spot-priced node types (each candidate run prices its holds at these)."""
    return tuple(sorted({n.node.spot_interruptions_per_node_h for n in nodes
                         if n.node.price("spot") is not None and n.node.spot_interruptions_per_node_h}))


def rework_hours(hold_s, rate_per_node_h: float) -> float:
    """Expected re-run hours of these holds on spot: sum of ``(e^{r h} - 1)/r - h`` (plan's rework line)."""
    import numpy as np

    return float(rework_h(np.asarray(hold_s, dtype=float) / 3600.0, rate_per_node_h).sum())


def cheapest_fleet(cap: int, rework_share, nodes: list[PricedNodes]) -> tuple[float, str, int, str, float]:
    """(usd_per_h, node type, nodes, tier, rework usd_per_h) of the cheapest way to run ``cap`` sandboxes.

    ``rework_share(rate)``: re-run sandbox-hours per sandbox-hour of the simulated holds at ``rate``
    reclaims per node-hour (``None``: no re-run, a lower bound before simulating).
    """
    best = None
    for nt in nodes:
        k = nt.count(cap)
        for tier in TIERS:
            price = nt.node.price(tier)
            if price is None:
                continue
            share = 0.0
            if tier == "spot" and nt.node.spot_interruptions_per_node_h and rework_share is not None:
                share = rework_share(nt.node.spot_interruptions_per_node_h)
            usd = k * price * (1.0 + share)
            cand = (round(usd, 9), nt.node.name, k, tier, k * price * share)
            if best is None or cand[:2] < best[:2]:
                best = cand
    assert best is not None
    return best

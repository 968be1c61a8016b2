"""The per-node system reserve: what kubelet, the container runtime and the OS keep for themselves.

A catalog entry may give ``reserve_cpu``, ``reserve_memory_gb`` and ``reserve_disk_gb``; the bundled
``seed-96c`` gives zeros so the source document's table (96 one-core slots a node) still holds.
An entry that gives none gets the tiered kube-reserved formula GKE documents ("Node allocatable"):

- cpu: 6% of the first core, 1% of the second, 0.5% of the next two, 0.25% of every core above four;
- memory: 25% of the first 4 GiB, 20% of the next 4, 10% of the next 8, 6% of the next 112, 2% of
  everything above 128 GiB, plus the 100 MiB hard eviction threshold;
- disk: none (images and logs live on the boot disk, not the scratch the catalog lists).

``--reserve-cpu`` / ``--reserve-memory-gb`` / ``--reserve-disk-gb`` replace it for every type.
"""

from __future__ import annotations

from typing import Literal

from sandbox_fleet.plan.catalog import NodeType
from sandbox_fleet.plan.slots import Reserve

_CPU_TIERS = ((1.0, 0.06), (1.0, 0.01), (2.0, 0.005), (float("inf"), 0.0025))
_MEM_TIERS_GB = ((4.0, 0.25), (4.0, 0.20), (8.0, 0.10), (112.0, 0.06), (float("inf"), 0.02))
EVICTION_GB = 100 / 1024


def _tiered(amount: float, tiers: tuple[tuple[float, float], ...]) -> float:
    out, left = 0.0, amount
    for width, share in tiers:
        take = min(left, width)
        out += take * share
        left -= take
        if left <= 0:
            break
    return out


def kube_reserved(vcpus: float, memory_gb: float) -> tuple[float, float]:
    """(cores, GiB) kubelet + OS reserve for a node of this size (GKE's published tiers)."""
    return _tiered(vcpus, _CPU_TIERS), _tiered(memory_gb, _MEM_TIERS_GB) + EVICTION_GB


def node_reserve(node: NodeType, override: Reserve | None = None) -> tuple[Reserve, Literal["flag", "catalog", "default"]]:
    """The reserve to size ``node`` with and where it came from: flag, catalog or default."""
    if override is not None:
        return override, "flag"
    given = (node.reserve_cpu, node.reserve_memory_gb, node.reserve_disk_gb)
    if any(v is not None for v in given):
        cpu, mem, disk = (v or 0.0 for v in given)
        return Reserve(cpu=cpu, memory=mem * 1024.0, disk=disk * 1024.0), "catalog"
    cpu, mem = kube_reserved(node.vcpus, node.memory_gb)
    return Reserve(cpu=cpu, memory=mem * 1024.0, disk=0.0), "default"

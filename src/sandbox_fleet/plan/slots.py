"""Slots per node along each resource, after a per-node system reserve, and nodes needed.

A slot is one sandbox's request. Along each resource the node holds
``floor((capacity - reserve) / request)`` slots; the smallest of these binds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import NodeType

RESOURCES = ("cpu", "memory", "disk", "gpu")
_EPS = 1e-9  # so 96 / 0.1-style float quotients do not lose a slot to rounding


@dataclass(frozen=True)
class ResourceRequest:
    """One sandbox's request: cpu cores, memory MB, disk MB, gpus."""

    cpu: float
    memory: float
    disk: float
    gpu: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {"cpu": self.cpu, "memory": self.memory, "disk": self.disk, "gpu": self.gpu}


@dataclass(frozen=True)
class Reserve:
    """What the node keeps for itself (kubelet, runtime, image cache floor): cores, MB, MB."""

    cpu: float = 0.0
    memory: float = 0.0
    disk: float = 0.0

    def as_dict(self) -> dict[str, float]:
        return {"cpu": self.cpu, "memory": self.memory, "disk": self.disk, "gpu": 0.0}


def usable(node: NodeType, reserve: Reserve) -> dict[str, float]:
    """Capacity left for sandboxes; a reserve that swallows the node is an InputError."""
    cap = node.capacity
    res = reserve.as_dict()
    out = {}
    for r in RESOURCES:
        left = cap[r] - res[r]
        if left < 0 or (r != "gpu" and left <= 0):
            # an EBS-only type lists no local disk: its scratch is an attached volume the catalog states
            hint = "; a type whose disk is an attached volume gives volume_gb and volume_usd_per_gb_h" if r == "disk" and not node.volume_gb else ""
            raise InputError(f"node type {node.name!r}: the system reserve leaves no {r} (capacity {cap[r]:g}, reserve {res[r]:g}){hint}")
        out[r] = left
    return out


def slots_per_node(node: NodeType, request: ResourceRequest, reserve: Reserve = Reserve()) -> dict[str, int | None]:
    """Slots along each resource; None where the request asks for none of it (unbounded)."""
    left = usable(node, reserve)
    req = request.as_dict()
    return {r: (math.floor(left[r] / req[r] + _EPS) if req[r] > 0 else None) for r in RESOURCES}


@dataclass(frozen=True)
class Sizing:
    node: str
    slots: dict[str, int | None]
    binding: str
    per_node: int
    nodes: int


def size_uniform(node: NodeType, request: ResourceRequest, concurrency: int, reserve: Reserve = Reserve()) -> Sizing:
    """Nodes for ``concurrency`` identical sandboxes; InputError when not even one fits."""
    slots = slots_per_node(node, request, reserve)
    bounded = {r: s for r, s in slots.items() if s is not None}
    # Ties go to the first resource in RESOURCES order, so cpu wins a cpu/memory tie.
    binding = min(bounded, key=lambda r: (bounded[r], RESOURCES.index(r)))
    per = bounded[binding]
    if per < 1:
        raise InputError(
            f"node type {node.name!r} is smaller than one sandbox request along {binding} "
            f"(request {request.as_dict()[binding]:g}, node has {usable(node, reserve)[binding]:g} after reserve)"
        )
    return Sizing(node=node.name, slots=slots, binding=binding, per_node=per, nodes=math.ceil(concurrency / per))

"""Mixed node pools: each task request goes to the cheapest node type that holds it.

Requests that ask for no GPU form the CPU pool (``nodes``), sized as before against every CPU
type. A request that asks for GPUs goes to the GPU type with the lowest price per slot for it at
the headline tier (unpriced types last, then most slots per node); the GPU requests routed to one
type form one pool, packed on its own (``node_pools``). A request no type holds is ``unplaced``,
with its share of rollouts and of sandbox-hours, and the rest of the plan goes ahead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.catalog import NodeType
from sandbox_fleet.plan.reserve import node_reserve
from sandbox_fleet.plan.slots import Reserve, ResourceRequest, size_uniform


@dataclass(frozen=True)
class Routing:
    cpu: list[int]  # indices of the requests for the CPU pool
    gpu: dict[str, list[int]]  # GPU node type name -> indices of the requests it takes
    unplaced: list[int]


def slots_for(node: NodeType, q: ResourceRequest, reserve: Optional[Reserve]) -> Optional[int]:
    """Slots of ``q`` on an empty ``node`` after its reserve, or None when not even one fits."""
    try:
        return size_uniform(node, q, 1, node_reserve(node, reserve)[0]).per_node
    except InputError:
        return None


def route(reqs: list[ResourceRequest], catalog: list[NodeType], tier: str, reserve: Optional[Reserve] = None) -> Routing:
    """Which pool each request goes to (see the module docstring)."""
    cpu_types = [t for t in catalog if t.gpus == 0]
    gpu_types = [t for t in catalog if t.gpus > 0]
    cpu: list[int] = []
    unplaced: list[int] = []
    gpu: dict[str, list[int]] = {}
    for i, q in enumerate(reqs):
        if q.gpu <= 0:
            (cpu if any(slots_for(t, q, reserve) for t in cpu_types) else unplaced).append(i)
            continue
        best = None
        for t in gpu_types:
            k = slots_for(t, q, reserve)
            if not k:
                continue
            p = t.price(tier)
            key = (p is None, (p or 0.0) / k, -k, t.name)
            if best is None or key < best[0]:
                best = (key, t.name)
        if best is None:
            unplaced.append(i)
        else:
            gpu.setdefault(best[1], []).append(i)
    return Routing(cpu=cpu, gpu=gpu, unplaced=unplaced)


def unplaced_block(reqs: list[ResourceRequest], rollouts: list[float], hours: list[Optional[float]], idx: list[int]) -> list[dict]:
    """The requests no type holds, with their shares of rollouts and of sandbox-hours."""
    total_w = sum(rollouts)
    known = all(h is not None for h in hours)
    total_h = sum(h for h in hours if h is not None) if known else None
    return [
        {
            **reqs[i].as_dict(),
            "rollouts_share": rollouts[i] / total_w if total_w else None,
            # total_h is None unless every request's hours are known
            "sandbox_hours_share": h / total_h if total_h and (h := hours[i]) is not None else None,
            "reason": "no node type in the catalog holds this request",
        }
        for i in idx
    ]

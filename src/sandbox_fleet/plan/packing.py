"""Multi-resource first-fit-decreasing for a concurrent mix of sandbox requests.

Items are sorted by their dominant share of a node (largest first; ties by total share, then by
the request itself so the order is deterministic) and each goes into the first open node it fits.
Identical items are contiguous after the sort, and an item that did not fit node j cannot fit it
after j only filled further, so a run of identical items can be placed node by node, as many per
node as fit: the same packing as item-by-item FFD in O(distinct requests x nodes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from sandbox_fleet.plan.slots import RESOURCES, Request

_EPS = 1e-9


@dataclass
class Packing:
    nodes: int
    lower_bound: int
    #: per node: {request index: count}
    assignment: list[dict[int, int]] = field(repr=False)
    #: capacity left unused over all packed nodes, per resource (cores, MB, MB, gpus)
    stranded: dict[str, float]
    #: per resource, ceil(total demand / node capacity)
    lower_bound_by_resource: dict[str, int]


def concurrent_mix(weights: list[float], concurrency: int) -> list[int]:
    """Split ``concurrency`` sandboxes over requests in proportion to ``weights``.

    Largest-remainder rounding keeps the total exact; ties go to the earlier request.
    """
    total = float(sum(weights))
    if total <= 0:
        raise ValueError("weights must have a positive sum")
    exact = [concurrency * w / total for w in weights]
    counts = [math.floor(x) for x in exact]
    short = concurrency - sum(counts)
    order = sorted(range(len(weights)), key=lambda i: (-(exact[i] - counts[i]), i))
    for i in order[:short]:
        counts[i] += 1
    return counts


def _fits_count(free: dict[str, float], req: dict[str, float]) -> int:
    """How many copies of ``req`` fit in ``free`` (large sentinel if it asks for nothing)."""
    k = math.inf
    for r in RESOURCES:
        if req[r] > 0:
            k = min(k, math.floor(free[r] / req[r] + _EPS))
    return int(k) if k != math.inf else 1 << 62


def lower_bound(requests: list[Request], counts: list[int], capacity: dict[str, float]) -> dict[str, int]:
    """Per resource, the fewest nodes whose summed capacity covers the summed demand."""
    out = {}
    for r in RESOURCES:
        demand = sum(getattr(q, r) * c for q, c in zip(requests, counts))
        if demand <= 0:
            out[r] = 0
        else:
            out[r] = math.ceil(demand / capacity[r] - _EPS) if capacity[r] > 0 else 1 << 62
    return out


def sort_key(req: Request, capacity: dict[str, float]) -> tuple:
    shares = [getattr(req, r) / capacity[r] if capacity[r] > 0 else (math.inf if getattr(req, r) > 0 else 0.0) for r in RESOURCES]
    return (-max(shares), -sum(shares), tuple(-getattr(req, r) for r in RESOURCES))


def ffd(requests: list[Request], counts: list[int], capacity: dict[str, float]) -> Packing:
    """Pack ``counts[i]`` copies of ``requests[i]`` into nodes of ``capacity``.

    Raises ValueError if some request with a positive count does not fit an empty node.
    """
    order = sorted(range(len(requests)), key=lambda i: (sort_key(requests[i], capacity), i))
    free: list[dict[str, float]] = []
    assign: list[dict[int, int]] = []
    for i in order:
        left = counts[i]
        if left <= 0:
            continue
        req = requests[i].as_dict()
        if _fits_count(capacity, req) < 1:
            raise ValueError(f"request {req} does not fit an empty node {capacity}")
        j = 0
        while left > 0:
            if j == len(free):
                free.append(dict(capacity))
                assign.append({})
            k = min(left, _fits_count(free[j], req))
            if k > 0:
                for r in RESOURCES:
                    free[j][r] -= k * req[r]
                assign[j][i] = assign[j].get(i, 0) + k
                left -= k
            j += 1
    lb = lower_bound(requests, counts, capacity)
    stranded = {r: sum(f[r] for f in free) for r in RESOURCES}
    return Packing(
        nodes=len(free),
        lower_bound=max(lb.values()) if lb else 0,
        assignment=assign,
        stranded=stranded,
        lower_bound_by_resource=lb,
    )

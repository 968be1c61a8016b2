"""Multi-resource first-fit-decreasing for a concurrent mix of sandbox requests.

Items are sorted by their dominant share of a node (largest first; ties by total share, then by
the request itself so the order is deterministic) and each goes into the first open node it fits.
Identical items are contiguous after the sort, and an item that did not fit node j cannot fit it
after j only filled further, so a run of identical items can be placed node by node, as many per
node as fit: the same packing as item-by-item FFD. Nodes packed alike are kept as one group
(count, load), so the work is O(distinct requests^2), independent of the counts.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from sandbox_fleet.plan.slots import RESOURCES, ResourceRequest

_EPS = 1e-9


@dataclass
class NodeGroup:
    """``count`` consecutive nodes packed alike: ``load`` {request index: copies} each, ``free`` left each."""

    count: int
    load: dict[int, int]
    free: dict[str, float]


@dataclass
class Packing:
    nodes: int
    lower_bound: int
    #: the nodes in FFD order, runs of identically packed nodes as one group
    groups: list[NodeGroup] = field(repr=False)
    #: capacity left unused over all packed nodes, per resource (cores, MB, MB, gpus)
    stranded: dict[str, float]
    #: per resource, ceil(total demand / node capacity)
    lower_bound_by_resource: dict[str, int]

    @property
    def assignment(self) -> list[dict[int, int]]:
        """Per node: {request index: count} (one dict per node: for small packings only)."""
        return [dict(g.load) for g in self.groups for _ in range(g.count)]


def concurrent_mix(weights: list[float], concurrency: int) -> list[int]:
    """Split ``concurrency`` sandboxes over requests in proportion to ``weights``.

    Largest-remainder rounding keeps the total exact; ties go to the earlier request. The shares
    are exact fractions, so the total stays exact for any concurrency (floats drift past 2**53).
    """
    total = sum(Fraction(w) for w in weights)
    if total <= 0:
        raise ValueError("weights must have a positive sum")
    exact = [concurrency * Fraction(w) / total for w in weights]
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


def lower_bound(requests: list[ResourceRequest], counts: list[int], capacity: dict[str, float]) -> dict[str, int]:
    """Per resource, the fewest nodes whose summed capacity covers the summed demand."""
    out = {}
    for r in RESOURCES:
        demand = sum(getattr(q, r) * c for q, c in zip(requests, counts))
        if demand <= 0:
            out[r] = 0
        else:
            out[r] = math.ceil(demand / capacity[r] - _EPS) if capacity[r] > 0 else 1 << 62
    return out


def sort_key(req: ResourceRequest, capacity: dict[str, float]) -> tuple:
    shares = [getattr(req, r) / capacity[r] if capacity[r] > 0 else (math.inf if getattr(req, r) > 0 else 0.0) for r in RESOURCES]
    return (-max(shares), -sum(shares), tuple(-getattr(req, r) for r in RESOURCES))


def _take(count: int, free: dict[str, float], load: dict[int, int], i: int, req: dict[str, float], k: int) -> NodeGroup:
    """``count`` nodes with ``free`` capacity and ``load`` after each takes ``k`` more copies of request ``i``."""
    return NodeGroup(count, {**load, i: load.get(i, 0) + k}, {r: free[r] - k * req[r] for r in RESOURCES})


def ffd(requests: list[ResourceRequest], counts: list[int], capacity: dict[str, float]) -> Packing:
    """Pack ``counts[i]`` copies of ``requests[i]`` into nodes of ``capacity``.

    Works on counts: a run of nodes packed alike is one group, so time and memory grow with
    the number of distinct requests, not with the counts (a billion sandboxes pack as fast
    as a thousand). Raises ValueError if some request with a positive count does not fit an
    empty node.
    """
    order = sorted(range(len(requests)), key=lambda i: (sort_key(requests[i], capacity), i))
    groups: list[NodeGroup] = []
    for i in order:
        left = counts[i]
        if left <= 0:
            continue
        req = requests[i].as_dict()
        per_empty = _fits_count(capacity, req)
        if per_empty < 1:
            raise ValueError(f"request {req} does not fit an empty node {capacity}")
        j = 0
        while left > 0 and j < len(groups):
            g = groups[j]
            k = _fits_count(g.free, req)
            if k > 0:
                full = min(left // k, g.count)  # nodes of this group that take k copies each
                part = left - full * k if full < g.count else 0  # the next node takes the rest
                split = []
                if full:
                    split.append(_take(full, g.free, g.load, i, req, k))
                if part:
                    split.append(_take(1, g.free, g.load, i, req, part))
                rest = g.count - full - (1 if part else 0)
                if rest:
                    split.append(NodeGroup(rest, g.load, g.free))
                groups[j : j + 1] = split
                left -= full * k + part
                j += len(split)
            else:
                j += 1
        if left > 0:  # fresh nodes: as many full ones as needed, then one with the remainder
            full, part = divmod(left, per_empty)
            if full:
                groups.append(_take(full, capacity, {}, i, req, per_empty))
            if part:
                groups.append(_take(1, capacity, {}, i, req, part))
    lb = lower_bound(requests, counts, capacity)
    stranded = {r: sum(g.free[r] * g.count for g in groups) for r in RESOURCES}
    return Packing(
        nodes=sum(g.count for g in groups),
        lower_bound=max(lb.values()) if lb else 0,
        groups=groups,
        stranded=stranded,
        lower_bound_by_resource=lb,
    )

"""A mixed purchase: reserved nodes for the base load, the rest on a burst tier, from the measured curve.

A reserved node costs ``p_r`` every hour; a burst node costs ``p_b`` only for the hours the load needs
it (the burst tier is autoscaled: bought when the curve climbs past the reserved nodes, released when
it falls). With ``N`` nodes at the peak, node ``k`` is needed while the load is above ``(k - 1) / N`` of
the peak, a share ``s_k`` of the time that falls as ``k`` rises. Reserving node ``k`` instead of
bursting it changes the hourly cost by ``p_r - p_b s_k``, so it pays exactly when ``s_k > p_r / p_b``
(the break-even, or newsvendor, rule). Because ``s_k`` only falls, the nodes worth reserving are the
first ``R`` and the split is optimal over every ``R`` in ``0..N``:

    cost(R) = p_r R + p_b sum_{k > R} s_k

The burst tier is spot for a plan on spot and on-demand otherwise. Spot carries its re-runs: its node-hour costs ``1 + rework share`` times its price.
The curve is measure's ``concurrency.time_at_level`` scaled so that its peak fills the ``N`` nodes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Optional

from sandbox_fleet.plan.model import Mixed

#: ``node_share`` lists one share a node up to this many nodes (null beyond: the split is still exact)
NODE_SHARE_MAX = 1024


def node_runs(levels: Sequence[int], share_at_or_above: Sequence[float], peak: int, nodes: int) -> list[tuple[int, float]]:
    """``s_k`` for k = 1..nodes as runs of (how many consecutive nodes, their share), in node order.

    Node ``k`` is needed while level x nodes / peak > k - 1, i.e. level >= floor((k - 1) peak / nodes) + 1;
    a level between two grid points reads the next grid point above (the grid is every level up to 256).
    Exactly ``min(nodes, ceil(g nodes / peak))`` nodes need a level of at most ``g``, so each grid point
    covers a run of nodes and a fleet of any size takes one pass over the grid.
    """
    runs: list[tuple[int, float]] = []
    covered = 0
    for g, share in zip(levels, share_at_or_above):
        upto = min(nodes, -(-g * nodes // peak))
        if upto > covered:
            runs.append((upto - covered, float(share)))
            covered = upto
    if covered < nodes:  # only when the grid stops short of the peak
        runs.append((nodes - covered, 0.0))
    return runs


def node_shares(levels: Sequence[int], share_at_or_above: Sequence[float], peak: int, nodes: int) -> list[float]:
    """``s_k`` for k = 1..nodes, one share a node (``node_runs`` expanded)."""
    return [share for count, share in node_runs(levels, share_at_or_above, peak, nodes) for _ in range(count)]


def split_cost(runs: Sequence[tuple[int, float]], reserved: int, reserved_usd_h: float, burst_usd_h: float) -> float:
    """Hourly cost of reserving the first ``reserved`` nodes and bursting the rest."""
    burst_node_h, seen = 0.0, 0
    for count, share in runs:
        burst_node_h += share * max(0, min(count, seen + count - reserved))
        seen += count
    return reserved_usd_h * reserved + burst_usd_h * burst_node_h


def best_split(runs: Sequence[tuple[int, float]], reserved_usd_h: float, burst_usd_h: float) -> int:
    """The number of nodes to reserve: those busy more than ``p_r / p_b`` of the time."""
    if burst_usd_h <= 0:
        return 0
    ratio = reserved_usd_h / burst_usd_h
    return sum(count for count, share in runs if share > ratio)


def burst_price(tier: str, on_demand_usd_h: Optional[float], spot_usd_h: Optional[float],
                rework_share: Optional[float], reruns_unbounded: bool = False) -> Optional[float]:
    """$ per node-hour used on the burst ``tier``; spot's price carries its re-runs (none when they
    are unbounded: the bare price is not what the work costs)."""
    if tier == "spot":
        if spot_usd_h is None or reruns_unbounded:
            return None
        return spot_usd_h * (1.0 + (rework_share or 0.0))
    return on_demand_usd_h


def burst_tier_for(headline_tier: Optional[str]) -> str:
    """Spot bursts a spot plan; any other plan bursts on on-demand (a buyer who cannot run on spot)."""
    return "spot" if headline_tier == "spot" else "on_demand"


def mixed_purchase(curve: Optional[tuple[Sequence[int], Sequence[float]]], nodes: int, tier: str,
                   reserved_usd_h: Optional[float], on_demand_usd_h: Optional[float], spot_usd_h: Optional[float],
                   rework_share: Optional[float] = None, reruns_unbounded: bool = False) -> Optional[Mixed]:
    """``cost.mixed`` for ``nodes`` of one type at its per-node prices, bursting on ``tier``; None when
    the curve or a price is missing (spot's too when its re-runs are unbounded)."""
    burst_usd_h = burst_price(tier, on_demand_usd_h, spot_usd_h, rework_share, reruns_unbounded)
    if curve is None or not curve[0] or nodes <= 0 or reserved_usd_h is None or burst_usd_h is None:
        return None
    runs = node_runs(curve[0], curve[1], int(curve[0][-1]), nodes)  # the grid ends at the measured peak
    r = best_split(runs, reserved_usd_h, burst_usd_h)
    usd_h = split_cost(runs, r, reserved_usd_h, burst_usd_h)
    shares = [share for count, share in runs for _ in range(count)] if nodes <= NODE_SHARE_MAX else None
    ratio = reserved_usd_h / burst_usd_h if burst_usd_h > 0 else None
    rerun = f" (with re-runs, +{rework_share * 100:.3g}% sandbox-hours)" if tier == "spot" and rework_share else ""
    return Mixed(
        reserved_nodes=r, burst_nodes=nodes - r, burst_tier=tier, usd_per_h=usd_h,
        reserved_usd_per_node_h=reserved_usd_h, burst_usd_per_node_h=burst_usd_h, break_even_share=ratio,
        node_share=shares, basis=_basis(ratio, nodes, reserved_usd_h, burst_usd_h, tier.replace("_", "-"), rerun),
    )


def _basis(ratio: Optional[float], nodes: int, reserved_usd_h: float, burst_usd_h: float, burst_label: str,
           rerun: str) -> str:
    if ratio is None:
        head = "the burst tier is free: nothing reserved"
    elif ratio >= 1.0:
        head = (f"a reserved node (${reserved_usd_h:,.4g}/h) costs more than a {burst_label} node busy all the time "
                f"(${burst_usd_h:,.4g}/h{rerun}): nothing reserved")
    else:
        head = (f"reserve a node while the measured curve (its peak scaled to {nodes:,} nodes) needs it more than "
                f"${reserved_usd_h:,.4g} / ${burst_usd_h:,.4g} = {ratio:.1%} of the time")
    return (f"{head}; the rest on {burst_label}{rerun}, billed only while the curve needs it (autoscaled, "
            "no start-up lag); spot bursts only a spot plan")


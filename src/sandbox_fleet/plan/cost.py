"""Cost: the fleet bought at the target on each pricing tier, and what that buys per passing rollout.

The fleet is bought at the target and runs at the measured duty cycle, so every hour's price is
carried by ``target x duty`` busy sandbox-hours. Per passing trajectory that is
``fleet $/h / (target x duty) x sandbox-hours per pass``; exception waste is the fleet's $/h times
the exception share of sandbox-hours (of rows, when the input gives no exception hours).

On spot, reclaimed rollouts re-run (``rework.py``): the busy hours carry ``1 + rework share`` times
the work, so spot's cost per passing trajectory is its price times that factor.
"""

from __future__ import annotations

from typing import Any, Optional

from sandbox_fleet.plan.catalog import TIERS, NodeType
from sandbox_fleet.plan.model import ByTier, Cost


def tier_prices(node: NodeType, nodes: int) -> ByTier:
    """The fleet's $/h on each tier (None where the catalog lists no price)."""
    per_node = {t: node.price(t) for t in TIERS}
    return ByTier(**{t: p * nodes if p is not None else None for t, p in per_node.items()})


def fleet_cost(
    node: NodeType,
    nodes: int,
    *,
    tier: str,
    concurrency: int,
    duty: Optional[float],
    sandbox_hours_per_pass: Optional[float],
    exception_share: Optional[float],
    spot_rework_share: Optional[float] = None,
    spot_reruns_unbounded: bool = False,
    **rest: Any,
) -> Cost:
    """The ``cost`` block: ``nodes`` of ``node`` at each tier's price, and ``rest``, the figures the
    planner adds beside them (GPUs, re-runs, the mixed purchase). With ``spot_reruns_unbounded`` (a
    reclaim rate whose restarts have no finite expected work) spot has no price per pass at all: its
    bare price would make more reclaims look cheaper."""
    prices = tier_prices(node, nodes)
    headline = getattr(prices, tier)
    busy = concurrency * duty if duty else None

    def per_pass(t: str) -> Optional[float]:
        price = getattr(prices, t)
        if price is None or not busy or not sandbox_hours_per_pass or (t == "spot" and spot_reruns_unbounded):
            return None
        rerun = 1.0 + (spot_rework_share or 0.0) if t == "spot" else 1.0
        return price / busy * sandbox_hours_per_pass * rerun

    by_tier = ByTier(**{t: per_pass(t) for t in TIERS})
    return Cost(
        tier=tier, priced=node.priced,
        reserved_per_h=prices.reserved, on_demand_per_h=prices.on_demand, spot_per_h=prices.spot,
        per_busy_sandbox_hour=headline / busy if headline is not None and busy else None,
        per_passing_trajectory=getattr(by_tier, tier),
        per_passing_trajectory_by_tier=by_tier,
        exception_waste_per_h=headline * exception_share if headline is not None and exception_share is not None else None,
        duty=duty, exception_share=exception_share,
        **rest,
    )


def inference_cost(gpu_usd_h: Optional[float], gpus: Optional[int]) -> Optional[float]:
    """The inference GPUs' $/h (None without a GPU price or a count)."""
    return gpu_usd_h * gpus if gpu_usd_h is not None and gpus is not None else None

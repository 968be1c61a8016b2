"""Cost: the fleet bought at the target on each pricing tier, and what that buys per passing rollout.

The fleet is bought at the target and runs at the measured duty cycle, so every hour's price is
carried by ``target x duty`` busy sandbox-hours. Per passing trajectory that is
``fleet $/h / (target x duty) x sandbox-hours per pass``; exception waste is the fleet's $/h times
the exception share of sandbox-hours (of rows, when the input gives no exception hours).
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.catalog import TIERS, NodeType


def fleet_cost(
    node: NodeType,
    nodes: int,
    *,
    tier: str,
    concurrency: int,
    duty: Optional[float],
    sandbox_hours_per_pass: Optional[float],
    exception_share: Optional[float],
) -> dict:
    out: dict = {"tier": tier, "priced": node.priced}
    for t in TIERS:
        price = node.price(t)
        out[f"{t}_per_h"] = price * nodes if price is not None else None
    headline = out[f"{tier}_per_h"]
    busy = concurrency * duty if duty else None
    out["per_busy_sandbox_hour"] = headline / busy if headline is not None and busy else None
    out["per_passing_trajectory"] = (
        out["per_busy_sandbox_hour"] * sandbox_hours_per_pass
        if out["per_busy_sandbox_hour"] is not None and sandbox_hours_per_pass
        else None
    )
    out["per_passing_trajectory_by_tier"] = {
        t: (out[f"{t}_per_h"] / busy * sandbox_hours_per_pass if out[f"{t}_per_h"] is not None and busy and sandbox_hours_per_pass else None)
        for t in TIERS
    }
    out["exception_waste_per_h"] = headline * exception_share if headline is not None and exception_share is not None else None
    return out


def inference_cost(gpu_usd_h: Optional[float], gpus: Optional[int], gpus_cached: Optional[int]) -> dict:
    return {
        "inference_per_h": gpu_usd_h * gpus if gpu_usd_h is not None and gpus is not None else None,
        "inference_per_h_cached": gpu_usd_h * gpus_cached if gpu_usd_h is not None and gpus_cached is not None else None,
    }

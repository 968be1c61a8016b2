"""Cost: the fleet bought at the target on each pricing tier, and what that buys per passing rollout.

The fleet is bought at the target and runs at the measured duty cycle, so every hour's price is
carried by ``target x duty`` busy sandbox-hours. Per passing trajectory that is
``fleet $/h / (target x duty) x sandbox-hours per pass``; exception waste is the fleet's $/h times
the exception share of sandbox-hours (of rows, when the input gives no exception hours).

On spot, reclaimed rollouts re-run (``rework.py``): the busy hours carry ``1 + rework share`` times
the work, so spot's cost per passing trajectory is its price times that factor.
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
    spot_rework_share: Optional[float] = None,
) -> dict:
    out: dict = {"tier": tier, "priced": node.priced}
    for t in TIERS:
        price = node.price(t)
        out[f"{t}_per_h"] = price * nodes if price is not None else None
    headline = out[f"{tier}_per_h"]
    busy = concurrency * duty if duty else None
    out["per_busy_sandbox_hour"] = headline / busy if headline is not None and busy else None

    def per_pass(t: str) -> Optional[float]:
        price = out[f"{t}_per_h"]
        if price is None or not busy or not sandbox_hours_per_pass:
            return None
        rerun = 1.0 + (spot_rework_share or 0.0) if t == "spot" else 1.0
        return price / busy * sandbox_hours_per_pass * rerun

    out["per_passing_trajectory_by_tier"] = {t: per_pass(t) for t in TIERS}
    out["per_passing_trajectory"] = out["per_passing_trajectory_by_tier"][tier]
    out["exception_waste_per_h"] = headline * exception_share if headline is not None and exception_share is not None else None
    return out


def inference_cost(gpu_usd_h: Optional[float], gpus: Optional[int], gpus_cached: Optional[int]) -> dict:
    return {
        "inference_per_h": gpu_usd_h * gpus if gpu_usd_h is not None and gpus is not None else None,
        "inference_per_h_cached": gpu_usd_h * gpus_cached if gpu_usd_h is not None and gpus_cached is not None else None,
    }

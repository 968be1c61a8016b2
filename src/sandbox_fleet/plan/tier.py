"""The headline pricing tier: the single tier whose all-in cost is lowest, re-runs included.

Bought on one tier, the fleet is paid for every hour on reserved, on-demand and spot alike, so the
tiers differ by their price and by what spot adds: reclaimed rollouts re-run from scratch
(``rework.py``), and the busy hours carry ``1 + rework share`` times the work. A tier's all-in
cost per hour of useful work is therefore

    (sandbox nodes $/h + GPU pools $/h + inference $/h + trainer $/h) x (1 + re-run share on spot),

which divided by the passes an hour is its all-in $ per passing trajectory: the ranking per pass
and per hour is the same. The cheapest is the headline. The duty cycle the fleet runs at does not
enter a single tier's ranking (every single tier pays for the whole fleet every hour); it is the
question of the mixed purchase (``mixed.py``) and is stated beside the ranking as a reason.

The reclaim rates are illustrative midpoints of published interruption bands, so spot's line is
uncertain: its re-run share is taken between no reclaims and ``RATE_UNCERTAINTY`` times the catalog
rate (a band's upper edge is at most twice its midpoint). When that range straddles the next tier's
cost, the ranking falls inside the re-run uncertainty, and the basis says so and names both.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.plan.model import TierChoice, TierLine

#: spot's re-run share is judged between rate 0 and this multiple of the catalog's reclaim rate
RATE_UNCERTAINTY = 2.0

_LABEL = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot"}


def _label(tier: Optional[str]) -> str:
    return _LABEL.get(tier or "", str(tier))


@dataclass(frozen=True)
class TierOffer:
    """One single tier as sized: the node type the tier's prices chose, its count, and the $/h of the
    sandbox nodes plus GPU pools on that tier (None when a part has no price there)."""

    tier: str
    node_type: str
    nodes: int
    fleet_per_h: Optional[float]
    #: spot only: rework share at a reclaim rate (None when the restarts are unbounded); None elsewhere
    share_at: Optional[Callable[[float], Optional[float]]] = None
    interruptions_per_node_h: Optional[float] = None


def _line(offer: TierOffer, other_per_h: float, passes_per_h: Optional[float]) -> TierLine:
    rate = offer.interruptions_per_node_h
    share = share_high = None
    unbounded = False
    if offer.share_at is not None and rate is not None:
        share, share_high = offer.share_at(rate), offer.share_at(rate * RATE_UNCERTAINTY)
        unbounded = share is None
    elif offer.tier == "spot":
        share = share_high = 0.0  # no reclaim rate in the catalog: no re-runs priced, as cost.spot_rework leaves them
    base = offer.fleet_per_h + other_per_h if offer.fleet_per_h is not None else None
    all_in = None if base is None or unbounded else base * (1.0 + (share or 0.0))
    high = None if base is None or unbounded else (math.inf if share_high is None else base * (1.0 + share_high))
    return TierLine(
        tier=offer.tier, node_type=offer.node_type, nodes=offer.nodes, fleet_per_h=offer.fleet_per_h,
        rerun_share=share, rerun_share_high=share_high if share_high is None or math.isfinite(share_high) else None,
        all_in_per_h=all_in, all_in_per_h_low=base if all_in is not None else None,
        all_in_per_h_high=high if high is not None and math.isfinite(high) else None,
        all_in_per_pass=all_in / passes_per_h if all_in is not None and passes_per_h else None,
        unbounded=unbounded or None,
    )


def _span(line: TierLine) -> tuple[float, float]:
    assert line.all_in_per_h is not None  # only priced lines are ranked
    lo = line.all_in_per_h_low if line.all_in_per_h_low is not None else line.all_in_per_h
    if line.tier == "spot" and line.rerun_share_high is None:  # unbounded at the top of the rate range
        return lo, math.inf
    hi = line.all_in_per_h_high if line.all_in_per_h_high is not None else line.all_in_per_h
    return lo, hi


def breakeven_rate(share_at: Callable[[float], Optional[float]], spot_base: float, rival: float,
                   start: float) -> Optional[float]:
    """The reclaim rate (per node-hour) at which spot's all-in ``spot_base x (1 + share)`` reaches
    ``rival``, to a relative 1e-5: bracketed from ``start``, then regula falsi
    (Illinois) on log share against log rate, where the share is smooth and near linear. None when
    spot is not cheaper even without reclaims; inf when no rate up to 1e6 per node-hour reaches it."""
    target = rival / spot_base - 1.0
    if target <= 0.0:
        return None

    def g(log_rate: float) -> float:  # > 0 once the rate's re-runs reach the target (unbounded counts as reached)
        s = share_at(math.exp(log_rate))
        return math.inf if s is None else (math.log(s) - math.log(target) if s > 0 else -math.inf)

    lo = hi = math.log(max(start, 1e-12))
    s0 = share_at(math.exp(lo))
    if s0 is not None and 0 < s0 < target:
        # the share over the rate rises with the rate (restarts compound), so the straight line through
        # the origin and the start reaches the target no later than the share does: an upper bracket
        hi = lo + math.log(target / s0)
    g_hi = g(hi)
    while g_hi <= 0:
        lo, hi = hi, hi + math.log(10.0)
        if hi > math.log(1e6):
            return math.inf
        g_hi = g(hi)
    g_lo = g(lo)
    while g_lo > 0:
        lo, hi, g_hi = lo - math.log(10.0), lo, g_lo
        g_lo = g(lo)
    side = 0
    for _ in range(100):
        if hi - lo <= 1e-5:
            break
        finite = math.isfinite(g_lo) and math.isfinite(g_hi)
        mid = (lo - g_lo * (hi - lo) / (g_hi - g_lo)) if finite else (lo + hi) / 2.0
        if not lo < mid < hi:
            mid = (lo + hi) / 2.0
        g_mid = g(mid)
        if g_mid > 0:
            hi, g_hi = mid, g_mid
            if side == 1:
                g_lo /= 2.0  # Illinois: the end kept twice in a row is halved
            side = 1
        else:
            lo, g_lo = mid, g_mid
            if side == -1:
                g_hi /= 2.0
            side = -1
        if abs(g_mid) < 1e-6:
            return math.exp(mid)
    return math.exp(hi)


def choose_tier(offers: list[TierOffer], *, other_per_h: float, passes_per_h: Optional[float],
                duty: Optional[float], forced: Optional[str]) -> tuple[str, TierChoice]:
    """(headline tier, the ``cost.tier_choice`` block): the cheapest priced single tier all in, or
    ``forced`` (``--price-tier``) with the ranking beside it. ``other_per_h``: inference and trainer
    $/h, the same on every tier (re-runs scale them on spot)."""
    lines = [_line(o, other_per_h, passes_per_h) for o in offers]
    ranked = sorted((ln for ln in lines if ln.all_in_per_h is not None), key=lambda ln: (ln.all_in_per_h, ln.tier))
    cheapest = ranked[0] if ranked else None
    runner = ranked[1] if len(ranked) > 1 else None
    within = None
    if cheapest is not None and runner is not None:
        # the cheapest's upper end reaches the runner-up's lower end: the order may flip
        within = _span(cheapest)[1] >= _span(runner)[0]
    tier: str = forced or (cheapest.tier if cheapest is not None and cheapest.tier else "on_demand")
    breakeven = None
    spot = next((o for o in offers if o.tier == "spot"), None)
    spot_line = next((ln for ln in lines if ln.tier == "spot"), None)
    rivals = [ln.all_in_per_h for ln in ranked if ln.tier != "spot" and ln.all_in_per_h is not None]
    if (spot is not None and spot.share_at is not None and spot.fleet_per_h is not None and rivals
            and spot.interruptions_per_node_h is not None and spot_line is not None):
        breakeven = breakeven_rate(spot.share_at, spot.fleet_per_h + other_per_h, min(rivals), spot.interruptions_per_node_h)
    basis = _basis(lines, ranked, tier, forced, within, breakeven, duty)
    return tier, TierChoice(
        chosen=tier, cheapest=cheapest.tier if cheapest is not None else None,
        runner_up=runner.tier if runner is not None else None, within_rerun_uncertainty=within,
        rate_uncertainty=RATE_UNCERTAINTY,
        spot_breakeven_interruptions_per_node_h=breakeven if breakeven is None or math.isfinite(breakeven) else None,
        tiers=lines, basis=basis,
    )


def _money(v: float) -> str:
    return f"${v:,.2f}"


def _text(ln: TierLine, with_type: bool) -> str:
    label = f"{_label(ln.tier)}" + (f" {ln.nodes:,} x {ln.node_type}" if with_type else "")
    if ln.unbounded:
        return f"{label} not priced (re-runs unbounded at the catalog's reclaim rate)"
    if ln.all_in_per_h is None:
        return f"{label} no price"
    if ln.tier == "spot" and ln.rerun_share:
        return f"{label} {_money(ln.all_in_per_h)}/h (+{ln.rerun_share * 100:.2g}% re-runs)"
    return f"{label} {_money(ln.all_in_per_h)}/h"


def _basis(lines: list[TierLine], ranked: list[TierLine], tier: str, forced: Optional[str], within: Optional[bool],
           breakeven: Optional[float], duty: Optional[float]) -> str:
    """One sentence: the tier and why, the tiers in order all in (the fleet named once when every
    tier chose the same), spot's break-even rate, and the duty as a reason."""
    if not ranked:
        head = "no node type is priced on any tier: on-demand named, nothing costed"
    else:
        fleets = {(ln.nodes, ln.node_type) for ln in lines}
        same = len(fleets) == 1
        order = " < ".join(_text(ln, not same) for ln in ranked)
        unpriced = [_text(ln, not same) for ln in lines if ln.all_in_per_h is None]
        fleet = f" for {lines[0].nodes:,} x {lines[0].node_type}" if same else ""
        head = f"all in{fleet}, re-runs included: {order}" + (f"; {', '.join(unpriced)}" if unpriced else "")
        if forced is not None:
            head = f"--price-tier {_label(forced)} (the cheapest all in is {_label(ranked[0].tier)}); " + head
        else:
            head = f"{_label(tier)}, the cheapest " + head
        if within and len(ranked) > 1:
            head += (f"; {_label(ranked[0].tier)} and {_label(ranked[1].tier)} are within the re-run uncertainty "
                     f"(reclaims from none to {RATE_UNCERTAINTY:g}x the catalog rate): either may be cheaper")
    if breakeven is not None:
        head += ("; spot stays cheaper at any reclaim rate" if math.isinf(breakeven)
                 else f"; spot loses above {breakeven:.3g} reclaims per node-h")
    if duty is not None:
        head += f"; the duty at the target ({duty:.1%}) does not rank single tiers, each pays for the whole fleet every hour"
    return head

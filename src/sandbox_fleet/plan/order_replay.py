"""The order chosen by replay (issue 37): every candidate order priced on the measured rollouts' nodes.

``plan/tier.py`` ranks the single tiers on the slot sizing's count, and ``plan/mixed.py`` prices the
mixed purchase on the concurrency curve: both re-pack sandboxes at will, so both are lower bounds.
With the measured history, each candidate is priced by replaying its rollouts on nodes instead:

- a single tier (reserved, on-demand, spot) on the node type its prices chose, at the replayed count
  (the real mix's peaks, at least the slot sizing's: ``build.replayed_count``), every node up the whole
  history, so it costs ``nodes x price`` an hour exactly (a fixed pool's replay, tested);
- the mixed purchase bursting on on-demand and on spot: ``R`` reserved nodes and a burst pool billed
  launch to release, ``R`` the cheapest by replay (``plan/mixed_replay.py``).

Each is ranked all in: the sandbox nodes, plus the GPU pools, inference and trainer, with spot's
re-runs: ``(fleet + rest) x (1 + s)`` on a single spot tier, and ``mixed + rest x (1 + s)`` for a spot
burst, whose burst node-hours already carry ``1 + s`` (the rest charged re-runs on all its work: an
upper bound where the reserved nodes run part of it). The cheapest is the order signed; with
``--price-tier T`` only the orders priced on ``T`` compete (T alone, and the mixed order bursting on T).

Cheaper in $ may be dearer in time: a burst node joins after its provisioning delay and the rollouts
placed on it wait. Each order carries the slowdown of the mean step its waits cost against all nodes
up (``plan/order_wait.py``; a single tier all up waits for nothing: 0). A mixed order's R is the
cheapest within the plan's ``--tolerance`` (plan/mixed_replay.py), its line saying what the cheaper R
ruled out would cost and slow; an order still slower than the tolerance is not eligible, and the basis
names it with its figure.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.model import Mixed, OrderLine
from sandbox_fleet.plan.order_wait import describe, ruled_out

#: the orders in the order ties are broken (the simplest purchase first)
ORDERS = ("reserved", "on_demand", "spot", "mixed_on_demand", "mixed_spot")
_LABEL = {"reserved": "reserved", "on_demand": "on-demand", "spot": "spot",
          "mixed_on_demand": "mixed on-demand", "mixed_spot": "mixed spot"}


def _rest(rest_per_h: float, pools_per_h: Optional[float]) -> Optional[float]:
    return None if pools_per_h is None else rest_per_h + pools_per_h


def single_line(tier: str, node_type: str, nodes: int, slot_nodes: int, node_usd_h: Optional[float],
                pools_per_h: Optional[float], rest_per_h: float, share: Optional[float], unbounded: bool) -> OrderLine:
    """A single tier: ``nodes`` of ``node_type`` up all the time at ``node_usd_h`` each; ``pools_per_h``
    the GPU pools on the tier; ``rest_per_h`` inference and trainer; ``share`` spot's re-run share."""
    s = (share or 0.0) if tier == "spot" else 0.0
    rest = _rest(rest_per_h, pools_per_h)
    priced = node_usd_h is not None and rest is not None and not (tier == "spot" and unbounded)
    fleet = nodes * node_usd_h + (pools_per_h or 0.0) if node_usd_h is not None and pools_per_h is not None else None
    return OrderLine(
        order=tier, tier=tier, node_type=node_type, nodes=nodes, fleet_per_h=fleet,
        rerun_share=share if tier == "spot" else None,
        all_in_per_h=(nodes * node_usd_h + rest) * (1.0 + s) if priced else None,  # type: ignore[operator]
        slot_curve_all_in_per_h=(slot_nodes * node_usd_h + rest) * (1.0 + s) if priced else None,  # type: ignore[operator]
        unbounded=(tier == "spot" and unbounded) or None,
        slowdown=0.0, over_tolerance=False, wait_basis="all up: no rollout waits for a node",
    )


def mixed_line(mixed: Optional[Mixed], burst_tier: str, node_type: str, pools_per_h: Optional[float],
               rest_per_h: float, share: Optional[float], tolerance: Optional[float] = None) -> OrderLine:
    """The mixed purchase bursting on ``burst_tier``, priced by its node replay (``mixed.replay``); an
    unpriced line when there is none (no curve, a missing price, unbounded re-runs). Over ``tolerance``
    (the allowed slowdown of the mean step) its waits make it ineligible."""
    order = f"mixed_{burst_tier}"
    if mixed is None or mixed.usd_per_h is None or mixed.replay is None:
        return OrderLine(order=order, tier=burst_tier, node_type=node_type)
    s = (share or 0.0) if burst_tier == "spot" else 0.0
    rest = _rest(rest_per_h, pools_per_h)
    r, b = int(mixed.reserved_nodes or 0), int(mixed.burst_nodes or 0)
    slot = mixed.replay.slot_curve_usd_per_h
    wait = mixed.replay.wait
    slow = wait.slowdown if wait is not None else None
    return OrderLine(
        order=order, tier=burst_tier, node_type=node_type, nodes=r + b, reserved_nodes=r, burst_nodes=b,
        fleet_per_h=mixed.usd_per_h + (pools_per_h or 0.0) if pools_per_h is not None else None,
        rerun_share=share if burst_tier == "spot" else None,
        all_in_per_h=mixed.usd_per_h + rest * (1.0 + s) if rest is not None else None,
        slot_curve_all_in_per_h=slot + rest * (1.0 + s) if rest is not None and slot is not None else None,
        slowdown=slow, over_tolerance=(slow > tolerance) if slow is not None and tolerance is not None else None,
        wait_basis=_wait_words(mixed, rest, s),
    )


#: a mixed order none of whose rollouts waited, and no cheaper R ruled out: its line says nothing more
NO_WAIT = "no rollout waited for a node"


def _wait_words(mixed: Mixed, rest: Optional[float], s: float) -> Optional[str]:
    wait = mixed.replay.wait if mixed.replay is not None else None
    if wait is None:
        return None
    ruled = _ruled_out(mixed, rest, s)
    return describe(wait) + ruled if (wait.slowdown or ruled) else NO_WAIT


def _ruled_out(mixed: Mixed, rest: Optional[float], s: float) -> str:
    """The cheaper R the tolerance ruled out (plan/mixed_replay.py), all in, with its slowdown."""
    rp = mixed.replay
    if rp is None or rp.tolerance is None or rest is None or not rp.usd_per_h_by_reserved or not rp.slowdown_by_reserved:
        return ""
    costs, slows = rp.usd_per_h_by_reserved, rp.slowdown_by_reserved
    r = ruled_out(costs, slows, int(mixed.reserved_nodes or 0), rp.tolerance)
    if r is None:
        return ""
    return (f"; R = {r:,} would be ${(costs[r] or 0.0) + rest * (1.0 + s):,.2f}/h, its waits {slows[r] or 0.0:.1%}, "
            f"past --tolerance {rp.tolerance:.1%}")


def choose_order(lines: list[OrderLine], forced: Optional[str]) -> Optional[OrderLine]:
    """The cheapest priced line all in whose waits are within the tolerance (ties: ``ORDERS``' order);
    with ``forced``, among the lines priced on that tier. None when none is priced."""
    pool = [ln for ln in lines if ln.all_in_per_h is not None and not ln.over_tolerance
            and (forced is None or ln.tier == forced)]
    if not pool:
        return None
    return min(pool, key=lambda ln: (ln.all_in_per_h, ORDERS.index(ln.order or "")))


def _text(ln: OrderLine) -> str:
    label = _LABEL.get(ln.order or "", str(ln.order))
    if ln.nodes is None and (ln.reserved_nodes is None or ln.burst_nodes is None):
        return f"{label} no price (no {label} type in the catalog)"  # a tier the catalog prices nowhere
    if ln.reserved_nodes is not None and ln.burst_nodes is not None:
        what = f"{label} ({ln.reserved_nodes:,} reserved + up to {ln.burst_nodes:,} burst x {ln.node_type})"
    else:
        what = f"{label} {ln.nodes:,} x {ln.node_type}"
    if ln.unbounded:
        return f"{what} not priced (re-runs unbounded)"
    if ln.all_in_per_h is None:
        return f"{what} no price"
    waits = (f" (waits: {ln.wait_basis})" if ln.reserved_nodes is not None and ln.wait_basis not in (None, NO_WAIT)
             else "")
    return f"{what} ${ln.all_in_per_h:,.2f}/h{waits}"


def basis(lines: list[OrderLine], chosen: Optional[OrderLine], forced: Optional[str], rollouts: int,
          slot_basis: Optional[str], tolerance: Optional[float] = None) -> str:
    """One sentence: the order by replay and why, every candidate in order, the ones whose waits slow
    the step past ``tolerance``, and the slot-curve ranking (the lower bound) after it."""
    ranked = sorted((ln for ln in lines if ln.all_in_per_h is not None),
                    key=lambda ln: (ln.all_in_per_h, ORDERS.index(ln.order or "")))
    unpriced = [_text(ln) for ln in lines if ln.all_in_per_h is None]
    if chosen is None:
        head = "no candidate order is priced by the replay"
    else:
        lead = (f"--price-tier {_LABEL[forced]}: " if forced is not None else "") + f"{_LABEL[chosen.order or '']}"
        lead += f" ({chosen.wait_basis})" if chosen.wait_basis else ""
        within = f" with its provisioning waits within --tolerance {tolerance:.1%}" if tolerance is not None else ""
        head = (f"{lead}, the cheapest all in{within} by replaying the {rollouts:,} measured rollouts on nodes (singles all up "
                f"at the real mix's peaks, mixed orders' burst billed launch to release, re-runs included): "
                + " < ".join(_text(ln) for ln in ranked))
    if unpriced:
        head += "; " + ", ".join(unpriced)
    slow = [ln for ln in ranked if ln.over_tolerance]
    if slow:
        head += (f"; not eligible, its waits slowing the step past --tolerance {tolerance or 0.0:.1%}: "
                 + ", ".join(_text(ln) for ln in slow))
    lower = [ln for ln in ranked if ln.slot_curve_all_in_per_h is not None]
    if lower:
        head += ("; on the slot-curve figures (a lower bound): " + ", ".join(
            f"{_LABEL[ln.order or '']} ${ln.slot_curve_all_in_per_h:,.2f}/h" for ln in lower))
    if slot_basis:
        head += f" (slot ranking: {slot_basis})"
    return head

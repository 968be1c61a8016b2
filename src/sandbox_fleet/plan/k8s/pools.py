"""How many nodes each emitted NodePool may launch: limits that together never exceed the order.

Karpenter's ``limits`` are per NodePool; nothing caps their sum. So the order is split across the
pools, and the limits add up to exactly what it pays for:

- a single tier (the plan's BUY line): one NodePool of the plan's node count. On spot it allows
  ``spot`` and ``on-demand`` capacity: Karpenter prioritizes spot when a NodePool allows both and
  launches on-demand only when no spot offering is available (karpenter.sh, NodePools,
  ``karpenter.sh/capacity-type``), so the fallback lives inside the same limit (a second, on-demand
  NodePool limited to the order as well could double it);
- a mixed purchase priced by the node replay (``cost.mixed.replay``, plan/mixed_replay.py), when it
  is the order signed (the cheapest by replay, ``cost.tier_choice.order``): a reserved pool of ``R``
  nodes (reserved is a billing choice, launched on-demand; tried first, by weight, as the replay
  tries reserved nodes first; never consolidated, being paid for anyway) and a burst pool of the
  replay's peak burst nodes (past it where a cap hid demand the plan buys: plan/censored_burst.py),
  released ``consolidateAfter`` the delay priced.
  A pool of no nodes is not written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from sandbox_fleet.plan.model import PlanSummary

#: Karpenter capacity types a tier launches: spot falls back to on-demand inside its own pool.
CAPACITY_TYPES = {"reserved": ["on-demand"], "on_demand": ["on-demand"], "spot": ["spot", "on-demand"]}
#: NodePool weights: Karpenter tries the heavier pool first (the reserved base before the burst).
RESERVED_WEIGHT, BURST_WEIGHT = 100, 10
#: a reserved node is paid for whether empty or not: releasing it saves nothing
NEVER = "Never"


@dataclass(frozen=True)
class PoolLimit:
    """One NodePool's share of the order."""

    suffix: str  # appended to the NodePool name ("" for the single pool)
    tier: str  # the pricing tier its nodes are billed at
    capacity_types: list[str]
    nodes: int  # the most nodes it may launch
    weight: Optional[int]
    consolidate_after: Optional[str]  # None: the plan's (the delay priced, or the default)


def pool_limits(plan: PlanSummary, tier: str) -> list[PoolLimit]:
    """The NodePools' node limits for ``plan`` at its headline ``tier``; they sum to the order."""
    mixed = plan.cost.mixed if plan.cost is not None else None
    tc = plan.cost.tier_choice if plan.cost is not None else None
    # the order by replay (plan/order_replay.py) may be a single tier all up: then its one pool
    signed = tc is None or tc.order is None or tc.order.startswith("mixed")
    if mixed is not None and mixed.replay is not None and mixed.reserved_nodes is not None and signed:
        burst_tier = mixed.burst_tier or "on_demand"
        pools = [PoolLimit("-reserved", "reserved", CAPACITY_TYPES["reserved"], int(mixed.reserved_nodes),
                           RESERVED_WEIGHT, NEVER),
                 PoolLimit("-burst", burst_tier, CAPACITY_TYPES[burst_tier], int(mixed.burst_nodes or 0),
                           BURST_WEIGHT, None)]
        kept = [p for p in pools if p.nodes > 0]
        if kept:
            return kept
    return [PoolLimit("", tier, CAPACITY_TYPES[tier], int(plan.nodes.count), None, None)]



def budgets(limit: PoolLimit) -> list[dict]:
    """The NodePool's ``spec.disruption.budgets``: the voluntary disruption the node replay assumed.

    A reserved pool is never disrupted (its nodes are up the whole history, paid for anyway): one
    budget of 0 nodes for every reason. Any other pool releases each empty node ``consolidateAfter``
    after it empties, however many empty at once (``Empty``: 100%), and never takes a busy node away
    (sandboxes never migrate: 0 for ``Drifted`` and ``Underutilized``). Spot reclaims are involuntary,
    outside every budget: the replay draws them per node at the catalog's rate."""
    if limit.consolidate_after == NEVER:
        return [{"nodes": "0"}]
    return [{"nodes": "100%", "reasons": ["Empty"]}, {"nodes": "0", "reasons": ["Drifted", "Underutilized"]}]

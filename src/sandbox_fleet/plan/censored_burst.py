"""The burst pool's limit when the replayed history ran under a binding cap (issue 37, on issue 38's demand).

The node replay (``plan/mixed_replay.py``) places every rollout at its measured start. Where a cap
bound, those starts queued behind it: the replay never has more than the cap's sandboxes up, so its
burst peak is the cap's, not the demand's the cap hid (``plan/censored.py``). When the plan buys that
demand (``censored.chosen == "demand"``, above the cap), the burst NodePool must let ``d - c`` more
sandboxes run at once:

- where the history has synchronous steps (``measure.steps``), the rollouts are queued again at their
  step's release on ``d`` slots (first come, first served, holds kept: the history as the demand's
  cap would have run it) and replayed on the same split: the limit is that replay's burst peak (at
  least the capped one's);
- otherwise, every node holds at least ``m`` sandboxes of the largest request in the history
  (``m``: the fewest, over cpu, memory and disk, of the allocatable over the largest request), so
  ``d - c`` more sandboxes, whatever they request, fit on ``ceil((d - c) / m)`` more nodes: the
  limit is the replayed burst peak plus that (a bound, at the mix's worst).

Where the plan buys the demand and the history has steps, the replay itself runs on the demand's
history (``plan/censored_order.py``): R, the burst peak and $/h are the demand's (``method``
"demand-replayed"), and the limit is at least the capped history's burst peak at that R. Otherwise
the replayed $/h and the split R stay those of the capped history (the only one observed), and the
basis says what they leave out. A demand known only as a lower bound (no steps to estimate it from)
is bought at the cap: the limit stays the replay's, and the basis says the replay under-states the
demand by an amount not observed.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.model import CappedBurst, Censored, Mixed

if TYPE_CHECKING:
    import numpy as np

    from sandbox_fleet.measure.intervals import RolloutIntervals


def per_node_largest(allocatable: tuple[float, float, float], requests: tuple[np.ndarray, np.ndarray, np.ndarray]) -> int:
    """The fewest sandboxes of the largest request (per resource) a node of ``allocatable`` cpu /
    memory MB / disk MB holds."""
    counts = [math.floor(a / float(q.max())) for a, q in zip(allocatable, requests) if q.size and float(q.max()) > 0]
    return max(min(counts), 0) if counts else 0


def requeue(release_s: np.ndarray, start_s: np.ndarray, hold_s: np.ndarray, slots: int) -> np.ndarray:
    """Starts (input order) of the rollouts queued first come, first served on ``slots`` slots: in
    order of release (then measured start), each at its release or when the first slot frees."""
    import heapq

    import numpy as np

    order = np.lexsort((np.arange(release_s.size), start_s, release_s))
    out = np.empty_like(release_s)
    free: list[float] = []
    for i in order.tolist():
        t = float(release_s[i])
        if len(free) >= slots:
            t = max(t, heapq.heappop(free))
        out[i] = t
        heapq.heappush(free, t + float(hold_s[i]))
    return out


def _demand_peak(history: RolloutIntervals, requests: tuple[np.ndarray, np.ndarray, np.ndarray],
                 allocatable: tuple[float, float, float], reserved: int, demand: int, provision_s: float,
                 scale_down_s: float, placement: str) -> Optional[tuple[int, int]]:
    """(burst peak, rollouts moved) of the history re-queued at its steps' releases on ``demand`` slots and
    replayed on ``reserved`` nodes and an unbounded burst pool; None without synchronous steps."""
    from sandbox_fleet.plan.censored_order import requeued
    from sandbox_fleet.plan.mixed_replay import burst_peak

    q = requeued(history, demand)
    if q is None:
        return None
    peak = burst_peak(q.start_s, q.end_s, requests, allocatable, reserved, provision_s, scale_down_s, placement)
    return peak, q.moved


def _on_demand(mixed: Mixed, c: Censored, history: RolloutIntervals, allocatable: tuple[float, float, float],
               requests: tuple[np.ndarray, np.ndarray, np.ndarray]) -> Mixed:
    """``mixed`` replayed on the demand's history (``plan/censored_order.py``): R, the burst peak and $/h
    are the demand's; the limit is at least the capped history's burst peak at that R too."""
    from sandbox_fleet.plan.censored_order import RequeuedIntervals
    from sandbox_fleet.plan.mixed_replay import burst_peak

    assert isinstance(history, RequeuedIntervals) and history.as_ran is not None
    assert c.cap is not None and c.demand is not None  # a demand line (cover's guard)
    rp = mixed.replay
    assert rp is not None
    ran, r, peak = history.as_ran, int(mixed.reserved_nodes or 0), int(mixed.burst_nodes or 0)
    capped_peak = burst_peak(ran.start_s, ran.end_s, requests, allocatable, r, rp.provision_s or 0.0,
                             rp.scale_down_s or 0.0, rp.placement or "pack")
    limit = max(peak, capped_peak)
    basis = (f"the history ran under a cap of {c.cap:,} (reached {c.touches or 0:,} times); the plan buys the demand "
             f"the cap hid, {c.demand:,} concurrent (plan/censored.py), {c.demand - c.cap:,} sandboxes past the cap: "
             f"R, the burst peak ({peak:,} nodes) and $/h are replayed on the demand's history, {history.describe()}; "
             f"the history as it ran peaks at {capped_peak:,} burst nodes at that R; the burst limit is {limit:,}")
    capped = CappedBurst(cap=c.cap, demand=c.demand, demand_is_lower_bound=False, burst_peak_replayed=capped_peak,
                         sandboxes_past_cap=c.demand - c.cap, sandboxes_per_node_largest=per_node_largest(allocatable, requests),
                         burst_limit=limit, method="demand-replayed", basis=basis)
    return mixed.model_copy(update={"burst_nodes": limit, "replay": rp.model_copy(update={"capped": capped})})


def cover(mixed: Mixed, censored: Optional[Censored], allocatable: tuple[float, float, float],
          requests: tuple[np.ndarray, np.ndarray, np.ndarray], history: Optional[RolloutIntervals] = None) -> Mixed:
    """``mixed`` (priced by the replay) with its burst limit covering the censored demand the plan buys,
    and ``replay.capped`` saying what the capped replay under-states; unchanged without a binding cap."""
    rp = mixed.replay
    c = censored
    if rp is None or c is None or c.cap is None or c.demand is None or c.demand_below_cap:
        return mixed
    peak = int(mixed.burst_nodes or 0)
    if c.demand_is_lower_bound or c.chosen != "demand" or c.demand <= c.cap:
        basis = (f"the history ran under a cap of {c.cap:,}: the replay's starts queued behind it, so its burst peak "
                 f"({peak:,} nodes) and $/h are the cap's; the demand is "
                 + (f"at least {c.demand:,} (a lower bound: by how much more is not observed)" if c.demand_is_lower_bound
                    else f"{c.demand:,}") + f", the plan buys the cap ({c.chosen}): the burst limit stays {peak:,}")
        capped = CappedBurst(cap=c.cap, demand=c.demand, demand_is_lower_bound=c.demand_is_lower_bound,
                             burst_peak_replayed=peak, sandboxes_past_cap=0, burst_limit=peak, basis=basis)
        return mixed.model_copy(update={"replay": rp.model_copy(update={"capped": capped})})
    past = c.demand - c.cap
    from sandbox_fleet.plan.censored_order import RequeuedIntervals

    if isinstance(history, RequeuedIntervals) and history.as_ran is not None:
        return _on_demand(mixed, c, history, allocatable, requests)
    head = (f"the history ran under a cap of {c.cap:,} (reached {c.touches or 0:,} times): the replay's starts queued "
            f"behind it, so its burst peak ({peak:,} nodes), R and $/h are the capped history's; the plan buys the "
            f"demand the cap hid, {c.demand:,} concurrent (plan/censored.py), {past:,} sandboxes past the cap: ")
    found = (_demand_peak(history, requests, allocatable, int(mixed.reserved_nodes or 0), c.demand, rp.provision_s or 0.0,
                          rp.scale_down_s or 0.0, rp.placement or "pack") if history is not None else None)
    m = per_node_largest(allocatable, requests)
    if found is not None:
        limit, moved = max(peak, found[0]), found[1]
        how = (f"re-queued at their steps' releases on {c.demand:,} slots (first come, first served, holds kept; "
               f"{moved:,} rollouts start earlier) and replayed on the same split, the burst pool peaks at {found[0]:,}")
        method = "requeued"
    else:
        extra = -(-past // m) if m > 0 else past
        limit = peak + extra
        how = (f"no synchronous steps to re-queue them at, so they fit on {extra:,} more node{'' if extra == 1 else 's'} "
               f"at most (each holds at least {m:,} of the largest request)")
        method = "bound"
    basis = head + how + (f"; the burst limit is {limit:,}: the replay under-states the demand's burst nodes by "
                          f"{limit - peak:,} and does not price the hours they run")
    capped = CappedBurst(cap=c.cap, demand=c.demand, demand_is_lower_bound=False, burst_peak_replayed=peak,
                         sandboxes_past_cap=past, sandboxes_per_node_largest=m, burst_limit=limit, method=method,
                         basis=basis)
    return mixed.model_copy(update={
        "burst_nodes": limit, "replay": rp.model_copy(update={"capped": capped}),
        "basis": (mixed.basis or "") + f"; up to {limit:,} burst nodes (the replayed peak {peak:,}): the burst limit "
                                       f"covers the {c.demand:,} concurrent of censored demand past the cap {c.cap:,}"})

"""The mixed purchase priced by replaying the measured rollouts on nodes (issue 37).

``plan/mixed.py`` prices a burst node only while the concurrency curve is above its level, which
assumes the sandboxes are re-packed onto the fewest nodes at every moment. They never migrate: a
burst node is billed from its launch until its last sandbox ends, plus the scale-down delay. Here
each measured rollout (its start, end and request) is placed on a node by the engine's node replay
(``simulate.engine.nodes``): ``R`` reserved nodes up all the time, tried first, and a burst pool
that launches a node when nothing fits (it joins ``provision_s`` later) and releases it
``scale_down_s`` after it empties. ``R`` is chosen by the replayed cost over every ``R`` from 0 to
the node count at the real mix's peaks (all nodes on one pool, packed, no delays). The slot-curve
figures stay, labelled as the lower bound they are.

The history is replayed as it ran: its starts were shaped by the cap it ran under, and nothing here
scales it to another target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.model import Mixed, MixedReplay, NodesOverTime, WaitFigure
from sandbox_fleet.plan.order_wait import StepIndex, index_steps, ruled_out, step_releases_of, wait_cost
from sandbox_fleet.plan.slots import ResourceRequest

if TYPE_CHECKING:
    import numpy as np

    from sandbox_fleet.measure.intervals import RolloutIntervals
    from sandbox_fleet.simulate.engine.nodes import NodeReplay

#: a new node's launch to joining the cluster, seconds: Karpenter's documentation gives no figure
#: (a NodeClaim goes Launched -> Registered -> Initialized); one minute is assumed, and stated
PROVISION_S = 60.0
#: an empty burst node's lingering before release, seconds: the ``consolidateAfter: 5m`` the emitted
#: NodePools carry (plan/k8s reads it from here; Karpenter's own default is 0s, the NodePool CRD's)
SCALE_DOWN_S = 300.0
PLACEMENT = "pack"
#: rollouts x replays the search over R may run (~0.3 s of CPU per 1M rollout-replays): every R from 0
#: to the node count at the peaks within it, else a grid of R and every R around the grid's best (said)
REPLAY_BUDGET = 60_000_000
#: spans of the nodes-over-time chart (each the most nodes up at once in it)
CHART_BINS = 400


def _step(peak: int, rollouts: int) -> int:
    """The grid's spacing when every R is over the budget: half the budget on the grid."""
    points = max(3, REPLAY_BUDGET // 2 // max(rollouts, 1))
    return max(1, -(-peak // (points - 1)))


def _candidates(peak: int, rollouts: int) -> list[int]:
    if rollouts * (peak + 1) <= REPLAY_BUDGET:
        return list(range(peak + 1))
    step = _step(peak, rollouts)
    return sorted(set(range(0, peak + 1, step)) | {peak})


def _one_pool(history: RolloutIntervals, allocatable: dict[str, float], fallback: ResourceRequest, placement: str,
              nodes: Optional[int]) -> NodeReplay:
    """The measured rollouts on one pool of ``nodes`` nodes, all up (None: unbounded, launched at need),
    no delays."""
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes

    cpu, memory, disk, _ = requests_of(history, fallback)
    pool = NodePoolSpec("fleet", allocatable["cpu"], allocatable["memory"], allocatable["disk"], usd_per_node_h=0.0,
                        min_nodes=nodes or 0, max_nodes=nodes, placement=placement)
    return replay_nodes(history.start_s, history.end_s, cpu, memory, disk, [pool])


def burst_peak(start_s: np.ndarray, end_s: np.ndarray, requests: tuple[np.ndarray, np.ndarray, np.ndarray],
               allocatable: tuple[float, float, float], reserved: int, provision_s: float, scale_down_s: float,
               placement: str = PLACEMENT) -> int:
    """The burst pool's peak when rollouts at ``start_s``..``end_s`` run on ``reserved`` nodes, always up and
    tried first, and an unbounded burst pool with the delays given."""
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, replay_nodes

    pools = [NodePoolSpec("reserved", *allocatable, usd_per_node_h=0.0, tier="reserved", min_nodes=reserved,
                          max_nodes=reserved, placement=placement),
             NodePoolSpec("burst", *allocatable, usd_per_node_h=0.0, provision_s=provision_s,
                          scale_down_s=scale_down_s, placement=placement)]
    return replay_nodes(start_s, end_s, *requests, pools).pools[1].peak_nodes


def replayed_peak(history: RolloutIntervals, allocatable: dict[str, float], fallback: ResourceRequest,
                  placement: str = PLACEMENT) -> int:
    """Nodes at the real mix's peaks: every measured rollout's request placed at its start on one
    unbounded pool, never migrated, no delays (the most nodes up at once)."""
    return _one_pool(history, allocatable, fallback, placement, None).pools[0].peak_nodes


def short_at(history: RolloutIntervals, allocatable: dict[str, float], fallback: ResourceRequest, nodes: int,
             placement: str = PLACEMENT) -> int:
    """Rollouts that ``nodes`` nodes, all up, could not place at their start (the fleet was short)."""
    return _one_pool(history, allocatable, fallback, placement, nodes).unplaced


def replay_mixed(slot: Mixed, history: RolloutIntervals, allocatable: dict[str, float], fallback: ResourceRequest,
                 *, provision_s: float = PROVISION_S, scale_down_s: float = SCALE_DOWN_S,
                 placement: str = PLACEMENT, tolerance: Optional[float] = None) -> Mixed:
    """``slot`` (the slot-curve split, with its prices and burst tier) re-priced by the node replay of
    ``history`` on nodes of ``allocatable`` cpu / memory / disk (after the system reserve); a rollout
    whose task sets no request runs at ``fallback``. With ``tolerance``, R is the cheapest whose
    provisioning waits slow the mean step by at most it (plan/order_wait.py; R = the peak waits for
    nothing, so one always is)."""
    # NumPy and numba: only when a replay runs (a plan on a summary loads neither)
    from sandbox_fleet.simulate.engine.nodes import NodePoolSpec, load_if_pays, replay_nodes

    assert slot.reserved_usd_per_node_h is not None and slot.burst_usd_per_node_h is not None  # a priced split
    cpu, memory, disk, assumed = requests_of(history, fallback)
    node = (allocatable["cpu"], allocatable["memory"], allocatable["disk"])

    def run(reserved: int, price_r: float, price_b: float, prov: float, down: float) -> NodeReplay:
        pools = [NodePoolSpec("reserved", *node, usd_per_node_h=price_r, tier="reserved", min_nodes=reserved,
                              max_nodes=reserved, placement=placement),
                 NodePoolSpec("burst", *node, usd_per_node_h=price_b, tier=slot.burst_tier or "on_demand",
                              provision_s=prov, scale_down_s=down, placement=placement)]
        return replay_nodes(history.start_s, history.end_s, cpu, memory, disk, pools)

    peak = run(0, 0.0, 0.0, 0.0, 0.0).pools[1].peak_nodes  # the real mix's peaks, packed, no delays
    load_if_pays(history.count * len(_candidates(peak, history.count)))  # the search's whole work, stated up front
    p_r, p_b = slot.reserved_usd_per_node_h, slot.burst_usd_per_node_h
    costs: list[Optional[float]] = [None] * (peak + 1)
    slows: list[Optional[float]] = [None] * (peak + 1)
    kept: dict[int, NodeReplay] = {}  # the best replay so far (one: a replay holds per-rollout arrays)
    release = step_releases_of(history.start_s, history.end_s)
    index = index_steps(history.end_s, release) if release is not None else None  # read once, for every R

    def rank(r: int) -> tuple[bool, float, int]:  # within the tolerance first, then the cheapest, then the fewest
        return (tolerance is not None and (slows[r] or 0.0) > tolerance, costs[r] or 0.0, r)

    def price(r: int) -> None:
        if costs[r] is not None:
            return
        got = run(r, p_r, p_b, provision_s, scale_down_s)
        costs[r] = float(got.usd_per_h or 0.0)
        slows[r] = wait_cost(history.start_s, history.end_s, got.end_s, release, index).slowdown
        held = next(iter(kept), None)
        if held is None or rank(r) < rank(held):
            kept.clear()
            kept[r] = got

    every = history.count * (peak + 1) <= REPLAY_BUDGET
    for r in _candidates(peak, history.count):
        price(r)
    if not every:  # the grid's best, then every R around it the grid skipped
        step, best = _step(peak, history.count), next(iter(kept))
        for r in range(max(0, best - step + 1), min(peak, best + step - 1) + 1):
            price(r)
    best, won = next(iter(kept.items()))
    billed_cpu_h = sum(p.node_hours for p in won.pools) * allocatable["cpu"]
    stranded = sum(p.stranded_cpu_h for p in won.pools) / billed_cpu_h if billed_cpu_h > 0 else None
    burst = won.pools[1]
    replay = MixedReplay(
        rollouts=history.count, rollouts_assumed_request=assumed, span_h=won.span_s / 3600.0, placement=placement,
        provision_s=provision_s, scale_down_s=scale_down_s, peak_nodes=peak, usd_per_h_by_reserved=costs,
        reserved_node_hours=won.pools[0].node_hours, burst_node_hours=burst.node_hours, burst_launches=burst.launched,
        stranded_cpu_share=stranded, waited=won.waited, wait_s_total=won.wait_s_total, wait_s_max=won.wait_s_max,
        slot_curve_reserved_nodes=slot.reserved_nodes, slot_curve_usd_per_h=slot.usd_per_h,
        basis=_basis(history, assumed, fallback, placement, provision_s, scale_down_s, peak, slot),
        nodes_over_time=_over_time(won),
        wait=_wait(history, won, release, index), slowdown_by_reserved=slows, tolerance=tolerance,
    )
    return slot.model_copy(update={
        "reserved_nodes": best, "burst_nodes": burst.peak_nodes, "usd_per_h": costs[best], "replay": replay,
        "basis": (f"R = {best:,} reserved, the cheapest of R = 0..{peak:,} "
                  f"{_within(tolerance, costs, slows, best)}"
                  f"{'' if every else '(on a grid, then every R around its best: not every R) '}by replaying the "
                  f"{history.count:,} measured rollouts on nodes (the burst billed launch to release); the slot "
                  f"curve's ${slot.usd_per_h:,.4g}/h at R = {slot.reserved_nodes} is a lower bound"),
    })


def _wait(history: RolloutIntervals, won: NodeReplay, release: Optional[np.ndarray],
          index: Optional[StepIndex] = None) -> WaitFigure:
    """The chosen split's provisioning waits as the slowdown of the mean step (plan/order_wait.py)."""
    w = wait_cost(history.start_s, history.end_s, won.end_s, release, index)
    return WaitFigure(method=w.method, slowdown=w.slowdown, steps=w.steps, lengthening_s_mean=w.lengthening_s_mean,
                      lengthening_s_max=w.lengthening_s_max)


def _within(tolerance: Optional[float], costs: list[Optional[float]], slows: list[Optional[float]], best: int) -> str:
    """The tolerance's part in the choice: the cheaper R its waits ruled out, if any."""
    if tolerance is None:
        return ""
    r = ruled_out(costs, slows, best, tolerance)
    if r is None:
        return f"whose waits slow the mean step by at most --tolerance {tolerance:.1%} "
    return (f"whose waits slow the mean step by at most --tolerance {tolerance:.1%} (R = {r:,} would cost "
            f"${costs[r] or 0.0:,.4g}/h but slows it {slows[r] or 0.0:.1%}) ")


def _over_time(won: NodeReplay) -> NodesOverTime:
    edges, up = won.nodes_over_time(CHART_BINS)
    return NodesOverTime(t_h=[float(t) / 3600.0 for t in edges], reserved=[int(v) for v in up[0]],
                         burst=[int(v) for v in up[1]])


def requests_of(history: RolloutIntervals, fallback: ResourceRequest) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Per rollout cpu, memory MB and disk MB, and how many ran at ``fallback`` (their task sets no request)."""
    import numpy as np

    unknown = ~(np.isfinite(history.cpu) & np.isfinite(history.memory_mb))
    cpu = np.where(unknown, fallback.cpu, history.cpu)
    memory = np.where(unknown, fallback.memory, history.memory_mb)
    disk = np.where(unknown, fallback.disk, history.disk_mb)
    return cpu, memory, disk, int(np.count_nonzero(unknown))


def _basis(history: RolloutIntervals, assumed: int, fallback: ResourceRequest, placement: str, provision_s: float,
           scale_down_s: float, peak: int, slot: Mixed) -> str:
    rule = ("packed onto the most-allocated node that fits (MostAllocated, as Karpenter's consolidation prefers)"
            if placement == "pack" else "spread onto the least-allocated node that fits (the scheduler's default)")
    unknown = (f"; {assumed:,} rollouts without a task request run at {fallback.cpu:g} cpu / {fallback.memory:g} MB / "
               f"{fallback.disk:g} MB" if assumed else "")
    return (f"each measured rollout {rule}, reserved nodes first; never migrated; a burst node joins "
            f"{provision_s:g} s after launch (assumed: Karpenter documents no figure) and is released "
            f"{scale_down_s:g} s after its last sandbox ends (the emitted consolidateAfter); billed launch to release; "
            f"{peak:,} nodes at the real mix's peaks (packed, no delays) vs {len(slot.node_share or []) or 'n/a'} "
            f"on the slot curve; the history replayed as it ran (its starts were shaped by the cap it ran under)"
            f"{unknown}")

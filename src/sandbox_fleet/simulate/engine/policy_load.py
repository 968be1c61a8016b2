"""The slots an admission policy leaves each open workload of the pool it shares.

``steady`` tests every open workload's offered work (arrival rate x mean slot time per rollout)
against the slots its pool's policy leaves it, so a queue the policy starves is flagged by
arithmetic, not only when its growth shows in the trend test (a periodic RL release hides a
slow trend in the batch means). The slots are what the policy's rule guarantees others, read off
the scenario (``policies`` states the rules):

- **timeout-ceiling**: a rollout of another workload whose ceiling (start + timeout) outlasts an
  RL workload's next release is admitted only while the slots left at the release still hold the
  whole batch, so such rollouts together hold at most ``cap - batch`` slots (the largest batch).
  The rule can refuse every rollout of a workload whose shortest timeout exceeds the RL
  workload's ``train_s`` (the next release is at most ``train_s`` away): those workloads share
  ``cap - batch``. A workload with a shorter timeout is refused only while the trainer works: no
  bound is stated for it.
- **priority**: a workload holds at most ``nominal + borrow_limit`` slots (no ``borrow_limit``:
  the cap); the other open workloads' nominal quotas are theirs first (up to their offered work),
  and without quotas every higher class is served first (up to its offered work or its limit).
  Closed and RL workloads on a priority pool are not subtracted: the slots stated are an upper
  bound for the open workload, so a load at or above 1 is a queue that grows.
"""

from __future__ import annotations

import math

import numpy as np

from sandbox_fleet.simulate.engine.policies import CEILING, PRIORITY
from sandbox_fleet.simulate.engine.workloads import OPEN, RL, AsyncRL


def shortest_timeout_s(wl) -> float:
    """The shortest ``agent_timeout_s`` of a workload's rollouts (infinite when it has none)."""
    t = wl.resolved_episode().agent_timeout_s
    if t is None:
        return math.inf
    return float(np.min(t)) if isinstance(t, np.ndarray) else float(t)


def ceiling_groups(cap: int, workloads: list, pool: int) -> list[tuple[list[int], int, str]]:
    """``(open workloads, slots they share, why)`` per RL workload of a timeout-ceiling pool."""
    out = []
    for v, rl in enumerate(workloads):
        if rl.pool != pool or rl.kind != RL:
            continue
        assert isinstance(rl, AsyncRL)  # kind RL is the trainer's workloads
        batch = int(rl.batch_sizes.max())
        bound = [w for w, wl in enumerate(workloads)
                 if wl.pool == pool and wl.kind == OPEN and shortest_timeout_s(wl) > rl.train_s]
        if bound:
            out.append((bound, cap - batch, f"timeout-ceiling leaves {cap - batch:,} of {cap:,} slots beside "
                                            f"{_name(rl, v)}'s batch of {batch:,}"))
    return out


def priority_slots(cap: int, workloads: list, pool: int, w: int, offered: dict[int, float]) -> tuple[float, str]:
    """(slots the priority policy leaves open workload ``w`` at most, why); ``offered``: busy slots per open workload."""
    me = workloads[w]
    limit = float(cap if me.nominal is None or me.borrow_limit is None else min(cap, me.nominal + me.borrow_limit))
    quotas = any(wl.nominal is not None for wl in workloads if wl.pool == pool)
    taken, ahead = 0.0, []
    for u, wl in enumerate(workloads):
        if u == w or wl.pool != pool or u not in offered:
            continue
        if quotas:
            claim = min(offered[u], float(wl.nominal or 0))
        elif (wl.priority or 0) > (me.priority or 0):
            lim_u = cap if wl.nominal is None or wl.borrow_limit is None else wl.nominal + wl.borrow_limit
            claim = min(offered[u], float(lim_u))
        else:
            continue
        if claim > 0:
            taken += claim
            ahead.append(_name(wl, u))
    slots = min(limit, cap - taken)
    why = f"priority leaves at most {slots:,.0f} of {cap:,} slots"  # whole numbers: no "." in a key path
    if limit < cap:
        why += f" (its limit nominal + borrow_limit {limit:,.0f})"
    if ahead:
        why += f" after {', '.join(ahead)} ({taken:,.0f} busy slots ahead of it)"
    return slots, why


def policy_tests(fleets: list, workloads: list, offered: dict[int, float]) -> list[tuple[str, float, float]]:
    """``(what, offered busy slots, slots left)`` for every open workload (or group) a policy pool bounds.

    ``offered``: open workload index -> its offered busy slots (arrival rate x mean slot time per rollout).
    """
    out = []
    for p, fleet in enumerate(fleets):
        if fleet.cap is None:
            continue
        if fleet.admission == CEILING:
            for group, slots, why in ceiling_groups(fleet.cap, workloads, p):
                got = [w for w in group if w in offered]
                if got:
                    names = ", ".join(_name(workloads[w], w) for w in got)
                    out.append((f"pool {p} workload{'s' if len(got) > 1 else ''} {names}: {why}",
                                sum(offered[w] for w in got), float(slots)))
        elif fleet.admission == PRIORITY:
            for w in sorted(offered):
                if workloads[w].pool == p:
                    left, why = priority_slots(fleet.cap, workloads, p, w, offered)
                    out.append((f"pool {p} workload {_name(workloads[w], w)}: {why}", offered[w], left))
    return out


def load_of(busy: float, slots: float) -> float:
    """Offered busy slots per slot left; with no slot left, per one slot (any offered work then overflows)."""
    if slots > 0:
        return busy / slots
    return max(busy, 1.0) if busy > 0 else 0.0


def _name(wl, w: int) -> str:
    return wl.name or f"#{w}"

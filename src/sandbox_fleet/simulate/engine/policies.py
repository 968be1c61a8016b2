"""Admission policies that choose among waiting rollouts by more than arrival order.

Both keep one first-come-first-served list per workload and, when a slot is free, start
the best head that the policy admits; a head it refuses does not block the others.

``priority`` (Kueue-like classes and quotas in one shared pool):

- **Quota.** A workload holds at most ``nominal + borrow_limit`` slots (no
  ``borrow_limit``: up to the cap; no ``nominal``: 0). Holding more than ``nominal`` is
  *borrowing*.
- **Order.** A rollout its workload's nominal quota covers starts before any that would
  borrow (nominal slots are guaranteed; borrowing takes what is left); within each group,
  higher ``priority`` first (a workload without one has 0), then the order the rollouts
  entered the queue. Without quotas every rollout borrows: plain priority order.
- **Preemption** (``preempt = true``). A rollout that its quota admits but that finds no
  slot evicts a running rollout of a workload that is borrowing, and either has a lower
  priority or (when the waiting rollout is within its own nominal quota) any priority:
  the lowest priority first, then the latest started (the least work lost). A rollout
  within its nominal quota is never evicted, and an evicted rollout ranks behind the one
  that evicted it, so no two rollouts evict each other in turn. The evicted attempt ends
  as a ``preemption`` (its sandbox time is lost, as a spot reclaim's is) and its rollout
  re-runs from the back of the queue; evictions do not use the retry budget. With a provisioning delay, a waiting rollout evicts only when the
  slots already being provisioned would not reach it.

``timeout-ceiling`` (the source's "admit against the timeout ceiling and reclaim early"):

- **Ceiling.** A rollout's ceiling is its start plus its timeout (``agent_timeout_s``;
  none: infinite), and the pool reclaims its sandbox there: a hold that would run past it
  ends at the ceiling as a timeout (``prepare`` cuts the drawn holds).
- **Room for the next batch.** For each RL workload on the pool, the next release is the
  end of the training step that releases it when that step is training, else the earliest
  it could come (now + ``train_s``; before the first release, ``start_s``). A rollout of
  another workload whose ceiling ends after that release is admitted only if, counting
  every running rollout of the other workloads whose ceiling also ends after it, the
  slots left at the release still hold the whole batch (``cap - batch``).
- **Released batches first.** A waiting rollout of an RL workload starts before any
  waiting rollout of another workload (else work queued before a release would take the
  slots the released batch needs, the same stall at the release itself).
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from sandbox_fleet.simulate.engine import policy_registry
from sandbox_fleet.simulate.engine.entities import NO_PHASE, TIMEOUT, Fleet
from sandbox_fleet.simulate.engine.workloads import RL, Workload

PRIORITY, CEILING = "priority", "timeout-ceiling"
QUOTA_KEYS = ("priority", "nominal", "borrow_limit")


# --- registration (``policy_registry``: the one registration of each policy) -------------------
def _priority_limit(pool: Fleet, wl: Workload) -> int:
    """A workload's slot limit: ``nominal + borrow_limit``, else the cap."""
    limit = int(pool.cap) if pool.cap is not None else int(np.iinfo(np.int64).max)
    if wl.borrow_limit is not None:
        limit = min(limit, int(wl.nominal or 0) + int(wl.borrow_limit))
    return limit


#: a workload's class, nominal quota and slot limit, the kernel's columns the priority hooks read
_PRIORITY_COLUMNS: policy_registry.Columns = {"W_PRIO": lambda pool, wl: int(wl.priority or 0), "W_NOMINAL": lambda pool, wl: int(wl.nominal or 0),
                     "W_LIMIT": _priority_limit}


def _kernel(fn: str) -> str:
    return f"{policy_registry.KERNEL}:{fn}"


# In code order: the kernel's FIFO, PRIORITY, CEILING, SHORTEST (0-3) name these codes.
policy_registry.register_policy("fifo", plain=True)
policy_registry.register_policy(PRIORITY, rank=_kernel("priority_rank"), admits=_kernel("priority_admits"),
                                started=_kernel("priority_started"), victim=_kernel("victim"),
                                evicts=lambda pool: bool(pool.preempt), columns=_PRIORITY_COLUMNS)
policy_registry.register_policy(CEILING, rank=_kernel("ceiling_rank"), admits=_kernel("ceiling_admits"),
                                started=_kernel("ceiling_started"), ended=_kernel("ceiling_ended"))
policy_registry.register_policy("shortest-timeout-first", plain=True, key=_kernel("shortest_key"))
#: the policies that choose among a pool's workloads (every registered one but the plain queues
#: ``fifo`` and ``shortest-timeout-first``), read live from the registry: the admission kernel runs
#: them (the pure loop's, the kernel's oracle, live in ``tests/``)
POLICIES = policy_registry.CHOOSING


# --- checks -------------------------------------------------------------------------------
def problems(pools: list[Fleet], workloads: list[Workload], served: bool) -> Iterator[tuple[str, int, str, str]]:
    """What a scenario gets wrong about these policies: ``(table, index, key, message)`` with
    table ``"fleet"`` or ``"workload"``; ``prepare`` and the scenario builder word it (``served``:
    an inference pool serves the model calls; every policy runs beside one)."""
    for i, pl in enumerate(pools):
        if pl.admission == CEILING and not any(wl.kind == RL and wl.pool == i for wl in workloads):
            yield "fleet", i, "admission", ("'timeout-ceiling' keeps room for an RL workload's next batch; "
                                            f"pool {pl.name} has no RL workload")
    for w, wl in enumerate(workloads):
        pl = pools[wl.pool]
        for key in QUOTA_KEYS:
            value = getattr(wl, key)
            if value is None:
                continue
            if pl.admission != PRIORITY:
                yield "workload", w, key, (f"'{key}' needs its pool's admission = \"priority\" "
                                           f"(pool {pl.name} admits by {pl.admission!r})")
            elif isinstance(value, bool) or int(value) != value or (key != "priority" and value < 0):
                yield "workload", w, key, f"expected a whole number{'' if key == 'priority' else ' >= 0'}, got {value!r}"
            elif key != "priority" and pl.cap is None and not pl.node_pools:
                yield "workload", w, key, f"quotas need a finite cap (pool {pl.name} is unbounded)"
        if wl.borrow_limit is not None and wl.nominal is None:
            yield "workload", w, "borrow_limit", "a borrowing limit needs a nominal quota ('nominal')"
    for i, pl in enumerate(pools):
        mine = [w for w, wl in enumerate(workloads) if wl.pool == i and wl.nominal is not None]
        total = sum(int(workloads[w].nominal or 0) for w in mine)
        if pl.cap is not None and total > pl.cap:
            yield "workload", mine[-1], "nominal", (f"the nominal quotas on pool {pl.name} sum to {total} slots, "
                                                    f"over its cap of {pl.cap}")
        for w in mine:
            wl = workloads[w]
            nominal, borrow = int(wl.nominal or 0), wl.borrow_limit
            if pl.cap is not None and borrow is not None and nominal + borrow > pl.cap:
                yield "workload", w, "borrow_limit", (f"nominal {nominal} + borrow_limit {borrow} exceeds the cap "
                                                      f"of pool {pl.name} ({pl.cap})")


# --- reclaim at the ceiling ----------------------------------------------------------------
def cut_at_ceiling(b: np.ndarray, a: np.ndarray, v: np.ndarray, hold: np.ndarray, state: np.ndarray,
                   phase: np.ndarray, ceiling_s: float | np.ndarray) -> None:
    """Reclaim every attempt whose hold passes ``ceiling_s`` there, in place: its phases end
    where the ceiling falls and it ends as a timeout (the ceiling strikes before anything later)."""
    over = hold > ceiling_s
    if not over.any():
        return
    c = np.broadcast_to(np.asarray(ceiling_s, dtype=float), hold.shape)
    in_build = over & (b >= c)
    in_agent = over & ~in_build & (b + a >= c)
    in_verify = over & ~in_build & ~in_agent
    b[in_build] = c[in_build]
    a[in_build] = 0.0
    v[in_build] = 0.0
    a[in_agent] = c[in_agent] - b[in_agent]
    v[in_agent] = 0.0
    v[in_verify] = c[in_verify] - b[in_verify] - a[in_verify]
    hold[over] = c[over]
    state[over] = TIMEOUT
    phase[over] = NO_PHASE


def cut_one(attempt: tuple[float, float, float, float, int, int], ceiling_s: float) -> tuple[float, float, float, float, int, int]:
    """``cut_at_ceiling`` of one attempt ``(build, agent, verify, hold, state, phase)``."""
    if not attempt[3] > ceiling_s:
        return attempt
    b, a, v, h = (np.array([x], dtype=float) for x in attempt[:4])
    s, p = (np.array([x], dtype=np.int8) for x in attempt[4:])
    cut_at_ceiling(b, a, v, h, s, p, ceiling_s)
    return float(b[0]), float(a[0]), float(v[0]), float(h[0]), int(s[0]), int(p[0])


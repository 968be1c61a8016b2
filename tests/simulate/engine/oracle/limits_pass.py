"""``[fleet.limits]`` where nothing feeds back, as one pass over the arrivals: the oracle of the admission
kernel's ``place`` on one FIFO pool (the FIFO executor's ``fifo.place_limited`` before issue 36 made the
kernel the one engine). Open arrivals on one FIFO pool without retries take their slots in arrival order,
so each attempt's slot comes at ``s = max(arrival, earliest free slot)`` (``free`` empty: an unbounded
pool, ``s`` = arrival), then it claims its sandbox (``fifo.claim``: warm, or the bucket, the starting cap
and the cold start), and its slot is held through the wait and the hold (+ the provisioning delay).
Plain Python on lists; the kernel places the same attempts one event at a time."""

from __future__ import annotations

import math

import numpy as np

from sandbox_fleet.simulate.engine.fifo import claim, place_stream
from sandbox_fleet.simulate.engine.limits_rules import new_state
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput


def place_limited(free, gate, arr_t, ids, i, j, hold, provision_s, start, wait, warm, bucket, pool,
                  creates_per_s, burst, cold_start_s, pool_size, refill_per_s, one_t, one_h, one_s):
    """Place the attempts of ``arr_t[i:j]`` (sorted; attempt ``k`` is rollout ``ids[k]``, or ``k``) with the
    limits in front: ``start[r]`` the slot, ``wait[r]`` slot to sandbox ready, ``warm[r]`` claimed warm."""
    while i < j:
        t = arr_t[i]
        r = i if ids is None else ids[i]
        i += 1
        s = t
        if len(free) > 0 and free[0] > t:
            s = free[0]
        w, is_warm = claim(s, gate, bucket, pool, creates_per_s, burst, cold_start_s, pool_size, refill_per_s,
                           one_t, one_h, one_s)
        if len(free) > 0:
            one_t[0] = t
            one_h[0] = w + hold[r]
            place_stream(free, one_t, None, 0, 1, one_h, provision_s, one_s, None)
        start[r] = s
        wait[r] = w
        warm[r] = is_warm
    return i


def run_limits_pass(prep: Prepared) -> ExecutorOutput:
    """The whole run (one FIFO pool with limits, open arrivals, no retries) in one call of ``place_limited``."""
    assert len(prep.pools) == 1 and not prep.any_retry
    pl = prep.pools[0]
    lim = pl.limits
    assert lim is not None and lim.places
    N = prep.n
    start, wait, warm = [math.nan] * N, [0.0] * N, [False] * N
    place_limited([0.0] * (pl.cap or 0), [0.0] * (lim.max_starting or 0), prep.arr_t, prep.arr_r, 0, N, prep.hold,
                  float(pl.provision_delay_s), start, wait, warm, new_state(float(lim.burst)),
                  new_state(float(lim.warm_pool_size)), float(lim.creates_per_s or 0.0), float(lim.burst),
                  float(lim.cold_start_s), float(lim.warm_pool_size), float(lim.warm_pool_refill_per_s or 0.0),
                  [0.0], [0.0], [0.0])
    arrival = np.full(N, math.nan)
    arrival[ids_index(prep.arr_ids)] = prep.arr_t_np
    s, w = np.array(start, dtype=float), np.array(wait, dtype=float)
    first = {"arrival_s": arrival, "start_s": s, "finish_s": s + (w + prep.hold_np), "state": prep.plan.copy(),
             "phase": prep.phase, "build_s": w + prep.build, "agent_s": prep.agent, "verify_s": prep.verify}
    extra: dict[str, list] = {k: [] for k in ("rollout", "attempt", "arrival_s", "start_s", "state", "phase",
                                              "build_s", "agent_s", "verify_s", "finish_s")}
    return ExecutorOutput(first=first, extra=extra, limits={"warm": np.array(warm, dtype=bool), "ready_wait_s": w})

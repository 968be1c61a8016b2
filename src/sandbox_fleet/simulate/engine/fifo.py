"""The FIFO step, ``place_stream``, and the admission kernel's closed form for a run where nothing feeds back.

Under first-come-first-served, an attempt starts at ``max(its arrival, the earliest
time a slot is free)`` and that slot is next free at ``finish + provision_delay``
(the Kiefer-Wolfowitz recursion for the G/G/c queue). ``place_stream`` is that claim on one
pool's heap of slot-free times, one ``heapreplace`` an attempt, with no finish events at all.

The admission kernel (``fast/admit_loop``) is the engine: it runs every scenario. A run in which
nothing feeds back (``one_pass_refusal`` is None: open arrivals on one capped FIFO pool without a
start cap, preemption, queue timeout, node pools or ``[fleet.limits]``, and no first attempt that
retries) is the kernel's closed form, one pass of ``place_stream`` over the arrivals
(``run_one_pass``): the kernel would place the same attempts in the same order, one event at a time
(tests compare them, and the oracle in ``tests/``). The kernel's ``place`` calls ``claim`` (the
``[fleet.limits]`` sequencing), which calls ``place_stream`` for the starting-at-once cap.

``place_stream`` is one source that numba compiles (on NumPy arrays, ``fast/fifo_compiled.py``,
when the run is large enough to pay numba's load) and that otherwise runs as plain Python (on
lists: small runs, no numba, ``NUMBA_DISABLE_JIT=1`` or ``SANDBOX_FLEET_PURE_PYTHON=1``), with the
same bits either way; the plan's RL-step search calls it too (``batch_makespans``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from sandbox_fleet.simulate.engine.entities import Fleet
from sandbox_fleet.simulate.engine.limits_rules import bucket_take, warm_take
from sandbox_fleet.simulate.engine.prepare import Prepared, ids_index
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.workloads import CLOSED, RL, Workload


def place_stream(free, arr_t, ids, i, j, hold, provision_s, start, stop):
    """Place the attempts entering one pool's queue at ``arr_t[i:j]`` (sorted): attempt ``k`` is
    rollout ``r = ids[k]`` (``k`` itself when ``ids`` is None), holds ``hold[r]``, and starts at
    ``max(arr_t[k], the earliest time a slot is free)``, written to ``start[r]``; that slot is
    next free at ``start + hold[r] (+ provision_s)``. ``free``: the pool's slot-free times as a
    heap (updated in place, element for element as ``heapq.heapreplace`` leaves it). Stops right
    after an attempt whose ``stop[r]`` is true (``stop`` None: none does); returns the index after
    the last attempt placed.

    Lists or NumPy arrays: numba compiles it for arrays (``fast.fifo_compiled``), plain Python
    runs it on either, with the same bits (no fused multiply-add; the same comparisons)."""
    c = len(free)
    limit = c >> 1
    while i < j:
        t = arr_t[i]
        if ids is None:
            r = i
        else:
            r = ids[i]
        i += 1
        f0 = free[0]
        s = f0 if f0 > t else t
        v = s + hold[r]
        if provision_s != 0.0:  # Python's truthiness: -0.0 adds nothing, NaN does
            v = v + provision_s
        # heapreplace(free, v) as CPython's heapq does it: the smaller child rises until the hole
        # is a leaf (ties: the right child), then v sifts down from there.
        pos = 0
        while pos < limit:
            child = 2 * pos + 1
            if child + 1 < c and not free[child] < free[child + 1]:
                child += 1
            free[pos] = free[child]
            pos = child
        while pos > 0:
            parent = (pos - 1) >> 1
            up = free[parent]
            if not v < up:
                break
            free[pos] = up
            pos = parent
        free[pos] = v
        start[r] = s
        if stop is not None:
            if stop[r]:
                break
    return i


def claim(s, gate, bucket, pool, creates_per_s, burst, cold_start_s, pool_size, refill_per_s, one_t, one_h, one_s):
    """An attempt that took its slot at ``s`` claims a sandbox (``limits_rules``, in docs/providers.md's
    order): from the warm pool (``pool_size`` > 0) when one is ready, else created cold: the bucket
    (``creates_per_s`` > 0), a starting slot (``gate`` non-empty: the starting-at-once cap,
    ``place_stream`` on its heap with the cold start as the hold), then the cold start. Returns
    (the wait from ``s`` to the sandbox ready, claimed warm). The one sequencing of the limits: the
    admission kernel's ``_admit_kernel.place`` calls it (and the oracle pass in ``tests/``)."""
    if pool_size > 0:
        if warm_take(pool, s, refill_per_s, pool_size):
            return 0.0, True
    c = s
    if creates_per_s > 0.0:
        c = bucket_take(bucket, s, creates_per_s, burst)
    if len(gate) > 0:
        one_t[0] = c
        one_h[0] = cold_start_s
        place_stream(gate, one_t, None, 0, 1, one_h, 0.0, one_s, None)
        c = one_s[0]
    return (c - s) + cold_start_s, False


def limited_any(pools) -> bool:
    """Whether some pool's limits move attempts in time (``SandboxLimits.places``)."""
    return any(pl.limits is not None and pl.limits.places for pl in pools)


def limits_refusal(pools, inference) -> str | None:
    """Why a pool's limits that move attempts in time (a bucket, a starting cap, a cold start, a warm
    pool: ``SandboxLimits.places``) cannot be simulated (``None``: they can, or there are none). The
    admission kernel claims them (``_admit_kernel.place``), but not beside an inference pool."""
    if not limited_any(pools) or inference is None:
        return None
    return ("a creation bucket, starting cap, cold start or warm pool ([fleet.limits]) is simulated by the "
            "admission kernel, not beside an inference pool; here an inference pool serves the model calls")


def batch_makespans(holds: np.ndarray, cap: int) -> np.ndarray:
    """Each row's makespan: a batch (the row's holds, in order) entering ``cap`` free slots together
    at 0 and placed by the rule, as a released RL batch takes a FIFO pool's slots (no builds, no
    provisioning): the largest start + hold. The plan's RL-step search runs on it."""
    from sandbox_fleet.simulate.engine.fast import fifo_compiled

    rows, n = holds.shape
    out = np.zeros(rows)
    if n == 0:
        return out
    place = fifo_compiled.compiled_for(fifo_compiled.placements(holds.size, cap))
    if place is not None:
        at_zero, start = np.zeros(n), np.empty(n)
        for k in range(rows):
            row = np.ascontiguousarray(holds[k], dtype=float)
            place(np.zeros(cap), at_zero, None, 0, n, row, 0.0, start, None)
            out[k] = np.max(start + row)
    else:
        at_zero_l, start_l = [0.0] * n, [0.0] * n
        for k, row_l in enumerate(holds.tolist()):
            place_stream([0.0] * cap, at_zero_l, None, 0, n, row_l, 0.0, start_l, None)
            out[k] = max([s + h for s, h in zip(start_l, row_l)])
    return out




def pool_refusal(pl: Fleet) -> str | None:
    """Why a pool's attempts feed back on the order they take its slots (``None``: they do not)."""
    if pl.admission != "fifo":
        return f"admission {pl.admission!r}"
    if pl.node_pools is not None:
        return "node pools"
    if pl.cap is None:
        return "no cap (the pass places on a heap of slots)"
    if pl.start_cap is not None:
        return "a start_cap"
    if pl.preempt_rate_per_node_s != 0:
        return "preemption"
    if pl.queue_timeout_s is not None:
        return "a queue_timeout_s"
    if pl.limits is not None and pl.limits.places:
        return "[fleet.limits] (claimed by the admission kernel's place)"
    return None


def one_pass_refusal(pools: Sequence[Fleet], workloads: Sequence[Workload], inference, retries: bool) -> str | None:
    """Why a run is not one pass of ``place_stream`` (``None``: it is, and nothing feeds back).

    The pass places every attempt at ``max(arrival, earliest free slot)`` with holds fixed in
    advance, so it needs fixed holds (no inference pool), arrivals that do not wait on finishes (no
    closed population, no RL workload), one capped pool where the first in line always takes the
    next free slot, and no attempt entering the queue when another ends (``retries``: some first
    attempt may retry; ``Prepared.any_retry`` for a drawn run)."""
    if inference is not None:
        return "an inference pool serves the model calls (holds follow the GPU load)"
    for w, wl in enumerate(workloads):
        if wl.kind == CLOSED:
            return f"workload {wl.name or f'w{w}'} is a closed population (its arrivals wait on finishes)"
        if wl.kind == RL:
            return f"workload {wl.name or f'w{w}'} is RL (its batches wait on the trainer)"
    if len(pools) > 1:
        return "several pools"
    why = pool_refusal(pools[0])
    if why is not None:
        return f"the fleet has {why}"
    if retries:
        return "retries (a retry enters the queue when its attempt ends)"
    return None


def run_one_pass(prep: Prepared) -> ExecutorOutput:
    """The admission kernel's closed form for a run where nothing feeds back (``one_pass_refusal`` is
    None): every open arrival in one call of ``place_stream``, numba's build when the run pays its
    load (``fifo_compiled.compiled``), else the plain-Python rule on lists; the same bits either way."""
    from sandbox_fleet.simulate.engine.fast import fifo_compiled

    N, cap, provision_s = prep.n, prep.pools[0].cap, float(prep.pools[0].provision_delay_s)
    assert cap is not None  # one_pass_refusal: a single capped pool
    place = fifo_compiled.compiled(prep)
    if place is not None:
        ids = None if prep.arr_in_order else np.ascontiguousarray(np.asarray(prep.arr_ids, dtype=np.int64))
        start = np.empty(N) if ids is None else np.full(N, math.nan)
        place(np.zeros(cap), np.ascontiguousarray(prep.arr_t_np, dtype=float), ids, 0, N,
              np.ascontiguousarray(prep.hold_np, dtype=float), provision_s, start, None)
    else:
        starts = [math.nan] * N
        place_stream([0.0] * cap, prep.arr_t, None if prep.arr_in_order else prep.arr_r, 0, N, prep.hold,
                     provision_s, starts, None)
        start = np.array(starts, dtype=float)
    if prep.arr_in_order:  # the run's own arrivals (every workload's ``arrivals`` gives a fresh array)
        arrival = prep.arr_t_np
    else:
        arrival = np.full(N, math.nan)
        arrival[ids_index(prep.arr_ids)] = prep.arr_t_np
    first = {"arrival_s": arrival, "start_s": start, "finish_s": start + prep.hold_np, "state": prep.plan.copy(),
             "phase": prep.phase, "build_s": prep.build, "agent_s": prep.agent, "verify_s": prep.verify}
    extra: dict[str, list] = {k: [] for k in ("rollout", "attempt", "arrival_s", "start_s", "state", "phase",
                                              "build_s", "agent_s", "verify_s", "finish_s")}
    return ExecutorOutput(first=first, extra=extra)

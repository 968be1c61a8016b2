"""``run_workloads``: the low-level entry point (scenario files and ``synth`` build on it).

::

    from sandbox_fleet.simulate import Fleet, SyncRL, LogNormal, run_workloads
    res = run_workloads(Fleet(cap=3000, provision_delay_s=2.0),
                        [SyncRL(batch=512, steps=50, train_s=300, holds=LogNormal(1332, 1.0))],
                        seed=1)
    res.start_s, res.finish_s, res.to_telemetry(), res.summary()

``executors.py`` chooses which executor places the pre-drawn attempts in time (the
first-come-first-served recursion of ``fifo.py`` or the admission kernel of ``fast/admit_loop.py``)
and says why the other cannot;
every executor returns an ``ExecutorOutput``, turned here into a ``SimResult``.
``engine="fifo"`` / ``"events"`` force a family; tests check the executors give identical
results wherever two can run a scenario.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from sandbox_fleet.simulate.engine.entities import RETRIED, Fleet
from sandbox_fleet.simulate.engine.executors import choose
from sandbox_fleet.simulate.engine.invariants import check_invariants
from sandbox_fleet.simulate.engine.prepare import prepare
from sandbox_fleet.simulate.engine.result import SimResult
from sandbox_fleet.simulate.engine.workloads import Workload


def run_workloads(
    fleet: Fleet | Sequence[Fleet],
    workloads: Sequence[Workload],
    seed: int,
    *,
    engine: str = "auto",
    check: bool = True,
    on_progress: Callable[[int, int], None] | None = None,
    inference=None,
) -> SimResult:
    """Simulate ``workloads`` on ``fleet`` and return every attempt placed in time.

    ``fleet``: one pool shared by every workload, or a list of pools (each workload
    uses ``fleets[workload.pool]``). ``seed``: every random stream derives from it,
    one per subsystem. ``engine``: ``"auto"``, ``"fifo"`` or ``"events"`` (``executors.choose``;
    ``res.engine`` names the executor that ran).
    ``check`` runs the named invariants (``invariants.py``) and raises
    ``InvariantError`` on a violation. ``on_progress(done, total)`` is called now and
    then with the number of rollouts that reached a terminal state. ``inference``: an
    ``inference.Inference`` pool serving every turn's model call (workloads then give
    turns with token draws instead of a model latency); runs on the general loop.
    """
    wall0 = time.perf_counter()
    prep = prepare(fleet, list(workloads), seed, inference)
    executor = choose(prep, engine)
    out = executor.run(prep, on_progress)
    if on_progress is not None:
        on_progress(prep.n, prep.n)

    first, extra = out.first, out.extra
    n = prep.n
    rows = {  # first attempts, then any retries (no copy when there are none)
        "rollout": np.arange(n, dtype=np.int64),
        "attempt": np.zeros(n, dtype=np.int64),
    }
    for k in ("rollout", "attempt"):
        if len(extra[k]):
            rows[k] = np.concatenate((rows[k], np.asarray(extra[k], dtype=np.int64)))
    for k, v in first.items():
        rows[k] = np.concatenate((v, np.asarray(extra[k], dtype=v.dtype))) if extra[k] else v
    term = rows["state"] != RETRIED
    ends = [float((rows["finish_s"] if term.all() else rows["finish_s"][term]).max())] if n else [0.0]
    ends += [st.train_end_s[-1] for st in out.rl.values()]
    res = SimResult.build(
        workloads=prep.workloads,
        fleets=prep.pools,
        offsets=prep.offsets,
        r_label=prep.r_label,
        rows=rows,
        r_arrival=first["arrival_s"],
        rl={w: st.arrays() for w, st in out.rl.items()},
        preemptions=out.preemptions,
        area_busy=out.area_busy,
        area_wait=out.area_wait,
        end_s=max(ends),
        engine=executor.name,
    )
    res.clock_monotonic = out.clock_monotonic
    res.images, res.turns_total = prep.images if out.images is None else out.images, prep.turns_total
    res.inference = out.served
    res.limits = out.limits
    res.nodes = out.nodes
    res.wall_s = time.perf_counter() - wall0
    if check:
        n = prep.n
        # What the checks do not read (the run's own hold and retry arrays, the loop's output) is
        # freed first, so the allocator hands its memory to the checks' temporaries instead of new pages.
        del prep, out, first, extra, rows, term
        check_invariants(res, n_expected=n)
    return res


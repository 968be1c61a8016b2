"""``run_workloads``: the low-level entry point (scenario files and ``synth`` build on it).

::

    from sandbox_fleet.simulate import Fleet, SyncRL, LogNormal, run_workloads
    res = run_workloads(Fleet(cap=3000, provision_delay_s=2.0),
                        [SyncRL(batch=512, steps=50, train_s=300, holds=LogNormal(1332, 1.0))],
                        seed=1)
    res.start_s, res.finish_s, res.to_telemetry(), res.summary()

Two interchangeable loops place the pre-drawn attempts in time: ``fifo.py`` (the
first-come-first-served recursion, one heap operation per attempt) whenever every
pool is FIFO with no start cap, preemption or queue timeout, else ``loop.py`` (the
general event list). ``engine="events"`` forces the general loop; tests check both
give identical results. A run with an inference pool goes to the compiled kernel of
``fast/pool_loop.py`` when numba is installed and the run is in its feature set
(byte-identical to ``loop.py``; ``SANDBOX_FLEET_PURE_PYTHON=1`` forces the pure loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.entities import RETRIED, Fleet
from sandbox_fleet.simulate.fifo import eligible, refusal, run_fifo
from sandbox_fleet.simulate.invariants import check_invariants
from sandbox_fleet.simulate.loop import run_events
from sandbox_fleet.simulate.prepare import prepare
from sandbox_fleet.simulate.result import SimResult
from sandbox_fleet.simulate.workloads import Workload


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
    one per subsystem. ``engine``: ``"auto"``, ``"fifo"`` or ``"events"``.
    ``check`` runs the named invariants (``invariants.py``) and raises
    ``InvariantError`` on a violation. ``on_progress(done, total)`` is called now and
    then with the number of rollouts that reached a terminal state. ``inference``: an
    ``inference.Inference`` pool serving every turn's model call (workloads then give
    turns with token draws instead of a model latency); runs on the general loop.
    """
    wall0 = time.perf_counter()
    prep = prepare(fleet, list(workloads), seed, inference)
    if engine not in ("auto", "fifo", "events"):
        raise InputError(f"engine must be auto, fifo or events, got {engine!r}")
    use_fifo = engine == "fifo" or (engine == "auto" and eligible(prep))
    if engine == "fifo" and not eligible(prep):
        raise InputError("engine 'fifo' needs FIFO pools without start_cap, preemption or queue_timeout_s, "
                         f"no closed population and no inference pool ({refusal(prep)})")
    if use_fifo:
        raw = run_fifo(prep, on_progress)
    elif _compiled(prep):
        from sandbox_fleet.simulate.fast import pool_loop

        raw = pool_loop.run(prep, on_progress)
    else:
        raw = run_events(prep, on_progress)
    if on_progress is not None:
        on_progress(prep.n, prep.n)

    first, extra = raw["first"], raw["extra"]
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
    ends += [st.train_end_s[-1] for st in raw["rl"].values()]
    res = SimResult.build(
        workloads=prep.workloads,
        fleets=prep.pools,
        offsets=prep.offsets,
        r_label=prep.r_label,
        rows=rows,
        r_arrival=first["arrival_s"],
        rl={w: st.arrays() for w, st in raw["rl"].items()},
        preemptions=raw["preemptions"],
        area_busy=raw["area_busy"],
        area_wait=raw["area_wait"],
        end_s=max(ends),
        engine="fifo" if use_fifo else "events",
    )
    res.clock_monotonic = raw["clock_monotonic"]
    res.images, res.turns_total = prep.images, prep.turns_total
    if raw.get("served") is not None:
        res.inference = raw["served"]
    elif raw.get("inference") is not None:
        from sandbox_fleet.simulate.inference.figures import served_run

        res.inference = served_run(raw["inference"], prep)
    res.wall_s = time.perf_counter() - wall0
    if check:
        n = prep.n
        # What the checks do not read (the run's own hold and retry arrays, the loop's output) is
        # freed first, so the allocator hands its memory to the checks' temporaries instead of new pages.
        del prep, raw, first, extra, rows, term
        check_invariants(res, n_expected=n)
    return res


def _compiled(prep) -> bool:
    """Whether the compiled kernel (``simulate.fast``, the ``fast`` extra) runs this
    general-loop run: numba is installed, not switched off, the run is in its set, and
    large enough to repay loading numba (or the kernel is loaded already)."""
    from sandbox_fleet.simulate import fast

    if prep.inference is None or not fast.available():
        return False
    from sandbox_fleet.simulate.fast.pool_loop import supported, worth_it

    return supported(prep) and worth_it(prep)

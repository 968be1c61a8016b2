"""``run_workloads``: the low-level entry point (scenario files and ``synth`` build on it).

::

    from sandbox_fleet.simulate import Fleet, SyncRL, LogNormal, run_workloads
    res = run_workloads(Fleet(cap=3000, provision_delay_s=2.0),
                        [SyncRL(batch=512, steps=50, train_s=300, holds=LogNormal(1332, 1.0))],
                        seed=1)
    res.start_s, res.finish_s, res.to_telemetry(), res.summary()

The admission kernel (``fast/admit_loop.py``) places the pre-drawn attempts in time, every
scenario; ``place`` is the one dispatch: a run where nothing feeds back
(``fifo.one_pass_refusal`` is None) takes the kernel's closed form, one pass of
``fifo.place_stream`` (``fifo.run_one_pass``). Both return an ``ExecutorOutput``, turned here
into a ``SimResult``. ``engine="fifo"`` asks for the one pass (a run with feedback is refused,
naming why), ``"events"`` for the kernel's event loop; tests check the two give identical
results wherever the pass applies.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import get_args

import numpy as np

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import fast, fifo
from sandbox_fleet.simulate.engine.entities import RETRIED, Engine, Fleet
from sandbox_fleet.simulate.engine.invariants import check_invariants
from sandbox_fleet.simulate.engine.prepare import Prepared, prepare
from sandbox_fleet.simulate.engine.result import ExecutorOutput, SimResult
from sandbox_fleet.simulate.engine.workloads import Workload

ENGINES: tuple[str, ...] = get_args(Engine)  # the values of ``run.engine`` / ``run_workloads(engine=...)``
ONE_PASS, KERNEL = "fifo", "admission-kernel"  # what ``SimResult.engine`` names (``--timing`` shows it)


def place(prep: Prepared, engine: str = "auto", on_progress=None) -> tuple[str, ExecutorOutput]:
    """Place ``prep``'s attempts in time: the one dispatch. Returns which path ran (``ONE_PASS``, the
    kernel's closed form for a run where nothing feeds back, or ``KERNEL``) and its output.
    ``engine``: ``"auto"``, ``"fifo"`` (the one pass; a run with feedback is an ``InputError``
    naming why) or ``"events"`` (the kernel's event loop even where the pass applies)."""
    from sandbox_fleet.simulate.engine.fast import admit_loop

    if engine not in ENGINES:
        raise InputError(f"engine must be auto, fifo or events, got {engine!r}")
    if engine != "events":
        why = fifo.one_pass_refusal(prep.pools, prep.workloads, prep.inference, prep.any_retry)
        if why is None:
            return ONE_PASS, fifo.run_one_pass(prep)
        if engine == "fifo":
            raise InputError(fifo_refusal_text(why))
    why = admit_loop.refusal(prep)
    if why is not None:
        raise InputError(f"the admission kernel cannot run this scenario ({why})")
    return KERNEL, admit_loop.run(prep, on_progress)


def fifo_refusal_text(why: str) -> str:
    """The error for ``engine = "fifo"`` on a run with feedback."""
    return f"engine 'fifo' cannot run this scenario ({why}); use \"auto\" or \"events\""


def preload_kernel_if_pays(pools: Sequence[Fleet], workloads: Sequence[Workload], inference, runs: int) -> None:
    """``preload_kernel`` when ``runs`` runs of this scenario go to the admission kernel's event loop
    (not the one pass: RL, closed populations, policies, retries...) and their rollouts pay numba's load
    (``admit_loop.MIN_ROLLOUTS``: the rent-or-buy rule, stated up front). A sweep calls it before it
    forks its workers, so they share one load instead of each paying its own after a plain run."""
    from sandbox_fleet.simulate.engine.fast.admit_loop import MIN_ROLLOUTS

    retries = any(wl.retry.max_retries > 0 for wl in workloads)  # (before the draws: may retry)
    if (fifo.one_pass_refusal(pools, workloads, inference, retries) is not None
            and runs * sum(wl.count for wl in workloads) >= MIN_ROLLOUTS):
        preload_kernel()


def preload_kernel() -> None:
    """Load the compiled admission kernel now when it may run at all: a search runs many small loops
    in each worker, and paying the load once per process lets every one of them run compiled
    (``admit_loop.worth_it`` then holds for runs of any size)."""
    if fast.available():
        from sandbox_fleet.simulate.engine.fast.admit_loop import load

        load()


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
    one per subsystem. ``engine``: ``"auto"``, ``"fifo"`` or ``"events"`` (``place``;
    ``res.engine`` names the path that ran).
    ``check`` runs the named invariants (``invariants.py``) and raises
    ``InvariantError`` on a violation. ``on_progress(done, total)`` is called now and
    then with the number of rollouts that reached a terminal state. ``inference``: an
    ``inference.Inference`` pool serving every turn's model call (workloads then give
    turns with token draws instead of a model latency); runs on the general loop.
    """
    wall0 = time.perf_counter()
    prep = prepare(fleet, list(workloads), seed, inference)
    ran, out = place(prep, engine, on_progress)
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
        engine=ran,
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


"""Which executor runs a prepared scenario: the one place in the simulator that chooses.

Two executors place a run's attempts in time, behind one contract
(``run(prep, on_progress) -> result.ExecutorOutput``); wherever two of them can run the same
scenario they give the same bytes (tests compare every pair):

====================== ============================================ ==========================================
name                   what                                         runs
====================== ============================================ ==========================================
``fifo``               the first-come-first-served recursion        open arrivals on FIFO pools without a start
                       (``fifo.py``; its rule compiled by numba     cap, preemption or queue timeout; no closed
                       when the run pays the load)                  population, no RL workload, no inference
                                                                    pool; ``[fleet.limits]`` on one pool
                                                                    without retries
``admission-kernel``   the admission loop (``fast/admit_loop``):    every other run: every admission policy,
                       numba's build, or its source as plain        start caps, queue timeouts, retries, node
                       Python for runs too small to pay the load    preemption, ``[fleet.limits]``, the
                                                                    inference pool (``fast/_inference_rules``),
                                                                    and every RL workload (the trainer's rules
                                                                    are the kernel's), dynamic sampling too
====================== ============================================ ==========================================

``EXECUTORS`` holds them in the order ``engine="auto"`` tries them; each says whether it can run
a prepared scenario and, if not, why (``why_not``, a reason in words). ``engine="fifo"`` keeps
the FIFO executor, ``engine="events"`` the admission kernel (the event loop it replaced is its oracle
in ``tests/simulate/engine/oracle/``); a forced family that cannot run the
scenario is an ``InputError`` naming the reason. ``SANDBOX_FLEET_PURE_PYTHON=1`` runs the
admission kernel and the FIFO rule as plain Python.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import ClassVar, get_args

from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine import fast
from sandbox_fleet.simulate.engine.entities import Engine, Fleet
from sandbox_fleet.simulate.engine.fifo import limited_any, one_pass, run_fifo, run_one_pass
from sandbox_fleet.simulate.engine.prepare import Prepared
from sandbox_fleet.simulate.engine.result import ExecutorOutput
from sandbox_fleet.simulate.engine.workloads import CLOSED, RL, Workload

ENGINES: tuple[str, ...] = get_args(Engine)  # the values of ``run.engine`` / ``run_workloads(engine=...)``
Progress = Callable[[int, int], None] | None


def pool_refusal(pl: Fleet) -> str | None:
    """Why the FIFO recursion cannot run this pool (``None``: it can)."""
    if pl.admission != "fifo":
        return f"admission {pl.admission!r}"
    if pl.start_cap is not None:
        return "a start_cap"
    if pl.preempt_rate_per_node_s != 0:
        return "preemption"
    if pl.queue_timeout_s is not None:
        return "a queue_timeout_s"
    if pl.node_pools is not None:
        return "node pools (placed by the admission kernel)"
    return None


def fifo_refusal(pools: Sequence[Fleet], workloads: Sequence[Workload], inference) -> str | None:
    """Why the FIFO recursion cannot run these pools and workloads (``None``: it can).

    It places every attempt at ``max(arrival, earliest free slot)`` with holds fixed in advance,
    so it needs fixed holds (no inference pool), arrivals that do not wait on finishes (no
    closed population, no RL workload: the trainer's rules are the admission kernel's) and pools
    where the first in line always takes the next free slot."""
    if inference is not None:
        return "an inference pool serves the model calls (holds follow the GPU load)"
    for w, wl in enumerate(workloads):
        if wl.kind == CLOSED:
            return f"workload {wl.name or f'w{w}'} is a closed population (its arrivals wait on finishes)"
        if wl.kind == RL:
            return f"workload {wl.name or f'w{w}'} is RL (its batches wait on the trainer, the admission kernel's)"
    for pl in pools:
        why = pool_refusal(pl)
        if why is not None:
            return f"{f'pool {pl.name}' if len(pools) > 1 else 'the fleet'} has {why}"
    return None


class Executor:
    """One way to run a prepared scenario (subclasses: the rows of the module's table)."""

    name: ClassVar[str]
    family: ClassVar[str]  # the ``engine`` value that forces this family

    def why_not(self, prep: Prepared) -> str | None:
        """Why this executor cannot run ``prep`` (``None``: it can)."""
        raise NotImplementedError

    def run(self, prep: Prepared, on_progress: Progress = None) -> ExecutorOutput:
        raise NotImplementedError


class Fifo(Executor):
    name, family = "fifo", "fifo"

    def why_not(self, prep: Prepared) -> str | None:
        why = fifo_refusal(prep.pools, prep.workloads, prep.inference)
        if why is None and limited_any(prep.pools) and (len(prep.pools) > 1 or max(prep.max_retries, default=0) > 0):
            why = "[fleet.limits] with retries or several pools (the admission kernel places them)"
        return why

    def run(self, prep: Prepared, on_progress: Progress = None) -> ExecutorOutput:
        # One pass of the recursion is one call of its rule; anything else merges a heap of
        # retries with the arrivals.
        return run_one_pass(prep) if one_pass(prep) else run_fifo(prep, on_progress)


class AdmissionKernel(Executor):
    """Compiled when numba may run and the run pays its load, else the same source as plain Python."""

    name, family = "admission-kernel", "events"

    def why_not(self, prep: Prepared) -> str | None:
        from sandbox_fleet.simulate.engine.fast import admit_loop

        why = admit_loop.refusal(prep)
        return None if why is None else f"outside the admission kernel's feature set ({why})"

    def run(self, prep: Prepared, on_progress: Progress = None) -> ExecutorOutput:
        from sandbox_fleet.simulate.engine.fast import admit_loop

        return admit_loop.run(prep, on_progress)


EXECUTORS: tuple[Executor, ...] = (Fifo(), AdmissionKernel())
NAMES = tuple(ex.name for ex in EXECUTORS)


def refusals(prep: Prepared) -> dict[str, str | None]:
    """Every executor's answer for ``prep``: ``None`` where it can run it, else why not."""
    return {ex.name: ex.why_not(prep) for ex in EXECUTORS}


def choose(prep: Prepared, engine: str = "auto") -> Executor:
    """The first executor of ``EXECUTORS`` (of the forced family, unless ``engine`` is
    ``"auto"``) that can run ``prep``; a forced family that cannot is an ``InputError``."""
    if engine not in ENGINES:
        raise InputError(f"engine must be auto, fifo or events, got {engine!r}")
    last = None
    for ex in EXECUTORS:
        if engine != "auto" and ex.family != engine:
            continue
        last = ex.why_not(prep)
        if last is None:
            return ex
    raise InputError(forced_refusal(engine, last or "no executor of that family"))


def forced_refusal(engine: str, why: str) -> str:
    """The error text for a forced ``engine`` that cannot run the scenario."""
    return f"engine {engine!r} cannot run this scenario ({why}); use \"auto\" or \"events\""


def preload_kernel_if_pays(pools: Sequence[Fleet], workloads: Sequence[Workload], inference, runs: int) -> None:
    """``preload_kernel`` when ``runs`` runs of this scenario go to the admission kernel (the FIFO
    recursion refuses it: RL, closed populations, policies...) and their rollouts pay numba's load
    (``admit_loop.MIN_ROLLOUTS``: the rent-or-buy rule, stated up front). A sweep calls it before it
    forks its workers, so they share one load instead of each paying its own after a plain run."""
    from sandbox_fleet.simulate.engine.fast.admit_loop import MIN_ROLLOUTS

    if fifo_refusal(pools, workloads, inference) is not None and runs * sum(wl.count for wl in workloads) >= MIN_ROLLOUTS:
        preload_kernel()


def preload_kernel() -> None:
    """Load the compiled admission kernel now when it may run at all: a search runs many small loops
    in each worker, and paying the load once per process lets every one of them run compiled
    (``admit_loop.worth_it`` then holds for runs of any size)."""
    if fast.available():
        from sandbox_fleet.simulate.engine.fast.admit_loop import load

        load()

"""Where sweep tasks run: in-process, a local process pool, or Ray.

Every backend returns results in task order, whatever order they finish in, so the
output never depends on the backend or the worker count.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from typing import Any

from sandbox_fleet.errors import InputError

BACKENDS = ("local", "ray")
RAY_HINT = "pip install 'sandbox-fleet[ray]'"
#: A local sweep whose tasks add up to less than this (judged by the first) runs in-process:
#: forking workers and shipping results costs about this much on two cores.
IN_PROCESS_BELOW_S = 0.5
#: Each worker computes alone: BLAS and OpenMP pools would only fight the other workers for cores.
WORKER_THREADS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def default_workers() -> int:
    return os.cpu_count() or 1


@contextmanager
def _progress(enabled: bool, total: int, label: str):
    if not enabled:
        yield lambda: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                   console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task(label, total=total)
        yield lambda: bar.advance(task)


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], *, backend: str = "local", workers: int | None = None,
              progress: bool = False, label: str = "sweep") -> list[Any]:
    """``[fn(*t) for t in tasks]``, run by ``backend`` on ``workers`` (default: cores)."""
    if backend not in BACKENDS:
        raise InputError(f"--backend {backend!r}: expected one of {', '.join(BACKENDS)}")
    if workers is not None and workers < 1:
        raise InputError(f"--workers {workers}: expected a positive integer")
    n = default_workers() if workers is None else workers
    if backend == "ray":
        return _ray(fn, tasks, n, progress, label)
    n = min(n, len(tasks))
    if n <= 1:
        return _serial(fn, tasks, progress, label)
    # Time the first task here: when the whole sweep would take less than starting workers
    # costs, the rest runs here too (a tiny sweep is never slower with more workers).
    t0 = time.perf_counter()
    first = fn(*tasks[0])
    if (time.perf_counter() - t0) * len(tasks) < IN_PROCESS_BELOW_S:
        return [first, *_serial(fn, tasks[1:], progress, label)]
    return [first, *_pool(fn, tasks[1:], min(n, len(tasks) - 1), progress, label)]


def _serial(fn, tasks, progress: bool, label: str) -> list[Any]:
    with _progress(progress, len(tasks), label) as tick:
        out = []
        for t in tasks:
            out.append(fn(*t))
            tick()
        return out


def _context():
    # fork starts workers in milliseconds instead of re-importing NumPy and friends in each,
    # but is only safe with no other thread alive; the pool forks every worker at its first
    # submit, before the progress bar starts its thread.
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context("spawn")


def _one_thread_each() -> None:
    """Worker initializer: cap BLAS/OpenMP threads before the worker imports NumPy (spawned
    workers; forked ones inherit NumPy, and the simulator makes no BLAS call)."""
    for var in WORKER_THREADS_ENV:
        os.environ[var] = "1"


def _pool(fn, tasks, n: int, progress: bool, label: str) -> list[Any]:
    results: list[Any] = [None] * len(tasks)
    with ProcessPoolExecutor(max_workers=n, mp_context=_context(), initializer=_one_thread_each) as pool:
        index = {pool.submit(fn, *t): i for i, t in enumerate(tasks)}
        pending = set(index)
        try:
            with _progress(progress, len(tasks), label) as tick:
                while pending:
                    done, pending = wait(pending, return_when=FIRST_COMPLETED)
                    for f in done:
                        results[index[f]] = f.result()
                        tick()
        except BaseException:
            pool.shutdown(wait=True, cancel_futures=True)
            raise
    return results


def _ray(fn, tasks, n: int, progress: bool, label: str) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise InputError(f"--backend ray needs Ray, which is not installed: {RAY_HINT}") from None
    import logging

    owned = not ray.is_initialized()
    if owned:
        if os.environ.get("RAY_ADDRESS"):
            ray.init(include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
        else:
            ray.init(num_cpus=n, include_dashboard=False, log_to_driver=False, logging_level=logging.ERROR)
    try:
        remote = ray.remote(num_cpus=1, max_retries=0)(fn)
        refs = [remote.remote(*t) for t in tasks]
        with _progress(progress, len(tasks), label) as tick:
            pending = list(refs)
            while pending:
                done, pending = ray.wait(pending, num_returns=1)
                ray.get(done)  # surface a failed task now, not after the rest
                tick()
        return ray.get(refs)  # in task order
    except Exception as exc:
        cause = getattr(exc, "cause", None)
        if isinstance(cause, InputError):
            raise InputError(str(cause)) from None
        raise
    finally:
        if owned:
            ray.shutdown()

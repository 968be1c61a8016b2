"""Where sweep tasks run: in-process, a local process pool, or Ray.

Every backend returns results in task order, whatever order they finish in, so the
output never depends on the backend or the worker count.
"""

from __future__ import annotations

import gc
import math
import multiprocessing
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from sandbox_fleet.errors import InputError
from sandbox_fleet.textout import Ticker, progress_bar

BACKENDS = ("local", "ray")
RAY_HINT = "pip install 'sandbox-fleet[ray]'"
#: A local sweep whose tasks add up to less than this (judged by the first) runs in-process:
#: forking a helper, shipping its chunks and waiting for its last one cost tens of milliseconds,
#: more than a second core wins back below this.
IN_PROCESS_BELOW_S = 0.3
#: Each worker computes alone: BLAS and OpenMP pools would only fight the other workers for cores.
WORKER_THREADS_ENV = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
#: OpenBLAS's thread-count setters (plain builds, and NumPy's bundled scipy-openblas builds).
OPENBLAS_SETTERS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads")
#: A chunk of tasks (one round trip to a helper) runs about this long: shipping a task and its result
#: costs a fraction of a millisecond, so millisecond tasks go in chunks; short chunks keep small
#: the work run twice at the end (the chunks a lagging helper holds, which this process runs too).
CHUNK_S = 0.02
#: ...and the tasks come in at least this many chunks per worker, so the workers finish together.
CHUNKS_PER_WORKER = 8


def default_workers() -> int:
    return os.cpu_count() or 1


def run_tasks(fn: Callable[..., Any], tasks: Sequence[tuple], *, backend: str = "local", workers: int | None = None,
              progress: bool = False, label: str = "sweep", ticker: Ticker | None = None) -> list[Any]:
    """``[fn(*t) for t in tasks]``, run by ``backend`` on ``workers`` (default: cores).

    With ``progress``, one bar counts every task, the first (timed here) included; a caller running
    several batches passes its own ``ticker`` instead (one bar for the whole command)."""
    if backend not in BACKENDS:
        raise InputError(f"`backend` {backend!r}: expected one of {', '.join(BACKENDS)}")
    if workers is not None and workers < 1:
        raise InputError(f"`workers` {workers}: expected a positive integer")
    if ticker is not None:
        ticker.expect(len(tasks))
        return _dispatch(fn, tasks, backend, workers, ticker)
    with progress_bar(progress, len(tasks), label) as tick:
        return _dispatch(fn, tasks, backend, workers, tick)


def _dispatch(fn: Callable[..., Any], tasks: Sequence[tuple], backend: str, workers: int | None, tick: Ticker) -> list[Any]:
    n = default_workers() if workers is None else workers
    if backend == "ray":
        return _ray(fn, tasks, n, tick)
    n = min(n, len(tasks))
    if n <= 1:
        return _serial(fn, tasks, tick)
    # Time the first task here: when the whole sweep would take less than starting workers
    # costs, the rest runs here too (a tiny sweep is never slower with more workers).
    t0 = time.perf_counter()
    first = fn(*tasks[0])
    task_s = time.perf_counter() - t0
    tick()
    if task_s * len(tasks) < IN_PROCESS_BELOW_S:
        return [first, *_serial(fn, tasks[1:], tick)]
    n = min(n, len(tasks) - 1)
    if n <= 1:
        return [first, *_serial(fn, tasks[1:], tick)]
    return [first, *_pool(fn, tasks[1:], n, tick, chunk_size(len(tasks) - 1, n, task_s))]


def _serial(fn, tasks, tick: Ticker) -> list[Any]:
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
    """Worker initializer: one BLAS/OpenMP thread per worker.

    Spawned workers read the environment before importing NumPy; forked ones inherit a loaded
    OpenBLAS, whose pool is capped through its own setter."""
    for var in WORKER_THREADS_ENV:
        os.environ[var] = "1"
    if "numpy" in sys.modules:
        _cap_openblas()


def _cap_openblas() -> None:
    import ctypes

    try:
        with open("/proc/self/maps", encoding="utf-8") as maps:
            libs = {line.split()[-1] for line in maps if "openblas" in line.lower() and "/" in line}
    except OSError:  # not Linux: spawned workers already read the environment
        return
    for lib in sorted(libs):
        try:
            handle = ctypes.CDLL(lib)
        except OSError:
            continue
        for name in OPENBLAS_SETTERS:
            setter = getattr(handle, name, None)
            if setter is not None:
                setter(1)
                break


def _run_chunk(fn, chunk: list[tuple]) -> list[Any]:
    return [fn(*t) for t in chunk]


def chunk_size(n_tasks: int, workers: int, task_s: float) -> int:
    """Tasks per chunk: about ``CHUNK_S`` of work, and at least ``CHUNKS_PER_WORKER`` chunks a worker."""
    by_time = max(1, math.floor(CHUNK_S / task_s)) if task_s > 0 else n_tasks
    by_balance = max(1, math.ceil(n_tasks / (workers * CHUNKS_PER_WORKER)))
    return min(by_time, by_balance)


def _pool(fn, tasks, n: int, tick: Ticker, size: int = 1) -> list[Any]:
    """Run ``tasks`` on ``n`` workers, this process being one of them; results in task order.

    Tasks go in chunks of ``size``. The ``n - 1`` helper processes take chunks from the front; this
    process takes them from the back, first those no helper has started (a pending future it can
    cancel), then, going on towards the front, any a helper has not finished yet: it runs that
    chunk itself rather than wait, and stops the helpers still busy at the end. So a helper that
    gets no core (a loaded machine) delays nothing, and ``n`` workers are not slower than one.
    ``fn`` must be a pure function of its task (a chunk may run twice; both give the same result).
    """
    starts = list(range(0, len(tasks), size))
    results: list[Any] = [None] * len(tasks)
    # Objects alive now are never collected in the helpers: frozen, their collector does not write
    # to them, so forked helpers do not copy the pages they live on (a caller's own freeze is kept).
    freeze = gc.get_freeze_count() == 0
    if freeze:
        gc.freeze()
    try:
        with ProcessPoolExecutor(max_workers=n - 1, mp_context=_context(), initializer=_one_thread_each) as pool:
            futures = [pool.submit(_run_chunk, fn, list(tasks[i:i + size])) for i in starts]
            try:
                _take_from_the_back(fn, tasks, starts, size, futures, results, tick)
                if not all(f.done() for f in futures):
                    _stop(pool)  # each unfinished chunk was also run here
            except BaseException:
                _stop(pool)
                raise
    finally:
        if freeze:
            gc.unfreeze()
    return results


def _take_from_the_back(fn, tasks, starts, size, futures, results, tick) -> None:
    """Fill ``results`` chunk by chunk from the last: a finished helper's result, else run it here."""
    for k in reversed(range(len(starts))):
        f, i = futures[k], starts[k]
        if f.cancel() or not f.done():
            chunk = _run_chunk(fn, list(tasks[i:i + size]))
        else:
            chunk = f.result()  # a helper's error surfaces here, as the task's own would
        results[i:i + len(chunk)] = chunk
        for _ in chunk:
            tick()


def _stop(pool: ProcessPoolExecutor) -> None:
    """End the helpers now, whatever they are running (their chunks' results are not needed)."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        proc.terminate()
    pool.shutdown(wait=True, cancel_futures=True)


def _ray(fn, tasks, n: int, tick: Ticker) -> list[Any]:
    try:
        import ray
    except ImportError:
        raise InputError(f"`backend` ray needs Ray, which is not installed: {RAY_HINT}") from None
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

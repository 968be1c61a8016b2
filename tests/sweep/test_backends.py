"""Backends return results in task order; Ray is optional and its absence is a clear InputError."""

from __future__ import annotations

import os
import sys
import time

import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep import run_sweep, run_tasks


def slow_first(i: int, n: int) -> tuple[int, int]:
    # early tasks finish last, so completion order is the reverse of task order
    time.sleep(0.02 * (n - i))
    return i, os.getpid()


def fail_on(i: int, bad: int) -> int:
    if i == bad:
        raise InputError(f"task {i} is bad")
    return i


def test_results_in_task_order_regardless_of_completion_order():
    out = run_tasks(slow_first, [(i, 6) for i in range(6)], workers=3)
    assert [i for i, _ in out] == list(range(6))
    # the first task runs here to judge the sweep's size; at 0.12 s it is no tiny sweep, so the
    # others ran on two helpers (from the front) and here (from the back)
    assert out[0][1] == os.getpid()
    assert len({pid for _, pid in out[1:]} - {os.getpid()}) >= 1


def blas_threads(i: int, sleep_s: float) -> tuple[int, int, str | None]:
    time.sleep(sleep_s)
    return i, os.getpid(), os.environ.get("OPENBLAS_NUM_THREADS")


def test_tiny_tasks_run_in_process_whatever_the_worker_count():
    out = run_tasks(blas_threads, [(i, 0.001) for i in range(8)], workers=2)
    assert [i for i, _, _ in out] == list(range(8))
    assert {pid for _, pid, _ in out} == {os.getpid()}


def test_workers_run_blas_on_one_thread():
    out = run_tasks(blas_threads, [(i, 0.2) for i in range(4)], workers=2)
    workers = [(pid, env) for _, pid, env in out if pid != os.getpid()]
    assert workers and all(env == "1" for _, env in workers)


def test_one_worker_runs_in_process():
    out = run_tasks(slow_first, [(i, 3) for i in range(3)], workers=1)
    assert {pid for _, pid in out} == {os.getpid()}


def test_worker_input_error_surfaces_unchanged():
    with pytest.raises(InputError, match="task 2 is bad"):
        run_tasks(fail_on, [(i, 2) for i in range(4)], workers=2)


def test_ray_missing_is_an_input_error_with_the_install_hint(monkeypatch, mmc):
    monkeypatch.setitem(sys.modules, "ray", None)  # makes `import ray` raise ImportError
    with pytest.raises(InputError) as exc:
        run_sweep(mmc, ["fleet.cap=4"], backend="ray")
    assert "pip install 'sandbox-fleet[ray]'" in str(exc.value)


def test_ray_backend_matches_local_bytes(mmc):
    pytest.importorskip("ray", reason="Ray is optional: pip install 'sandbox-fleet[ray]' to run this test")
    args = (mmc, ["fleet.cap=3,4", "hold.mean_s=0.5,0.9"])
    local = run_sweep(*args, seeds=2, workers=1)
    ray_ = run_sweep(*args, seeds=2, workers=2, backend="ray")
    assert jsonio.dumps(local) == jsonio.dumps(ray_)


def test_ray_worker_input_error_surfaces_as_one_line(tmp_path):
    pytest.importorskip("ray", reason="Ray is optional: pip install 'sandbox-fleet[ray]' to run this test")
    from sandbox_fleet.sweep.task import simulate_variant

    # a library function (Ray workers cannot import this test module); cap 0 fails in the worker
    bad = {"fleet": {"cap": 0}, "workload": {"kind": "poisson", "rate_per_s": 1.0, "count": 5},
           "hold": {"dist": "deterministic", "value_s": 1.0}}
    with pytest.raises(InputError) as exc:
        run_tasks(simulate_variant, [(bad, str(tmp_path), "bad.toml", 1)], backend="ray", workers=1)
    assert str(exc.value) == "bad.toml: key 'fleet.cap': Input should be greater than or equal to 1"


def test_chunk_size_aims_at_a_chunk_time_and_keeps_every_worker_several_chunks():
    from sandbox_fleet.sweep.backends import chunk_size

    assert chunk_size(59, 2, 0.002) == 4  # 10 by time (0.02 / 0.002), 4 to give each worker 8 chunks
    assert chunk_size(400, 2, 0.002) == 10  # by time
    assert chunk_size(59, 2, 0.007) == 2  # floor(0.02 / 0.007)
    assert chunk_size(59, 2, 0.2) == 1  # tasks longer than a chunk's time go one by one
    assert chunk_size(3, 2, 0.0) == 1


def test_chunked_pool_keeps_task_order_and_restores_the_collector():
    import gc

    from sandbox_fleet.sweep.backends import _pool
    from sandbox_fleet.textout import Ticker

    out = _pool(slow_first, [(i, 9) for i in range(9)], 2, Ticker(), size=2)  # chunks 0-1, 2-3, ..., 8
    assert [i for i, _ in out] == list(range(9))
    pids = [pid for _, pid in out]
    # the helper took chunks from the front, this process from the back, and they met once
    assert pids[0] != os.getpid() and pids[-1] == os.getpid()
    assert pids == sorted(pids, key=lambda p: p == os.getpid())
    assert gc.get_freeze_count() == 0


def _openblas_threads() -> int | None:
    import ctypes

    with open("/proc/self/maps", encoding="utf-8") as maps:
        libs = sorted({ln.split()[-1] for ln in maps if "openblas" in ln.lower() and "/" in ln})
    for lib in libs:
        handle = ctypes.CDLL(lib)
        for name in ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads"):
            getter = getattr(handle, name, None)
            if getter is not None:
                return int(getter())
    return None


def openblas_threads(i: int, sleep_s: float) -> tuple[int, int, int | None]:
    time.sleep(sleep_s)
    return i, os.getpid(), _openblas_threads()


def test_forked_workers_cap_an_already_loaded_openblas_to_one_thread():
    import numpy  # noqa: F401  (loaded before the fork, as in a real sweep)

    if not sys.platform.startswith("linux") or _openblas_threads() is None:
        pytest.skip("needs Linux and NumPy built on OpenBLAS")
    out = run_tasks(openblas_threads, [(i, 0.2) for i in range(4)], workers=2)
    workers = [n for _, pid, n in out if pid != os.getpid()]
    assert workers and set(workers) == {1}


@pytest.mark.parametrize("bad", [1, 7])  # a helper's chunk (front) and this process's own (back)
def test_an_error_in_any_chunk_surfaces_unchanged(monkeypatch, bad):
    from sandbox_fleet.sweep import backends

    monkeypatch.setattr(backends, "IN_PROCESS_BELOW_S", 0.0)  # force the pool for these quick tasks
    with pytest.raises(InputError, match=f"task {bad} is bad"):
        run_tasks(fail_on, [(i, bad) for i in range(8)], workers=2)


def lagging_helper(i: int, parent: int) -> int:
    if os.getpid() != parent:
        time.sleep(30)  # a helper that never gets a core
    return i


def test_a_helper_that_lags_delays_nothing(monkeypatch):
    from sandbox_fleet.sweep import backends

    monkeypatch.setattr(backends, "IN_PROCESS_BELOW_S", 0.0)
    t0 = time.perf_counter()
    out = run_tasks(lagging_helper, [(i, os.getpid()) for i in range(12)], workers=2)
    assert out == list(range(12))  # every chunk the helper held was run here too
    assert time.perf_counter() - t0 < 10  # and the helper was stopped, not waited for


class _Counting:
    """A ticker that counts: how many tasks the one bar saw, and the room it was asked for."""

    def __init__(self):
        self.ticks, self.expected = 0, 0

    def __call__(self):
        self.ticks += 1

    def expect(self, n):
        self.expected += n


@pytest.mark.parametrize("workers", [1, 2])
def test_one_bar_counts_every_task_the_first_included(workers):
    from sandbox_fleet.sweep.backends import run_tasks

    tick = _Counting()
    run_tasks(slow_first, [(i, 5) for i in range(5)], workers=workers, ticker=tick)
    run_tasks(slow_first, [(i, 3) for i in range(3)], workers=workers, ticker=tick)  # a second batch, same bar
    assert (tick.ticks, tick.expected) == (8, 8)

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
    # the first task runs here to judge the sweep's size; at 0.12 s it is no tiny sweep,
    # so the others really ran in worker processes
    assert out[0][1] == os.getpid()
    assert os.getpid() not in {pid for _, pid in out[1:]}


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

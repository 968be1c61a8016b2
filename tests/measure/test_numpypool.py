"""measure.numpypool / measure._blocks: NumPy arrays that reuse big freed blocks.

The safety property checked against a model: a block is never handed to two live arrays
(each live array keeps the bytes written into it whatever is allocated and freed around it),
``np.zeros`` is zero after a dirty block was freed, every kept block is freed at the end, and
measure gives the same bytes with and without the allocator.
"""

from __future__ import annotations

import json
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from built import require_built
from sandbox_fleet.measure import numpypool
from sandbox_fleet.measure.lanes import HERE, Pass, run_plan

MIB = 1 << 20


@pytest.fixture
def blocks():
    return require_built("measure._blocks", "the NumPy block allocator")


def _handler_name(arr: np.ndarray) -> str:
    return np._core.multiarray.get_handler_name(arr)


def test_arrays_in_the_block_use_it_and_after_it_do_not(blocks):
    default = _handler_name(np.empty(4 * MIB, np.uint8))
    with numpypool.reusing_freed_arrays():
        inside = np.empty(4 * MIB, np.uint8)
        assert _handler_name(inside) == "sandbox_fleet_reused_blocks"
    assert _handler_name(np.empty(4 * MIB, np.uint8)) == default
    del inside  # freed after the block: straight to the C library
    assert blocks.stats()["kept_bytes"] == 0 and blocks.stats()["depth"] == 0


def test_a_freed_block_is_reused_for_a_request_that_fits_it(blocks):
    with numpypool.reusing_freed_arrays():
        first = np.empty(10 * MIB, np.uint8)
        address = first.ctypes.data
        del first
        assert blocks.stats()["kept_bytes"] == 10 * MIB
        again = np.empty(9 * MIB, np.uint8)  # 90% of the block: fits
        assert again.ctypes.data == address
        assert blocks.stats()["hits"] == 1
        del again  # kept again, now counted as 9 MiB: its size as asked for
        assert blocks.stats()["kept_bytes"] == 9 * MIB
        smaller = np.empty(7 * MIB, np.uint8)  # below 80% of the 9 MiB counted: not reused
        assert smaller.ctypes.data != address
        bigger = np.empty(9 * MIB + 1, np.uint8)  # past the counted size: never the tail
        assert bigger.ctypes.data != address
        assert blocks.stats()["hits"] == 1
    assert blocks.stats()["kept_bytes"] == 0


def test_small_arrays_are_not_kept(blocks):
    with numpypool.reusing_freed_arrays():
        small = np.empty(MIB - 1, np.uint8)
        del small
        assert blocks.stats()["kept_bytes"] == 0


def test_zeros_are_zero_after_a_dirty_block_is_freed(blocks):
    with numpypool.reusing_freed_arrays():
        dirty = np.full(2 * MIB, 0xAB, np.uint8)
        del dirty
        assert not np.zeros(2 * MIB, np.uint8).any()


def test_the_limit_bounds_what_is_kept(blocks):
    with numpypool.reusing_freed_arrays(limit_bytes=5 * MIB):
        arrays = [np.empty(2 * MIB, np.uint8) for _ in range(4)]
        del arrays
        assert blocks.stats()["kept_bytes"] == 4 * MIB  # two of the four: a third would pass 5 MiB
        big = np.empty(6 * MIB, np.uint8)
        del big  # bigger than the limit: freed, the kept ones stay
        assert blocks.stats()["kept_bytes"] == 4 * MIB


def test_nested_blocks_keep_until_the_outermost_ends(blocks):
    with numpypool.reusing_freed_arrays():
        with numpypool.reusing_freed_arrays():
            a = np.empty(2 * MIB, np.uint8)
            del a
        assert blocks.stats()["kept_bytes"] == 2 * MIB and blocks.stats()["depth"] == 1
        b = np.empty(2 * MIB, np.uint8)
        assert _handler_name(b) == "sandbox_fleet_reused_blocks"
    assert blocks.stats() | {"hits": 0, "misses": 0} == {"hits": 0, "misses": 0, "kept_bytes": 0, "depth": 0}


def test_lanes_run_in_the_callers_context(blocks):
    names: dict[str, str] = {}

    def make(lane: str):
        def run():
            names[lane] = _handler_name(np.empty(2 * MIB, np.uint8))
            return threading.current_thread().name
        return run

    passes = [Pass("here", make("here")), Pass("worker", make("worker"))]
    with numpypool.reusing_freed_arrays():
        got = run_plan(passes, [("here", HERE), ("worker", 1)], {}, ["here", "worker"])
    assert got["worker"] != got["here"]  # really another thread
    assert names == {"here": "sandbox_fleet_reused_blocks", "worker": "sandbox_fleet_reused_blocks"}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 6), st.integers(0, 255)), min_size=1, max_size=60))
def test_no_block_is_ever_shared_by_two_live_arrays(steps):
    """Random allocations and frees (sizes 1-6 MiB around the reuse bounds, a 12 MiB limit):
    every live array still holds the byte written into it, and no two share an address."""
    require_built("measure._blocks", "the NumPy block allocator")
    live: list[tuple[np.ndarray, int]] = []
    with numpypool.reusing_freed_arrays(limit_bytes=12 * MIB):
        for allocate, size_mib, fill in steps:
            if allocate or not live:
                arr = np.empty(size_mib * MIB - fill * 1024, np.uint8)
                arr.fill(fill)
                live.append((arr, fill))
            else:
                live.pop(fill % len(live))
            addresses = [a.ctypes.data for a, _ in live]
            assert len(set(addresses)) == len(addresses)
        for arr, fill in live:
            assert arr[0] == fill and arr[-1] == fill and np.all(arr == fill)


def test_measure_gives_the_same_bytes_without_the_allocator(blocks, monkeypatch, tmp_path):
    """A synthesized release (the allocator engaged from 4 KiB so its arrays go through it)."""
    from contextlib import nullcontext

    from sandbox_fleet.measure import run
    from sandbox_fleet.synth.build import synth

    release = synth(tmp_path / "release", scale=0.05, seed=1, progress=False)
    monkeypatch.setattr(numpypool, "MIN_BLOCK_BYTES", 4096)
    seen: list[dict] = []
    restore = blocks.restore
    monkeypatch.setattr(blocks, "restore", lambda previous: (seen.append(blocks.stats()), restore(previous)))
    with_blocks = run.measure_paths([release.trajectories], progress=False).to_json()
    assert seen and seen[0]["hits"] > 0  # it really served arrays
    monkeypatch.setattr(run, "reusing_freed_arrays", lambda *a, **k: nullcontext())
    without = run.measure_paths([release.trajectories], progress=False).to_json()
    assert json.dumps(with_blocks, sort_keys=True) == json.dumps(without, sort_keys=True)


def test_a_forked_child_starts_with_a_fresh_lock_and_nothing_kept(blocks):
    """A child forked while the lock is held elsewhere must still allocate (no deadlock)."""
    import os
    import time

    if not hasattr(os, "fork"):
        pytest.skip("no fork on this platform")
    with numpypool.reusing_freed_arrays():
        kept = np.empty(2 * MIB, np.uint8)
        del kept
        assert blocks.stats()["kept_bytes"] == 2 * MIB
        holding = threading.Event()
        release = threading.Event()

        def hold_lock_while_freeing() -> None:
            # stats() takes the lock; hold it by calling stats in a tight loop until told to stop
            holding.set()
            while not release.is_set():
                blocks.stats()

        worker = threading.Thread(target=hold_lock_while_freeing)
        worker.start()
        holding.wait()
        pid = os.fork()
        if pid == 0:  # the child: must allocate and free big arrays, and have nothing kept
            try:
                ok = blocks.stats()["kept_bytes"] == 0
                arr = np.empty(3 * MIB, np.uint8)
                del arr
                os._exit(0 if ok else 3)
            except BaseException:
                os._exit(4)
        release.set()
        worker.join()
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            time.sleep(0.05)
        else:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            pytest.fail("the forked child hung on the allocator's lock")
        assert os.waitstatus_to_exitcode(status) == 0

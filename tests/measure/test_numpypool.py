"""measure.numpypool: big arrays come from glibc's heap inside ``reusing_freed_arrays`` (so freed
pages serve the next array), as glibc itself reports (``mallinfo2``); outside, each is its own
mapping again. And measure gives the same bytes with and without it.
"""

from __future__ import annotations

import ctypes
import json
from contextlib import nullcontext

import numpy as np
import pytest

from sandbox_fleet.measure import numpypool

MIB = 1 << 20
ROWS = 8 * MIB  # 64 MiB of int64: above glibc's largest dynamic mmap threshold (32 MiB)


class _Mallinfo2(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks", "keepcost")]


def _mapped_bytes_while_holding_a_second_array(context) -> int:
    """glibc's bytes in mmapped chunks (``mallinfo2().hblkhd``) while a 64 MiB array made after an
    identical one was freed is alive."""
    libc = ctypes.CDLL(None)
    libc.mallinfo2.restype = _Mallinfo2
    with context:
        first = np.empty(ROWS, np.int64)
        first.fill(1)
        del first
        again = np.empty(ROWS, np.int64)
        again.fill(2)
        mapped = libc.mallinfo2().hblkhd
        assert again[0] == again[-1] == 2
        del again
    return mapped


def test_a_big_array_comes_from_the_heap_inside_and_is_mapped_after(monkeypatch):
    if numpypool._glibc() is None or not hasattr(ctypes.CDLL(None), "mallinfo2"):
        pytest.skip("not glibc 2.33+: the context changes nothing")
    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    inside = _mapped_bytes_while_holding_a_second_array(numpypool.reusing_freed_arrays())
    after = _mapped_bytes_while_holding_a_second_array(nullcontext())
    assert after - inside >= ROWS * 8  # outside, the array is its own mapping; inside, heap pages


def test_nested_contexts_restore_once_at_the_outermost_exit(monkeypatch):
    calls: list[tuple] = []

    class Libc:
        def mallopt(self, param, value):
            calls.append((param, value))
            return 1

        def malloc_trim(self, pad):
            calls.append(("trim", pad))
            return 1

    monkeypatch.delenv("SANDBOX_FLEET_PURE_PYTHON", raising=False)
    monkeypatch.setattr(numpypool, "_glibc", Libc)
    with numpypool.reusing_freed_arrays():
        with numpypool.reusing_freed_arrays():
            assert len(calls) == 3
        assert len(calls) == 3
    assert calls == [(numpypool.M_MMAP_THRESHOLD, 1 << 30), (numpypool.M_TRIM_THRESHOLD, 256 << 20),
                     (numpypool.M_TOP_PAD, 64 << 20), (numpypool.M_MMAP_THRESHOLD, 128 * 1024),
                     (numpypool.M_TRIM_THRESHOLD, 128 * 1024), (numpypool.M_TOP_PAD, 128 * 1024), ("trim", 0)]
    monkeypatch.setenv("SANDBOX_FLEET_PURE_PYTHON", "1")
    with numpypool.reusing_freed_arrays():
        pass
    assert len(calls) == 7  # the switch: nothing set


def test_measure_gives_the_same_bytes_without_it(monkeypatch, tmp_path):
    from sandbox_fleet.measure import run
    from sandbox_fleet.synth.build import synth

    release = synth(tmp_path / "release", scale=0.05, seed=1, progress=False)
    with_reuse = run.measure_paths([release.trajectories], progress=False).to_json()
    monkeypatch.setattr(run, "reusing_freed_arrays", lambda *a, **k: nullcontext())
    without = run.measure_paths([release.trajectories], progress=False).to_json()
    assert json.dumps(with_reuse, sort_keys=True) == json.dumps(without, sort_keys=True)

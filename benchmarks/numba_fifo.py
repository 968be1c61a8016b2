"""A numba twin of ``simulate.engine.fifo.place_stream``: the prototype behind the decision not to
ship a compiled FIFO kernel (``bench_fifo.py`` times it; BENCHMARKS.md, issue 12).

The recursion only ever reads the smallest slot-free time, so any correct min-heap
gives the same start times as ``heapq``: each start is ``max(arrival, earliest free)``
and the slot is next free at ``start + hold (+ provisioning)``, the same float
operations in the same order. numba is imported on first use only.
"""

from __future__ import annotations

import numpy as np

_kernel = None


def _compile():
    import numba

    @numba.njit(cache=True, nogil=True)
    def place(free, arr_t, hold, provision_s, starts):  # pragma: no cover - compiled
        c = free.size
        for i in range(arr_t.size):
            t = arr_t[i]
            f0 = free[0]
            s = f0 if f0 > t else t
            v = s + hold[i] + provision_s if provision_s != 0.0 else s + hold[i]
            # replace the root and sift it down (a binary min-heap in an array)
            j = 0
            while True:
                k = 2 * j + 1
                if k >= c:
                    break
                if k + 1 < c and free[k + 1] < free[k]:
                    k += 1
                if free[k] < v:
                    free[j] = free[k]
                    j = k
                else:
                    break
            free[j] = v
            starts[i] = s

    return place


def place_stream(free: list[float], arr_t: list[float] | np.ndarray, hold: list[float] | np.ndarray,
                 provision_s: float) -> np.ndarray:
    """As ``fifo.place_stream`` but compiled; returns the start times as an array.

    ``free`` is left holding the slots' next free times (as a heap, possibly laid out
    differently from ``heapq``'s, which the recursion never depends on)."""
    global _kernel
    if _kernel is None:
        _kernel = _compile()
    heap = np.array(sorted(free), dtype=np.float64)  # a sorted array is a valid min-heap
    t = np.asarray(arr_t, dtype=np.float64)
    h = np.asarray(hold, dtype=np.float64)
    starts = np.empty(t.size, dtype=np.float64)
    _kernel(heap, t, h, float(provision_s), starts)
    free[:] = heap.tolist()
    return starts

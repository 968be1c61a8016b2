"""The FIFO recursion compiled: numba's build of ``fifo.place_stream``, the rule's one source.

``fifo.place_stream`` is plain Python; ``load()`` hands it to numba (``cache=True``: the machine
code is cached under ``_jit.cache_dir()``, so only the first process after an install or upgrade
compiles it, ~3-5 s for its three argument types) and warms each argument type the FIFO path
uses. A later process pays ~1.4 s once (importing numba ~0.85 s, its first call into the cached
code ~1 s, on the shared 2-core machine; BENCHMARKS.md), which the interpreted rule spends on ~8
million heap levels (~0.17 us of CPU each beyond the compiled rule, measured over whole runs at
c = 10 and 3,000), so ``worth_it`` keeps smaller runs interpreted until the compiled rule is loaded
in the process, or until the process has spent that many levels interpreting (a search of many
mid-sized runs then loads it once: never more than twice the better choice's cost, the rent-or-buy
rule). Both give the same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sandbox_fleet.simulate.engine import fast

#: heap levels walked (attempts x ceil(log2(cap + 1))) from which compiling pays for numba's per-process load
MIN_HEAP_LEVELS = 8_000_000
_compiled: Any = None
_spent = 0  # heap levels this process has walked with the rule interpreted (while numba was available)


def load() -> Any:
    """Import numba, build the compiled rule (or load it from the cache) and warm it; returns it."""
    global _compiled
    if _compiled is None:
        from sandbox_fleet.simulate.engine.fast._jit import njit
        from sandbox_fleet.simulate.engine.fifo import place_stream

        place = njit(cache=True, nogil=True)(place_stream)
        one, ids, stop = np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.bool_)
        for i, s in ((None, None), (ids, None), (ids, stop)):  # the argument types the FIFO path passes
            place(np.zeros(1), one, i, 0, 1, one, 0.0, np.zeros(1), s)
        _compiled = place
    return _compiled


def loaded() -> bool:
    return _compiled is not None


def worth_it(prep) -> bool:
    """Whether the compiled rule pays for its per-process load on this run (it is loaded, or the
    run's placements with those the process ran interpreted walk ``MIN_HEAP_LEVELS`` heap levels)."""
    return _pays(heap_levels(prep))


def _pays(levels: int) -> bool:
    if not levels:
        return False  # unbounded pools only: nothing is placed on a heap
    return loaded() or levels + _spent >= MIN_HEAP_LEVELS


def heap_levels(prep) -> int:
    """Heap levels the run's placements walk, at most: attempts x ceil(log2(largest cap + 1))."""
    caps = [int(pl.cap) for pl in prep.pools if pl.cap is not None]
    return prep.n * max(1, math.ceil(math.log2(max(caps) + 1))) if caps else 0


def compiled(prep) -> Any:
    """The compiled rule for this run, or None where the plain-Python one runs it (numba missing
    or switched off by ``NUMBA_DISABLE_JIT`` / ``SANDBOX_FLEET_PURE_PYTHON``, or a run too small
    to pay the load)."""
    return compiled_for(heap_levels(prep))


def compiled_for(levels: int) -> Any:
    """``compiled`` for placements walking ``levels`` heap levels (callers outside a prepared run)."""
    global _spent
    if not fast.available():
        return None
    if not _pays(levels):
        _spent += levels
        return None
    return load()

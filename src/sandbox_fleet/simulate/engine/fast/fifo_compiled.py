"""The FIFO recursion compiled: numba's build of ``fifo.place_stream``, the rule's one source.

``fifo.place_stream`` is plain Python; ``load()`` hands it to numba (``cache=True``: the machine
code is cached under ``_jit.cache_dir()``, so only the first process after an install or upgrade
compiles it, ~3-5 s for its three argument types) and warms each argument type the FIFO path
uses. A later process pays ~1.4-2.2 s once (importing numba ~0.85 s, its first call into the
cached code ~1 s, on the shared 2-core machine; BENCHMARKS.md). The interpreted rule takes ~0.08 us
a heap level plus ~0.3 us an attempt (1M attempts: 0.61 s at c = 10, 1.25 s at c = 3,000), so its
work is counted in heap levels with 4 more an attempt, and 18 million of them are the load's worth:
``worth_it`` keeps smaller runs interpreted until the compiled rule is loaded in the process, or
until the process has spent that much work interpreting (a search of many
mid-sized runs then loads it once: never more than twice the better choice's cost, the rent-or-buy
rule). Both give the same bits.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from sandbox_fleet.simulate.engine import fast

#: the interpreted rule's work (``work``) from which compiling pays for numba's per-process load
MIN_WORK = 18_000_000
#: an attempt's fixed cost in heap levels (0.3 us against 0.08 us a level, interpreted)
ATTEMPT_LEVELS = 4
_compiled: Any = None
_spent = 0  # work this process has done with the rule interpreted (while numba was available)


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
    run's ``work`` with what the process ran interpreted reaches ``MIN_WORK``)."""
    return _pays(work(prep))


def _pays(units: int) -> bool:
    if not units:
        return False  # unbounded pools only: nothing is placed on a heap
    return loaded() or units + _spent >= MIN_WORK


def work(prep) -> int:
    """The run's placements in the interpreted rule's cost units (``placements``)."""
    caps = [int(pl.cap) for pl in prep.pools if pl.cap is not None]
    return placements(prep.n, max(caps)) if caps else 0


def placements(attempts: int, cap: int) -> int:
    """``attempts`` placed on a heap of ``cap`` slots, in heap levels: ``ATTEMPT_LEVELS`` an attempt
    plus ceil(log2(cap + 1)), the most its sift walks."""
    return attempts * (ATTEMPT_LEVELS + max(1, math.ceil(math.log2(cap + 1))))


def load_if_pays(units: int) -> None:
    """Load the compiled rule now if numba may run and ``units`` of work (``placements``) pay for
    it: a search of many small placements (the plan's RL-step search) states its whole work up
    front, so that every call runs compiled rather than only those after the rent-or-buy switch."""
    if fast.available() and _pays(units):
        load()


def compiled(prep) -> Any:
    """The compiled rule for this run, or None where the plain-Python one runs it (numba missing
    or switched off by ``NUMBA_DISABLE_JIT`` / ``SANDBOX_FLEET_PURE_PYTHON``, or a run too small
    to pay the load)."""
    return compiled_for(work(prep))


def compiled_for(units: int) -> Any:
    """``compiled`` for placements of ``units`` work (``placements``; callers outside a prepared run)."""
    global _spent
    if not fast.available():
        return None
    if not _pays(units):
        _spent += units
        return None
    return load()


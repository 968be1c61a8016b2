"""Let NumPy reuse big freed blocks while measuring, instead of faulting in fresh pages.

Measure makes and drops many column-sized temporaries. The C library maps each big one
fresh and unmaps it when freed, so the kernel faults in and zeroes its pages again for the
next: on 10M rows of foreign data, zeroing huge pages was ~29% of all CPU samples.
``reusing_freed_arrays`` installs the ``_blocks`` allocator (a C hook through NumPy's
``PyDataMem_SetHandler``) for the block: a freed block of at least ``MIN_BLOCK_BYTES`` is
kept, up to ``LIMIT_BYTES`` in all, for the next array of about its size. Values are those
of NumPy's own allocator (``np.empty`` memory is uninitialised either way, ``np.zeros`` is
passed through), so figures never depend on it; without the compiled module, or with
``SANDBOX_FLEET_PURE_PYTHON`` set, the block runs with NumPy's allocator.

NumPy's handler is a context variable: threads started inside the block see it only when
they run in a copy of its context (``lanes`` and the id hashing do so).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from sandbox_fleet.speedups import compiled

#: Smaller blocks come from NumPy's and the C library's own caches already.
MIN_BLOCK_BYTES = 1 << 20
#: At most this much freed memory is kept for reuse (it counts in the peak RSS when unused).
#: At 10M rows (3 alternating runs each): none kept 5.55 s and 1,731 MiB, 128 MiB 5.49 s and
#: 1,798, 256 MiB 5.35 s and 1,928, 384 MiB 5.40 s and 1,985.
LIMIT_BYTES = 256 << 20


@contextmanager
def reusing_freed_arrays(limit_bytes: int = LIMIT_BYTES) -> Iterator[None]:
    """NumPy arrays made in this context reuse big freed blocks; every kept block is freed at the end."""
    blocks = compiled("measure._blocks")
    if blocks is None:
        yield
        return
    previous = blocks.install(limit_bytes, MIN_BLOCK_BYTES)
    try:
        yield
    finally:
        blocks.restore(previous)

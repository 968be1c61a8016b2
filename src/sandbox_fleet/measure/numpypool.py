"""Let big freed arrays be reused while measuring, instead of faulting in fresh pages.

Measure makes and drops many column-sized temporaries. glibc's malloc maps each one above its
mmap threshold fresh and unmaps it when freed, so the kernel faults in and zeroes its pages again
for the next. ``reusing_freed_arrays`` raises the threshold and keeps up to ``KEEP_BYTES`` of freed
memory at the top of the heap (``mallopt``), so a freed array's pages serve the next one; at the
end it sets glibc's documented defaults back and trims the heap. Values never depend on it (memory
from ``np.empty`` is uninitialised either way). With another C library, or with
``SANDBOX_FLEET_PURE_PYTHON`` set, nothing changes. Its gain is in BENCHMARKS.md.
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sandbox_fleet.speedups import pure_python_forced

# mallopt(3) parameters and their defaults (glibc's documented values).
M_TRIM_THRESHOLD, M_TOP_PAD, M_MMAP_THRESHOLD = -1, -2, -3
_DEFAULT_BYTES = 128 * 1024
#: Arrays up to this size come from the heap (mallopt takes an int: at most 2 GiB).
MMAP_THRESHOLD_BYTES = 1 << 30
#: At most this much freed memory stays at the top of the heap for reuse (it counts in the peak RSS).
KEEP_BYTES = 256 << 20
#: The heap grows by this much more than asked each time (fewer brk calls).
TOP_PAD_BYTES = 64 << 20

_lock = threading.Lock()
_depth = 0


def _glibc():
    """The process's C library when it is glibc (has ``mallopt`` and ``malloc_trim``), else None."""
    try:
        libc = ctypes.CDLL(None)
    except OSError:
        return None
    return libc if all(hasattr(libc, f) for f in ("mallopt", "malloc_trim", "gnu_get_libc_version")) else None


def _set(libc, mmap_threshold: int, trim_threshold: int, top_pad: int) -> None:
    libc.mallopt(M_MMAP_THRESHOLD, mmap_threshold)
    libc.mallopt(M_TRIM_THRESHOLD, trim_threshold)
    libc.mallopt(M_TOP_PAD, top_pad)


@contextmanager
def reusing_freed_arrays(keep_bytes: int = KEEP_BYTES) -> Iterator[None]:
    """Big arrays made in this context reuse freed heap memory; nested contexts share the outermost."""
    global _depth
    libc = None if pure_python_forced() else _glibc()
    if libc is None:
        yield
        return
    with _lock:
        _depth += 1
        if _depth == 1:
            _set(libc, MMAP_THRESHOLD_BYTES, keep_bytes, TOP_PAD_BYTES)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _set(libc, _DEFAULT_BYTES, _DEFAULT_BYTES, _DEFAULT_BYTES)
                libc.malloc_trim(0)

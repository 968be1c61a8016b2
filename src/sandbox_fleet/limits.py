"""Bounds checked before a run starts: seeds, memory budgets, grid sizes.

A run that cannot finish (or cannot fit) is refused up front with one line giving the
estimate and the limit, instead of being OOM-killed or spinning at 0% for an hour.
"""

from __future__ import annotations

import os

from sandbox_fleet.errors import InputError

#: The default budget is this share of the memory available when the run starts.
MEMORY_SHARE = 0.75
#: sweep --max-variants default.
MAX_VARIANTS = 10_000
GIB = 1024**3


def check_seed(seed, option: str = "--seed") -> None:
    """Any whole number >= 0 is a seed; anything else is one line, exit 2."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"{option} {seed}: expected a whole number >= 0")


def available_memory_bytes() -> int | None:
    """Memory available to new allocations now (Linux ``MemAvailable``, else physical memory)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


def memory_limit_bytes(max_memory_gb: float | None) -> float:
    """``--max-memory-gb`` in bytes, or the default share of available memory (inf if unknown)."""
    if max_memory_gb is not None:
        if not (max_memory_gb > 0 and max_memory_gb != float("inf")):
            raise InputError(f"--max-memory-gb {max_memory_gb}: expected a positive number of GiB")
        return float(max_memory_gb) * GIB
    avail = available_memory_bytes()
    return MEMORY_SHARE * avail if avail else float("inf")


def check_memory(estimate_bytes: float, max_memory_gb: float | None, what: str) -> None:
    """Refuse ``what`` when its estimated memory exceeds the budget."""
    limit = memory_limit_bytes(max_memory_gb)
    if estimate_bytes > limit:
        how = f"--max-memory-gb {max_memory_gb:g}" if max_memory_gb is not None else \
            f"{MEMORY_SHARE:.0%} of the {limit / MEMORY_SHARE / GIB:.1f} GiB available"
        raise InputError(f"{what} need an estimated {estimate_bytes / GIB:,.1f} GiB of memory, over the limit of "
                         f"{limit / GIB:,.1f} GiB ({how}); make it smaller or raise --max-memory-gb")

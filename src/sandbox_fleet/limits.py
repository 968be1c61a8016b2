"""Bounds checked before a run starts: seeds, memory budgets, grid sizes.

A run that cannot finish (or cannot fit) is refused up front with one line giving the
estimate and the limit, instead of being OOM-killed or spinning at 0% for an hour.
"""

from __future__ import annotations

import math
import os

from sandbox_fleet.errors import InputError

#: The default budget is this share of the memory available when the run starts.
MEMORY_SHARE = 0.75
#: sweep --max-variants default.
MAX_VARIANTS = 10_000
GIB = 1024**3


def check_seed(seed, option: str = "seed") -> None:
    """Any whole number >= 0 is a seed; anything else is one line, exit 2."""
    if seed is None:
        return
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise InputError(f"`{option}` {seed}: expected a whole number >= 0")


def available_memory_bytes() -> int | None:
    """Memory this process may still allocate: the least of the machine's ``MemAvailable``,
    the room left under its cgroup's limit and under its own address-space limit (RLIMIT_AS).

    A container's limit is often far below the host's free memory, and a process run under
    ``ulimit -v`` gets ENOMEM long before free RAM runs out; sizing against free RAM alone
    let such runs allocate into the limit instead of being refused up front.
    """
    room = [v for v in (_meminfo_available(), _cgroup_room(), _rlimit_room()) if v is not None]
    return min(room) if room else None


def _meminfo_available() -> int | None:
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


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max" (cgroup v2): no limit


#: cgroup v1 reports "no limit" as a huge page-aligned number near 2**63.
_NO_CGROUP_LIMIT = 1 << 60


def _cgroup_room(root: str = "/sys/fs/cgroup", proc: str = "/proc/self/cgroup") -> int | None:
    """Limit minus usage of this process's memory cgroup (v2 ``memory.max``, else v1), if any."""
    for limit_file, usage_file in _cgroup_files(root, proc):
        limit = _read_int(limit_file)
        if limit is None or limit >= _NO_CGROUP_LIMIT:
            continue
        return max(limit - (_read_int(usage_file) or 0), 0)
    return None


def _cgroup_files(root: str, proc: str) -> list[tuple[str, str]]:
    """(limit, usage) file pairs to try: the v2 group named in ``proc``, the v2 root, the v1 memory root."""
    files = []
    try:
        with open(proc, encoding="utf-8") as f:
            for line in f:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and parts[0] == "0":
                    base = root + parts[2].rstrip("/")
                    files.append((base + "/memory.max", base + "/memory.current"))
    except OSError:
        pass
    files.append((root + "/memory.max", root + "/memory.current"))
    files.append((root + "/memory/memory.limit_in_bytes", root + "/memory/memory.usage_in_bytes"))
    return files


def _rlimit_room() -> int | None:
    """RLIMIT_AS minus the address space already mapped (``VmSize``), if a limit is set."""
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return None
    if soft == resource.RLIM_INFINITY or soft < 0:
        return None
    used = 0
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmSize:"):
                    used = int(line.split()[1]) * 1024
                    break
    except (OSError, ValueError, IndexError):
        pass
    return max(soft - used, 0)


def memory_limit_bytes(max_memory_gb: float | None) -> float:
    """``max_memory_gb`` in bytes, or the default share of available memory (inf if unknown)."""
    if max_memory_gb is not None:
        if not (max_memory_gb > 0 and max_memory_gb != float("inf")):
            raise InputError(f"`max_memory_gb` {max_memory_gb}: expected a positive number of GiB")
        return float(max_memory_gb) * GIB
    avail = available_memory_bytes()
    return MEMORY_SHARE * avail if avail else float("inf")


def check_memory(estimate_bytes: float, max_memory_gb: float | None, what: str,
                 advice: str = "make it smaller or raise `max_memory_gb`") -> None:
    """Refuse ``what`` when its estimated memory exceeds the budget (``advice`` ends the line)."""
    limit = memory_limit_bytes(max_memory_gb)
    if estimate_bytes > limit:
        how = f"`max_memory_gb` {max_memory_gb:g}" if max_memory_gb is not None else \
            f"{MEMORY_SHARE:.0%} of the {limit / MEMORY_SHARE / GIB:.1f} GiB available to this process"
        raise InputError(f"{what} need an estimated {estimate_bytes / GIB:,.1f} GiB of memory, over the limit of "
                         f"{limit / GIB:,.1f} GiB ({how}); {advice}")


#: One decompressed member may use this share of the memory budget: its text is parsed into
#: objects several times its size.
INFLATE_SHARE = 0.25


def inflate_limit_bytes() -> float:
    """The most bytes one compressed member (gzip file, zip entry) may inflate to."""
    return INFLATE_SHARE * memory_limit_bytes(None)


def check_inflated_size(size_bytes: float, where: str, limit: float | None = None) -> None:
    """Refuse ``where`` (a file, or file:member) when its declared or actual inflated size is
    over ``limit`` (default ``inflate_limit_bytes``), before any more of it is decompressed."""
    limit = inflate_limit_bytes() if limit is None else limit
    if size_bytes > limit:
        raise InputError(f"{where}: inflates to {size_bytes / GIB:,.2f} GiB or more, over the {limit / GIB:,.2f} GiB "
                         f"one compressed member may use ({INFLATE_SHARE:.0%} of the memory budget); refusing to "
                         "decompress it (decompress it yourself, or split it)")


def check_range(option: str, value, *, minimum: float = 0.0, above: bool = False, whole: bool = False) -> None:
    """``value`` of flag ``option`` must be a finite number >= ``minimum`` (> with ``above``),
    and with ``whole`` an integer (never a boolean); None (not given) passes."""
    if value is None:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    ok = number and math.isfinite(value) and (value > minimum if above else value >= minimum)
    if ok and whole:
        ok = isinstance(value, int) or float(value).is_integer()
    if not ok:
        kind = "a whole number" if whole else "a finite number"
        raise InputError(f"{option} {value}: expected {kind} {'>' if above else '>='} {minimum:g}")


def arrow_pool_for_address_limit() -> None:
    """Under an address-space limit (RLIMIT_AS, ``ulimit -v``), have Arrow use the system allocator.

    Arrow's default pool, mimalloc, reserves large virtual arenas ahead of use: under a limit of a
    few GiB its reservation fails and the C++ ``std::bad_alloc`` ends the process (exit -6, no line
    naming anything), on a 12-row CSV, while the system and jemalloc pools run it within the limit.
    Set before pyarrow is imported (it reads ``ARROW_DEFAULT_MEMORY_POOL`` once); a pool the user
    chose wins, and without a limit nothing changes."""
    if os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        return
    try:
        import resource

        soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    except (ImportError, OSError, ValueError):
        return
    if soft != resource.RLIM_INFINITY and soft >= 0:
        os.environ["ARROW_DEFAULT_MEMORY_POOL"] = "system"

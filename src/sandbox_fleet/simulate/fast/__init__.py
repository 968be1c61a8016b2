"""Optional compiled kernels (the ``fast`` extra, numba).

Every kernel here has a pure-Python twin that stays the reference: the results are the
same bytes with or without the extra, and the pure path is used whenever numba is not
installed or ``SANDBOX_FLEET_PURE_PYTHON`` is set (tests use it to compare the two).
numba is imported only by the kernel modules, and only when a kernel is first used.
The same variable also switches off the C speed-up of the FIFO recursion
(``simulate/_fifo_speedups.c``, built at install when a compiler is present).
"""

from __future__ import annotations

import importlib.util
import os


def pure_python_forced() -> bool:
    """Whether ``SANDBOX_FLEET_PURE_PYTHON`` asks for the pure-Python paths only."""
    return os.environ.get("SANDBOX_FLEET_PURE_PYTHON", "") not in ("", "0")


def available() -> bool:
    """Whether compiled kernels may be used in this process."""
    if pure_python_forced():
        return False
    return importlib.util.find_spec("numba") is not None

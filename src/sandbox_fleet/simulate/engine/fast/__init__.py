"""Compiled kernels (numba, a core dependency).

The admission kernel (``_admit_kernel.py``, calling the inference replica's rules of
``_inference_rules.py`` on its model-call events) is one source that numba compiles and that also
runs as plain Python (``_jit.py``'s no-op ``njit`` without numba, or numba's own with
``NUMBA_DISABLE_JIT=1``; tests run it both ways against the pure loop, the oracle in
``tests/simulate/engine/oracle/``). Every run the FIFO recursion cannot place runs on it, with or
without an inference pool: compiled when the run pays numba's load, else its source as
plain Python (``_plain.twin``, 2.6-12x the pure loop's time, BENCHMARKS.md). numba is
imported only by the kernel modules, and only when a kernel is first used; its compiled code
is cached under the user's cache (``_jit.cache_dir()``). The FIFO recursion's rule
(``fifo.place_stream``) is the other source numba compiles (``fifo_compiled.py``); it runs as plain
Python, with the same bits, wherever the kernel would not (and for runs too small to pay the load).
"""

from __future__ import annotations

import importlib.util
import os

from sandbox_fleet.speedups import pure_python_forced

__all__ = ["available", "pure_python_forced"]


def available() -> bool:
    """Whether compiled kernels may be used in this process (numba is installed, and neither
    ``SANDBOX_FLEET_PURE_PYTHON`` nor ``NUMBA_DISABLE_JIT`` switches them off)."""
    if pure_python_forced():
        return False
    if os.environ.get("NUMBA_DISABLE_JIT", "") not in ("", "0"):
        return False
    return importlib.util.find_spec("numba") is not None

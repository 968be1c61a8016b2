"""Float operations whose bits do not depend on which CPU runs them.

NumPy dispatches ``exp``, ``log``, ``power`` and their kin to AVX-512 kernels on CPUs that have
them and to AVX2 or scalar ones elsewhere; the kernels round differently in the last place.
OpenBLAS likewise picks its dot-product and least-squares kernels by CPU (``OPENBLAS_CORETYPE``).
A figure that is committed, compared byte for byte, or that feeds a seeded draw therefore uses
these functions instead:

- elementwise ``exp``, ``log``, ``expm1`` and ``power`` go through the C library's
  scalar routines (``math``), which glibc implements once for every x86-64 CPU with FMA (Haswell,
  Zen and every later core); one Python call per element, so only for arrays of up to a few
  million values, which is what the callers hold;
- sums are exactly rounded (``math.fsum``), so neither the order nor the kernel matters;
- least squares is the closed form over exactly rounded sums, never a LAPACK call.

IEEE 754 already makes ``+ - * /`` and ``sqrt`` exact per element, so NumPy's own versions of
those, and of reductions that only compare (``min``, ``max``, sorting, quantiles by position), need
nothing from here. docs/validation.md lists which outputs this makes identical across machines.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np


def _elementwise(fn: Callable[[float], float], x: object) -> np.ndarray:
    a = np.asarray(x, dtype=np.float64)
    flat = np.fromiter(map(fn, a.ravel().tolist()), dtype=np.float64, count=a.size)
    return flat.reshape(a.shape)


def exp(x: object) -> np.ndarray:
    return _elementwise(math.exp, x)


def log(x: object) -> np.ndarray:
    return _elementwise(math.log, x)


def expm1(x: object) -> np.ndarray:
    return _elementwise(math.expm1, x)


def power(x: object, exponent: float) -> np.ndarray:
    """``x ** exponent`` elementwise (a scalar exponent)."""
    e = float(exponent)
    return _elementwise(lambda v: math.pow(v, e), x)


def logspace(start: float, stop: float, num: int) -> np.ndarray:
    """``num`` points 10**k for k evenly spaced on [start, stop] (``np.logspace``'s grid)."""
    return _elementwise(lambda k: math.pow(10.0, k), np.linspace(start, stop, num))


def fsum(x: object) -> float:
    """The exactly rounded sum of an array's values."""
    return math.fsum(np.asarray(x, dtype=np.float64).ravel().tolist())


def mean(x: object) -> float:
    a = np.asarray(x, dtype=np.float64)
    return fsum(a) / a.size


def linear_fit(x: object, y: object) -> tuple[float, float]:
    """Ordinary least squares ``y = intercept + slope * x``: ``(slope, intercept)``.

    The centred closed form over exactly rounded sums (at least two distinct x are required).
    """
    xa, ya = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    dx, dy = xa - mean(xa), ya - mean(ya)
    sxx = fsum(dx * dx)
    if sxx == 0.0:
        raise ValueError("a linear fit needs at least two distinct x values")
    slope = fsum(dx * dy) / sxx
    return slope, mean(ya) - slope * mean(xa)


def log1p(x: object) -> np.ndarray:
    return _elementwise(math.log1p, x)

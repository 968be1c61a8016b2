"""Expectations over a fitted hold distribution, computed without draws and without NumPy.

A piecewise-lognormal fit (``target.HoldSampler``) is ``log(hold) = a + b z`` on each segment
between its knots in the normal score ``z``, with ``z`` clipped to ``[z_lo, z_hi]``: two point
masses, ``Phi(z_lo)`` at the shortest hold and ``1 - Phi(z_hi)`` at the longest. So

- its mean is closed form per segment: ``E[e^{a+bz}; z1 < z < z2] = e^{a + b^2/2} (Phi(z2 - b) - Phi(z1 - b))``;
- ``E[f(hold)]`` for any smooth ``f`` is a sum of segment integrals of ``f(e^{a+bz}) phi(z)``,
  taken here by Gauss-Legendre on panels at most ``PANEL_Z`` wide (``GL_NODES`` nodes each), plus the
  two point masses. The integrand is entire in ``z``, so the rule is exact to rounding long before
  these sizes; tests/plan/test_holdfit.py holds it to ``scipy.integrate.quad``.

Only ``math`` and exactly rounded sums (``math.fsum``) are used: the figures do not depend on which
SIMD kernel NumPy would pick (``sandbox_fleet.exact``'s rule), and a plan from a summary need not
import NumPy at all.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache

#: Gauss-Legendre nodes per panel and the widest panel in z (the normal score).
GL_NODES = 20
PANEL_Z = 0.5
_SQRT2 = math.sqrt(2.0)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


@dataclass(frozen=True)
class Segment:
    """``log(hold_s) = a + b z`` for ``z1 < z < z2``."""

    z1: float
    z2: float
    a: float
    b: float


@dataclass(frozen=True)
class ClippedFit:
    """A fit's segments and its two end masses: ``p_lo`` at ``hold_lo_s``, ``p_hi`` at ``hold_hi_s``."""

    segments: tuple[Segment, ...]
    p_lo: float
    hold_lo_s: float
    p_hi: float
    hold_hi_s: float


def clipped_fit(z: Sequence[float], log_hold_s: Sequence[float]) -> ClippedFit:
    """The fit through knots ``(z[i], log_hold_s[i])``, linear between them, clipped at the ends."""
    segments = tuple(
        Segment(z1, z2, v1 - (v2 - v1) / (z2 - z1) * z1, (v2 - v1) / (z2 - z1))
        for z1, z2, v1, v2 in zip(z[:-1], z[1:], log_hold_s[:-1], log_hold_s[1:])
    )
    return ClippedFit(segments, normal_cdf(z[0]), math.exp(log_hold_s[0]),
                      normal_cdf(-z[-1]), math.exp(log_hold_s[-1]))


def normal_cdf(x: float) -> float:
    return 0.5 * math.erfc(-x / _SQRT2)


def normal_between(x1: float, x2: float) -> float:
    """``P(x1 < Z < x2)`` for a standard normal, from the tail on the far side of zero (no cancellation
    of two numbers near 1)."""
    if x1 >= 0.0:
        return 0.5 * (math.erfc(x1 / _SQRT2) - math.erfc(x2 / _SQRT2))
    if x2 <= 0.0:
        return 0.5 * (math.erfc(-x2 / _SQRT2) - math.erfc(-x1 / _SQRT2))
    return 1.0 - 0.5 * (math.erfc(-x1 / _SQRT2) + math.erfc(x2 / _SQRT2))


def mean_s(fit: ClippedFit) -> float:
    """The fit's mean hold, closed form per segment."""
    parts = [fit.p_lo * fit.hold_lo_s, fit.p_hi * fit.hold_hi_s]
    for s in fit.segments:
        p = normal_between(s.z1 - s.b, s.z2 - s.b)
        if p > 0.0:
            parts.append(math.exp(s.a + s.b * s.b / 2.0 + math.log(p)))
        else:  # the shifted normal's mass underflows (a slope past ~38): integrate the segment instead
            parts.append(_segment_integral(s, lambda hold_s: hold_s))
    return math.fsum(parts)


def expectation(fit: ClippedFit, f: Callable[[float], float]) -> float:
    """``E[f(hold_s)]`` over the fit: Gauss-Legendre on every segment plus the two end masses."""
    parts = [fit.p_lo * f(fit.hold_lo_s), fit.p_hi * f(fit.hold_hi_s)]
    parts.extend(_segment_integral(s, f) for s in fit.segments)
    return math.fsum(parts)


def _segment_integral(s: Segment, f: Callable[[float], float]) -> float:
    """``integral of f(e^{a+bz}) phi(z) dz`` over the segment, panel by panel."""
    panels = max(1, math.ceil((s.z2 - s.z1) / PANEL_Z))
    width = (s.z2 - s.z1) / panels
    nodes, weights = gauss_legendre(GL_NODES)
    terms = []
    for k in range(panels):
        mid = s.z1 + (k + 0.5) * width
        for x, w in zip(nodes, weights):
            z = mid + 0.5 * width * x
            terms.append(w * 0.5 * width * f(math.exp(s.a + s.b * z)) * _INV_SQRT_2PI * math.exp(-0.5 * z * z))
    return math.fsum(terms)


@lru_cache(maxsize=4)
def gauss_legendre(n: int) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Nodes and weights of the ``n``-point Gauss-Legendre rule on [-1, 1] (Newton on P_n from the
    classic cosine guesses; the same floats on every machine)."""
    nodes, weights = [], []
    for i in range(1, n + 1):
        x = math.cos(math.pi * (i - 0.25) / (n + 0.5))
        for _ in range(100):
            p, dp = _legendre(n, x)
            step = p / dp
            x -= step
            if abs(step) < 1e-16:
                break
        _, dp = _legendre(n, x)
        nodes.append(x)
        weights.append(2.0 / ((1.0 - x * x) * dp * dp))
    return tuple(nodes), tuple(weights)


def _legendre(n: int, x: float) -> tuple[float, float]:
    """``P_n(x)`` and its derivative by the three-term recurrence."""
    p0, p1 = 1.0, x
    for k in range(2, n + 1):
        p0, p1 = p1, ((2 * k - 1) * x * p1 - (k - 1) * p0) / k
    return p1, n * (x * p1 - p0) / (x * x - 1.0)


def exp_excess(x: float) -> float:
    """``e^x - 1 - x`` without the cancellation of ``expm1(x) - x`` at small ``x`` (a series there)."""
    if abs(x) >= 0.5:
        return math.expm1(x) - x
    term, total, k = x * x / 2.0, 0.0, 2
    while abs(term) > 1e-18 * abs(total) or total == 0.0:
        total += term
        k += 1
        term *= x / k
        if term == 0.0:
            break
    return total

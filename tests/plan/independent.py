"""Independent computations the plan's figures are checked against (written apart from the code under test).

- ``ffd_nodes``: plain item-by-item multi-resource first-fit-decreasing, one sandbox at a time.
- ``turn_expectations``: E[n] and E[n(n+1)/2] of ``max(rint(X), 1)`` for a lognormal X, by numerical
  integration of the lognormal density (scipy.integrate.quad over each integer's interval).
- ``restart_interruptions``: Monte-Carlo reclaims of a restart-from-scratch hold under Poisson reclaims.
"""

from __future__ import annotations

import functools
import math

import numpy as np


def ffd_nodes(kinds: list[tuple[dict[str, float], int]], capacity: dict[str, float]) -> int:
    """Nodes used by FFD: items sorted by their largest share of a node, each into the first node it fits."""
    items = []
    for req, count in kinds:
        share = max(req[r] / capacity[r] for r in capacity if capacity[r] > 0)
        items += [(share, req)] * count
    items.sort(key=lambda x: -x[0])
    free: list[dict[str, float]] = []
    for _, req in items:
        for node in free:
            if all(node[r] + 1e-9 >= req[r] for r in capacity):
                for r in capacity:
                    node[r] -= req[r]
                break
        else:
            free.append({r: capacity[r] - req[r] for r in capacity})
    return len(free)


@functools.lru_cache(maxsize=8)
def turn_expectations(median: float, p90: float, z90: float = 1.2816, upto: int = 5000) -> tuple[float, float]:
    """(E[n], E[n(n+1)/2]) with n = max(rint(X), 1), X lognormal through ``median`` and ``p90``."""
    from scipy import integrate

    mu, sigma = math.log(median), math.log(p90 / median) / z90

    def pdf(x: float) -> float:
        return math.exp(-((math.log(x) - mu) ** 2) / (2 * sigma * sigma)) / (x * sigma * math.sqrt(2 * math.pi))

    m1 = m2 = 0.0
    for k in range(1, upto + 1):
        lo, hi = (1e-12 if k == 1 else k - 0.5), k + 0.5
        p = integrate.quad(pdf, lo, hi, epsabs=1e-14, epsrel=1e-12)[0]
        m1 += p * k
        m2 += p * k * (k + 1) / 2
    # past ``upto`` rounding moves n by under 1/2 in thousands: the continuous integrals
    edge = upto + 0.5
    m1 += integrate.quad(lambda x: x * pdf(x), edge, math.inf, limit=200)[0]
    m2 += integrate.quad(lambda x: x * (x + 1) / 2 * pdf(x), edge, math.inf, limit=200)[0]
    return m1, m2


def restart_interruptions(holds_h: np.ndarray, rate_per_h: float, seed: int = 7) -> tuple[float, float]:
    """(mean reclaims per hold, re-run hours per hour of work) when every reclaim restarts the hold.

    Each attempt draws the time to the next reclaim; shorter than the hold, the work so far is lost.
    """
    rng = np.random.default_rng(seed)
    reclaims = np.zeros(holds_h.size)
    lost = np.zeros(holds_h.size)
    active = np.ones(holds_h.size, dtype=bool)
    while active.any():
        idx = np.flatnonzero(active)
        gap = rng.exponential(1.0 / rate_per_h, idx.size)
        failed = gap < holds_h[idx]
        reclaims[idx[failed]] += 1
        lost[idx[failed]] += gap[failed]
        active[idx[~failed]] = False
    return float(reclaims.mean()), float(lost.sum() / holds_h.sum())

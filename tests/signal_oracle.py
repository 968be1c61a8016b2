"""The signal figures for known per-task pass probabilities: the tests' form of ``group_shares``.

Measure only ever has posteriors (``signal_math.posterior_shares``); a test that makes a corpus with
known probabilities, or enumerates outcomes, compares against this point form.
"""

from __future__ import annotations

import math

import numpy as np

from sandbox_fleet.measure.signal_math import Shares, group_shares, powers


def binomial_pmf(v: np.ndarray, g: int) -> np.ndarray:
    """P(V = j), j = 0..g, for V ~ Binomial(g, v), one row per v."""
    v = np.asarray(v, dtype=np.float64)
    comb = np.array([float(math.comb(g, j)) for j in range(g + 1)])
    return comb[None, :] * powers(v, g) * powers(1.0 - v, g)[:, ::-1]


def point_shares(p, v, g: int, exception_share_of_invalid: float = 1.0, weights=None) -> Shares:
    """``group_shares`` for known per-task pass probabilities ``p`` and valid rates ``v`` (tasks weighted
    by ``weights``, equally when None)."""
    p, v = np.atleast_1d(np.asarray(p, dtype=np.float64)), np.atleast_1d(np.asarray(v, dtype=np.float64))
    return group_shares(binomial_pmf(v, g), powers(p, g), powers(1.0 - p, g), g, exception_share_of_invalid, weights)

"""The turn-count distribution behind context, live KV and the caching saving.

Context and the uncached prefill are convex in the turn count (a rollout of ``n`` turns sends
``c, 2c, ... nc`` tokens), so they must be averaged over the distribution of ``n``, never taken at
its median. Both need only two moments: ``E[n]`` and ``E[n(n+1)/2]``; the mean context of a turn is
``c E[n(n+1)/2] / E[n]`` and the caching saving ``E[n(n+1)/2] / E[(1-f) n + f n(n+1)/2]``.

From a measured histogram the moments are its sums. Without one, turns are a stated lognormal
through the median and p90 (``sigma = ln(p90 / median) / 1.2816``, 0.6 without a p90: the fit
``optimize`` simulates), drawn as the simulator draws them, ``max(rint(X), 1)``: each integer ``k``
takes the mass of ``[k - 1/2, k + 1/2)`` (1 takes everything below 3/2). Far in the tail the
integers are summed as the continuous partial moments (rounding shifts them by under 1/k).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import Optional

#: the 90th-percentile normal score, to the four places ``optimize`` has always used
Z90 = 1.2816
#: sigma of log turns when only the median is known (optimize's assumption, stated where used)
DEFAULT_SIGMA = 0.6
_Z = NormalDist()
_TAIL_Z = 8.5  # beyond this many sigmas the integers are summed in closed form
_MAX_TERMS = 20_000


def lognormal_sigma(median: float, p90: Optional[float]) -> tuple[float, str]:
    """Sigma of log turns through the median and p90, and how it was set."""
    if p90 and p90 > median:
        return math.log(p90 / median) / Z90, f"median {median:g}, p90 {p90:g}"
    return DEFAULT_SIGMA, f"median {median:g}, sigma {DEFAULT_SIGMA:g} assumed (no p90 above the median)"


@dataclass(frozen=True)
class TurnMoments:
    """``E[n]`` and ``E[n(n+1)/2]`` of a turn-count distribution, and what it is."""

    mean: float
    half_square: float  # E[n(n+1)/2]
    basis: str

    def context(self, turn_tokens: float) -> float:
        """Turn-weighted mean context in tokens: ``c E[n(n+1)/2] / E[n]``."""
        return turn_tokens * self.half_square / self.mean

    def saving(self, break_fraction: float = 0.0) -> float:
        """Prefill saving of a prefix cache over the distribution (``inference.mix_saving``'s ratio of sums)."""
        return self.half_square / ((1.0 - break_fraction) * self.mean + break_fraction * self.half_square)


def histogram_moments(histogram: dict[int, float]) -> Optional[TurnMoments]:
    """Moments of a measured histogram (turn count -> rollouts); None when it holds no turns."""
    w = sum(h for n, h in histogram.items() if n > 0)
    if w <= 0:
        return None
    mean = sum(h * n for n, h in histogram.items() if n > 0) / w
    half = sum(h * n * (n + 1) / 2.0 for n, h in histogram.items() if n > 0) / w
    return TurnMoments(mean, half, "measured turn histogram")


def _partial_moment(j: int, mu: float, sigma: float, above: float) -> float:
    """``E[X^j; X >= above]`` for ``X`` lognormal(mu, sigma)."""
    return math.exp(j * mu + j * j * sigma * sigma / 2.0) * _Z.cdf((mu + j * sigma * sigma - math.log(above)) / sigma)


def lognormal_moments(median: float, p90: Optional[float]) -> TurnMoments:
    """Moments of ``max(rint(X), 1)`` turns, ``X`` the lognormal through ``median`` and ``p90``."""
    sigma, how = lognormal_sigma(median, p90)
    mu = math.log(median)

    def cdf(x: float) -> float:
        return _Z.cdf((math.log(x) - mu) / sigma) if x > 0 else 0.0

    last = min(max(math.ceil(math.exp(mu + _TAIL_Z * sigma)), 1), _MAX_TERMS)
    m1 = m2 = 0.0
    below = 0.0
    for k in range(1, last + 1):
        upper = cdf(k + 0.5)
        p = upper - below
        below = upper
        m1 += p * k
        m2 += p * k * k
    edge = last + 0.5
    m1 += _partial_moment(1, mu, sigma, edge)
    m2 += _partial_moment(2, mu, sigma, edge)
    return TurnMoments(m1, (m2 + m1) / 2.0, f"lognormal turns ({how}: sigma {sigma:.3f}; rounded as simulate draws them)")


def turn_moments(histogram: dict[int, float], median: Optional[float], p90: Optional[float]) -> Optional[TurnMoments]:
    """The histogram's moments when measured, else the stated lognormal's, else None."""
    if histogram:
        found = histogram_moments(histogram)
        if found is not None:
            return found
    if median and median > 0:
        return lognormal_moments(float(median), float(p90) if p90 else None)
    return None


def measured_context(histogram: dict[int, float], median_input_by_turns: dict[int, float]) -> Optional[tuple[float, float, str]]:
    """(mean context of a turn in tokens, share of the turns it covers, basis) read off the measurement:
    a rollout of ``n`` turns sent ``input(n)`` tokens in all (its turn count's median input), so over the
    histogram the mean context of a turn is ``sum h_n input(n) / sum h_n n``, over the turn counts with a
    measured input. None when no turn count has one. The quadratic fit ``c n(n+1)/2`` is a model of
    ``input(n)``; where both are measured, the measurement is used."""
    turns = sum(h * n for n, h in histogram.items() if n > 0)
    covered = {n: h for n, h in histogram.items() if n > 0 and median_input_by_turns.get(n) is not None}
    covered_turns = sum(h * n for n, h in covered.items())
    if turns <= 0 or covered_turns <= 0:
        return None
    ctx = sum(h * median_input_by_turns[n] for n, h in covered.items()) / covered_turns
    share = covered_turns / turns
    cover = "all turns" if share >= 1.0 else f"{share:.1%} of turns (the turn counts with input tokens)"
    return ctx, share, f"measured: each turn count's median input over the turn histogram, {cover}"

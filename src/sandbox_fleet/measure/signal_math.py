"""Which rollout groups carry a learning signal: the binomial expression, the per-task prior, over-sampling.

A group is G rollouts of one task. Each rollout is *valid* (no exception, a reward present) or not; a
valid rollout passes with the task's probability p. Group-based RL (GRPO, DAPO) learns from a group
only when its valid rewards differ, so a group is **informative** when it holds at least one valid
pass and one valid fail (then it has at least two valid rollouts). The rest are *too few valid*
(fewer than two), *all pass* or *all fail*. With V ~ Binomial(G, v) valid rollouts:

    P(informative) = sum_{j=2..G} C(G, j) v^j (1 - v)^(G-j) (1 - p^j - (1 - p)^j)

Per task the unknown p and v are Beta posteriors (the prior: ``fit_prior``), and the expression is
taken in expectation over them: p^j becomes E[p^j] = prod_{t<j} (a + t) / (a + b + t) and the
binomial of V the beta-binomial. The corpus share is the mean over tasks (groups drawn from tasks
at random). An exception scored as a zero reward *flips* a group that has valid passes, no valid
fail and at least one exception: it looks informative and pushes the policy away from rollouts
that merely crashed. Definitions and a worked example: docs/measure.md#rollout-groups-and-signal.
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

import numpy as np

from sandbox_fleet import exact

#: The prior's strength (a + b) when the tasks look no more spread than binomial noise, and the
#: least it may be (tasks that always or never pass): the prior is then nearly flat.
MAX_STRENGTH = 10_000.0
MIN_STRENGTH = 0.01


@dataclass(frozen=True)
class BetaPrior:
    """Beta(alpha, beta) over the tasks' rates: ``mean`` = the corpus rate, ``strength`` = alpha + beta."""

    alpha: float
    beta: float

    @property
    def mean(self) -> float:
        return self.alpha / (self.alpha + self.beta)

    @property
    def strength(self) -> float:
        return self.alpha + self.beta


def fit_prior(successes: np.ndarray, trials: np.ndarray, weights: np.ndarray | None = None) -> BetaPrior | None:
    """The Beta prior of per-task rates by the method of moments (empirical Bayes), or None without trials.

    Mean: the pooled rate sum(k) / sum(n). Spread: with Beta-distributed task rates, the counts are
    beta-binomial, E[(k - n mu)^2] = n mu (1 - mu) (1 + (n - 1) rho) with rho = 1 / (strength + 1);
    solving the summed equation for rho gives the strength. ``weights`` counts tasks sharing a row
    (the compact table). Tasks spread no more than binomial noise: strength ``MAX_STRENGTH``.
    """
    k, n = np.asarray(successes, dtype=np.float64), np.asarray(trials, dtype=np.float64)
    w = np.ones_like(n) if weights is None else np.asarray(weights, dtype=np.float64)
    total = exact.fsum(w * n)
    if total <= 0:
        return None
    mu = exact.fsum(w * k) / total
    if mu <= 0.0 or mu >= 1.0:  # every task the same: nothing to spread
        return BetaPrior(mu * MAX_STRENGTH, (1.0 - mu) * MAX_STRENGTH)
    dev = k - n * mu
    spread = exact.fsum(w * dev * dev) / (mu * (1.0 - mu))
    pairs = exact.fsum(w * n * (n - 1.0))
    rho = (spread - total) / pairs if pairs > 0 else 0.0
    strength = MAX_STRENGTH if rho <= 1.0 / (MAX_STRENGTH + 1.0) else max(1.0 / min(rho, 1.0) - 1.0, MIN_STRENGTH)
    return BetaPrior(mu * strength, (1.0 - mu) * strength)


def beta_moments(a: np.ndarray, b: np.ndarray, g: int) -> np.ndarray:
    """E[x^j] for x ~ Beta(a, b), j = 0..g, one row per (a, b): prod_{t<j} (a + t) / (a + b + t)."""
    a, b = np.asarray(a, dtype=np.float64)[:, None], np.asarray(b, dtype=np.float64)[:, None]
    t = np.arange(g, dtype=np.float64)[None, :]
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = np.where(a + t > 0, (a + t) / (a + b + t), 0.0)
    return np.concatenate([np.ones((ratio.shape[0], 1)), np.cumprod(ratio, axis=1)], axis=1)


def _log_comb(g: int) -> np.ndarray:
    return np.array([math.lgamma(g + 1) - math.lgamma(j + 1) - math.lgamma(g - j + 1) for j in range(g + 1)])


def powers(x: np.ndarray, g: int) -> np.ndarray:
    """x^j, j = 0..g, one row per x, by repeated multiplication (exact per step, the same bits on
    every CPU, unlike NumPy's ``power``)."""
    x = np.asarray(x, dtype=np.float64)[:, None]
    return np.concatenate([np.ones((x.shape[0], 1)), np.cumprod(np.repeat(x, g, axis=1), axis=1)], axis=1)


def beta_binomial_pmf(a: np.ndarray, b: np.ndarray, g: int) -> np.ndarray:
    """P(V = j), j = 0..g, for V ~ BetaBinomial(g, a, b): C(g, j) E[v^j (1 - v)^(g - j)]."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    j = np.arange(g + 1)
    out = np.empty((a.size, g + 1))
    lc = _log_comb(g)
    for i, (ai, bi) in enumerate(zip(a.tolist(), b.tolist())):
        if ai <= 0 or bi <= 0:  # a point mass at 0 or 1
            out[i] = (j == (g if bi <= 0 else 0)).astype(np.float64)
            continue
        base = math.lgamma(ai + bi) - math.lgamma(ai) - math.lgamma(bi) - math.lgamma(ai + bi + g)
        out[i] = exact.exp(lc + base + np.array([math.lgamma(ai + x) + math.lgamma(bi + g - x) for x in range(g + 1)]))
    return out


@dataclass(frozen=True)
class Shares:
    """Expected shares of groups (means over tasks, weighted): they sum to 1 but ``flipped``."""

    informative: float
    all_pass: float
    all_fail: float
    too_few_valid: float
    #: groups an exception scored as a zero reward would make look informative
    flipped: float


def group_shares(valid_pmf: np.ndarray, pass_moments: np.ndarray, fail_moments: np.ndarray, g: int,
                 exception_share_of_invalid: float = 1.0, weights: np.ndarray | None = None) -> Shares:
    """The binomial expression: ``valid_pmf[:, j]`` = P(V = j), ``pass_moments[:, j]`` = E[p^j] (all j
    valid pass), ``fail_moments[:, j]`` = E[(1 - p)^j]; one row per task (or per ``weights`` tasks).
    ``exception_share_of_invalid``: the chance an invalid rollout is an exception (not a missing reward)."""
    w = np.ones(valid_pmf.shape[0]) if weights is None else np.asarray(weights, dtype=np.float64)
    w = w / exact.fsum(w)
    j = np.arange(g + 1)
    two = j >= 2
    all_pass = (valid_pmf * pass_moments * two).sum(axis=1)
    all_fail = (valid_pmf * fail_moments * two).sum(axis=1)
    too_few = valid_pmf[:, :2].sum(axis=1)
    informative = (valid_pmf * (1.0 - pass_moments - fail_moments) * two).sum(axis=1)
    some_exception = 1.0 - powers(np.array([1.0 - exception_share_of_invalid]), g)[0, ::-1]  # j valid: >= 1 exception
    flipped = (valid_pmf * pass_moments * some_exception * (j >= 1)).sum(axis=1)
    return Shares(*(exact.fsum(w * x) for x in (informative, all_pass, all_fail, too_few, flipped)))


def posterior_shares(rows: np.ndarray, valid: np.ndarray, passed: np.ndarray, pass_prior: BetaPrior,
                     valid_prior: BetaPrior, g: int, exception_share_of_invalid: float = 1.0,
                     weights: np.ndarray | None = None) -> Shares:
    """``group_shares`` in expectation over each task's Beta posteriors: pass probability
    Beta(a + passed, b + valid - passed), valid rate Beta(a' + valid, b' + rows - valid), independent."""
    rows, valid, passed = (np.asarray(x, dtype=np.float64) for x in (rows, valid, passed))
    pa_, pb = pass_prior.alpha + passed, pass_prior.beta + valid - passed
    va, vb = valid_prior.alpha + valid, valid_prior.beta + rows - valid
    return group_shares(beta_binomial_pmf(va, vb, g), beta_moments(pa_, pb, g), beta_moments(pb, pa_, g), g,
                        exception_share_of_invalid, weights)


def groups_needed(informative: int, share: float, confidence: float) -> int | None:
    """The fewest groups N that hold at least ``informative`` informative ones with probability
    ``confidence``, each informative with probability ``share`` independently (groups drawn from
    tasks at random): the smallest N with P(Binomial(N, share) >= B) >= confidence. None when no
    group can be informative."""
    if informative <= 0:
        return 0
    if share <= 0.0:
        return None
    if share >= 1.0:
        return informative
    b = informative

    def enough(n: int) -> bool:  # P(X <= b - 1) <= 1 - confidence, summed in logs
        k = np.arange(b, dtype=np.float64)
        steps = exact.log((n - k[:-1]) / (k[:-1] + 1.0)) + math.log(share / (1.0 - share))
        logpmf = n * math.log1p(-share) + np.concatenate(([0.0], np.cumsum(steps)))
        top = float(logpmf.max())
        below = math.exp(top) * exact.fsum(exact.exp(logpmf - top))
        return below <= 1.0 - confidence

    lo, hi = b, max(b, math.ceil(b / share))
    while not enough(hi):
        lo, hi = hi, hi * 2
    # the smallest n in [lo, hi] that is enough (enough is monotone in n, and holds at hi)
    return lo + bisect.bisect_left(range(lo, hi + 1), True, key=enough)


def _betacf(a: np.ndarray, b: np.ndarray, x: np.ndarray) -> np.ndarray:
    """The continued fraction of the incomplete beta function (modified Lentz), elementwise; an
    element leaves the working set once its step is within 1e-15 of 1."""
    tiny = 1e-300

    def guard(v: np.ndarray) -> np.ndarray:
        return np.where(np.abs(v) > tiny, v, tiny)

    out = np.empty(x.shape)
    idx = np.arange(x.size)
    c = np.ones_like(x)
    d = 1.0 / guard(1.0 - (a + b) * x / (a + 1.0))
    h = d.copy()
    for m in range(1, 5000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 / guard(1.0 + num * d)
            c = guard(1.0 + num / c)
            h = h * d * c
        done = np.abs(d * c - 1.0) < 1e-15
        if done.any():
            out[idx[done]] = h[done]
            keep = ~done
            idx, a, b, x, c, d, h = idx[keep], a[keep], b[keep], x[keep], c[keep], d[keep], h[keep]
            if not idx.size:
                break
    out[idx] = h  # not converged in 5,000 steps (never for the parameters a corpus gives)
    return out


def beta_cdf(x, a, b) -> np.ndarray:
    """The regularized incomplete beta I_x(a, b): P(X <= x) for X ~ Beta(a, b), elementwise; a zero
    parameter is a point mass (at 0 when a is zero, at 1 when b is: a corpus where every valid
    rollout passes or fails)."""
    x, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (x, a, b)))
    # a point mass at 0 is all at or below any x >= 0; one at 1 is below no x < 1
    out = np.where((x >= 1.0) | (a <= 0.0), 1.0, 0.0)
    ok = (a > 0.0) & (b > 0.0) & (x > 0.0) & (x < 1.0)
    if not ok.any():
        return out
    xx, aa, bb = x[ok], a[ok], b[ok]
    lg = np.vectorize(math.lgamma, otypes=[np.float64])
    front = exact.exp(lg(aa + bb) - lg(aa) - lg(bb) + aa * exact.log(xx) + bb * exact.log1p(-xx))
    low = xx < (aa + 1.0) / (aa + bb + 2.0)  # the fraction converges fast on this side; else use symmetry
    val = np.empty(xx.shape)
    if low.any():
        val[low] = front[low] * _betacf(aa[low], bb[low], xx[low]) / aa[low]
    hi = ~low
    if hi.any():
        val[hi] = 1.0 - front[hi] * _betacf(bb[hi], aa[hi], 1.0 - xx[hi]) / bb[hi]
    out[ok] = val
    return out


def beta_quantile(q, a, b) -> np.ndarray:
    """The ``q`` quantile of Beta(a, b), elementwise (``q`` too), by one bisection on ``beta_cdf`` (to 2^-34)."""
    q, a, b = np.broadcast_arrays(*(np.asarray(v, dtype=np.float64) for v in (q, a, b)))
    lo, hi = np.zeros(a.shape), np.ones(a.shape)
    for _ in range(34):
        mid = (lo + hi) / 2.0
        below = beta_cdf(mid, a, b) < q
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return (lo + hi) / 2.0


def beta_interval(a: float, b: float, level: float = 0.95) -> tuple[float, float]:
    """The equal-tailed ``level`` interval of Beta(a, b); a degenerate prior (a or b zero) is a point."""
    lo, hi = beta_intervals(np.array([a]), np.array([b]), level)
    return float(lo[0]), float(hi[0])


def beta_intervals(a: np.ndarray, b: np.ndarray, level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """``beta_interval`` elementwise (one bisection for all)."""
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    tail = (1.0 - level) / 2.0
    both = beta_quantile(np.repeat([[tail], [1.0 - tail]], a.size, axis=1).ravel(), np.tile(a, 2), np.tile(b, 2))
    lo, hi = both[:a.size], both[a.size:]
    point = np.where(a <= 0, 0.0, 1.0)  # a zero parameter: the whole mass at one end
    degenerate = (a <= 0) | (b <= 0)
    return np.where(degenerate, point, lo), np.where(degenerate, point, hi)

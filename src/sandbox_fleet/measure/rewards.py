"""Rewards that are not 0/1: say so, show their distribution, and suggest a pass threshold.

A verifier that scores partial credit (0.12, 0.41, 0.84, ...) gives a pass rate of 0 under the
default ``--pass-threshold 1.0`` and no cost per pass, which reads as "nothing passes" when the
rewards only needed another threshold. When any rewarded row is neither 0 nor 1 the outcome block
carries the reward quantiles and a suggested threshold: the natural break of the rewards (Otsu's
two-class split, the one that maximises the between-class variance, i.e. minimises the spread
within "passed" and "failed"), placed halfway between the two classes' nearest rewards so that
``reward >= threshold`` passes exactly the upper class.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.stats import quantile_sorted

#: the reward quantiles reported, name -> q
QUANTILES = {"min": 0.0, "p10": 0.1, "p25": 0.25, "median": 0.5, "p75": 0.75, "p90": 0.9, "max": 1.0}


def natural_break(values: np.ndarray, counts: np.ndarray) -> float | None:
    """Otsu's threshold over distinct sorted ``values`` with their ``counts``: the midpoint between
    ``values[k - 1]`` and ``values[k]`` for the split k that maximises w0 w1 (mu0 - mu1)^2 (the first
    on a tie); None with fewer than two distinct values."""
    if values.size < 2:
        return None
    w = counts.astype(np.float64)
    total, total_sum = w.sum(), float((w * values).sum())
    w0 = np.cumsum(w)[:-1]  # rows in the lower class for a split after index i
    s0 = np.cumsum(w * values)[:-1]
    w1 = total - w0
    mu0, mu1 = s0 / w0, (total_sum - s0) / w1
    between = w0 * w1 * (mu0 - mu1) ** 2
    k = int(np.argmax(between)) + 1
    return (float(values[k - 1]) + float(values[k])) / 2


def reward_figures(reward: np.ndarray, rewarded: np.ndarray, threshold: float) -> dict:
    """The fractional-reward figures of the ``Outcomes`` block (empty when every reward is 0 or 1)."""
    v = reward[rewarded]
    fractional = int(np.count_nonzero((v != 0.0) & (v != 1.0)))
    if not fractional:
        return {"reward_fractional_rows": 0} if v.size else {}
    s = np.sort(v)
    first = np.flatnonzero(np.concatenate(([True], s[1:] != s[:-1])))  # np.unique's runs, without its second sort
    values, counts = s[first], np.diff(np.append(first, s.size))
    suggested = natural_break(values, counts)
    out = {
        "reward_fractional_rows": fractional,
        "reward_distinct": int(values.size),
        "reward_quantiles": {name: quantile_sorted(s, q) for name, q in QUANTILES.items()},
        "suggested_pass_threshold": suggested,
        "suggested_pass_rate": (float(np.count_nonzero(s >= suggested)) / s.size) if suggested is not None else None,
    }
    return out


def fractional_warning(o: dict, threshold: float) -> str | None:
    """One line for the summary's warnings when rewards are fractional, or None."""
    n = o.get("reward_fractional_rows")
    if not n:
        return None
    q = o["reward_quantiles"]
    line = (f"rewards are fractional: {n:,} of {o['rewarded']:,} rewarded rows are neither 0 nor 1 (min {q['min']:.3g}, "
            f"median {q['median']:.3g}, p90 {q['p90']:.3g}, max {q['max']:.3g}); under --pass-threshold {threshold:g} "
            f"the pass rate is {o['pass_rate']:.1%}")
    if o.get("suggested_pass_threshold") is not None:
        line += (f"; their natural break suggests --pass-threshold {o['suggested_pass_threshold']:.4g} "
                 f"(pass rate {o['suggested_pass_rate']:.1%})")
    return line

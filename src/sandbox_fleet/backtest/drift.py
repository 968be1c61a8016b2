"""Have the constants moved between A and B? Two-sample tests with effect sizes.

Holds (per model), tokens per turn and turns: Mann-Whitney U, two-sided, normal approximation
with the tie correction and a continuity correction; effect size Cliff's delta
(P(B > A) - P(B < A)). Exception rate (per model): the pooled two-proportion z test; effect size
Cohen's h. Holds and exceptions are tested per model so that a change of model mix is not read as
a change of constants. The p-values of every test run are adjusted together (Holm-Bonferroni),
and a test flags drift only when its adjusted p is under ``ALPHA`` *and* its effect reaches the
floor, so a long stationary history, where any tiny difference is significant, does not flag by
chance or by size alone.
"""

from __future__ import annotations

import math

import numpy as np

#: family-wise error rate across every test of one backtest
ALPHA = 0.05
#: smallest effect that counts as drift: Cliff's |delta| 0.147 and Cohen's |h| 0.2 are the
#: conventional "small" effects (Romano et al. 2006; Cohen 1988)
DELTA_FLOOR = 0.147
H_FLOOR = 0.2
#: fewest values on each side for a test to run
MIN_SAMPLE = 5


def mann_whitney(a: np.ndarray, b: np.ndarray) -> tuple[float, float, float]:
    """(U of b, two-sided p, Cliff's delta of b over a)."""
    n1, n2 = a.size, b.size
    both = np.concatenate((a, b))
    ranks = _average_ranks(both)
    u_b = float(ranks[n1:].sum() - n2 * (n2 + 1) / 2)
    mean = n1 * n2 / 2
    _, counts = np.unique(both, return_counts=True)
    n = n1 + n2
    tie = float((counts.astype(float) ** 3 - counts).sum())
    var = n1 * n2 / 12 * ((n + 1) - tie / (n * (n - 1)))
    if var <= 0:  # every value equal: no evidence either way
        return u_b, 1.0, 0.0
    z = (abs(u_b - mean) - 0.5) / math.sqrt(var)
    p = min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))
    return u_b, p, 2 * u_b / (n1 * n2) - 1


def _average_ranks(x: np.ndarray) -> np.ndarray:
    order = np.argsort(x, kind="mergesort")
    sx = x[order]
    # ties share the mean of the ranks they span (1-based)
    edges = np.flatnonzero(np.concatenate(([True], sx[1:] != sx[:-1], [True])))
    mean_rank = (edges[:-1] + edges[1:] + 1) / 2
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mean_rank, np.diff(edges))
    return ranks


def two_proportions(k1: int, n1: int, k2: int, n2: int) -> tuple[float, float, float]:
    """(z, two-sided p, Cohen's h of p2 over p1) of the pooled two-proportion z test."""
    p1, p2, pooled = k1 / n1, k2 / n2, (k1 + k2) / (n1 + n2)
    h = 2 * math.asin(math.sqrt(p2)) - 2 * math.asin(math.sqrt(p1))
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return 0.0, 1.0, h
    z = (p2 - p1) / se
    return z, math.erfc(abs(z) / math.sqrt(2)), h


def holm(p: list[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values (step-down, monotone, capped at 1)."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    out = [0.0] * m
    running = 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * p[i]))
        out[i] = running
    return out


def drift_tests(a: dict[str, np.ndarray], b: dict[str, np.ndarray]) -> tuple[list[dict], list[str]]:
    """Every test A vs B can support (holds and exception rate per model on both sides, all
    rollouts when no model is), adjusted together; and why the others were skipped.

    ``a`` / ``b``: per-rollout ``hold_s``, ``model`` (str), ``exception`` (float: 1, 0 or NaN
    when not recorded), ``tokens`` and ``turns`` (NaN when not recorded).
    """
    tests: list[dict] = []
    skipped: list[str] = []
    shared = sorted(set(a["model"].tolist()) & set(b["model"].tolist()))
    # Per model, so a change of model mix is not read as a change of constants.
    for model in shared:
        in_a, in_b = a["model"] == model, b["model"] == model
        _rank_test(tests, skipped, "hold_s", model, a["hold_s"][in_a], b["hold_s"][in_b])
        _rate_test(tests, skipped, model, a["exception"][in_a], b["exception"][in_b])
    only = sorted(set(a["model"].tolist()) ^ set(b["model"].tolist()))
    if only:
        skipped.append(f"hold_s, exception_rate: model(s) {', '.join(only)} on one side only")
    if not shared:  # no model on both sides (a split by model): A against B, whatever the model
        _rank_test(tests, skipped, "hold_s", None, a["hold_s"], b["hold_s"])
        _rate_test(tests, skipped, None, a["exception"], b["exception"])
    with np.errstate(divide="ignore", invalid="ignore"):
        per_turn = [d["tokens"] / np.where(d["turns"] > 0, d["turns"], np.nan) for d in (a, b)]
    _rank_test(tests, skipped, "tokens_per_turn", None, *per_turn)
    _rank_test(tests, skipped, "turns", None, a["turns"], b["turns"])
    for t, adj in zip(tests, holm([t["p_value"] for t in tests])):
        t["p_adjusted"] = adj
        t["drifted"] = adj < ALPHA and abs(t["effect"]) >= t["effect_floor"]
    return tests, skipped


def _rank_test(tests: list, skipped: list, quantity: str, model: str | None, a: np.ndarray, b: np.ndarray) -> None:
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    where = f"{quantity}" + (f" ({model})" if model else "")
    if min(a.size, b.size) < MIN_SAMPLE:
        skipped.append(f"{where}: {a.size} values in A, {b.size} in B (need {MIN_SAMPLE} on each side)")
        return
    u, p, delta = mann_whitney(a, b)
    tests.append({"quantity": quantity, "model": model, "test": "mann-whitney-u", "n_a": int(a.size), "n_b": int(b.size),
                  "statistic": u, "p_value": p, "effect": delta, "effect_name": "cliffs_delta",
                  "effect_floor": DELTA_FLOOR, "a_value": float(np.median(a)), "b_value": float(np.median(b)),
                  "value_name": "median"})


def _rate_test(tests: list, skipped: list, model: str | None, a: np.ndarray, b: np.ndarray) -> None:
    a, b = a[~np.isnan(a)], b[~np.isnan(b)]
    if min(a.size, b.size) < MIN_SAMPLE:
        where = "exception_rate" + (f" ({model})" if model else "")
        skipped.append(f"{where}: {a.size} flagged rollouts in A, {b.size} in B (need {MIN_SAMPLE} on each side)")
        return
    k1, k2 = int(a.sum()), int(b.sum())
    z, p, h = two_proportions(k1, a.size, k2, b.size)
    tests.append({"quantity": "exception_rate", "model": model, "test": "two-proportion-z", "n_a": int(a.size),
                  "n_b": int(b.size), "statistic": z, "p_value": p, "effect": h, "effect_name": "cohens_h",
                  "effect_floor": H_FLOOR, "a_value": k1 / a.size, "b_value": k2 / b.size, "value_name": "rate"})

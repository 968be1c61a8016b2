"""Token demand per sandbox-second and the quadratic growth of input with turn count.

Rates are over the rows that report both input and output tokens, divided by the summed
hold of those same rows; a row reporting 0 of both is not a report (``zero_token_rows``
counts them), so an agent that never counts leaves the rates null, not 0. ``cached_fraction`` is over the rows that also report cached
tokens; it is null when no row reports them (null means unknown, not zero).

When every turn re-sends the transcript, input tokens after n turns grow like
c * n(n+1)/2. ``turn_tokens`` is c, fitted by least squares through the origin to the
per-turn-count medians (one point per turn count n >= 1 with at least ``min_turn_rows``
rows: a turn count seen once would otherwise outweigh thousands of rows, since the fit
weights each point by (n(n+1)/2)^2); ``r2_quadratic`` is that fit's R^2 and ``r2_linear``
the R^2 of an ordinary straight line a + b*n on the same points. ``fit_points`` and
``fit_rows`` are the turn counts and rows the fit used.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.measure.columns import Frame
from sandbox_fleet.measure.stats import SMALL_SAMPLE_ROWS, US, quantile_counts, quantile_nonempty, ratio, sum_where


def triangular(n: np.ndarray) -> np.ndarray:
    return n * (n + 1) / 2.0


def r_squared(y: np.ndarray, fitted: np.ndarray) -> float | None:
    ss_tot = exact.fsum((y - exact.mean(y)) ** 2) if y.size else 0.0
    if y.size < 2 or ss_tot == 0.0:
        return None
    return 1.0 - exact.fsum((y - fitted) ** 2) / ss_tot


def fit_quadratic(turns: np.ndarray, medians: np.ndarray) -> dict:
    """Fit median(n) = c*n(n+1)/2 (through the origin) and a linear a + b*n for comparison."""
    n = np.asarray(turns, dtype=np.float64)
    y = np.asarray(medians, dtype=np.float64)
    keep = n >= 1
    n, y = n[keep], y[keep]
    out: dict[str, float | None] = {"points": int(n.size), "turn_tokens": None, "r2_quadratic": None, "r2_linear": None,
           "linear_intercept": None, "linear_slope": None}
    if n.size == 0:
        return out
    x = triangular(n)
    # exactly rounded sums and the closed-form line: the same bits on every CPU (sandbox_fleet.exact)
    c = exact.fsum(x * y) / exact.fsum(x * x)
    out["turn_tokens"] = c
    out["r2_quadratic"] = r_squared(y, c * x)
    if np.unique(n).size >= 2:
        slope, intercept = exact.linear_fit(n, y)
        out["linear_intercept"], out["linear_slope"] = float(intercept), float(slope)
        out["r2_linear"] = r_squared(y, intercept + slope * n)
    return out


def model_error(turn_tokens: float, medians_by_turns: dict[int, float]) -> dict[str, float]:
    """c * n(n+1)/2 / median(n) - 1 per turn count (keys as strings)."""
    return {str(n): turn_tokens * n * (n + 1) / 2.0 / m - 1.0
            for n, m in sorted(medians_by_turns.items()) if m and n >= 1}


#: Turn counts with fewer rows than this are left out of the turn-curve fit (``--min-turn-rows``).
MIN_TURN_ROWS = 20


def measure_tokens(fr: Frame, min_turn_rows: int = MIN_TURN_ROWS) -> dict:
    rows, hold_us, inp, outp, n_cached, cached, cached_inp = _sums(fr)
    sandbox_s = hold_us / US
    out: dict = {
        "rows": rows,
        "small_sample": rows < SMALL_SAMPLE_ROWS,
        "sandbox_s": sandbox_s,
        "hold_mean_s": sandbox_s / rows if rows else None,
        "input": inp if rows else None,
        "output": outp if rows else None,
        "cached": cached if n_cached else None,
        "cached_rows": n_cached,
        "output_per_rollout": outp / rows if rows else None,
        "prefill_per_sandbox_s": ratio(inp, sandbox_s) if rows else None,
        "decode_per_sandbox_s": ratio(outp, sandbox_s) if rows else None,
        "prefill_decode_ratio": ratio(inp, outp) if rows else None,
        "cached_fraction": ratio(cached, cached_inp) if n_cached else None,
        "zero_token_rows": int(np.count_nonzero(fr.zero_tokens)),
    }
    out.update(_turn_figures(fr, min_turn_rows))
    return out


def _sums(fr: Frame) -> tuple[int, ...]:
    """Over the rows reporting input and output tokens: rows, summed hold, input, output,
    rows with cached tokens, cached, and input over those; exact int64 sums, no column copies."""
    tok = fr.has_tokens
    with_cached = tok & fr.cached_tokens.valid
    inp = fr.input_tokens
    return (int(np.count_nonzero(tok)), sum_where(fr.hold_us, tok), inp.sum_where(tok),
            fr.output_tokens.sum_where(tok), int(np.count_nonzero(with_cached)),
            fr.cached_tokens.sum_where(with_cached), inp.sum_where(with_cached))


def _per_turn(fr: Frame) -> list[tuple[int, int, int, float | None]]:
    """(turns, rows, rows with input tokens, median input tokens) per turn count, ascending.

    Rows are grouped by turn count with one stable radix sort of small codes; each group's
    median is a linear-interpolated order statistic (the same as NumPy's default).
    """
    has = fr.turns.valid
    turns = fr.turns.take_where(has)
    if turns.size == 0:
        return []
    values, codes, counts = _dense_codes(turns)
    del turns
    in_valid = fr.input_tokens.valid
    with_in = in_valid[has]
    codes_in = codes[with_in]
    del codes, with_in
    n_in, medians = _grouped_medians(codes_in, fr.input_tokens.take_where(has & in_valid), values.size)
    return [(int(values[g]), int(counts[g]), int(n_in[g]), medians[g]) for g in range(values.size)]


def _grouped_medians(codes: np.ndarray, inputs: np.ndarray, n_groups: int) -> tuple[np.ndarray, list[float | None]]:
    """Rows per group (codes 0..n_groups-1) and each group's ``_median`` (None when empty)."""
    n_in = np.bincount(codes, minlength=n_groups)
    grouped = inputs[np.argsort(codes, kind="stable")]
    ends = np.cumsum(n_in)
    medians = []
    for g in range(n_groups):
        part = grouped[ends[g] - n_in[g]:ends[g]]
        medians.append(_median(part) if part.size else None)
    return n_in, medians


def _dense_codes(turns: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(distinct values ascending, each row's index into them, rows per value); a bincount
    when the range is small (turn counts are), else ``np.unique``."""
    low, high = int(turns.min()), int(turns.max())
    if high - low < _DENSE_RANGE:
        hist = np.bincount(turns - low)
        present = np.flatnonzero(hist)
        index = np.cumsum(hist > 0) - 1
        codes = index.astype(np.min_scalar_type(present.size))[turns - low]
        return present + low, codes, hist[present]
    values, codes, counts = np.unique(turns, return_inverse=True, return_counts=True)
    return values, codes.astype(np.min_scalar_type(values.size)), counts


#: Turn-count ranges below this are grouped by a bincount rather than a sort.
_DENSE_RANGE = 1 << 16


def _median(part: np.ndarray) -> float:
    """Median by linear interpolation between the two middle order statistics (partition, no sort)."""
    n = part.size
    lo = (n - 1) // 2
    hi = min(lo + 1, n - 1) if (n - 1) % 2 else lo
    picked = np.partition(part, [lo, hi]) if hi != lo else np.partition(part, lo)
    return _median_of_middle(picked[lo:hi + 1], n)


def _median_of_middle(middle: np.ndarray, n: int) -> float:
    """The median of n values from their two middle order statistics (``middle``; only its
    first is read when n is odd)."""
    even = n % 2 == 0
    return quantile_nonempty(middle[:2 if even else 1], 0.5 if even else 0.0)


def _turn_figures(fr: Frame, min_turn_rows: int) -> dict:
    # One grouping by turns gives the histogram and the per-turn medians.
    rows = _per_turn(fr)
    values = np.array([r[0] for r in rows], dtype=np.int64)
    counts = np.array([r[1] for r in rows], dtype=np.int64)
    # a turn count's median is None exactly when it has no row with input tokens (n_in == 0)
    medians = {int(t): float(m) for t, _, n_in, m in rows if m is not None}
    used = {int(t): float(m) for t, _, n_in, m in rows if m is not None and n_in >= min_turn_rows}
    fit = fit_quadratic(np.array(list(used), dtype=np.float64), np.array(list(used.values())))
    c = fit["turn_tokens"]
    return {
        "turns_rows": int(counts.sum()),
        "turns_median": quantile_counts(values, counts, 0.5),
        "turns_p90": quantile_counts(values, counts, 0.9),
        "turns_histogram": {str(int(t)): int(n) for t, n, _, _ in rows},
        "median_input_by_turns": {str(k): v for k, v in medians.items()},
        "median_input_rows_by_turns": {str(int(t)): int(n_in) for t, _, n_in, _ in rows if n_in},
        "fit_rows": int(sum(n_in for t, _, n_in, _ in rows if n_in >= min_turn_rows and t >= 1)),
        "fit_points": fit["points"],
        "min_turn_rows": min_turn_rows,
        "turn_tokens": c,
        "r2_quadratic": fit["r2_quadratic"],
        "r2_linear": fit["r2_linear"],
        "linear_intercept": fit["linear_intercept"],
        "linear_slope": fit["linear_slope"],
        "model_error_by_turns": model_error(c, medians) if c is not None else {},
    }

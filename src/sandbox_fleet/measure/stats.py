"""Order statistics, grouped sorting and bootstrap intervals shared by every measurement.

Percentiles use linear interpolation between order statistics (NumPy's default
``method="linear"``). A figure computed over fewer than ``SMALL_SAMPLE_ROWS`` rows is
flagged as a small sample. Integer inputs (microseconds, tokens) are summed exactly.
"""

from __future__ import annotations

import zlib

import numpy as np

SMALL_SAMPLE_ROWS = 100
BOOTSTRAP_DRAWS = 2000
US = 1_000_000
#: Rows per pass where a pass would otherwise build a row-sized temporary.
_BLOCK = 1 << 20


def _ranks(n: int, q: float) -> tuple[int, float, int]:
    """(lower rank, weight, upper rank) of the q-quantile of n sorted values (linear method)."""
    pos = (n - 1) * q
    lo = int(np.floor(pos))
    return lo, pos - lo, min(lo + 1, n - 1)


def quantile_sorted(sorted_values: np.ndarray, q: float) -> float | None:
    """Linear-interpolated quantile of an already sorted array (NumPy's default method).

    Only the two order statistics around the quantile are read, so an array partitioned at
    them (``partitioned``) serves as well as a sorted one.
    """
    n = sorted_values.size
    if n == 0:
        return None
    lo, t, hi = _ranks(n, q)
    a, b = float(sorted_values[lo]), float(sorted_values[hi])
    # Same two-sided lerp NumPy uses, so results match np.percentile bit for bit.
    return b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t


def quantile_nonempty(sorted_values: np.ndarray, q: float) -> float:
    """``quantile_sorted`` of an array that holds at least one value, so a float, never None."""
    value = quantile_sorted(sorted_values, q)
    assert value is not None, "quantile of an empty array"
    return value


#: The quantiles ``summary`` reads (and the per-group figures: median and p99).
SUMMARY_QUANTILES = (0.5, 0.9, 0.99)


def order_ranks(n: int, qs=SUMMARY_QUANTILES) -> list[int]:
    """The ranks ``summary`` and ``quantile_sorted`` read for ``qs``: min, max and both
    neighbours of each quantile."""
    ranks = {0, n - 1}
    for q in qs:
        lo, _, hi = _ranks(n, q)
        ranks.update((lo, hi))
    return sorted(ranks)


def partitioned(values: np.ndarray, qs=SUMMARY_QUANTILES) -> np.ndarray:
    """A copy of ``values`` with each order statistic ``order_ranks`` names at its sorted place:
    what ``summary`` and ``quantile_sorted`` read, in O(n) instead of a sort."""
    if values.size == 0:
        return values.copy()
    return np.partition(values, order_ranks(values.size, qs))


def summary(sorted_values: np.ndarray, scale: float = 1.0) -> dict:
    """min / median / mean / p90 / p99 / max of sorted integers, scaled (e.g. us -> s).

    ``partitioned`` values serve as well: only the ranks ``order_ranks`` names are read.

    The mean comes from an exact integer sum, so it does not depend on summation order.
    """
    n = int(sorted_values.size)
    out: dict = {"rows": n, "small_sample": n < SMALL_SAMPLE_ROWS}
    if n == 0:
        out.update(dict.fromkeys(("min", "median", "mean", "p90", "p99", "max")))
        return out
    total = int(sorted_values.sum(dtype=np.int64)) if sorted_values.dtype.kind in "iu" else float(sorted_values.sum())
    out["min"] = float(sorted_values[0]) * scale
    out["median"] = quantile_nonempty(sorted_values, 0.5) * scale
    out["mean"] = total / n * scale
    out["p90"] = quantile_nonempty(sorted_values, 0.9) * scale
    out["p99"] = quantile_nonempty(sorted_values, 0.99) * scale
    out["max"] = float(sorted_values[-1]) * scale
    return out


def group_offsets(counts: np.ndarray) -> np.ndarray:
    """Where each group starts in rows sorted by group, and one past the last: int64, len + 1."""
    return np.concatenate(([0], np.cumsum(counts))).astype(np.int64)


def group_partitioned(codes: np.ndarray, values: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Integer ``values`` grouped by ``codes`` (0..n_groups-1), each group ``partitioned``: at the
    ranks ``summary`` and ``quantile_sorted`` read, what a sort of each group holds, in O(n) (one
    radix argsort of the small codes, then a partition a group). Returns (grouped values, offsets):
    group g is ``grouped[offsets[g]:offsets[g+1]]``. Memory: the order and the grouped values."""
    small = np.asarray(codes).astype(np.min_scalar_type(max(n_groups - 1, 0)), copy=False)
    grouped = np.asarray(values, dtype=np.int64)[np.argsort(small, kind="stable")]
    offsets = group_offsets(np.bincount(small, minlength=n_groups)[:n_groups])
    for g in range(n_groups):
        part = grouped[offsets[g]:offsets[g + 1]]
        if part.size:
            part.partition(order_ranks(part.size))
    return grouped, offsets


def packed_sort(values: np.ndarray, groupings: list[tuple[np.ndarray, int]], base: int = 0
                ) -> tuple[np.ndarray, list[np.ndarray | None]] | None:
    """``values`` sorted and each grouping's codes in that sorted order, from ONE sort.

    Each grouping is (codes, width): its codes plus ``base`` (1 lifts -1, "no group", to 0) ride in
    ``width`` low bits of one packed int64 key, the value above them, so after the sort the rows of
    equal values keep their codes (a width of 0: one code, None back). None when value and codes
    do not fit in 62 bits. The key (8 bytes a row) becomes the sorted values; ``values`` non-empty.
    """
    values = np.asarray(values, dtype=np.int64)
    vmin = int(values.min())
    vbits = max((int(values.max()) - vmin).bit_length(), 1)
    total = sum(width for _, width in groupings)
    if vbits + total > 62:
        return None
    key = np.subtract(values, vmin)
    key <<= total
    shift = 0
    for codes, width in groupings:
        if width:
            for i in range(0, key.size, _BLOCK):
                key[i:i + _BLOCK] |= (np.asarray(codes[i:i + _BLOCK]).astype(np.int64) + base) << shift
        shift += width
    key.sort()
    fields: list[np.ndarray | None] = []
    shift = 0
    for _, width in groupings:
        fields.append(bit_field(key, shift, width) if width else None)
        shift += width
    key >>= total
    key += vmin
    return key, fields


def group_spans(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, n_groups: int) -> tuple[np.ndarray, np.ndarray]:
    """Each group's first start and last finish (codes 0..n_groups-1; a negative code: no group); a
    group without rows keeps first > last (int64's max and min)."""
    first = np.full(n_groups, np.iinfo(np.int64).max, dtype=np.int64)
    last = np.full(n_groups, np.iinfo(np.int64).min, dtype=np.int64)
    for i in range(0, start_us.size, _BLOCK):
        c = codes[i:i + _BLOCK].astype(np.int64)
        keep = c >= 0
        np.minimum.at(first, c[keep], start_us[i:i + _BLOCK][keep])
        np.maximum.at(last, c[keep], finish_us[i:i + _BLOCK][keep])
    return first, last


def bit_field(key: np.ndarray, shift: int, width: int) -> np.ndarray:
    """``(key >> shift) & (2**width - 1)`` in the smallest unsigned type, a block at a time
    (no 8-byte-a-row temporary)."""
    out = np.empty(key.size, dtype=np.uint8 if width <= 8 else np.uint16 if width <= 16 else np.uint32 if width <= 32 else np.uint64)
    for i in range(0, key.size, _BLOCK):
        part = key[i:i + _BLOCK] >> shift
        part &= (1 << width) - 1
        out[i:i + _BLOCK] = part
    return out


def quantile_counts(values: np.ndarray, counts: np.ndarray, q: float) -> float | None:
    """Quantile of the multiset ``values`` (ascending) repeated ``counts`` times, as if sorted.

    Same linear interpolation as ``quantile_sorted``, without materialising the repeats.
    """
    n = int(counts.sum())
    if n == 0:
        return None
    ends = np.cumsum(counts)
    pos = (n - 1) * q
    lo = int(np.floor(pos))
    hi = min(lo + 1, n - 1)
    a = float(values[np.searchsorted(ends, lo, side="right")])
    b = float(values[np.searchsorted(ends, hi, side="right")])
    t = pos - lo
    return b - (b - a) * (1.0 - t) if t >= 0.5 else a + (b - a) * t


def rate_ci(successes: int, rows: int, *, seed: int, name: str, draws: int = BOOTSTRAP_DRAWS) -> list[float] | None:
    """Bootstrap 95% percentile interval of a proportion ``successes / rows``.

    Resampling ``rows`` 0/1 outcomes with replacement gives a success count that is exactly
    Binomial(rows, p_hat), so we draw those counts directly: the same bootstrap, O(draws).
    Each figure gets its own stream (seed, crc32(name)) so adding a figure moves no other.
    """
    if rows <= 0:
        return None
    rng = np.random.default_rng(np.random.SeedSequence([seed, zlib.crc32(name.encode())]))
    sims = rng.binomial(rows, successes / rows, size=draws) / rows
    return [float(np.percentile(sims, 2.5)), float(np.percentile(sims, 97.5))]


def ratio(num: float, den: float) -> float | None:
    """num / den, or None when the denominator is zero (nothing to divide by)."""
    return None if not den else num / den


def exception_rate(exceptions: int, flagged: int) -> float | None:
    """Exceptions over the rows that record whether they raised: a row without the flag is
    neither an exception nor a clean rollout. The one definition (measure, calibration)."""
    return ratio(exceptions, flagged)


def arrival_rate_per_s(rollouts: int, span_s: float) -> float | None:
    """Rollouts per second over the window they cover (measure: first start to last finish).
    The one definition (measure, calibration, the simulator's Little's law)."""
    return ratio(rollouts, span_s)


#: Largest integer a float64 holds exactly: bincount sums below it are exact.
_EXACT = 1 << 53
#: Low limb width for exact grouped sums: 2**26 per row keeps a 2**27-row sum exact.
_LIMB = 26


def group_counts(codes: np.ndarray, n_groups: int, mask: np.ndarray | None = None) -> np.ndarray:
    """Rows per group (codes 0..n_groups-1), only the rows where ``mask`` holds; int64."""
    if mask is not None:
        codes = codes[mask]
    return np.bincount(codes, minlength=n_groups)[:n_groups].astype(np.int64)


def sum_where(values: np.ndarray, where: np.ndarray) -> int:
    """The int64 ``values`` summed over the rows ``where`` holds, without copying them out
    (NumPy's ``np.sum(where=)``: exact while the sum stays within int64)."""
    return int(np.sum(values, where=where, dtype=np.int64))


def group_sums(codes: np.ndarray, n_groups: int, values: np.ndarray, mask: np.ndarray | None = None) -> list[int]:
    """Exact integer sum of ``values`` per group over the rows where ``mask`` holds.

    One weighted bincount when every partial sum stays below 2**53 (float64 is then exact);
    otherwise the values are split into a high and a low 26-bit limb, each summed exactly
    the same way; past that (or for negative values) a masked int64 sum per group.
    """
    if mask is not None:
        codes, values = codes[mask], values[mask]
    n = values.size
    if n == 0:
        return [0] * n_groups
    lo_v, hi_v = int(values.min()), int(values.max())
    if lo_v >= 0:
        if hi_v * n < _EXACT:
            sums = np.bincount(codes, weights=values, minlength=n_groups)[:n_groups]
            return [int(x) for x in sums]
        if (hi_v >> _LIMB) * n < _EXACT and (1 << _LIMB) * n < _EXACT:
            low = np.bincount(codes, weights=values & ((1 << _LIMB) - 1), minlength=n_groups)[:n_groups]
            high = np.bincount(codes, weights=values >> _LIMB, minlength=n_groups)[:n_groups]
            return [(int(h) << _LIMB) + int(lo) for h, lo in zip(high, low)]
    return [int(np.sum(values, where=codes == g, dtype=np.int64)) for g in range(n_groups)]

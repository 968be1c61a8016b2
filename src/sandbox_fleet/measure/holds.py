"""Sandbox hold time (finished_at - started_at): overall, with tokens, per model, per outcome.

The document's "mean of 2,379 s" is over the rows that report tokens; over all rows the
same campaign's mean is 2,102.6 s. Both are reported (``mean`` and ``mean_with_tokens``).
"""

from __future__ import annotations

import math

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.measure.columns import Frame
from sandbox_fleet.measure.outcomes import OUTCOMES
from sandbox_fleet.measure.stats import US, group_partitioned, partitioned, sum_where, summary

BINS_PER_DECADE = 10
BLOCK = 1 << 20


def histogram(us: np.ndarray) -> dict:
    """Log-spaced histogram of holds (integer us, >= 0, in any order) in seconds; zero-length holds
    are counted apart. ``np.histogram``'s counts (bin i is [edges[i], edges[i+1]), the last edge
    inclusive) without its sort: each hold's bin by a binary search of the edges, a block at a time
    (no float copy of every hold)."""
    positive = us > 0
    zero = int(us.size - np.count_nonzero(positive))
    if zero == us.size:
        return {"edges_s": [], "counts": [], "zero": zero}
    smallest = int(np.min(us, where=positive, initial=np.iinfo(np.int64).max))
    lo = np.floor(math.log10(smallest / US))
    hi = max(np.ceil(math.log10(int(us.max()) / US)), lo + 1)
    n_bins = round((hi - lo) * BINS_PER_DECADE)
    edges = exact.logspace(lo, hi, n_bins + 1)
    bounds = np.asarray(edges, dtype=np.float64)
    counts = np.zeros(n_bins, dtype=np.int64)
    for i in range(0, us.size, BLOCK):
        s = us[i:i + BLOCK][positive[i:i + BLOCK]] / US
        b = np.searchsorted(bounds, s, side="right") - 1
        b[s == bounds[-1]] = n_bins - 1  # the last edge belongs to the last bin
        counts += np.bincount(b[(b >= 0) & (b < n_bins)], minlength=n_bins)
    return {"edges_s": edges, "counts": counts, "zero": zero}


def grouped_summaries(sorted_us: np.ndarray, offsets: np.ndarray, names: list[str],
                      keep_empty: bool = False) -> dict:
    """Hold summary per group, in ``names`` order; empty groups only with ``keep_empty``.

    ``sorted_us`` is grouped and each group sorted, or partitioned (``stats.group_partitioned``).
    """
    out = {}
    for g, name in enumerate(names):
        part = sorted_us[offsets[g]:offsets[g + 1]]
        if part.size or keep_empty:
            out[name] = summary(part, 1 / US)
    return out


def measure_holds(fr: Frame, outcome: np.ndarray) -> dict:
    """Hold figures; ``outcome`` holds an index into OUTCOMES per row."""
    hold = fr.hold_us
    model_codes, model_names = fr.model.labelled()
    by_model = grouped_summaries(*fr.grouped_holds(model_codes, len(model_names), "model"), model_names)
    del model_codes
    # Order statistics by partition, not sort: summary reads only min, max and its quantiles.
    out = summary(partitioned(hold), 1 / US)
    hist = histogram(hold)
    tok = fr.has_tokens
    n_tok = int(tok.sum())
    out["rows_with_tokens"] = n_tok
    # Masked sums (where=) add the selected holds without copying them out.
    tok_us = sum_where(hold, tok)
    out["mean_with_tokens"] = tok_us / n_tok / US if n_tok else None
    n_no = fr.n - n_tok
    out["rows_without_tokens"] = n_no
    out["mean_without_tokens"] = (int(hold.sum(dtype=np.int64)) - tok_us) / n_no / US if n_no else None
    out["by_model"] = by_model
    by_outcome = group_partitioned(outcome, hold, len(OUTCOMES))
    out["by_outcome"] = grouped_summaries(*by_outcome, list(OUTCOMES), keep_empty=True)
    if not out["by_outcome"]["limit"]["rows"]:  # most sources record no limit: no empty row for them
        del out["by_outcome"]["limit"]
    out["histogram"] = hist
    return out

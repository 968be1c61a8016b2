"""Per-model and per-job slices: the headline figures for each group on its own.

Aggregate statistics over a mixed corpus describe no real configuration (the document's
gpt-oss-120b slice: 74.5% exceptions, 139 s median hold), so each model and each job is
also measured alone. Jobs carry their own concurrency figures, since each has its own cap.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.columns import Column, Frame
from sandbox_fleet.measure.concurrency import concurrency_figures, effective_cap_figures
from sandbox_fleet.measure.slice_sums import ROWS, SLICE_SUMS, VALUES, SliceSum
from sandbox_fleet.measure.stats import (
    SMALL_SAMPLE_ROWS,
    US,
    exception_rate,
    group_counts,
    group_sums,
    quantile_nonempty,
    ratio,
)
from sandbox_fleet.measure.steps import group_rows

#: Masked group counts and sums go a block of rows at a time: they run beside the token pass,
#: and a masked copy of every row's codes and holds would add ~100 MB at 10M rows to the peak.
BLOCK_ROWS = 1 << 20


def _blockwise_counts(codes: np.ndarray, n_groups: int, mask: np.ndarray) -> np.ndarray:
    total = np.zeros(n_groups, dtype=np.int64)
    for i in range(0, codes.size, BLOCK_ROWS):
        total += group_counts(codes[i:i + BLOCK_ROWS], n_groups, mask[i:i + BLOCK_ROWS])
    return total


def _blockwise_sums(codes: np.ndarray, n_groups: int, values: np.ndarray, mask: np.ndarray) -> list[int]:
    total = [0] * n_groups  # exact integers: block sums add up to the whole sum
    for i in range(0, codes.size, BLOCK_ROWS):
        part = group_sums(codes[i:i + BLOCK_ROWS], n_groups, values[i:i + BLOCK_ROWS], mask[i:i + BLOCK_ROWS])
        total = [a + b for a, b in zip(total, part)]
    return total


def _slice_sum(fr: Frame, codes: np.ndarray, n: int, threshold: float, entry: SliceSum):
    """One ``SLICE_SUMS`` entry per group, in memory: exact integers."""
    rule = ROWS[entry.where][0]
    mask = None if rule is None else rule(fr, threshold)
    if entry.value is None:
        return group_counts(codes, n) if mask is None else _blockwise_counts(codes, n, mask)
    values = getattr(fr, VALUES[entry.value][0])
    if isinstance(values, Column):  # nullable: its chunks in place, nulls read as 0
        return values.group_sums_where(codes, n, np.ones(codes.size, dtype=bool) if mask is None else mask)
    return group_sums(codes, n, values) if mask is None else _blockwise_sums(codes, n, values, mask)


def group_table(fr: Frame, codes: np.ndarray, n_groups: int, threshold: float) -> list[dict[str, int]]:
    """Per group, every ``slice_sums.SLICE_SUMS`` entry by name: ``{name: int}``."""
    cols = {name: _slice_sum(fr, codes, n_groups, threshold, entry) for name, entry in SLICE_SUMS.items()}
    return [{name: int(c[g]) for name, c in cols.items()} for g in range(n_groups)]


def group_figures(fr: Frame, codes: np.ndarray, names: list[str], threshold: float,
                  *, groups: int | None = None, key: str = "model", table: list | None = None) -> dict:
    """rows, exception_rate, hold median/p99, pass_rate, token rates for each named group.

    Counts and sums are exact integers from one pass per column over the group codes; hold
    percentiles come from the frame's per-group partition (cached under ``key``). ``codes``
    index ``names`` (null -> NONE_LABEL); only the first ``groups`` names are reported
    (default all), so a grouping can leave its null group out. ``table``: these codes'
    ``group_table``, if it was built already (``model_table``).
    """
    agg = table if table is not None else group_table(fr, codes, len(names), threshold)
    sorted_us, offsets = fr.grouped_holds(codes, len(names), key)
    return {name: slice_figures(agg[i], sorted_us[offsets[i]:offsets[i + 1]])
            for i, name in enumerate(names[:groups]) if agg[i]["rows"]}


def slice_figures(g: dict[str, int], holds_us) -> dict:
    """One slice's figures from its ``SLICE_SUMS`` integers ``g`` and its holds (integer
    microseconds, sorted or partitioned at ``stats.order_ranks``, or out of core's streamed ranks),
    in memory and out of core alike."""
    n = g["rows"]
    tok_s = g["tok_us"] / US  # exact integer microseconds -> seconds
    return {
        "rows": n,
        "small_sample": n < SMALL_SAMPLE_ROWS,
        "sandbox_s": g["sandbox_us"] / US,
        "exception_rate": exception_rate(g["exc"], g["flagged"]),
        "exception_rate_rows": g["flagged"],
        "hold_median_s": quantile_nonempty(holds_us, 0.5) / US,
        "hold_p99_s": quantile_nonempty(holds_us, 0.99) / US,
        "hold_mean_s": g["sandbox_us"] / n / US,
        "rewarded": g["rewarded"],
        "passed": g["passed"],
        "pass_rate": ratio(g["passed"], g["rewarded"]),
        "token_rows": g["tok_rows"],
        "prefill_per_sandbox_s": ratio(g["tok_in"], tok_s) if g["tok_rows"] else None,
        "decode_per_sandbox_s": ratio(g["tok_out"], tok_s) if g["tok_rows"] else None,
        **{key: g[name] for name, entry in SLICE_SUMS.items() if (key := entry.key) is not None},
    }


def model_table(fr: Frame, threshold: float) -> list[dict[str, int]]:
    """``by_model``'s counts and sums (``group_table``); they read no hold grouping, so their pass runs
    beside the hold groupings (1 s of bincounts at 10M rows)."""
    codes, names = fr.model.labelled()
    return group_table(fr, codes, len(names), threshold)


def by_model(fr: Frame, threshold: float, table: list | None = None) -> dict:
    """``group_figures`` per model plus hold histograms; ``table``: ``model_table``'s, if computed already."""
    codes, names = fr.model.labelled()
    out = group_figures(fr, codes, names, threshold, key="model", table=table)
    for name, hist in model_hold_histograms(fr, codes, names).items():
        if name in out:
            out[name]["hold_histogram"] = hist
    return out


def model_hold_histograms(fr: Frame, codes: np.ndarray, names: list[str]) -> dict:
    """Per model: the log-spaced hold histogram (``holds.histogram``), from the cached grouping,
    so the report can draw per-model hold CDFs without raw rows."""
    from sandbox_fleet.measure.holds import histogram

    sorted_us, offsets = fr.grouped_holds(codes, len(names), "model")
    out = {}
    for i, name in enumerate(names):
        part = sorted_us[offsets[i]:offsets[i + 1]]
        if part.size:
            out[name] = histogram(part)
    return out


def by_job(fr: Frame, threshold: float, caps: dict[str, int],
           rows: tuple[np.ndarray, np.ndarray] | None = None, concurrency: dict[str, dict] | None = None) -> dict:
    """Per job (rows without a job are left out): group figures plus concurrency.

    ``rows`` is ``steps.group_rows(fr.job.codes, ...)`` when the caller already has it;
    ``concurrency``: each job's ``concurrency_figures`` (with its cap), if swept already
    (``concurrency.grouped_sweeps``).
    """
    if not fr.job.names:
        return {}
    codes, names = fr.job.labelled()
    out = group_figures(fr, codes, names, threshold, groups=len(fr.job.names), key="job")
    del codes
    if concurrency is None:
        concurrency = _job_sweeps(fr, caps, rows)
    for name in fr.job.names:
        if name not in concurrency:
            continue
        conc = concurrency[name]
        conc.update(effective_cap_figures(conc))
        conc.pop("rows")
        out[name]["concurrency"] = conc
        # Flat copies of the figures plan/report read most, next to the group figures.
        for key in ("peak", "mean", "duty", "touches", "time_at_peak_s", "cap_detected", "configured_cap"):
            out[name][key] = conc[key]
    return out


def _job_sweeps(fr: Frame, caps: dict[str, int], rows: tuple[np.ndarray, np.ndarray] | None) -> dict[str, dict]:
    """Each job's ``concurrency_figures``, one sweep per job."""
    order, bounds = rows if rows is not None else group_rows(fr.job.codes, len(fr.job.names))
    out = {}
    for i, name in enumerate(fr.job.names):
        idx = order[bounds[i]:bounds[i + 1]]
        if idx.size:
            out[name] = concurrency_figures(fr.start_us[idx], fr.finish_us[idx], caps.get(name))
    return out

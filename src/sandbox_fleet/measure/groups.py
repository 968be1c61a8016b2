"""Per-model and per-job slices: the headline figures for each group on its own.

Aggregate statistics over a mixed corpus describe no real configuration (the document's
gpt-oss-120b slice: 74.5% exceptions, 139 s median hold), so each model and each job is
also measured alone. Jobs carry their own concurrency figures, since each has its own cap.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.columns import Frame
from sandbox_fleet.measure.concurrency import concurrency_figures
from sandbox_fleet.measure.steps import group_rows
from sandbox_fleet.measure.stats import (
    SMALL_SAMPLE_ROWS,
    US,
    exception_rate,
    group_counts,
    group_sums,
    quantile_sorted,
    ratio,
)


def _group_table(fr: Frame, codes: np.ndarray, n_groups: int, threshold: float) -> list[tuple[int, ...]]:
    """Per group: rows, sandbox_us, flagged, exc, rewarded, passed, tok_rows, tok_us, tok_in,
    tok_out; counts by bincount and sums exact in integers (``stats.group_sums``)."""
    exc_col = fr.has_exception
    tok = fr.has_tokens
    cols = [
        group_counts(codes, n_groups),
        group_sums(codes, n_groups, fr.hold_us),
        group_counts(codes, n_groups, exc_col.valid),
        group_counts(codes, n_groups, exc_col.valid & exc_col.values),
        group_counts(codes, n_groups, fr.rewarded),
        group_counts(codes, n_groups, fr.passed(threshold)),
        group_counts(codes, n_groups, tok),
        group_sums(codes, n_groups, fr.hold_us, tok),
        fr.input_tokens.group_sums_where(codes, n_groups, tok),
        fr.output_tokens.group_sums_where(codes, n_groups, tok),
    ]
    return [tuple(int(c[g]) for c in cols) for g in range(n_groups)]


def group_figures(fr: Frame, codes: np.ndarray, names: list[str], threshold: float,
                  *, groups: int | None = None, key: str = "model") -> dict:
    """rows, exception_rate, hold median/p99, pass_rate, token rates for each named group.

    Counts and sums are exact integers from one pass per column over the group codes; hold
    percentiles come from the frame's cached per-group sort (cached under ``key``). ``codes``
    index ``names`` (null -> NONE_LABEL); only the first ``groups`` names are reported
    (default all), so a grouping can leave its null group out.
    """
    agg = _group_table(fr, codes, len(names), threshold)
    sorted_us, offsets = fr.grouped_holds(codes, len(names), key)
    out = {}
    for i, name in enumerate(names[:groups]):
        n, sandbox_us, flagged, exc, rewarded, passed, tok_rows, tok_us, tok_in, tok_out = agg[i]
        if n == 0:
            continue
        part = sorted_us[offsets[i]:offsets[i + 1]]
        tok_s = tok_us / US  # exact integer microseconds -> seconds
        out[name] = {
            "rows": n,
            "small_sample": n < SMALL_SAMPLE_ROWS,
            "sandbox_s": sandbox_us / US,
            "exception_rate": exception_rate(exc, flagged),
            "exception_rate_rows": flagged,
            "hold_median_s": quantile_sorted(part, 0.5) / US,
            "hold_p99_s": quantile_sorted(part, 0.99) / US,
            "hold_mean_s": sandbox_us / n / US,
            "rewarded": rewarded,
            "passed": passed,
            "pass_rate": ratio(passed, rewarded),
            "token_rows": tok_rows,
            "prefill_per_sandbox_s": ratio(tok_in, tok_s) if tok_rows else None,
            "decode_per_sandbox_s": ratio(tok_out, tok_s) if tok_rows else None,
        }
    return out


def by_model(fr: Frame, threshold: float) -> dict:
    codes, names = fr.model.labelled()
    out = group_figures(fr, codes, names, threshold, key="model")
    for name, hist in model_hold_histograms(fr, codes, names).items():
        if name in out:
            out[name]["hold_histogram"] = hist
    return out


def model_hold_histograms(fr: Frame, codes: np.ndarray, names: list[str]) -> dict:
    """Per model: the log-spaced hold histogram (``holds.histogram``), from the cached group sort,
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
           rows: tuple[np.ndarray, np.ndarray] | None = None) -> dict:
    """Per job (rows without a job are left out): group figures plus concurrency.

    ``rows`` is ``steps.group_rows(fr.job.codes, ...)`` when the caller already has it.
    """
    if not fr.job.names:
        return {}
    codes, names = fr.job.labelled()
    out = group_figures(fr, codes, names, threshold, groups=len(fr.job.names), key="job")
    del codes
    order, bounds = rows if rows is not None else group_rows(fr.job.codes, len(fr.job.names))
    for i, name in enumerate(fr.job.names):
        idx = order[bounds[i]:bounds[i + 1]]
        if idx.size == 0:
            continue
        conc = concurrency_figures(fr.start_us[idx], fr.finish_us[idx], caps.get(name))
        conc.pop("rows")
        out[name]["concurrency"] = conc
        # Flat copies of the figures plan/report read most, next to the group figures.
        for key in ("peak", "mean", "duty", "touches", "time_at_peak_s", "cap_detected", "configured_cap"):
            out[name][key] = conc[key]
    return out

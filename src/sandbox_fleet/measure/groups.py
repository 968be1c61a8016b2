"""Per-model and per-job slices: the headline figures for each group on its own.

Aggregate statistics over a mixed corpus describe no real configuration (the document's
gpt-oss-120b slice: 74.5% exceptions, 139 s median hold), so each model and each job is
also measured alone. Jobs carry their own concurrency figures, since each has its own cap.
"""

from __future__ import annotations

import numpy as np

from sandbox_fleet.measure.columns import NONE_LABEL, Frame
from sandbox_fleet.measure.concurrency import concurrency_figures
from sandbox_fleet.measure.sql import HOLD_US, query
from sandbox_fleet.measure.steps import group_rows
from sandbox_fleet.measure.stats import SMALL_SAMPLE_ROWS, US, exception_rate, quantile_sorted, ratio


_GROUP_SQL = """
SELECT coalesce({col}, ?) AS g,
       count(*) AS n,
       sum({hold}) AS sandbox_us,
       count(has_exception) AS flagged,
       count(*) FILTER (WHERE has_exception) AS exc,
       count(*) FILTER (WHERE reward IS NOT NULL AND NOT isnan(reward)) AS rewarded,
       count(*) FILTER (WHERE reward >= ? AND NOT isnan(reward)) AS passed,
       count(*) FILTER (WHERE {tok}) AS tok_rows,
       coalesce(sum({hold}) FILTER (WHERE {tok}), 0) AS tok_us,
       coalesce(sum(input_tokens) FILTER (WHERE {tok}), 0) AS tok_in,
       coalesce(sum(output_tokens) FILTER (WHERE {tok}), 0) AS tok_out
FROM r {where} GROUP BY g ORDER BY g
"""
_TOKENS = "input_tokens IS NOT NULL AND output_tokens IS NOT NULL"


def group_figures(fr: Frame, column: str, codes: np.ndarray, names: list[str], threshold: float,
                  *, skip_null: bool = False) -> dict:
    """rows, exception_rate, hold median/p99, pass_rate, token rates for each named group.

    Counts and sums come from one DuckDB GROUP BY (exact integers); hold percentiles from
    the frame's cached per-group sort. ``codes`` index ``names`` (null -> NONE_LABEL).
    """
    sql = _GROUP_SQL.format(col=column, hold=HOLD_US, tok=_TOKENS,
                            where=f"WHERE {column} IS NOT NULL" if skip_null else "")
    agg = {row[0]: row[1:] for row in query(fr.table, sql, [NONE_LABEL, threshold])}
    sorted_us, offsets = fr.sorted_holds(codes, len(names), column)
    out = {}
    for i, name in enumerate(names):
        if name not in agg:
            continue
        n, sandbox_us, flagged, exc, rewarded, passed, tok_rows, tok_us, tok_in, tok_out = (int(v) for v in agg[name])
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
    out = group_figures(fr, "model", codes, names, threshold)
    for name, hist in model_hold_histograms(fr, codes, names).items():
        if name in out:
            out[name]["hold_histogram"] = hist
    return out


def model_hold_histograms(fr: Frame, codes: np.ndarray, names: list[str]) -> dict:
    """Per model: the log-spaced hold histogram (``holds.histogram``), from the cached group sort,
    so the report can draw per-model hold CDFs without raw rows."""
    from sandbox_fleet.measure.holds import histogram

    sorted_us, offsets = fr.sorted_holds(codes, len(names), "model")
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
    out = group_figures(fr, "job", codes, names, threshold, skip_null=True)
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

"""Prefix-cache check: a harness that breaks the prompt prefix re-sends the whole transcript each turn."""

from __future__ import annotations

from typing import TYPE_CHECKING

from sandbox_fleet.measure.model import MeasureSummary, Tokens
from sandbox_fleet.report.checks.result import CheckResult, pct, skipped
from sandbox_fleet.report.fields import as_num
from sandbox_fleet.report.thresholds import Thresholds

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import PlanSummary


def prefix_cache_off(m: MeasureSummary, plan: PlanSummary | None, t: Thresholds) -> CheckResult:
    name, cfg = "prefix_cache_off", t.prefix_cache_off
    tok = m.tokens or Tokens()
    input_tok, tok_rows = as_num(tok.input), as_num(tok.rows)
    if input_tok is None or input_tok <= 0 or tok_rows == 0:
        return skipped(name, "no rows report input tokens")
    rows_txt = f"{tok_rows:,.0f} rows" if tok_rows is not None else "the rows"
    cached, frac = as_num(tok.cached), as_num(tok.cached_fraction)
    if frac is None and cached is not None:
        frac = cached / input_tok
    if frac is None:
        return CheckResult(name, cfg.unreported, None, cfg.warn_below_cached_fraction,
                           f"cached tokens are not reported on {rows_txt} with input tokens: the cache hit "
                           "rate cannot be verified; scrape the serving pool's cache hit counter and alert on it")
    if frac == 0:
        return CheckResult(name, "fail", 0.0, cfg.warn_below_cached_fraction,
                           f"0 cached tokens across {rows_txt} and {input_tok:,.0f} input tokens: prefix caching "
                           "is off and every turn re-sends the transcript; caching is worth (turns+1)/2 on prefill")
    if frac < cfg.warn_below_cached_fraction:
        return CheckResult(name, "warn", frac, cfg.warn_below_cached_fraction,
                           f"only {pct(frac)} of input tokens were cached: the harness may break the prefix "
                           "(timestamps, reordered tools, front truncation)")
    return CheckResult(name, "pass", frac, cfg.warn_below_cached_fraction, f"{pct(frac)} of input tokens cached")

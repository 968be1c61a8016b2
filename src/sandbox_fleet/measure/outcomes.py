"""Outcomes (exception rate, rewarded, passed, pass rates) and exceptions by type.

Outcome of a row, exception first: ``exception`` (has_exception true), else ``limit`` (a
limit ended it: ``limit_type`` set; the producer scored it, so it is no exception), else
``no_reward`` (reward null or NaN), else ``passed`` (reward >= threshold), else ``failed``.
``pass_rate`` is over rewarded rows (the document's 25.5%). ``pass_rate_clean`` and
``pass_rate_exception`` are over *all* rows without / with an exception (clean rows exclude
limit-ended ones, which ``pass_rate_limit`` covers), a missing reward counting as not passed
(the document's 26.65% and 0.97%). The limit figures are null when no row records a limit.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.columns import NONE_LABEL, Frame
from sandbox_fleet.measure.rewards import reward_figures
from sandbox_fleet.measure.stats import SMALL_SAMPLE_ROWS, US, exception_rate, group_sums, rate_ci, ratio, sum_where

OUTCOMES = ("exception", "limit", "passed", "failed", "no_reward")
HOUR_US = 3600 * US


def outcome_codes(fr: Frame, threshold: float) -> np.ndarray:
    """Index into OUTCOMES for each row (see module docstring for the order); one byte a row."""
    code = np.full(fr.n, OUTCOMES.index("no_reward"), dtype=np.int8)
    code[fr.rewarded] = OUTCOMES.index("failed")
    code[fr.passed(threshold)] = OUTCOMES.index("passed")
    code[fr.hit_limit] = OUTCOMES.index("limit")
    code[fr.exception] = OUTCOMES.index("exception")
    return code


def measure_outcomes(fr: Frame, threshold: float, seed: int) -> dict:
    hold = fr.hold_us
    flagged = fr.has_exception.valid
    exc = fr.exception
    limit = fr.hit_limit
    clean = flagged & ~fr.has_exception.values & ~limit
    rewarded = fr.rewarded
    passed = fr.passed(threshold)
    n_flag, n_exc, n_clean = int(flagged.sum()), int(exc.sum()), int(clean.sum())
    n_rew, n_pass = int(rewarded.sum()), int(passed.sum())
    n_pass_clean, n_pass_exc = int((passed & clean).sum()), int((passed & exc).sum())
    total_us = int(hold.sum(dtype=np.int64))
    exc_us = sum_where(hold, exc)  # no copy of the selected holds
    rates = {
        # name: (successes, rows)
        "exception_rate": (n_exc, n_flag),
        "pass_rate": (n_pass, n_rew),
        "pass_rate_clean": (n_pass_clean, n_clean),
        "pass_rate_exception": (n_pass_exc, n_exc),
    }
    out: dict = {"rows": fr.n, "threshold": threshold}
    for name, (k, n) in rates.items():
        out[name] = ratio(k, n)
    out["exception_rate"] = exception_rate(n_exc, n_flag)
    if n_rew == 0:
        # With no reward on any row, "not passed" is unknown rather than zero.
        out["pass_rate_clean"] = out["pass_rate_exception"] = None
    out.update({
        "exceptions": n_exc,
        "clean": n_clean,
        "rewarded": n_rew,
        "passed": n_pass,
        "failed": n_rew - n_pass,
        "no_reward": fr.n - n_rew,
        "passed_clean": n_pass_clean,
        "passed_exception": n_pass_exc,
        "sandbox_hours": total_us / HOUR_US,
        "sandbox_hours_per_pass": ratio(total_us / HOUR_US, n_pass),
        # no row says whether it raised: the hours on exceptions are unknown, not zero
        "exception_sandbox_hours": exc_us / HOUR_US if out["exception_rate"] is not None else None,
        "exception_sandbox_share": ratio(exc_us, total_us) if out["exception_rate"] is not None else None,
    })
    for name, (k, n) in rates.items():
        out[f"{name}_rows"] = n
        out[f"{name}_ci95"] = rate_ci(k, n, seed=seed, name=name) if out[name] is not None else None
    out["small_sample"] = [name for name, (_, n) in rates.items() if n < SMALL_SAMPLE_ROWS]
    out.update(_limit_figures(fr, limit, passed, hold, total_us, seed))
    out.update(reward_figures(fr.reward.values, rewarded, threshold))
    return out


def _limit_figures(fr: Frame, limit: np.ndarray, passed: np.ndarray, hold: np.ndarray, total_us: int,
                   seed: int) -> dict:
    """Rows a limit ended: count, share of all rows, how many passed, sandbox-hours, by type."""
    n_lim = int(np.count_nonzero(limit))
    if not n_lim:
        return {}
    n_pass = int((passed & limit).sum())
    lim_us = sum_where(hold, limit)
    types = fr.table.column("limit_type").filter(pa.array(limit))
    by_type = pc.value_counts(types).to_pylist()
    return {
        "limits": n_lim,
        "limit_rate": n_lim / fr.n,
        "limits_by_type": {d["values"]: d["counts"] for d in sorted(by_type, key=lambda d: (-d["counts"], d["values"]))},
        "passed_limit": n_pass,
        "pass_rate_limit": ratio(n_pass, n_lim),
        "pass_rate_limit_ci95": rate_ci(n_pass, n_lim, seed=seed, name="pass_rate_limit"),
        "limit_sandbox_hours": lim_us / HOUR_US,
        "limit_sandbox_share": ratio(lim_us, total_us),
    }


def measure_exceptions(fr: Frame) -> dict:
    """Exception rows by exception_type: count and sandbox-hours (null type -> NONE_LABEL).

    Types ordered by count descending, then name; integer-microsecond sums are exact.
    """
    exc = fr.exception
    types = fr.table.column("exception_type").filter(pa.array(exc))
    encoded = pc.dictionary_encode(types).combine_chunks() if len(types) else None
    per: dict[str, list[int]] = {}
    if encoded is not None:
        names = [NONE_LABEL if v is None else v for v in encoded.dictionary.to_pylist()] + [NONE_LABEL]
        codes = np.asarray(pc.fill_null(encoded.indices, len(names) - 1).to_numpy(zero_copy_only=False), dtype=np.int64)
        counts = np.bincount(codes, minlength=len(names))
        sums = group_sums(codes, len(names), fr.hold_us[exc])
        for name, n, us in zip(names, counts, sums):
            if n:  # a type literally named NONE_LABEL shares the row with the nulls, as coalesce would
                acc = per.setdefault(name, [0, 0])
                acc[0] += int(n)
                acc[1] += us
    rows = sorted(per.items(), key=lambda kv: (-kv[1][0], kv[0]))
    return {
        "rows": int(sum(n for _, (n, _) in rows)),
        "by_type": {t: n for t, (n, _) in rows},
        "sandbox_hours_by_type": {t: us / HOUR_US for t, (_, us) in rows},
    }

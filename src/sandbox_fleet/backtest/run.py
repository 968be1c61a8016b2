"""``backtest``: how far the simulator is off on the user's own history, and whether it drifted."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sandbox_fleet.backtest import drift as D
from sandbox_fleet.backtest.figures import concurrency_at
from sandbox_fleet.backtest.model import BacktestSummary, headline, signed_pct
from sandbox_fleet.backtest.predict import (
    LEVEL,
    SERIES_POINTS,
    actual_figures,
    bounds,
    coverage,
    interval_rank,
    predict,
    rows_of,
    step_of,
    summarise,
)
from sandbox_fleet.backtest.split import MIN_ROWS, split_table
from sandbox_fleet.contract import filter_used
from sandbox_fleet.errors import InputError
from sandbox_fleet.limits import check_seed
from sandbox_fleet.telemetry.options import ReadOptions

DEFAULT_SEEDS = 40
MAX_SEEDS = 1000


def backtest_paths(paths: list[str], *, split_at: float | None = None, split_by: str | None = None,
                   seeds: int = DEFAULT_SEEDS, seed: int = 0, min_rows: int = MIN_ROWS, progress: bool = False,
                   read: ReadOptions | None = None, models: list[str] | None = None, since: str | None = None,
                   until: str | None = None) -> BacktestSummary:
    """Read telemetry (``read``: the reader options, ``telemetry.options.make_options``; default: sniffed
    format, UTC), keep the rollouts of ``models`` started in [``since``, ``until``) as measure keeps them,
    and backtest it; the summary (``.to_json()`` is what ``backtest --json`` prints)."""
    from sandbox_fleet.telemetry import filter_rollouts, load_telemetry

    _check_args(seeds, seed)
    tel = load_telemetry([str(p) for p in paths], progress=progress, read=read)
    if models or since or until:
        tel = filter_rollouts(tel, models=models, since=since, until=until)
    if tel.rollouts.num_rows == 0:
        why = "; ".join(f"{k}: {v}" for k, v in sorted(tel.rejected.items())) or "no rows"
        raise InputError(f"{', '.join(map(str, paths))}: no rollout with a start and a finish time to backtest ({why})")
    summary = backtest_rollouts(tel.rollouts, sources=list(tel.sources or paths), rejected=dict(tel.rejected),
                                split_at=split_at, split_by=split_by, seeds=seeds, seed=seed, min_rows=min_rows)
    return summary.model_copy(update={"telemetry_filter": filter_used(models, since, until)})


def backtest_rollouts(rollouts: pa.Table, *, sources: list[str], rejected: dict[str, int] | None = None,
                      split_at: float | None = None, split_by: str | None = None, seeds: int = DEFAULT_SEEDS,
                      seed: int = 0, min_rows: int = MIN_ROWS) -> BacktestSummary:
    """Backtest a canonical rollout table: calibrate on A, predict B, calibrate on B (oracle), test drift."""
    _check_args(seeds, seed)
    sp = split_table(rollouts, split_at=split_at, split_by=split_by, min_rows=min_rows)
    a, b = rows_of(sp.a), rows_of(sp.b)
    steps = step_of(b)
    actual = actual_figures(b, steps)
    grid_us = np.linspace(0, int(b.finish_us.max()), SERIES_POINTS).round().astype(np.int64)
    runs, series = predict(a, b, steps, seed, seeds, grid_us)
    oracle_runs, _ = predict(b, b, steps, seed + 1, seeds, grid_us)
    figures, oracle = summarise(actual, runs), summarise(actual, oracle_runs)
    tests, skipped = D.drift_tests(a.drift_view(), b.drift_view())
    new = ~np.isin(b.model, a.model)
    drift = {"detected": any(t["drifted"] for t in tests), "alpha": D.ALPHA, "correction": "holm-bonferroni",
             "tests": tests, "skipped": skipped, "b_only_models": sorted(set(b.model[new].tolist())),
             "b_only_share": float(new.mean())}
    low, high = bounds(series)
    summary = BacktestSummary.build(
        sources=[str(s) for s in sources], rows=int(rollouts.num_rows), rejected=rejected or {},
        split={"by": sp.how, "fraction": sp.fraction, "moved_to_step": sp.moved_to_step, "a_rows": a.n, "b_rows": b.n,
               "a_groups": list(sp.a_groups), "b_groups": list(sp.b_groups), "min_rows": min_rows,
               "b_cap": b.cap, "a_cap": a.cap},
        seed=seed, seeds=seeds, interval_level=LEVEL, figures=figures, oracle=oracle, drift=drift,
        series={"t_s": (grid_us / 1e6).tolist(), "actual": concurrency_at(grid_us, b.start_us, b.finish_us).tolist(),
                "predicted": np.median(series, axis=0).tolist(), "low": low.tolist(), "high": high.tolist()},
        verdict=verdict(figures, oracle, drift), basis=BASIS + _interval_basis(seeds), interval_coverage=coverage(seeds),
    )
    return summary


BASIS = ("calibrated on part A as `simulate --from` does (holds bootstrapped by model and outcome, cap = measured "
         "peak); B's start times replayed on B's measured peak as the cap; each seed resamples A's rows, so an "
         "interval is the spread of single runs of B (seeds x bootstrap), not a confidence interval of the mean; "
         "holds drawn by a smoothed bootstrap (log-normal kernel, Silverman's bandwidth, log-mean and log-sd kept, "
         "per model), so the calibration's uncertainty reaches past A's longest hold; "
         "oracle = the same prediction calibrated on B itself; drift = Mann-Whitney U (holds per model, tokens per "
         "turn, turns) and a two-proportion z test (exception rate per model), Holm-Bonferroni adjusted, flagged only at "
         f"adjusted p < {D.ALPHA} and an effect of at least Cliff's |delta| {D.DELTA_FLOOR} or Cohen's |h| {D.H_FLOOR}")


def _interval_basis(seeds: int) -> str:
    k = interval_rank(seeds)
    short = "" if coverage(seeds) >= LEVEL else f", short of {LEVEL:.0%}: give at least 39 seeds"
    return (f"; interval = runs ranked {k} and {seeds + 1 - k} of {seeds}, which cover one more run with "
            f"probability {coverage(seeds):.1%}{short}")


def _check_args(seeds: int, seed: int) -> None:
    check_seed(seed)
    if not 2 <= seeds <= MAX_SEEDS:
        raise InputError(f"`seeds` must be between 2 and {MAX_SEEDS} (an interval needs several runs), got {seeds}")


def verdict(figures: dict, oracle: dict, drift: dict) -> str:
    """One line: the errors that carry information and the makespan's (``headline``), the worst
    figure against the oracle's, what drifted, and B's models that A never ran (a change of mix,
    not of constants)."""
    head = headline({k: (v["error"], v["within_interval"]) for k, v in figures.items()}, LEVEL)
    scored = [(abs(v["error"]), k) for k, v in figures.items() if v["error"] is not None and k != "makespan_s"]
    if scored:
        name = max(scored)[1]
        head += (f"; worst figure {name} {signed_pct(figures[name]['error'])}, calibrated on B itself "
                 f"{signed_pct(oracle[name]['error'])}")
    moved = [t for t in drift["tests"] if t["drifted"]]
    tail = f"constants drifted: yes ({', '.join(_moved(t) for t in moved)})" if moved else "constants drifted: no"
    if drift.get("b_only_models"):
        tail += (f"; B's model(s) {', '.join(drift['b_only_models'])} ({drift['b_only_share']:.0%} of B) are not in A "
                 "and were drawn from all of A")
    return f"{head}; {tail}"


def _moved(t: dict) -> str:
    where = t["quantity"] + (f" of {t['model']}" if t["model"] else "")
    fmt = ".1%" if t["value_name"] == "rate" else ".4g"
    return f"{where} {t['value_name']} {t['a_value']:{fmt}} -> {t['b_value']:{fmt}}"

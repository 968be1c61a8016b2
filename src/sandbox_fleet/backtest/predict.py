"""Predict part B from a calibration: replay B's arrivals against bootstrapped rows, many seeds.

A calibration is ``simulate --from``'s: holds bootstrapped by model and outcome (a row's hold
travels with its exception flag, and here with its tokens), the cap a measured peak. Each run
first resamples the calibration's rows with replacement (the bootstrap over A's rows: how much
the calibration itself could have differed), then gives every rollout of B a row of its own
model from that resample (any model when the resample has none of it), and replays B's start
times on B's cap. The spread of these runs is a prediction interval for one run of B, not a
confidence interval of the mean: the order statistics ``[x_(k), x_(n+1-k)]`` of the ``n`` runs, which
cover one more exchangeable run with probability ``(n + 1 - 2k) / (n + 1)`` exactly (``interval_rank``;
the interpolated 2.5% and 97.5% quantiles of 40 runs cover only 37.05 / 41 = 90.4%).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.backtest.figures import concurrency_at, run_figures
from sandbox_fleet.backtest.smooth import smoothed
from sandbox_fleet.backtest.split import finish_us, start_us, step_firsts
from sandbox_fleet.measure.stats import US
from sandbox_fleet.simulate import Fleet, Replay, run_workloads
from sandbox_fleet.simulate.scenario.calibrate import NO_MODEL, calibration, holds_s

#: two-sided coverage of the prediction intervals (reached from 39 runs on: ``coverage``)
LEVEL = 0.95
#: points of the predicted-vs-actual concurrency series
SERIES_POINTS = 120


@dataclass
class Rows:
    """One side's rollouts as arrays, in start order (times relative to its first start)."""

    start_us: np.ndarray
    finish_us: np.ndarray
    hold_s: np.ndarray
    model: np.ndarray  # str
    exception: np.ndarray  # 1.0, 0.0, NaN when not recorded
    tokens: np.ndarray  # input + output, NaN when not recorded
    turns: np.ndarray  # NaN when not recorded
    cap: int

    @property
    def n(self) -> int:
        return int(self.start_us.size)

    def drift_view(self) -> dict[str, np.ndarray]:
        return {"hold_s": self.hold_s, "model": self.model, "exception": self.exception,
                "tokens": self.tokens, "turns": self.turns}


def rows_of(table: pa.Table) -> Rows:
    order = np.argsort(start_us(table), kind="stable")
    t = table.take(order)
    s, f = start_us(t), finish_us(t)
    f = np.maximum(f, s)
    return Rows(
        start_us=s - s[0], finish_us=f - s[0], hold_s=holds_s(t),
        model=pc.fill_null(t.column("model"), NO_MODEL).to_numpy(zero_copy_only=False).astype(str),
        exception=_floats(pc.cast(t.column("has_exception"), pa.float64())),
        tokens=_floats(pc.add(t.column("input_tokens"), t.column("output_tokens"))),
        turns=_floats(t.column("turns")),
        cap=max(int(calibration(t).peak or 0), 1),
    )


def _floats(col) -> np.ndarray:
    return pc.cast(col, pa.float64()).to_numpy(zero_copy_only=False).astype(float)


def step_of(rows: Rows) -> np.ndarray | None:
    """Each rollout's RL step (start order), None when the side shows no steps."""
    firsts = step_firsts(rows.start_us, rows.finish_us)
    if firsts is None:
        return None
    return np.searchsorted(firsts, np.arange(rows.n), side="right") - 1


def actual_figures(b: Rows, steps: np.ndarray | None) -> dict[str, float | None]:
    return run_figures(b.start_us, b.start_us, b.finish_us, b.tokens, steps, queue_known=False)


def predict(calib: Rows, b: Rows, steps: np.ndarray | None, seed: int, seeds: int, grid_us: np.ndarray):
    """(figures per run, concurrency per run on ``grid_us``): ``seeds`` runs of B from ``calib``."""
    runs, series = [], []
    arrivals_s = b.start_us / US
    for r in range(seeds):
        rng = np.random.default_rng([seed, r])
        pick, holds = _draw_rows(calib, b.model, rng)
        wl = Replay(arrivals_s=arrivals_s, holds=holds,
                    exception=np.nan_to_num(calib.exception[pick]) > 0, name="b")
        res = run_workloads(Fleet(cap=b.cap), [wl], seed=int(rng.integers(2**31)))
        s = np.round(res.start_s * US).astype(np.int64)
        f = np.maximum(np.round(res.finish_s * US).astype(np.int64), s)
        arr = np.round(res.arrival_s * US).astype(np.int64)
        runs.append(run_figures(arr, s, f, calib.tokens[pick], steps, queue_known=True))
        series.append(concurrency_at(grid_us, s, f))
    return runs, np.array(series)


def _draw_rows(calib: Rows, models: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """(calibration row, hold) for each B rollout: a smoothed bootstrap of the rows (the calibration's
    uncertainty, its tail included), then a row of B's model where it can, its hold drawn around
    the resample's (``smooth``): a draw from the calibrated distribution, not a recorded value."""
    boot = rng.integers(0, calib.n, calib.n)
    boot_model = calib.model[boot]
    boot_hold = smoothed(calib.hold_s[boot], boot_model, calib.hold_s, calib.model, rng)
    pos = rng.integers(0, boot.size, models.size)  # any model: the fallback
    for m in np.unique(models):
        own = np.flatnonzero(boot_model == m)
        if own.size:
            sel = models == m
            pos[sel] = own[rng.integers(0, own.size, int(sel.sum()))]
    return boot[pos], smoothed(boot_hold[pos], boot_model[pos], boot_hold, boot_model, rng)


def interval_rank(n: int) -> int:
    """``k`` of the prediction interval ``[x_(k), x_(n+1-k)]`` of ``n`` sorted runs: the largest with
    ``(n + 1 - 2k) / (n + 1) >= LEVEL``, at least 1 (then the range of the runs)."""
    return max(1, int((1 - LEVEL) / 2 * (n + 1) + 1e-9))


def coverage(n: int) -> float:
    """What ``interval_rank``'s interval covers of one more run exchangeable with ``n`` runs."""
    return (n + 1 - 2 * interval_rank(n)) / (n + 1)


def bounds(vals: np.ndarray, axis: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(low, high) order statistics of the prediction interval along ``axis`` (``interval_rank``)."""
    k = interval_rank(vals.shape[axis])
    srt = np.sort(vals, axis=axis)
    return np.take(srt, k - 1, axis=axis), np.take(srt, vals.shape[axis] - k, axis=axis)


def summarise(actual: dict, runs: list[dict]) -> dict[str, dict]:
    """``{name: {actual, predicted, interval, error, within_interval}}``: predicted is the median run."""
    out = {}
    for name, act in actual.items():
        vals = np.array([r[name] for r in runs if r[name] is not None], dtype=float)
        if vals.size == 0:
            out[name] = {"actual": act, "predicted": None, "interval": None, "error": None, "within_interval": None}
            continue
        pred = float(np.median(vals))
        lo, hi = map(float, bounds(vals))
        out[name] = {
            "actual": act, "predicted": pred, "interval": [lo, hi],
            "error": pred / act - 1 if act else None,
            "within_interval": None if act is None else bool(lo <= act <= hi),
        }
    return out

"""Whether a run reached a steady state, and its figures over the steady window.

A finite run of an overloaded open system still ends (every rollout is served eventually), so its
averages exist but describe nothing: they grow with the run's length. This module says which case a
run is, before anyone reads its figures:

- **Open workloads** (Poisson, replay) are *unstable* when the offered work exceeds capacity, per
  sandbox pool (arrival rate x mean slot time per rollout, over ``cap`` slots) and per inference
  replica (arrival rate x the replica-seconds a rollout's calls need at best, over the replicas), or
  when the time in system trends upward over the steady window (the second half's mean against the
  first's, with a regression on batch means).
- **Closed populations** cannot grow: they are *saturated* when the binding resource (a sandbox pool
  the population overfills, or the inference pool) is busy at least ``SATURATED_AT`` of the time.
- **RL releases** wait for the trainer, so at most ``staleness + 1`` batches are in flight: the
  queue is bounded by construction and no growth test applies.

The **warm-up** is deleted by MSER-5 (White 1997): the output series (open: time in system by
arrival; closed: holds by start) is cut into batches of 5 and the truncation ``d`` (at most half the
batches) minimising ``sum((y_i - mean)^2) / (m - d)^2`` over the kept batches is deleted. A closed
population starts all at once, so nothing completes during its first holds: its window starts no
earlier than the end of that first wave (when it ends before the window's midpoint). The window
ends where the input stops (open: the last arrival; closed: the last start, after which the
population drains). Figures over the window carry 95% intervals from ``BATCHES`` batch means
(equal-length time batches, Student t); a window with fewer than ``MIN_HOLDS_PER_SANDBOX`` holds per
sandbox is flagged short: its interval is not yet worth its width.
"""

from __future__ import annotations

import math
from functools import cached_property

import numpy as np

from sandbox_fleet import exact
from sandbox_fleet.errors import InputError
from sandbox_fleet.simulate.engine.entities import COMPLETED
from sandbox_fleet.simulate.engine.policies import POLICIES
from sandbox_fleet.simulate.engine.policy_load import load_of, policy_tests
from sandbox_fleet.simulate.engine.workloads import CLOSED, OPEN, RL

MSER_BATCH = 5
BATCHES = 20  # batch means for the window's intervals
TREND_BATCHES = 10
TREND_T = 3.0  # a one-sided t of the regression slope above this ...
TREND_RATIO = 1.25  # ... and a second half this much above the first: the series grows
SATURATED_AT = 0.95
MIN_HOLDS_PER_SANDBOX = 30

# two-sided 95% Student t quantiles by degrees of freedom (a table: no SciPy dependency)
_T95 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 19: 2.093, 20: 2.086, 30: 2.042}


def t95(df: int) -> float:
    """The two-sided 95% Student t quantile for ``df`` degrees of freedom (table, rounded down)."""
    return _T95[max(k for k in _T95 if k <= df)] if df < 30 else 1.96


def mser(series: np.ndarray, batch: int = MSER_BATCH) -> int:
    """How many leading observations MSER-``batch`` deletes (a multiple of ``batch``; 0 for short series)."""
    m = series.size // batch
    if m < 2:
        return 0
    y = series[: m * batch].reshape(m, batch).mean(axis=1)
    y = y - y.mean()  # centred: the suffix sums of squares lose no precision
    s1 = np.cumsum(y[::-1])[::-1]
    s2 = np.cumsum((y * y)[::-1])[::-1]
    k = np.arange(m, 0, -1, dtype=float)  # batches kept after deleting d = 0..m-1
    stat = (s2 - s1 * s1 / k) / (k * k)
    d = int(np.argmin(stat[: m // 2 + 1]))
    return d * batch


def _mean_ci(vals: np.ndarray) -> tuple[float, list[float] | None]:
    m = float(vals.mean())
    if vals.size < 2:
        return m, None
    half = t95(vals.size - 1) * float(vals.std(ddof=1)) / math.sqrt(vals.size)
    return m, [m - half, m + half]


def _trend(series: np.ndarray) -> tuple[float | None, float | None]:
    """(second half's mean / first half's, one-sided t of the slope over ``TREND_BATCHES`` batch means)."""
    if series.size < 2 * TREND_BATCHES:
        return None, None
    half = series.size // 2
    first, second = float(series[:half].mean()), float(series[half:].mean())
    ratio = second / first if first > 0 else None
    b = np.array([c.mean() for c in np.array_split(series, TREND_BATCHES)])
    x = np.arange(b.size, dtype=float) - (b.size - 1) / 2
    # exactly rounded sums, not BLAS dot products: the same bits on every CPU (sandbox_fleet.exact)
    sxx = exact.fsum(x * x)
    slope = exact.fsum(x * (b - b.mean())) / sxx
    resid = b - b.mean() - slope * x
    se = math.sqrt(exact.fsum(resid * resid) / (b.size - 2) / sxx)
    t = slope / se if se > 0 else (math.inf if slope > 0 else 0.0)
    return ratio, t


class _Run:
    """The arrays of one result the analysis reads (the result's derived arrays, shared, not copied)."""

    def __init__(self, res):
        d = res.derived()
        self.res = res
        self.kinds = [wl.kind for wl in res.workloads]
        self.started = d["started"]
        self.s0, self.s1 = d["s0"], d["s1"]
        self.term = d["term"]
        self.sojourn_start, self.sojourn_end = d["sojourn_start"], d["sojourn_end"]
        self._d = d

    @property
    def hold(self) -> np.ndarray:
        """``s1 - s0``, the result's own cached array."""
        return self._d["hold"]

    @property
    def sojourn(self) -> np.ndarray:
        """``sojourn_end - sojourn_start``, the result's own cached array."""
        return self._d["sojourn"]

    @cached_property
    def pools(self) -> np.ndarray:
        """Each row's pool (read only with several pools or a closed population)."""
        return np.array([wl.pool for wl in self.res.workloads])[self.res.workload]


def _ascending(x: np.ndarray) -> bool:
    """Whether ``x`` is in ascending order without NaN: then a stable sort leaves it as it is
    (open arrivals and FIFO starts usually are), and windows over it are slices."""
    return x.size < 2 or bool(np.all(x[:-1] <= x[1:]))


def _upto(times: np.ndarray, t: float) -> int:
    """How many of ``times`` (ascending, NaN last) are ``<= t``: they are its first ones."""
    return int(np.searchsorted(times, t, side="right")) if t == t else 0


def _since(times: np.ndarray, t: float) -> int:
    """Where the ``times >= t`` of ``times`` (ascending, NaN last) begin (NaN ``t``: none do)."""
    return int(np.searchsorted(times, t, side="left")) if t == t else times.size


def _series(r: _Run) -> tuple[np.ndarray, np.ndarray, float, str]:
    """(observation times, values, window end, what the series is) for the warm-up deletion."""
    res = r.res
    if CLOSED in r.kinds:
        end = float(r.s0.max()) if r.s0.size else 0.0
        if OPEN in r.kinds:
            end = min(end, float(np.max(res.rollout_arrival_s[_open_rollouts(res)])))
        times, values = _by_time(r.s0, r.hold)
        return times, values, end, "holds by start"
    times, values = _by_time(r.sojourn_start, r.sojourn)
    end = float(times[-1]) if times.size else 0.0
    if RL in r.kinds:
        end = float(res.end_s)
    return times, values, end, "time in system by arrival"


def _by_time(times: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``times`` in ascending order (stable) and ``values`` in the same order; the arrays
    themselves when ``times`` already is (no sort, no copies)."""
    if _ascending(times):
        return times, values
    order = np.argsort(times, kind="stable")
    return times[order], values[order]


def _first_wave_end(r: _Run) -> float | None:
    """When the last of every closed population's first ``population`` rollouts ended (None: no closed workload)."""
    res = r.res
    offs = np.cumsum([0] + [wl.count for wl in res.workloads])
    ends = [float(np.max(res.finish_s[(res.rollout >= offs[w]) & (res.rollout < offs[w] + min(wl.population, wl.count))]))
            for w, wl in enumerate(res.workloads) if wl.kind == CLOSED]
    return max(ends) if ends else None


def _open_rollouts(res) -> np.ndarray:
    kinds = np.array([wl.kind for wl in res.workloads])
    offs = np.cumsum([0] + [wl.count for wl in res.workloads])
    return np.concatenate([np.arange(offs[w], offs[w + 1]) for w in range(len(res.workloads)) if kinds[w] == OPEN])


def _offered(r: _Run) -> dict[str, float]:
    """Offered work per unit of capacity of every resource fed only by open workloads."""
    res = r.res
    out: dict[str, float] = {}
    offs = np.cumsum([0] + [wl.count for wl in res.workloads])
    for p, fleet in enumerate(res.fleets):
        ws = [w for w, wl in enumerate(res.workloads) if wl.pool == p]
        if not ws or any(r.kinds[w] != OPEN for w in ws) or fleet.cap is None:
            continue
        parts = [res.rollout_arrival_s[offs[w]:offs[w + 1]] for w in ws]
        rate = _rate(parts[0] if len(parts) == 1 else np.concatenate(parts))
        if rate is None:
            continue
        held = r.hold if len(res.fleets) == 1 else r.hold[r.pools[r.started] == p]  # one pool: every row
        slot_s = float(held.sum()) + fleet.provision_delay_s * held.size
        n = sum(res.workloads[w].count for w in ws)
        out[f"pool {p}"] = rate * slot_s / n / fleet.cap
    out.update(_policy_loads(r, offs))
    sr = res.inference
    if sr is not None and all(k == OPEN for k in r.kinds):
        rate = _rate(res.rollout_arrival_s)
        if rate is not None:
            out["inference replica"] = rate * sr.work_s() / res.n_rollouts / sr.replicas
    return out


def _policy_loads(r: _Run, offs: np.ndarray) -> dict[str, float]:
    """Each open workload's offered work over the slots its pool's admission policy leaves it (``policy_load``)."""
    res = r.res
    policy = [p for p, fleet in enumerate(res.fleets) if fleet.admission in POLICIES and fleet.cap is not None]
    if not policy:
        return {}
    busy: dict[int, float] = {}
    rows = res.workload[r.started]
    for w, wl in enumerate(res.workloads):
        if wl.kind != OPEN or wl.pool not in policy:
            continue
        rate = _rate(res.rollout_arrival_s[offs[w]:offs[w + 1]])
        if rate is None:
            continue
        held = r.hold[rows == w]
        slot_s = float(held.sum()) + res.fleets[wl.pool].provision_delay_s * held.size
        busy[w] = rate * slot_s / wl.count
    return {what: load_of(b, slots) for what, b, slots in policy_tests(res.fleets, res.workloads, busy)}


def _rate(arrivals: np.ndarray) -> float | None:
    """Arrivals per second between the first and the last arrival (n - 1 gaps)."""
    if arrivals.size < 2:
        return None
    span = float(arrivals.max() - arrivals.min())
    return (arrivals.size - 1) / span if span > 0 else None


def _bottleneck(r: _Run, a: float, b: float) -> tuple[str | None, float | None]:
    """The busiest resource a closed population can queue for, and its utilisation."""
    res = r.res
    cands: dict[str, float] = {}
    for p, fleet in enumerate(res.fleets):
        pop = sum(wl.population for wl in res.workloads if wl.pool == p and wl.kind == CLOSED)
        if fleet.cap is not None and pop > fleet.cap and b > a:
            on = r.pools[r.started] == p
            busy = float((np.minimum(r.s1[on], b) - np.maximum(r.s0[on], a)).clip(min=0).sum())
            cands[f"sandbox pool {p} ({fleet.cap} slots)"] = busy / (fleet.cap * (b - a))
    sr = res.inference
    if sr is not None and res.end_s > 0:
        cands[f"inference pool ({sr.replicas} replicas, over the run)"] = float(sr.area_busy.sum()) / (sr.replicas * res.end_s)
    if not cands:
        return None, None
    name = max(cands, key=lambda k: cands[k])
    return name, cands[name]


def analyse(res, *, pass_rate: float | None = None, warmup_s: float | None = None) -> dict:
    """The ``steady_state`` block of a run (see the module docstring and docs/simulate.md).

    ``warmup_s`` replaces MSER-5 by a fixed warm-up; one at or past the window's end, or one that
    leaves a window without completions, is an ``InputError`` naming ``run.warmup_s``.
    """
    r = _Run(res)
    times, values, end, what = _series(r)
    rl_only = all(k == RL for k in r.kinds)
    out: dict = {"pass_rate": pass_rate, "min_holds_per_sandbox": MIN_HOLDS_PER_SANDBOX, "warnings": []}
    t_first = float(times[0]) if times.size else 0.0
    if warmup_s is not None:
        if warmup_s >= end:
            raise InputError(f"key 'run.warmup_s': a warm-up of {warmup_s:g} s reaches the end of the steady window "
                             f"({end:g} s, {'the last start' if CLOSED in r.kinds else 'the last arrival'}); "
                             "give a shorter warm-up or a longer run")
        a, method = max(warmup_s, t_first), "run.warmup_s"
    elif rl_only:
        a, method = t_first, "none: RL steps are the unit (release to training end)"
    else:
        cut = mser(values[: _upto(times, end)])
        a = float(times[cut]) if times.size else 0.0
        method = f"MSER-5 on {what}"
        wave = _first_wave_end(r)
        if wave is not None and wave > a and wave < t_first + (end - t_first) / 2:
            # a closed population starts all at once: nothing completes during its first holds, a
            # deficit MSER on the holds cannot see in the completion rate; the window starts after them
            a, method = wave, method + ", and the closed population's first wave"
    b = end
    out.update(warmup_s=a, window_end_s=b, window_s=b - a, warmup_method=method)
    _window_figures(out, r, a, b, pass_rate, warmup_s is not None)
    # times are in order: the observations in [a, b] are one slice (RL: from the first)
    _stability(out, r, values[0 if rl_only else _since(times, a): _upto(times, b)], a, b, rl_only)
    return out


def _window_figures(out: dict, r: _Run, a: float, b: float, pass_rate: float | None, fixed: bool) -> None:
    res = r.res
    length = b - a
    done = res.state == COMPLETED  # a completed row is terminal (a retried one's state is RETRIED)
    done_at = res.finish_s if done.all() else res.finish_s[done]
    per_bin = _bin_counts(done_at, np.linspace(a, b, BATCHES + 1)) if length > 0 else None
    completed = 0 if per_bin is None else int(per_bin.sum())
    if completed == 0:
        if fixed:
            raise InputError(f"key 'run.warmup_s': the window {a:g}..{b:g} s has no completed rollouts; "
                             "give a shorter warm-up or a longer run")
        out["warnings"].append("the steady window holds no completed rollout: no window figures")
        return
    assert per_bin is not None  # completed > 0
    hold = r.hold
    busy = _busy_s(r.s0, r.s1, a, b)
    conc = busy / length
    # finishes in [a, b]: the completions counted above when every row completed
    ends = completed if done_at is r.s1 else np.count_nonzero((r.s1 >= a) & (r.s1 <= b))
    per_batch = per_bin * 3600.0 / (length / BATCHES)
    rate, rate_ci = _mean_ci(per_batch)
    hold_mean, hold_means = _holds_by_start(r.s0, hold, a, b)
    hold_ci = None if hold_means is None else _mean_ci(hold_means)[1]
    pr = 1.0 if pass_rate is None else pass_rate
    out.update(
        completed=completed, completed_per_hour=rate, completed_per_hour_ci=rate_ci,
        passing_per_hour=rate * pr, passing_per_hour_ci=None if rate_ci is None else [v * pr for v in rate_ci],
        hold_s_mean=hold_mean, hold_s_ci=hold_ci, concurrency_mean=conc,
        holds_per_sandbox=ends / conc if conc > 0 else None,
        ci_method=f"batch means: {BATCHES} batches of {length / BATCHES:,.1f} s, 95% Student t",
        pass_model=("completed rollouts x run.pass_rate " + format(pass_rate, "g")) if pass_rate is not None
        else "every completed rollout counts as passing (no run.pass_rate)",
    )
    hps = out["holds_per_sandbox"]
    out["short_run"] = hps is None or hps < MIN_HOLDS_PER_SANDBOX
    if out["short_run"]:
        out["warnings"].append(f"short run: {0 if hps is None else hps:.1f} holds per sandbox in the window, fewer than "
                               f"{MIN_HOLDS_PER_SANDBOX}; the intervals are not yet reliable: simulate more rollouts")


def _bin_counts(x: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """``np.histogram(x, bins=edges)[0]`` for ascending ``edges``: bin k counts ``edges[k] <= x <
    edges[k + 1]``, the last bin also its right edge, NaN nowhere. One count per edge of the values
    below it (a compare and a count, no per-value bin index, gather or copy)."""
    if not _ascending(edges):  # NaN or infinite bounds: NumPy's own refusal
        return np.histogram(x, bins=edges.size - 1, range=(float(edges[0]), float(edges[-1])))[0]
    below = [np.count_nonzero(x < e) for e in edges[:-1].tolist()]
    return np.diff(np.array(below + [np.count_nonzero(x <= edges[-1])], dtype=np.int64))


def _busy_s(s0: np.ndarray, s1: np.ndarray, a: float, b: float) -> float:
    """Sandbox-seconds inside [a, b]: ``sum(clip(min(s1, b) - max(s0, a), 0))``, in one scratch array
    (starts in order: ``max(s0, a)`` is ``a`` on the starts before ``a`` and ``s0`` after, no second array)."""
    part = np.minimum(s1, b)
    if _ascending(s0):
        lo = _since(s0, a)
        part[:lo] -= a
        part[lo:] -= s0[lo:]
    else:
        np.subtract(part, np.maximum(s0, a), out=part)
    np.maximum(part, 0, out=part)  # = part.clip(min=0)
    return float(part.sum())


def _holds_by_start(s0: np.ndarray, hold: np.ndarray, a: float, b: float) -> tuple[float | None, np.ndarray | None]:
    """The mean hold of the attempts started in [a, b], and per equal bin of start time (``BATCHES``
    bins) its mean hold (None unless every bin has one).

    Bin ``k`` holds the starts ``s`` with ``edges[k] <= s < edges[k + 1]`` (the last bin also its right
    edge); each bin's sum is added left to right from 0.0, as ``np.bincount(weights=...)`` adds. When
    the starts are in order (the FIFO path's are) the window and every bin are slices: no mask, copy or
    per-start search.
    """
    edges = np.linspace(a, b, BATCHES + 1)
    if _ascending(s0) and _ascending(edges):
        lo, hi = _since(s0, a), _upto(s0, b)
        x, w = s0[lo:hi], hold[lo:hi]
        if x.size == 0:
            return None, None
        # bin k starts at the first start >= edges[k] (k = 1 .. BATCHES - 1)
        cut = np.concatenate(([0], np.searchsorted(x, edges[1:-1], side="left"), [x.size]))
        counts = np.diff(cut)
        if np.any(counts == 0):
            return float(w.mean()), None
        heads = w[cut[:-1]]
        if not np.any((heads == 0) & np.signbit(heads)):  # 0.0 + -0.0 is +0.0: bincount's start matters
            sums = np.array([np.cumsum(w[i:j])[-1] for i, j in zip(cut[:-1].tolist(), cut[1:].tolist())])
            return float(w.mean()), sums / counts
    starts = (s0 >= a) & (s0 <= b)
    idx = np.clip(np.searchsorted(edges, s0[starts], side="right") - 1, 0, BATCHES - 1)
    counts = np.bincount(idx, minlength=BATCHES)
    hold_mean = float(hold[starts].mean()) if np.any(starts) else None
    if not np.all(counts > 0):
        return hold_mean, None
    return hold_mean, np.bincount(idx, weights=hold[starts], minlength=BATCHES) / counts


def _stability(out: dict, r: _Run, series: np.ndarray, a: float, b: float, rl_only: bool) -> None:
    load = _offered(r)
    out["offered_load"] = load or None
    over = {k: v for k, v in load.items() if v >= 1.0}
    closed = CLOSED in r.kinds
    ratio, t = (None, None) if closed or rl_only else _trend(series)
    out.update(trend_ratio=ratio, trend_t=t)
    growing = ratio is not None and t is not None and t > TREND_T and ratio > TREND_RATIO
    out["stable"] = not over and not growing
    if closed:
        name, util = _bottleneck(r, a, b)
        out.update(bottleneck=name, bottleneck_utilisation=util)
        out["saturated"] = util is not None and util >= SATURATED_AT
    else:
        out.update(bottleneck=None, bottleneck_utilisation=None, saturated=None)
    out["reason"] = _reason(out, over, growing, closed, rl_only)


def _reason(out: dict, over: dict, growing: bool, closed: bool, rl_only: bool) -> str:
    parts = []
    if over:
        parts.append("offered work exceeds capacity: " + ", ".join(
            f"{k}{'; offered' if ': ' in k else ''} {v:.2f} busy-seconds per second (>= 1)"  # a policy's key is a clause
            for k, v in sorted(over.items())))
    if growing:
        parts.append(f"time in system grows over the run (second half {out['trend_ratio']:.2f}x the first, "
                     f"slope t = {out['trend_t']:.1f})")
    if parts:
        return "; ".join(parts) + ": the queue grows without bound, and the figures grow with the run's length"
    if closed:
        util = out["bottleneck_utilisation"]
        sat = (f"saturated: {out['bottleneck']} busy {util:.1%} (>= {SATURATED_AT:.0%})" if out["saturated"]
               else f"not saturated: {out['bottleneck']} busy {util:.1%} (< {SATURATED_AT:.0%})" if util is not None
               else "nothing it queues for")
        return f"a closed population cannot grow without bound; {sat}"
    if rl_only:
        return "RL releases wait for the trainer: at most staleness + 1 batches are in flight, the queue is bounded"
    loads = out["offered_load"] or {}
    top = max(loads.values()) if loads else None
    head = f"offered work at most {top:.2f} of capacity" if top is not None else "no capped resource"
    tr = "" if out["trend_ratio"] is None else f"; no upward trend (second half {out['trend_ratio']:.2f}x the first)"
    return head + tr

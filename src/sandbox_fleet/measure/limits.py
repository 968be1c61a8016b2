"""Provider and harness limits the history shows: a creation-rate ceiling, a cap on sandboxes
starting at once, and holds piling at one duration (a timeout or lifetime kill).

Each detector applies the idea of the touches rule (``concurrency.cap_detected``) to another
figure: a chance maximum is reached once or twice, a ceiling again and again whenever demand
exceeds it. Each says what it found and why (``basis``), and says no limit when the data do not
show one. Definitions and the guards against what only looks like a limit are in docs/providers.md.

- **Creation rate.** Starts are counted in windows of ``RATE_WINDOWS_S``. A limiter pins the
  count at its rate for windows on end; chance does not. A level ``L`` is a plateau when at
  least ``CAP_TOUCHES`` windows at ``L - 1`` or ``L`` (one start of jitter) lie in runs of at
  least ``PLATEAU_RUN``, and windows above ``L`` (a bucket's bursts) are at most ``ABOVE_SHARE``
  as many: a random process that sits near a level as often also exceeds it often. The highest
  such level wins. Two things pin counts without a creation limit and are ruled out: a released
  batch arriving at once every window (a limiter paces its starts, so the median plateau window
  may hold at most ``EVEN_SHARE`` of its starts in one fifth of it), and turnover under a
  concurrency cap (starts replace finishes while the fleet sits at its peak).
- **Starting at once.** The environment-setup phase (Harbor's create + start + build) as
  intervals, swept like the fleet: a cap when its peak is touched at least ``CAP_TOUCHES``
  times, it stays below the fleet's peak (so not the whole fleet starting), and at least
  ``CAP_TOUCHES`` rollouts waited ``WAIT_MIN_S`` or more between their start and their setup.
- **Holds piling at one duration.** Durations in bins ~0.5% wide (``BINS_PER_OCTAVE``): a bin
  with at least ``CAP_TOUCHES`` rollouts and ``SPIKE_FACTOR`` times the median of the bins
  around it is a spike, reported with its outcomes and the share of rollouts that ran past it
  (none past it: a lifetime or a timeout kill). On the holds and on each recorded phase.
"""

from __future__ import annotations

from typing import Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from sandbox_fleet.measure.batchcap import CAP_TOUCHES
from sandbox_fleet.measure.columns import Frame
from sandbox_fleet.measure.concurrency import cap_stats, sweep
from sandbox_fleet.measure.outcomes import OUTCOMES, outcome_codes
from sandbox_fleet.measure.stats import US
from sandbox_fleet.telemetry.record import PHASES

#: Window widths (s) the start counts are read in, finest first; the first that shows a ceiling wins.
RATE_WINDOWS_S = (1, 10)
#: Consecutive windows at the ceiling that make a plateau (a released batch fills one).
PLATEAU_RUN = 3
#: Windows above the plateau (bursts) may be at most this share of the plateau's windows.
ABOVE_SHARE = 0.2
#: Levels tried, highest first (the flat level of a ceiling is near the top).
MAX_LEVELS = 64
#: Below this ceiling count a plateau cannot be told from chance (counts of 1-2 repeat by themselves).
MIN_CEILING = 3
#: A limiter paces its starts: the median plateau window holds at most this share in one fifth of it.
EVEN_SHARE = 0.6
#: Plateau windows with the fleet at (one below) its peak beyond this share are turnover under a cap.
TURNOVER_SHARE = 0.5
#: A rollout whose setup began this long after its start waited for a starting slot.
WAIT_MIN_S = 1.0
#: Bins per doubling of the duration histogram the spikes are read from: ~0.5% wide (log2(1.005) = 1/139).
BINS_PER_OCTAVE = 139
#: A spike holds this many times the median of the bins around it.
SPIKE_FACTOR = 5.0
#: The bins either side the background is read from (the spike's own two neighbours excluded).
SPIKE_NEAR, SPIKE_FAR = 3, 20
#: At most this share of rollouts past a spike calls it a ceiling (a lifetime or timeout kill).
CEILING_PAST_SHARE = 0.01
#: Spikes reported per duration, most rollouts first.
MAX_SPIKES = 5


# ---------------------------------------------------------------- creation rate


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """[start, end) index runs where ``mask`` is true."""
    if not mask.any():
        return []
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    return list(zip(np.flatnonzero(edges == 1).tolist(), np.flatnonzero(edges == -1).tolist()))


def _peak_level_share(win: np.ndarray, window_us: int, base: int, start_us: np.ndarray, finish_us: np.ndarray,
                      peak: int) -> float:
    """Share of the windows ``win`` whose end finds the fleet at ``peak - 1`` or more sandboxes."""
    if peak <= 0:
        return 0.0
    n_w = int(win.max()) + 1
    starts = np.bincount((start_us - base) // window_us, minlength=n_w)[:n_w]
    f_idx = (finish_us - base) // window_us
    finishes = np.bincount(f_idx[f_idx < n_w], minlength=n_w)
    level_end = np.cumsum(starts) - np.cumsum(finishes)  # running at the end of each window
    return float(np.mean(level_end[win] >= peak - 1))


def _even_share(start_us: np.ndarray, base: int, window_us: int, win: np.ndarray) -> float:
    """Median over windows ``win`` of the largest share of a window's starts in one fifth of it."""
    idx = (start_us - base) // window_us
    keep = np.isin(idx, win)
    sub = ((start_us[keep] - base) % window_us) * 5 // window_us
    per = np.zeros((int(win.max()) + 1, 5), dtype=np.int64)
    np.add.at(per, (idx[keep], sub), 1)
    rows = per[win]
    return float(np.median(rows.max(axis=1) / np.maximum(rows.sum(axis=1), 1)))


def _plateau(counts: np.ndarray) -> tuple[int, np.ndarray, list[tuple[int, int]]] | None:
    """(level, plateau windows, runs) at the highest level where the counts sit flat, or None.

    A level ``L`` is flat when at least ``CAP_TOUCHES`` windows at ``L - 1`` or ``L`` lie in runs
    of ``PLATEAU_RUN`` or more, and windows above ``L`` (bursts) are at most ``ABOVE_SHARE`` of
    them. Chance gives runs at a level only where it also exceeds it often.
    """
    hist = np.bincount(counts)
    band = hist[1:] + hist[:-1]  # band[L - 1]: windows at L - 1 or L
    above = np.cumsum(hist[::-1])[::-1]  # above[L]: windows at L or more
    levels = [L for L in range(hist.size - 1, MIN_CEILING - 1, -1) if band[L - 1] >= CAP_TOUCHES][:MAX_LEVELS]
    for level in levels:
        over = int(above[level + 1]) if level + 1 < above.size else 0
        if over > ABOVE_SHARE * band[level - 1]:
            continue  # cheap test first: the plateau can hold no more windows than the band
        runs = [(a, b) for a, b in _runs((counts >= level - 1) & (counts <= level)) if b - a >= PLATEAU_RUN]
        n = sum(b - a for a, b in runs)
        if n >= CAP_TOUCHES and over <= ABOVE_SHARE * n:
            return level, np.concatenate([np.arange(a, b) for a, b in runs]), runs
    return None


def _ceiling_at(start_us: np.ndarray, finish_us: np.ndarray, window_s: int, fleet_peak: int) -> dict:
    """The creation-rate figures for one window width (``detected`` false with the reason when none)."""
    w_us = int(window_s * US)
    base = int(start_us.min())
    counts = np.bincount((start_us - base) // w_us)
    out: dict = {"window_s": float(window_s), "max_starts": int(counts.max())}
    if counts.size < CAP_TOUCHES:
        return out | {"detected": False, "basis": f"fewer than {CAP_TOUCHES} windows of {window_s:g} s"}
    found = _plateau(counts)
    if found is None:
        return out | {"detected": False, "basis": f"starts per {window_s:g}-s window never flat at a level (up to "
                                                  f"{out['max_starts']}): no plateau"}
    level, win, runs = found
    rate = float(counts[win].sum()) / (win.size * window_s)
    out |= {"level": level, "plateau_windows": int(win.size), "stretches": len(runs),
            "longest_s": float(max(b - a for a, b in runs) * window_s), "rate_per_s": rate}
    even = _even_share(start_us, base, w_us, win)
    if even > EVEN_SHARE:
        return out | {"detected": False, "basis": f"starts flat at {level} per {window_s:g} s but each window's arrive "
                                                  f"at once ({even:.0%} in a fifth of it): released batches, not a paced rate"}
    turnover = _peak_level_share(win, w_us, base, start_us, finish_us, fleet_peak)
    if turnover > TURNOVER_SHARE:
        return out | {"detected": False, "basis": f"starts flat at {rate:.3g}/s while the fleet sat at its peak of "
                                                  f"{fleet_peak} ({turnover:.0%} of the plateau): turnover under the "
                                                  "concurrency cap, not a creation limit"}
    return out | {"detected": True,
                  "basis": f"starts held at {level - 1}-{level} per {window_s:g}-s window for {win.size:,} windows in "
                           f"{len(runs)} stretch(es) (longest {out['longest_s']:,.0f} s), paced within each window, "
                           f"the fleet below its peak: a creation ceiling of ~{rate:.3g}/s"}


def creation_ceiling(start_us: np.ndarray, finish_us: np.ndarray, fleet_peak: int) -> dict:
    """The creation-rate ceiling the starts show (``detected``, ``rate_per_s``, ``window_s``, ``basis``)."""
    if start_us.size == 0:
        return {"detected": False, "basis": "no rollouts"}
    tried = []
    for window_s in RATE_WINDOWS_S:
        got = _ceiling_at(start_us, finish_us, window_s, fleet_peak)
        if got["detected"]:
            return got | {"rule": _rate_rule()}
        tried.append(got)
    last = tried[0]
    return last | {"rule": _rate_rule(), "basis": "; ".join(f"{t['window_s']:g} s: {t['basis']}" for t in tried)}


def _rate_rule() -> str:
    return (f"starts per window at level-1..level for >= {PLATEAU_RUN} windows in a row, >= {CAP_TOUCHES} such windows, "
            f"<= {ABOVE_SHARE:.0%} as many above, paced (<= {EVEN_SHARE:.0%} in a fifth of a window), fleet below its peak")


# ---------------------------------------------------------------- starting at once


def starting_cap(start_us: np.ndarray, setup_start_us: np.ndarray, setup_finish_us: np.ndarray,
                 fleet_peak: int) -> dict:
    """The cap on sandboxes starting at once the setup intervals show (rows with a valid setup only)."""
    rule = f"setup peak touched >= {CAP_TOUCHES} times, below the fleet peak, >= {CAP_TOUCHES} rollouts waited >= {WAIT_MIN_S:g} s"
    if setup_start_us.size == 0:
        return {"detected": False, "rule": rule, "basis": "no environment-setup phase times: cannot see starting"}
    st = cap_stats(sweep(setup_start_us, setup_finish_us))
    wait_s = (setup_start_us - start_us) / US
    waited = wait_s >= WAIT_MIN_S
    out = {"rows": int(setup_start_us.size), "peak": st["peak"], "touches": st["touches"],
           "time_at_peak_s": st["time_at_peak_s"], "waited_rows": int(waited.sum()),
           "wait_median_s": float(np.median(wait_s[waited])) if waited.any() else None, "rule": rule}
    if st["touches"] < CAP_TOUCHES:
        return out | {"detected": False, "basis": f"{st['peak']} starting at once, reached {st['touches']} time(s): "
                                                  "a chance maximum"}
    if st["peak"] >= fleet_peak:
        return out | {"detected": False, "basis": f"the starting peak {st['peak']} is the fleet's own peak: the whole "
                                                  "fleet starting, not a starting cap"}
    if out["waited_rows"] < CAP_TOUCHES:
        return out | {"detected": False, "basis": f"{st['peak']} starting at once reached {st['touches']} times but "
                                                  f"only {out['waited_rows']} rollout(s) waited to start: nothing held back"}
    return out | {"detected": True,
                  "basis": f"{st['peak']} sandboxes starting at once, reached {st['touches']:,} separate times "
                           f"(fleet peak {fleet_peak}); {out['waited_rows']:,} rollouts waited a median "
                           f"{out['wait_median_s']:,.1f} s before their setup began: a cap on starting at once"}


# ---------------------------------------------------------------- holds piling at one duration


def _background(counts: np.ndarray, k: int) -> float:
    lo = counts[max(k - SPIKE_FAR, 0):max(k - SPIKE_NEAR + 1, 0)]
    hi = counts[k + SPIKE_NEAR:k + SPIKE_FAR + 1]
    near = np.concatenate((lo, hi))
    return float(np.median(near)) if near.size else 0.0


def _resolution_us(*arrays: np.ndarray) -> int:
    """The coarsest of 1 s, 1 ms, 1 us that every timestamp is a multiple of (whole-second clocks)."""
    for res in (US, 1000):
        if all(not np.any(a % res) for a in arrays):
            return int(res)
    return 1


def _log_bins(d: np.ndarray) -> np.ndarray:
    """Each duration's bin: ``BINS_PER_OCTAVE`` equal mantissa steps per power of two (0.36-0.72% wide,
    ~0.5%), read off the float's bits with integer arithmetic: the same bins on every CPU (NumPy's log
    rounds by kernel) in one pass over the rows."""
    bins = d.astype(np.float64).view(np.int64)  # in place from here: no other row-sized temporary
    fraction = bins & ((1 << 52) - 1)  # d = (1 + fraction / 2**52) x 2**(exponent - 1023)
    bins >>= 52  # the exponent: durations are positive, no sign bit
    bins *= BINS_PER_OCTAVE
    fraction *= BINS_PER_OCTAVE
    fraction >>= 52
    bins += fraction
    bins -= bins.min()
    return bins


def hold_spikes(dur_us: np.ndarray, outcome: np.ndarray, resolution_us: int = 1,
                exception_type: Optional[pa.ChunkedArray] = None) -> list[dict]:
    """Durations piling at one value: each spike with its rollouts, outcomes and share run past it.

    ``outcome`` are indices into ``OUTCOMES``; durations shorter than 200 clock ticks are left
    out (a 0.5% bin narrower than one tick shows the clock, not the holds).
    """
    keep = dur_us >= 200 * resolution_us
    d = dur_us[keep]
    if d.size < CAP_TOUCHES:
        return []
    bins = _log_bins(d)
    counts = np.bincount(bins)
    found = []
    for k in np.flatnonzero(counts >= CAP_TOUCHES).tolist():
        bg = _background(counts, k)
        if counts[k] < SPIKE_FACTOR * max(bg, 1.0):
            continue
        if (k > 0 and counts[k - 1] > counts[k]) or (k + 1 < counts.size and counts[k + 1] >= counts[k]):
            continue  # one spike straddling two bins is reported once, at its fuller bin
        found.append((k, bg))
    n = int(dur_us.size)
    out: list[dict] = []
    for k, bg in found:
        span = (bins >= k - 1) & (bins <= k + 1)
        vals = d[span]
        value_s = float(np.median(vals)) / US
        past = int(np.count_nonzero(dur_us > int(vals.max())))
        oc = outcome[keep][span]
        by_outcome = {name: int(np.count_nonzero(oc == i)) for i, name in enumerate(OUTCOMES) if np.any(oc == i)}
        spike: dict = {"value_s": value_s, "rows": int(vals.size), "share": vals.size / n,
                 "background_per_bin": bg, "past_share": past / n, "ceiling": past / n <= CEILING_PAST_SHARE,
                 "by_outcome": by_outcome}
        if exception_type is not None:
            spike["exception_types"] = _top_types(exception_type, np.flatnonzero(keep)[span])
        spike["basis"] = _spike_basis(spike)
        out.append(spike)
    out.sort(key=lambda s: (-s["rows"], s["value_s"]))
    return out[:MAX_SPIKES]


def _top_types(col: pa.ChunkedArray, rows: np.ndarray) -> dict[str, int]:
    """The five commonest exception types among ``rows`` (most first, then by name)."""
    taken = pc.take(col, pa.array(rows)).cast(pa.string())
    counts = [(str(v["values"]), int(v["counts"])) for v in pc.value_counts(taken.drop_null()).to_pylist()]
    return dict(sorted(counts, key=lambda kv: (-kv[1], kv[0]))[:5])


def _spike_basis(s: dict) -> str:
    ends = ", ".join(f"{k} {v:,}" for k, v in s["by_outcome"].items())
    kind = ("nothing ran past it: a lifetime or timeout kill" if s["ceiling"]
            else f"{s['past_share']:.1%} ran past it: a timeout of some rollouts, or a pile-up")
    return (f"{s['rows']:,} rollouts ({s['share']:.1%}) ended at {s['value_s']:,.1f} s, "
            f"{s['rows'] / max(3 * s['background_per_bin'], 1):,.0f}x the bins around it; {kind}; ended: {ends}")


# ---------------------------------------------------------------- the measure pass


def _phase_us(fr: Frame, phase: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(valid mask, start us, finish us) of one phase; nulls as 0 under a false mask."""
    a, b = fr.table.column(f"{phase}_started_at"), fr.table.column(f"{phase}_finished_at")
    if a.null_count == len(a) or b.null_count == len(b):
        return np.zeros(fr.n, dtype=bool), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    valid = np.asarray(pc.and_(pc.is_valid(a), pc.is_valid(b)).to_numpy(zero_copy_only=False), dtype=bool)
    start = np.asarray(pc.fill_null(pc.cast(a, "int64"), 0).to_numpy(), dtype=np.int64)
    finish = np.asarray(pc.fill_null(pc.cast(b, "int64"), 0).to_numpy(), dtype=np.int64)
    valid &= finish >= start
    return valid, start, finish


def measure_limits(fr: Frame, times: tuple[np.ndarray, np.ndarray], concurrency: dict, threshold: float) -> dict:
    """The ``limits`` block: creation ceiling, starting cap, and duration spikes of the holds and each phase."""
    start_us, finish_us = times
    peak = int(concurrency.get("peak") or 0)
    outcome = outcome_codes(fr, threshold)
    types = fr.table.column("exception_type") if "exception_type" in fr.table.column_names else None
    res = _resolution_us(start_us, finish_us)
    setup_ok, setup_a, setup_b = _phase_us(fr, "environment_setup")
    if setup_ok.any():
        starting = starting_cap(start_us[setup_ok], setup_a[setup_ok], setup_b[setup_ok], peak)
    else:
        starting = starting_cap(start_us[:0], start_us[:0], start_us[:0], peak)
    spikes = {"hold": hold_spikes(finish_us - start_us, outcome, res, types)}
    for phase in PHASES:
        ok, a, b = _phase_us(fr, phase)
        if ok.any():
            rows = np.flatnonzero(ok)
            spikes[phase] = hold_spikes((b - a)[ok], outcome[ok], res,
                                        pc.take(types, pa.array(rows)) if types is not None else None)
    return {"creation": creation_ceiling(start_us, finish_us, peak), "starting": starting,
            "spikes": {k: v for k, v in spikes.items() if v} or None}

"""Concurrency by sweep line over [started_at, finished_at), with cap detection.

A sandbox that finishes at t and one that starts at t do not overlap: every event at one
timestamp is netted before the level is read. Times are integer microseconds, so the
area under the curve must equal the sum of holds exactly; a mismatch is a bug here, not
bad input, and raises ``SweepError``.

Cap rule (``cap_detected``): when the job metadata gives a configured cap, the cap is
detected iff the peak equals it and there were more rollouts than the cap (with no more, every
one could run at once: nothing waited, so the cap held nothing back). Without one, it is detected when the peak was reached
on at least ``CAP_TOUCHES`` separate stretches: a chance maximum is reached once or twice,
a ceiling is hit again and again.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sandbox_fleet.measure.batchcap import CAP_TOUCHES
from sandbox_fleet.measure.stats import US, arrival_rate_per_s, bit_field, group_sums, ratio

SERIES_POINTS = 2000
#: levels on the time-at-level grid: every level 1..peak up to this peak, else this many evenly spaced
LEVEL_POINTS = 256


class SweepError(RuntimeError):
    """Internal consistency check failed (area under the curve != sum of holds)."""


@dataclass
class Sweep:
    """Step function: level[i] holds on [times[i], times[i+1]); level[-1] == 0."""

    times: np.ndarray  # unique event times, int64 us, ascending
    level: np.ndarray  # concurrency after netting all events at times[i]
    holds_us: int | None = None  # sum of the interval lengths, summed independently of the sweep

    def area_us(self) -> int:
        """Integral of the level over time, exact in integer microseconds."""
        if "area" not in self.__dict__:
            self.__dict__["area"] = _area(self.times, self.level)
        return self.__dict__["area"]


def _area(times: np.ndarray, level: np.ndarray, block: int = 1 << 20) -> int:
    """sum(level[i] * (times[i+1] - times[i])) in int64, a block at a time to bound memory."""
    total = 0
    for i in range(0, max(times.size - 1, 0), block):
        j = min(i + block, times.size - 1)
        total += int(np.dot(level[i:j].astype(np.int64), times[i + 1:j + 1] - times[i:j]))
    return total


#: Events handled per pass when compacting the sorted events into (times, level). 256k events keep
#: each pass's temporaries near 7 MB (about 29 bytes an event), so they stay in memory the allocator
#: already holds instead of faulting in fresh pages; any size gives the same figures.
BLOCK = 1 << 18


def sweep(start_us: np.ndarray, finish_us: np.ndarray) -> Sweep:
    """Sweep line over half-open intervals; checks area == sum of holds exactly.

    Memory: one packed event array (16 bytes a row) is sorted in place, then compacted
    into its own prefix a block at a time, so no second event-sized array is built.
    """
    n = start_us.size
    if n == 0:
        return Sweep(np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64))
    base = int(start_us.min())
    # One packed key per event: time in the high bits, 1 = start / 0 = finish in the low bit.
    # Order within a timestamp is irrelevant because we only read the level after its last event.
    key = np.empty(2 * n, dtype=np.int64)
    np.subtract(start_us, base, out=key[:n])
    np.subtract(finish_us, base, out=key[n:])
    key <<= 1
    key[:n] |= 1
    if n > 1 and not np.any(key[1 : n] < key[: n - 1]):
        # Starts already in order (the FIFO simulator's always are): sort the finishes alone, then
        # merge the two sorted runs (a stable sort of two runs is one linear merge). The same array.
        key[n:].sort()
        key.sort(kind="stable")
    else:
        key.sort()
    return _checked(_compact(key, base, 0), _holds_sum(start_us, finish_us))


def _holds_sum(start_us: np.ndarray, finish_us: np.ndarray) -> int:
    """Sum of holds in int64, a block at a time: summing raw epoch times would overflow."""
    expected = 0
    for i in range(0, start_us.size, BLOCK):
        expected += int(np.subtract(finish_us[i:i + BLOCK], start_us[i:i + BLOCK]).sum(dtype=np.int64))
    return expected


def _checked(result: Sweep, holds_us: int) -> Sweep:
    result.holds_us = holds_us
    area = result.area_us()
    if area != holds_us or result.level[-1] != 0:
        raise SweepError(f"sweep self-check failed: area {area} us != sum of holds {holds_us} us")
    return result


def _compact(key: np.ndarray, base: int, code_bits: int) -> Sweep:
    """The sorted events ``key`` (time - base above ``code_bits`` bits of codes and the start bit)
    as a Sweep, compacted into the key's own prefix a block at a time (``key`` is consumed)."""
    size = key.size
    shift = 1 + code_bits
    level = np.empty(size, dtype=np.int32 if size < 2**32 else np.int64)
    m, carry = 0, 0
    for i in range(0, size, BLOCK):
        j = min(i + BLOCK, size)
        block = key[i:j]
        step = block & 1  # int64 already: a start is +1, a finish -1
        step *= 2
        step -= 1
        run = np.cumsum(step, out=step)
        run += carry
        carry = int(run[-1])
        # The level is read after the last event of each timestamp (ties netted first);
        # the event after this block is still unread in key[j], so a tie across blocks works.
        stamp = key[i:j + 1] >> shift  # drop the codes and the start/finish bit: ties are equal times
        last = np.ones(j - i, dtype=bool)
        np.not_equal(stamp[:-1], stamp[1:], out=last[:stamp.size - 1])
        times = stamp[:j - i][last]
        del stamp
        times += base
        count = times.size
        level[m:m + count] = run[last]
        key[m:m + count] = times  # m + count <= j: only events already read are overwritten
        m += count
    # Keep views when most events are distinct times; copy when ties shrank them a lot.
    times_out = key[:m] if 2 * m > size else key[:m].copy()
    level_out = level[:m] if 2 * m > size else level[:m].copy()
    return Sweep(times_out, level_out)


#: Groups swept from one sort at most (each group is one pass over the sorted events).
MAX_SWEPT_GROUPS = 16


def grouped_sweeps(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, n_groups: int,
                   each) -> Sweep | None:
    """``sweep`` of every interval and ``each(g, sweep of group g's intervals, rows)`` for every
    group with rows, from ONE sort of the events (the group code packed under the time); None
    (nothing called) when the packed key would not fit or the groups are more than
    MAX_SWEPT_GROUPS, then callers sweep each group alone.

    ``codes``: 0..n_groups-1 per interval, -1 for one in no group (swept overall only). A
    group's events are a stable partition of the sorted events, so they are sorted too: the
    same Sweep as ``sweep`` of the group alone (a sorted multiset has one order). Memory: the
    key (16 bytes an interval) and one group's events at a time.
    """
    n = start_us.size
    bits = n_groups.bit_length()  # codes 0..n_groups, the last for "no group"
    if n == 0 or n_groups > MAX_SWEPT_GROUPS:
        return None
    base = int(start_us.min())
    if (int(finish_us.max()) - base) >= 1 << (62 - bits):
        return None
    key, group = _packed_events(start_us, finish_us, codes, n_groups, base)
    key.sort()
    rows = np.bincount(group, minlength=n_groups + 1)
    sums = _group_hold_sums(start_us, finish_us, group, n_groups)
    del group
    label = bit_field(key, 1, bits)
    for g in range(n_groups):
        if rows[g]:
            each(g, _checked(_compact(key[label == g], base, bits), sums[g]), int(rows[g]))
    del label
    return _checked(_compact(key, base, bits), sum(sums))  # every interval's hold, the no-group slot too


def _packed_events(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, n_groups: int,
                   base: int) -> tuple[np.ndarray, np.ndarray]:
    """The events, unsorted: (time - base, group, start bit) packed in one int64 each, starts
    then finishes; and each interval's group (0..n_groups, the last for "no group")."""
    n = start_us.size
    bits = n_groups.bit_length()
    group: np.ndarray = np.where(codes < 0, n_groups, codes).astype(np.uint8)  # MAX_SWEPT_GROUPS < 256
    key = np.empty(2 * n, dtype=np.int64)
    for half, times in ((key[:n], start_us), (key[n:], finish_us)):
        np.subtract(times, base, out=half)
        half <<= bits
        half |= group
        half <<= 1
    key[:n] |= 1
    return key, group


def _group_hold_sums(start_us: np.ndarray, finish_us: np.ndarray, group: np.ndarray, n_groups: int) -> list[int]:
    """Exact sum of holds per group (``group`` 0..n_groups), a block at a time."""
    sums = [0] * (n_groups + 1)
    for i in range(0, start_us.size, BLOCK):
        part = group_sums(group[i:i + BLOCK], n_groups + 1, np.subtract(finish_us[i:i + BLOCK], start_us[i:i + BLOCK]))
        sums = [a + b for a, b in zip(sums, part)]
    return sums


def cap_stats(sw: Sweep) -> dict:
    """Peak, number of maximal positive-duration stretches at the peak, and time there."""
    if sw.times.size < 2:
        return {"peak": 0, "touches": 0, "time_at_peak_s": 0.0}
    seg = sw.level[:-1]
    peak = int(seg.max())
    if peak == 0:
        return {"peak": 0, "touches": 0, "time_at_peak_s": 0.0}
    at = np.flatnonzero(seg == peak)  # every segment has positive duration: times are unique
    touches = 1 + int(np.count_nonzero(np.diff(at) > 1))  # a new stretch wherever indices jump
    time_us = int((sw.times[at + 1] - sw.times[at]).sum())
    return {"peak": peak, "touches": touches, "time_at_peak_s": time_us / US}


def cap_detected(peak: int, touches: int, configured_cap: int | None, rows: int | None = None) -> bool:
    """See the module docstring for the rule (``rows``: the rollouts, when known)."""
    if configured_cap is not None:
        return peak == configured_cap and (rows is None or rows > configured_cap)
    return touches >= CAP_TOUCHES


def series(sw: Sweep, max_points: int = SERIES_POINTS) -> dict:
    """The step function downsampled to <= max_points, keeping each bucket's maximum.

    ``t_s`` is seconds since the first start; ``level[i]`` holds from t_s[i] to t_s[i+1].
    Taking the max per bucket keeps every peak visible in a plot.
    """
    if sw.times.size == 0:
        return {"t_s": [], "level": [], "bucket_s": 0.0}
    t0 = int(sw.times[0])
    change = np.concatenate(([True], sw.level[1:] != sw.level[:-1]))  # net-zero instants add nothing
    if int(change.sum()) <= max_points:
        return {"t_s": (sw.times[change] - t0) / US, "level": sw.level[change], "bucket_s": 0.0}
    span = int(sw.times[-1]) - t0
    buckets = max_points - 1
    width = -(-span // buckets)  # ceil, so the buckets cover the whole span
    starts = t0 + width * np.arange(buckets, dtype=np.int64)
    first = np.searchsorted(sw.times, starts, side="right") - 1  # segment in progress at bucket start
    ends = np.searchsorted(sw.times, starts + width, side="left")  # first segment after the bucket
    peak = np.maximum.reduceat(sw.level, first)
    peak = np.maximum(peak, sw.level[ends - 1])  # a segment straddling into the next bucket
    t_s = np.append((starts - t0) / US, span / US)
    return {"t_s": t_s, "level": np.append(peak, 0), "bucket_s": width / US}


def level_grid(peak: int, points: int = LEVEL_POINTS) -> list[int]:
    """The fixed grid time at level is read on: 1..peak, or level 1 and ``points`` levels ceil(i * peak / points).

    Level 1 is always on it: its share is the time anything runs, the first node's whole case."""
    if peak <= points:
        return list(range(1, peak + 1))
    return sorted({1} | {-(-i * peak // points) for i in range(1, points + 1)})


def time_at_level(sw: Sweep, points: int = LEVEL_POINTS) -> dict:
    """Share of the span the level was at or above each grid level (``share_at_or_above[i]`` for ``levels[i]``).

    This is the curve a reserved purchase is judged on: a slot that is busy whenever the level is at
    least ``L`` earns its reserved price when that share exceeds the reserved / burst price ratio.
    Durations are whole microseconds, summed per level before dividing, so the shares are exact
    ratios of integers (up to float rounding).
    """
    if sw.times.size < 2:
        return {"levels": [], "share_at_or_above": []}
    span_us = int(sw.times[-1] - sw.times[0])
    peak = int(sw.level[:-1].max())
    by_level = _level_durations(sw, peak)
    at_or_above = np.cumsum(by_level[::-1])[::-1]
    grid = level_grid(peak, points)
    return {"levels": grid, "share_at_or_above": [float(at_or_above[g]) / span_us for g in grid]}


def _level_durations(sw: Sweep, peak: int) -> np.ndarray:
    """Microseconds spent at each level 0..peak (float64: exact below 2**53 us, 285 years, so the
    blocks' sums add up to the same bits in any order). A block at a time: no step-sized temporaries."""
    out = np.zeros(peak + 1)
    segments = sw.times.size - 1
    for i in range(0, segments, BLOCK):
        j = min(i + BLOCK, segments)
        out += np.bincount(sw.level[i:j], weights=np.diff(sw.times[i:j + 1]), minlength=peak + 1)
    return out


def to_us(seconds: np.ndarray) -> np.ndarray:
    """Seconds (float) as integer microseconds, rounded to nearest: the grid measure sweeps on."""
    us = np.multiply(seconds, US, dtype=np.float64)
    np.rint(us, out=us)  # in place: one float temporary, not two
    return us.astype(np.int64)


def interval_stats(start_us: np.ndarray, finish_us: np.ndarray) -> dict:
    """Mean, peak, touches, time at peak and span of half-open intervals (integer microseconds).

    The one sweep line of the package: measure's figures, the simulator's summary and invariants
    and the calibration of a scenario all read it. Empty input: zeros.
    """
    if start_us.size == 0:
        return {"mean": 0.0, "peak": 0, "touches": 0, "time_at_peak_s": 0.0, "span_s": 0.0}
    sw = sweep(start_us, finish_us)
    span_us = int(sw.times[-1] - sw.times[0])
    caps = cap_stats(sw)
    return {"mean": sw.area_us() / span_us if span_us else 0.0, **caps, "span_s": span_us / US}


def concurrency_figures(start_us: np.ndarray, finish_us: np.ndarray, configured_cap: int | None,
                        *, with_series: bool = False) -> dict:
    """Every concurrency figure for one set of intervals (a whole input, or one job)."""
    return sweep_figures(sweep(start_us, finish_us), int(start_us.size), configured_cap, with_series=with_series)


def sweep_figures(sw: Sweep, n: int, configured_cap: int | None, *, with_series: bool = False) -> dict:
    """``concurrency_figures`` of ``n`` intervals already swept into ``sw``."""
    area = sw.area_us()
    span_us = int(sw.times[-1] - sw.times[0]) if sw.times.size else 0
    caps = cap_stats(sw)
    mean = ratio(area, span_us)
    out = {
        "rows": n,
        "span_s": span_us / US,
        "sandbox_s": area / US,
        "mean": mean,
        # Little's law: arrival rate x mean hold (equal to the mean by construction; kept as a cross-check).
        "mean_littles_law": (n / (span_us / US)) * (area / US / n) if n and span_us else None,
        "arrival_rate_per_s": arrival_rate_per_s(n, span_us / US),
        "hold_mean_s": area / US / n if n else None,
        "peak": caps["peak"],
        "peak_to_mean": ratio(caps["peak"], mean) if mean else None,
        "duty": ratio(mean, caps["peak"]) if mean is not None else None,
        "touches": caps["touches"],
        "time_at_peak_s": caps["time_at_peak_s"],
        "time_at_peak_share": ratio(caps["time_at_peak_s"], span_us / US),
        "configured_cap": configured_cap,
        "cap_detected": cap_detected(caps["peak"], caps["touches"], configured_cap, n),
        "cap_rule": "peak == configured_cap" if configured_cap is not None else f"touches >= {CAP_TOUCHES}",
        # The sweep raises SweepError on a mismatch; reaching here means both sums agreed exactly.
        "self_check": {"ok": area == sw.holds_us, "area_s": area / US, "sum_of_holds_s": (sw.holds_us or 0) / US},
    }
    if with_series:
        out["series"] = series(sw)
        out["time_at_level"] = time_at_level(sw)
    return out


def overall_cap(job_codes: np.ndarray, job_names: list[str], caps: dict[str, int]) -> int | None:
    """The configured cap to compare the overall peak with.

    One job (or several that all share one cap, e.g. sequential runs): that cap.
    Otherwise None, and the per-job figures (``by_job``) carry each job's own cap.
    """
    if not caps or job_codes.size == 0 or (job_codes < 0).any():
        return None
    present = {job_names[c] for c in np.unique(job_codes)}
    values = {caps.get(j) for j in present}
    if len(values) == 1:
        only = values.pop()
        if only is not None:
            return int(only)
    return None


def shipped_cap_binding_share() -> float:
    """``cap_binding.warn_above`` from the shipped checks.toml (measure reads data, not report code)."""
    import tomllib
    from importlib import resources

    text = resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text(encoding="utf-8")
    return float(tomllib.loads(text)["cap_binding"]["warn_above"])


def too_few_to_tell(rows: int | None, peak: int | None, cap: int | None) -> str | None:
    """Why a peak below the configured cap says nothing, or None when it can.

    When every rollout ran at once (peak == rows), nothing held any back: the rollouts were too
    few to reach the cap (a job of one trial peaks at 1 under any cap), so no other limit shows.
    A peak below the rollouts present is what a plateau needs (they could have run together)."""
    if cap is None or rows is None or peak is None or peak >= cap or peak < rows:
        return None
    return (f"too few rollouts to tell: all {rows:,} ran at once, under a configured cap of {cap:,} "
            "they could not reach; no other limit is shown to bind")


def effective_cap(conc: dict, min_share: float | None = None) -> int | None:
    """The peak, when a configured cap is recorded, the peak is below it, the fleet sat at the
    peak for at least ``min_share`` of its span (a plateau under the cap: another limit binds
    first, e.g. the agents' own ``n_concurrent`` or the host) and some rollouts waited for
    others (see ``too_few_to_tell``). Otherwise None.

    ``min_share`` defaults to ``shipped_cap_binding_share()``, read only when a cap is
    recorded (most inputs have none: no TOML is parsed for them).
    """
    cap, peak, share = conc.get("configured_cap"), conc.get("peak"), conc.get("time_at_peak_share")
    if cap is None or not peak or share is None or too_few_to_tell(conc.get("rows"), peak, cap):
        return None
    if min_share is None:
        min_share = shipped_cap_binding_share()
    return int(peak) if peak < cap and share >= min_share else None


def effective_cap_figures(conc: dict) -> dict:
    """``effective_cap`` and, when the rollouts were too few to tell, ``effective_cap_note`` saying so."""
    return {"effective_cap": effective_cap(conc),
            "effective_cap_note": too_few_to_tell(conc.get("rows"), conc.get("peak"), conc.get("configured_cap"))}

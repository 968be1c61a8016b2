"""The fleet's configured cap when jobs overlap: the sum of the caps of the jobs running at each moment.

Per-job caps (Harbor's ``orchestrator.n_concurrent_trials``, Inspect's ``max_samples``) bound each
job, not the fleet. Jobs launched side by side each get their own slots, so while three jobs of cap
1 run, the fleet may hold 3. A job runs from its first start to its last finish; the fleet's cap at
a moment is the sum of the caps of the jobs running then, and none (unbounded) while a running job
records no cap. ``configured_cap`` reports its largest value over the span; the cap is *reached*
where the level equals it, and *binds* only when a job's own cap binds (``concurrency.cap_detected``:
its peak is its cap and it had more rollouts than its cap, so some waited): three one-trial jobs
at their cap of 1 reach the fleet's cap of 3 without anything waiting. ``time_at_cap_s`` is the
time at the summed cap (``cap_binding`` reads it: a varying cap need not be the peak), and a
plateau (``effective_cap``) is judged against the summed cap while the fleet sat at its peak.

A cap the user states (``--cap``, a ``cap`` column: ``telemetry/stated.py``) is reported as stated
and checked against the touches rule (``stated_cap_basis``).

Jobs that never overlap keep the old reading: one job at a time, the running job's cap (the same
number when they share one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sandbox_fleet.measure.batchcap import CAP_TOUCHES
from sandbox_fleet.measure.concurrency import Sweep, overall_cap
from sandbox_fleet.measure.stats import group_spans
from sandbox_fleet.measure.steps import spans_overlap


@dataclass(frozen=True)
class FleetCap:
    """Each job's span and cap: the summed cap is a step function over the spans."""

    first_us: np.ndarray  # per present job, first start
    last_us: np.ndarray  # per present job, last finish
    cap: np.ndarray  # per present job, its configured cap (-1: none recorded)
    overlap: bool  # two or more jobs running at once at some moment

    @property
    def uncapped(self) -> bool:
        return bool((self.cap < 0).any())

    def summed_at(self, times: np.ndarray) -> np.ndarray:
        """The sum of the caps of the jobs running at each of ``times`` (a job runs on [first, last)),
        every event at one instant netted first."""
        ev = np.concatenate((self.first_us, self.last_us))
        dv = np.concatenate((self.cap, -self.cap))
        order = np.argsort(ev, kind="stable")
        ev, level = ev[order], np.cumsum(dv[order])
        at = np.searchsorted(ev, times, side="right") - 1
        return np.where(at >= 0, level[np.maximum(at, 0)], 0)

    def largest(self) -> int:
        """The largest summed cap over the span (at a job's first start it only grows)."""
        return int(self.summed_at(self.first_us).max())


def fleet_caps(start_us: np.ndarray, finish_us: np.ndarray, codes: np.ndarray, names: list[str],
               caps: dict[str, int]) -> FleetCap | None:
    """Each present job's span and cap, or None with fewer than two jobs, no cap recorded at all,
    or rows without a job (their slots are unknown)."""
    n = len(names)
    if n < 2 or not caps or codes.size == 0 or (codes < 0).any():
        return None
    first, last = group_spans(start_us, finish_us, codes, n)
    present = np.flatnonzero(first <= last)
    if present.size < 2:
        return None
    cap = np.array([caps.get(names[g], -1) for g in present], dtype=np.int64)
    return FleetCap(first[present], last[present], cap, bool(spans_overlap(first[present], last[present])))


def configured_cap(stated: int | None, caps: dict[str, int], start_us: np.ndarray, finish_us: np.ndarray,
                   codes: np.ndarray, names: list[str]) -> tuple[int | None, FleetCap | None]:
    """The one cap to compare the overall peak with: as ``stated`` (``--cap``, a cap column without
    jobs), else the jobs' (``concurrency.overall_cap``); when capped jobs overlap no single cap but
    their ``FleetCap`` (the fleet's cap is their sum over the jobs running). ``codes``: each row's
    job (-1: none), ``names`` the jobs'."""
    if stated is not None:
        return stated, None
    fc = fleet_caps(start_us, finish_us, codes, names, caps)
    if fc is not None and fc.overlap:
        return None, fc
    return overall_cap(codes, names, caps), None


def fleet_cap_figures(sw: Sweep, fc: FleetCap, job_detected: dict[str, bool | None]) -> dict:
    """The fleet's cap figures when its jobs overlap: ``configured_cap`` the largest summed cap (null
    while a running job has none), ``cap_detected`` reached and bound by a job's own cap, the basis."""
    if fc.uncapped:
        return {"configured_cap": None, "cap_detected": False,
                "cap_rule": "sum of the running jobs' caps (none: a running job records no cap)",
                "configured_cap_basis": "jobs overlap and one of them records no cap: the fleet has none"}
    largest = fc.largest()
    seg = sw.level[:-1].astype(np.int64)
    summed = fc.summed_at(sw.times[:-1])
    at_cap = (summed > 0) & (seg >= summed)
    reached = bool(at_cap.any())
    binding = sorted(name for name, hit in job_detected.items() if hit)
    time_s = float((np.diff(sw.times)[at_cap]).sum()) / 1e6
    basis = (f"jobs overlap: the fleet's cap is the sum of the caps of the jobs running at each moment "
             f"(largest {largest:,}); {'reached' if reached else 'not reached'}"
             + (f" for {time_s:,.0f} s" if reached else "")
             + (f"; bound by the own cap of job(s) {', '.join(binding[:3])}" if binding
                else "; no job had more rollouts than its cap at its peak: nothing waited"))
    return {"configured_cap": largest, "cap_detected": reached and bool(binding),
            "cap_rule": "level == sum of the running jobs' caps, and a job's own cap binds",
            "configured_cap_basis": basis, "time_at_cap_s": time_s}


def summed_cap_at_peak(sw: Sweep, fc: FleetCap) -> int:
    """The smallest summed cap while the fleet sat at its peak: a plateau is below the cap only
    when the peak stayed under the caps of the jobs running then (``effective_cap``)."""
    seg = sw.level[:-1]
    at = seg == seg.max()
    return int(fc.summed_at(sw.times[:-1][at]).min())


def stated_cap_basis(conc: dict, source: str) -> str:
    """How a stated cap (``--cap``, a ``cap`` column) reads against the data: reported as stated,
    and checked by the touches rule (a ceiling is reached again and again: ``CAP_TOUCHES``)."""
    cap, peak, touches = int(conc["configured_cap"]), conc.get("peak") or 0, conc.get("touches") or 0
    ceiling = touches >= CAP_TOUCHES
    head = f"stated ({source}): {cap:,}; "
    if peak == cap and ceiling:
        return head + f"the touches rule agrees: the peak {peak:,} was reached {touches:,} separate times"
    if peak == cap:
        return head + (f"reached, but only {touches:,} separate time(s): the touches rule alone would not have "
                       f"found it (needs {CAP_TOUCHES})")
    if peak > cap:
        return head + f"the data exceed it: the peak is {peak:,}, so the stated cap did not hold"
    if ceiling:
        return head + (f"the touches rule finds a ceiling at the peak {peak:,} below it ({touches:,} separate "
                       "times): another limit binds first")
    return head + f"not reached (peak {peak:,}); the touches rule agrees: no ceiling ({touches:,} time(s) at the peak)"

"""Throughput targets: the capacity that delivers X passing rollouts an hour, for a stated shape.

Little's law gives the MEAN number of busy sandboxes, ``m = X x sandbox-hours per pass``. Buying
``m`` slots delivers X only if rollouts arrive perfectly evenly; the source document's advice is
never to size against the average. Two shapes:

The default (``auto``) picks the shape from the measured step structure (``auto_shape``).

- ``measured``: keep the measured burstiness. The measured duty cycle ``u`` is mean / peak, so the
  peak that carries a mean of ``m`` is ``m / u`` (the document: 1,223 / 0.156).
- ``smooth``: continuous admission (async RL). The smallest cap whose simulated mean queue wait,
  with Poisson arrivals at ``m / E[hold]`` per second on the measured hold distribution, is at most
  ``max_wait_s``. Waits are compared across caps with common random numbers (the same arrivals and
  holds at every cap), under which FIFO waits do not rise with the cap, so bisection is exact.

Either way the fleet carries ``m`` busy sandboxes on ``cap`` slots, so its duty is ``m / cap`` and
fleet $/h divided by $ per passing trajectory is X.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.errors import InputError
from sandbox_fleet.plan.model import Target

if TYPE_CHECKING:  # NumPy is imported where it is used: a plan from a summary may not need it
    import numpy as np

SHAPES = ("measured", "smooth")
#: under ``--shape auto`` the other shape's answer is shown when the two differ by more than this factor
SHAPE_SWING = 1.5
#: rollouts simulated per probe: about 200 mean holds of simulated time per busy sandbox, within
#: bounds (near saturation a shorter run has not built its queue yet and understates the wait)
ROLLOUTS_PER_BUSY = 200
ROLLOUTS_MIN, ROLLOUTS_MAX = 50_000, 300_000
WARMUP_SHARE = 0.2  # discarded: the fleet starts empty
#: the smooth search looks no further than this many times the mean busy sandboxes
SEARCH_FACTOR = 4

MeanWait = Callable[[int], float]
"""``mean_wait(cap)`` -> mean queue wait (s) of the steady-state arrivals at that cap."""


def mean_busy(passing_per_hour: float, sandbox_hours_per_pass: float) -> float:
    """Little's law: busy sandboxes = passes/h x sandbox-hours per pass."""
    return passing_per_hour * sandbox_hours_per_pass


def auto_shape(steps_detected: Optional[bool], duty: Optional[float]) -> tuple[str, str]:
    """The shape the measured step structure implies, and why.

    Synchronous steps release batches, so the burstiness is the schedule's own and stays:
    ``measured``. Steps measured and not found means continuous admission, whose peak-to-mean is
    a queueing effect the smooth search models: ``smooth``. Steps never measured (a published
    summary) leave only the measured burstiness to keep: ``measured``, the larger answer.
    """
    if not duty:
        return "smooth", "no measured duty cycle to keep: continuous admission (smooth)"
    if steps_detected:
        return "measured", "synchronous steps detected: batches keep the measured burstiness (measured)"
    if steps_detected is False:
        return "smooth", "no synchronous steps in the telemetry: continuous admission (smooth)"
    return "measured", "the input does not say whether rollouts come in steps: the measured burstiness is kept (measured)"


#: the source of a shaped target (``resolve_target`` adds the Little's-law figures)
SHAPED_SOURCE = "passing-per-hour"


def measured_shape(mean: float, duty: Optional[float]) -> Target:
    """Capacity for ``mean`` busy sandboxes at the measured duty: ceil(mean / duty)."""
    if not duty:
        raise InputError("`shape` measured needs the measured duty cycle (concurrency.duty or mean/peak); pass `shape` smooth")
    cap = max(math.ceil(mean / duty - 1e-9), 1)
    return Target(
        concurrency=cap,
        source=SHAPED_SOURCE,
        shape="measured",
        detail=(
            f"keeps the measured burstiness: {mean:,.1f} busy sandboxes on average / measured duty {duty:.1%} "
            f"= {mean / duty:,.1f} at peak"
        ),
        duty=mean / cap,
    )


def smallest_cap(mean_wait: MeanWait, lo: int, hi: int, max_wait_s: float) -> tuple[int, float]:
    """Smallest cap in [lo, hi] with ``mean_wait(cap) <= max_wait_s`` (waits non-increasing in cap)."""
    top = mean_wait(hi)
    if top > max_wait_s:
        raise InputError(
            f"`shape` smooth: even {hi:,} slots leave a mean queue wait of {top:,.0f} s > `max_wait_s` {max_wait_s:g}; "
            "raise `max_wait_s` or use `shape` measured"
        )
    seen = {hi: top}
    while lo < hi:
        mid = (lo + hi) // 2
        seen[mid] = mean_wait(mid)
        if seen[mid] <= max_wait_s:
            hi = mid
        else:
            lo = mid + 1
    return hi, seen[hi]


def simulated_mean_wait(holds: np.ndarray, rate_per_s: float, seed: int) -> MeanWait:
    """Mean wait at a cap from the simulator's FIFO engine, Poisson arrivals, fixed holds (CRN)."""
    import numpy as np

    from sandbox_fleet.simulate.engine.entities import Fleet
    from sandbox_fleet.simulate.engine.run import run_workloads
    from sandbox_fleet.simulate.engine.workloads import Poisson

    skip = int(holds.size * WARMUP_SHARE)

    def mean_wait(cap: int) -> float:
        wl = Poisson(rate_per_s=rate_per_s, n=int(holds.size), holds=holds)
        res = run_workloads(Fleet(cap=cap), [wl], seed, check=False)
        first = res.attempt == 0
        order = np.argsort(res.rollout[first], kind="stable")
        wait = (res.start_s[first] - res.arrival_s[first])[order]
        return float(np.mean(wait[skip:]))

    return mean_wait


def _check_search_memory(mean: float, rollouts: int) -> None:
    """Refuse, before a slot is allocated, a smooth search whose pools cannot fit in memory (a
    --passing-per-hour of 1e15 asks for ~1e14 slots: an "out of memory" line, not an answer)."""
    from sandbox_fleet.limits import check_memory
    from sandbox_fleet.simulate.scenario.bounds import BYTES_PER_ATTEMPT, BYTES_PER_SLOT

    hi = SEARCH_FACTOR * max(math.ceil(mean), 1) + 10
    check_memory(hi * BYTES_PER_SLOT + rollouts * BYTES_PER_ATTEMPT, None,
                 f"`passing_per_hour`: {mean:,.4g} busy sandboxes on average; the smooth-shape search over up to "
                 f"{hi:,} slots would", "lower the target, or pass `shape` measured (no simulation)")


def smooth_shape(
    mean: float,
    sample_holds: Callable[[np.random.Generator, int], np.ndarray],
    *,
    max_wait_s: float,
    seed: int,
    rollouts: Optional[int] = None,
    mean_wait: Optional[MeanWait] = None,
) -> Target:
    """Smallest cap whose simulated mean queue wait is within ``max_wait_s`` at ``mean`` busy sandboxes."""
    import numpy as np
    if not (max_wait_s >= 0 and math.isfinite(max_wait_s)):
        raise InputError(f"`max_wait_s` must be zero or positive, got {max_wait_s!r}")
    if rollouts is None:
        rollouts = int(min(max(ROLLOUTS_PER_BUSY * math.ceil(mean), ROLLOUTS_MIN), ROLLOUTS_MAX))
    _check_search_memory(mean, rollouts)
    holds = np.asarray(sample_holds(np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(9, 1))), rollouts), dtype=float)
    hold_mean = float(holds.mean())
    rate = mean / hold_mean
    fn = mean_wait or simulated_mean_wait(holds, rate, seed)
    lo = max(math.ceil(mean - 1e-9), 1)  # fewer slots than busy sandboxes can never keep up
    hi = SEARCH_FACTOR * lo + 10
    cap, wait = smallest_cap(fn, lo, hi, max_wait_s)
    return Target(
        concurrency=cap,
        source=SHAPED_SOURCE,
        shape="smooth",
        detail=(
            f"continuous admission: smallest cap with simulated mean queue wait <= {max_wait_s:g} s "
            f"({wait:,.1f} s at {cap:,} slots; Poisson arrivals at {rate * 3600:,.1f}/h on the fitted holds, mean {hold_mean:,.0f} s)"
        ),
        duty=mean / cap,
        mean_wait_s=wait,
        max_wait_s=max_wait_s,
    )

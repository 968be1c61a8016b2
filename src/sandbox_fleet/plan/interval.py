"""The RL-schedule cap over replications: one answer on the pooled runs, and its spread.

Each replication is an independent run of ``RL_STEPS`` synchronous steps (its own holds, drawn once
and reused at every cap: common random numbers across candidate caps). The answer is the smallest
cap whose mean step, pooled over the replications, is within the tolerance of the pooled uncapped
step. Two spreads, which answer different questions:

- ``cap_interval``: the uncertainty of the chosen cap, the 5th-95th percentile (inverted CDF) of the
  pooled answer over ``BOOTSTRAP`` resamples of the replications (with replacement). Each resample's answer lies
  between the smallest and largest single-replication answer (every replication alone is within the
  tolerance above its own answer and outside it below), so its search is bracketed there.
- ``interval``: the spread of single ``RL_STEPS``-step runs, the 5th-95th percentile of the answers
  each replication gives on its own. It is how much one short run would mislead, not a range of
  equally good caps: ``step_excess_at_interval_low`` is the pooled mean step's excess over the
  uncapped one at its low end.

Evaluations are cached per (cap, replication): a replication's own search starts from the bracket
the pooled search already probed around it, so it costs a few more runs, not a full search.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Optional

#: replications per search, chosen by measurement on the published holds (train 300 s), seeds 0..4:
#:   R = 4: answers spread 9.3% at B = 512, 8.1% at B = 4,096;  R = 8: 4.7% / 6.5%;
#:   R = 16: 2.7% / 3.8% (0.6 s / 6.9 s a plan on one core);     R = 24: 2.5% / 2.6% (12.4 s at 4,096).
RL_REPLICATIONS = 16
#: resamples of the replications for ``cap_interval``; the resampling seed is fixed (the search's
#: seed already sets the draws), so the same input gives the same interval
BOOTSTRAP = 400
BOOTSTRAP_SEED = 20_261_122

StepAt = Callable[[int, int], float]
"""``step_at(cap, replication)`` -> mean step seconds of that replication at that cap."""


@dataclass(frozen=True)
class CapSearch:
    """What the replicated search found; the fields are the ``Target`` fields of the same names."""

    concurrency: int
    cap_interval: list[float]
    bootstrap: int
    interval: list[float]
    step_excess_at_interval_low: Optional[float]
    per_replication: list[int]
    replications: int
    step_s_uncapped: float
    step_s_at_cap: float
    evaluations: int


def rep_seed(seed: int, rep: int) -> int:
    """The seed of replication ``rep``: independent streams, the same at every cap."""
    import numpy as np
    return int(np.random.SeedSequence(seed, spawn_key=(4, 3, rep)).generate_state(1)[0])


def _bisect(ok: Callable[[int], bool], lo: int, hi: int) -> int:
    """Smallest cap in [lo, hi] with ``ok`` (``ok(hi)`` holds; ``ok`` is monotone)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def replicated_search(step_at: StepAt, batch: int, reps: int, tolerance: float, advance: Callable[[], None] = lambda: None) -> CapSearch:
    """Pooled answer, per-replication answers and their 5th-95th percentile interval."""
    import numpy as np
    cache: dict[tuple[int, int], float] = {}

    def at(cap: int, j: int) -> float:
        if (cap, j) not in cache:
            cache[(cap, j)] = step_at(cap, j)
            advance()
        return cache[(cap, j)]

    def pooled(cap: int) -> float:
        return float(np.mean([at(cap, j) for j in range(reps)]))

    base = [at(batch, j) for j in range(reps)]
    limit = float(np.mean(base)) * (1.0 + tolerance)
    answer = _bisect(lambda c: pooled(c) <= limit, 1, batch)
    per_rep = []
    for j in range(reps):
        lim_j = base[j] * (1.0 + tolerance)
        probed = sorted(c for c, k in cache if k == j)
        hi = min(c for c in probed if cache[(c, j)] <= lim_j)
        lo = max([c for c in probed if c < hi and cache[(c, j)] > lim_j], default=0) + 1
        per_rep.append(_bisect(_within(at, j, lim_j), lo, hi))
    lo_q, hi_q = np.percentile(per_rep, [5, 95], method="linear")
    boot = _bootstrap(at, base, per_rep, tolerance)
    low = math.floor(lo_q)
    return CapSearch(
        concurrency=answer,
        cap_interval=[float(q) for q in boot],
        bootstrap=BOOTSTRAP,
        interval=[float(lo_q), float(hi_q)],
        step_excess_at_interval_low=pooled(low) / float(np.mean(base)) - 1.0 if low >= 1 else None,
        per_replication=per_rep,
        replications=reps,
        step_s_uncapped=float(np.mean(base)),
        step_s_at_cap=pooled(answer),
        evaluations=len(cache),
    )


def _within(at: Callable[[int, int], float], j: int, limit: float) -> Callable[[int], bool]:
    """Whether replication ``j``'s step at a cap is within ``limit``."""
    return lambda cap: at(cap, j) <= limit


def _bootstrap(at: StepAt, base: list[float], per_rep: list[int], tolerance: float) -> list[int]:
    """The 5th and 95th percentiles (inverted CDF) of the pooled answer over ``BOOTSTRAP``
    resamples of the replications (counts from a fixed seed).

    A resample with counts w passes at a cap when sum_j w_j (at(cap, j) - (1 + tol) base_j) <= 0,
    and its answer is at most c exactly when it passes at c (steps do not lengthen with the cap).
    So the share of resamples answering at most c is the share passing at c, one probe of every
    replication serving all resamples at once, and each percentile is a bisection on c, bracketed
    by the single-replication answers (see the module docstring).
    """
    import numpy as np
    reps = len(base)
    counts = np.random.default_rng(BOOTSTRAP_SEED).multinomial(reps, [1.0 / reps] * reps, size=BOOTSTRAP)
    lim = np.asarray(base) * (1.0 + tolerance)

    def share_passing(cap: int) -> float:
        d = np.array([at(cap, j) for j in range(reps)]) - lim
        # exactly rounded weighted sums: a resample right at the limit passes on every CPU alike
        return sum(math.fsum((w * d).tolist()) <= 0.0 for w in counts) / len(counts)

    def percentile(q: float) -> int:
        return _bisect(lambda c: share_passing(c) >= q, min(per_rep), max(per_rep))

    return [percentile(0.05), percentile(0.95)]

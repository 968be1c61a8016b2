"""The smallest warm pool that keeps a synchronous RL step within a stated lengthening (``warm_pool``).

A step releases its batch of ``B`` at once. ``W`` claims find a ready sandbox in the pool and start at
once; the other ``B - W`` are created cold: through the creation bucket (rate, burst), a starting slot of
the starting-at-once cap, and the cold start, in order (``ramp.creation_delays_s``: the k-th cold one is
ready ``d_k`` late). The step then ends at ``max(max_warm h, max_k (d_k + h_k))`` instead of ``max h``;
its expected lengthening is taken over the fitted holds (``target.HoldSampler``, the draws the RL search
uses), ``RAMP_DRAWS`` holds from a fixed seed, the same draws for every ``W`` (common random numbers), so
it falls as ``W`` grows and the smallest ``W`` within ``max_share`` of the step is found by bisection.
Without a hold fit the worst case is used: the last cold one ends the step (``d_{B-W}``).

The pool refills at ``refill_per_s``: between two releases, a step ``T`` apart, it makes ``refill x T``
ready, so a pool of ``W`` is full again at every release when ``W <= refill x T`` (taking the measured
step, before any lengthening, is the cautious side). A ``W`` past that cannot be kept up: the refill
rate, not the size, is short, and the block says which rate would do.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional

from sandbox_fleet.plan.model import Starts, WarmPoolSizing
from sandbox_fleet.plan.ramp import RAMP_DRAWS, RAMP_MAX_REPS, RAMP_MIN_REPS, creation_delays_s, ramp_drawn
from sandbox_fleet.plan.rent import Provider

if TYPE_CHECKING:
    from sandbox_fleet.plan.target import HoldSampler

#: the default stated lengthening the pool keeps the step within
MAX_SHARE = 0.05
#: the seed's spawn key, apart from the ramp's and the RL search's streams
_STREAM = (39, 5)


class Lengthening:
    """``E[step with W warm] - E[step]`` over one set of hold draws, for any ``W`` (common random numbers)."""

    def __init__(self, batch: int, delays_s, holds: HoldSampler, seed: int = 0) -> None:
        import numpy as np

        self.batch = batch
        self.reps = min(max(RAMP_DRAWS // max(batch, 1), RAMP_MIN_REPS), RAMP_MAX_REPS)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=_STREAM))
        self.h = np.stack([holds.sample(rng, batch) for _ in range(self.reps)])
        self.top = self.h.max(axis=1)
        self.d = np.asarray(delays_s, dtype=float)

    def __call__(self, warm: int) -> float:
        import numpy as np

        if warm >= self.batch:
            return 0.0
        cold = (self.h[:, warm:] + self.d[: self.batch - warm]).max(axis=1)
        step = np.maximum(self.h[:, :warm].max(axis=1), cold) if warm > 0 else cold
        return float(np.mean(step - self.top))


def smallest_warm(batch: int, budget_s: float, lengthening) -> int:
    """The least ``W`` in [0, batch] with ``lengthening(W) <= budget_s`` (``lengthening`` falls with ``W``;
    ``lengthening(batch)`` is 0)."""
    lo, hi = 0, batch
    while lo < hi:
        mid = (lo + hi) // 2
        if lengthening(mid) <= budget_s:
            hi = mid
        else:
            lo = mid + 1
    return lo


def warm_pool_block(starts: Starts, provider: Optional[Provider], holds: Optional[HoldSampler], *,
                    cold_start_s: Optional[float] = None, cold_start_source: Optional[str] = None,
                    max_share: float = MAX_SHARE, seed: int = 0) -> Optional[WarmPoolSizing]:
    """The pool size for the plan's released batch on ``provider`` (the self-hosted agent-sandbox entry:
    refill rate, creation bucket, starting cap, cold start), or None without a released batch."""
    if not starts.batch or provider is None:
        return None
    b = round(starts.batch)
    step = starts.step_s
    refill = provider.warm_pool_refill_per_s
    if cold_start_s is None:
        cold_start_s, cold_start_source = provider.cold_start_p50_s, f"{provider.name} cold start p50 (catalog)"
    out: dict[str, Any] = {"batch": float(b), "step_s": step, "refill_per_s": refill, "cold_start_s": cold_start_s,
               "cold_start_source": cold_start_source, "creates_per_s": provider.max_creates_per_s,
               "burst": float(provider.max_creates_burst or 1), "max_starting": provider.max_starting,
               "max_share": max_share, "provider": provider.name}
    missing = [k for k, v in (("a step time", step), ("a refill rate", refill), ("a cold start", cold_start_s)) if not v]
    if missing:
        return WarmPoolSizing(**out, basis=f"not sized: no {', no '.join(missing)}")
    assert step is not None and refill is not None and cold_start_s is not None  # checked above
    d = creation_delays_s(b, provider.max_creates_per_s, float(provider.max_creates_burst or 1),
                          provider.max_starting, cold_start_s)
    budget = max_share * step
    if holds is not None and ramp_drawn(b):
        f = Lengthening(b, d, holds, seed)
        warm = smallest_warm(b, budget, f)
        at, none = f(warm), f(0)
        how = (f"expected over the fitted holds ({holds.spec.dist or holds.kind}), {f.reps:,} batches of {b:,} "
               f"(common draws for every size)")
    else:  # the worst case: the last cold one ends the step
        warm = b - int((d <= budget).sum())
        at, none = (float(d[b - warm - 1]) if warm < b else 0.0), float(d[-1])
        how = "no hold fit: judged on the worst case, the last cold start ending the step"
    per_step = refill * step
    kept = warm <= per_step + 1e-9
    words = (f"a batch of {b:,} every {step:,.0f} s; cold: {cold_start_s:g} s start ({cold_start_source})"
             + (f", {provider.max_creates_per_s:g} creates/s burst {provider.max_creates_burst or 1:g}"
                if provider.max_creates_per_s else "")
             + (f", {provider.max_starting:,} starting at once" if provider.max_starting else "")
             + f"; {how}: without a pool the step is {none:,.1f} s ({none / step:.2%}) longer")
    if not kept:
        need = warm / step
        return WarmPoolSizing(**out, needed=warm, lengthening_s=at, lengthening_share=at / step,
                              lengthening_without_s=none, refill_per_step=per_step, basis=(
                                  f"no pool size keeps the step within {max_share:.0%}: it takes {warm:,} warm claims a "
                                  f"step and the pool refills {per_step:,.1f} a step at {refill:g}/s (needs "
                                  f"{math.ceil(need * 100) / 100:g}/s); {words}"))
    if warm == 0:
        return WarmPoolSizing(**out, size=0, needed=0, lengthening_s=at, lengthening_share=at / step,
                              lengthening_without_s=none, refill_per_step=per_step,
                              basis=f"no warm pool needed: cold starts keep the step within {max_share:.0%}; {words}")
    return WarmPoolSizing(**out, size=warm, needed=warm, lengthening_s=at, lengthening_share=at / step,
                          lengthening_without_s=none, refill_per_step=per_step, basis=(
                              f"{warm:,} warm keep the step within {max_share:.0%} (+{at:,.1f} s, {at / step:.2%}), the "
                              f"least that do; refilled in {warm / refill:,.1f} s at {refill:g}/s, within the step; {words}"))

"""Spot rework: the sandbox-hours a reclaimed node's rollouts spend running again from scratch.

A node is reclaimed as a Poisson process of rate ``r`` per hour and every sandbox on it restarts
its task from the beginning (``simulate``'s retries re-run the task). A hold of ``h`` hours then
takes ``(e^{r h} - 1) / r`` hours in expectation (the classic restart-from-scratch result: a run
must see a gap of ``h`` between reclaims), so the extra work is ``(e^{r h} - 1) / r - h``. Summed
over the holds and divided by their total, that is the share of sandbox-hours spot adds.

The same model counts the interruptions: an attempt survives with probability ``e^{-r h}``, so a
hold sees ``e^{r h} - 1`` reclaims in expectation (geometric), not ``r h``; averaged over the holds,
``E[e^{r h} - 1]`` is larger than ``r E[h]`` (Jensen) and is what a long-tailed mix actually suffers.

The expectations are taken over the fitted hold distribution itself (``holdfit``: quadrature of
the piecewise or clipped lognormal fit, closed form for the exponential one), not over a sample,
so they need no NumPy and are the same bits on every machine.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan import holdfit
from sandbox_fleet.plan.model import SpotRework

if TYPE_CHECKING:  # NumPy is imported where it is used: a plan from a summary does not need it
    import numpy as np

    from sandbox_fleet.plan.target import HoldSampler


def rework_h(hold_h: np.ndarray, rate_per_h: float) -> np.ndarray:
    """Expected extra hours per hold: ``(e^{r h} - 1)/r - h`` (0 at r = 0), over an array of holds."""
    import numpy as np

    from sandbox_fleet import exact
    h = np.asarray(hold_h, dtype=float)
    if rate_per_h <= 0:
        return np.zeros_like(h)
    return exact.expm1(rate_per_h * h) / rate_per_h - h


def rework_share(fit: HoldSampler, rate_per_node_h: float) -> Optional[float]:
    """The rework share alone (``expected_rework``'s first figure, without the reclaims per hold):
    what a search over reclaim rates needs at each rate."""
    r = rate_per_node_h
    if fit.kind == "exponential":
        x = r * fit.mean / 3600.0
        return x / (1.0 - x) if x < 1.0 else None
    clipped = fit.clipped()
    assert clipped is not None  # every other fit has segments
    if r <= 0:
        return 0.0
    try:
        extra_h = holdfit.expectation(clipped, lambda hold_s: holdfit.exp_excess(r * hold_s / 3600.0) / r)
    except OverflowError:
        return None
    return extra_h / (holdfit.mean_s(clipped) / 3600.0)


def expected_rework(fit: HoldSampler, rate_per_node_h: float) -> tuple[Optional[float], Optional[float], str]:
    """``(rework share, mean reclaims per hold, basis)`` over the fitted holds: the share is
    ``E[(e^{r h} - 1)/r - h] / E[h]``, the reclaims ``E[e^{r h} - 1]``; both None when unbounded."""
    r = rate_per_node_h
    if fit.kind == "exponential":
        x = r * fit.mean / 3600.0
        if x >= 1.0:  # E[e^{rh}] = 1/(1 - r mean) diverges: holds outlast the reclaims on average
            return None, None, (f"unbounded: under the exponential hold fit (mean {fit.mean:,.0f} s) r x mean = {x:.3g} >= 1, "
                                "so a hold restarted from scratch expects infinitely many reclaims; spot re-runs not priced")
        # E[e^{rh}] = 1/(1 - x) with x = r mean: share (E[e^{rh}] - 1)/(r mean) - 1 and reclaims E[e^{rh}] - 1 are both x/(1 - x)
        return x / (1.0 - x), x / (1.0 - x), "expectation over the exponential hold fit, closed form (r m / (1 - r m))"
    clipped = fit.clipped()
    assert clipped is not None  # every other fit has segments
    if r <= 0:
        return 0.0, 0.0, "no reclaims"
    basis = (f"expectation over the fitted {fit.spec.dist} holds (clipped at the 1/(2 x {fit.clip_rows:,.0f} rows) "
             f"quantiles), Gauss-Legendre quadrature, no sample")
    share = rework_share(fit, r)
    try:
        per_hold = holdfit.expectation(clipped, lambda hold_s: math.expm1(r * hold_s / 3600.0)) if share is not None else None
    except OverflowError:
        share = per_hold = None
    if share is None:  # e^{r h} past the largest float at the longest hold
        return None, None, (f"unbounded: {r:.3g} reclaims per node-h against holds of up to {clipped.hold_hi_s:,.0f} s "
                            "overflow e^(r h); spot re-runs not priced")
    return share, per_hold, basis


def spot_rework(
    fit: Optional[HoldSampler], rate_per_node_h: Optional[float], busy_sandboxes: Optional[float],
    spot_per_h: Optional[float], source: str = "",
) -> Optional[SpotRework]:
    """The spot line's rework figures, or None when the rate or the holds are unknown."""
    if rate_per_node_h is None or fit is None:
        return None
    share, per_hold, basis = expected_rework(fit, rate_per_node_h)
    return SpotRework(
        interruptions_per_node_h=rate_per_node_h,
        source=source,
        rework_share=share,
        rework_sandbox_hours_per_h=busy_sandboxes * share if busy_sandboxes is not None and share is not None else None,
        rework_per_h=spot_per_h * share if spot_per_h is not None and share is not None else None,
        spot_per_h_with_rework=spot_per_h * (1.0 + share) if spot_per_h is not None and share is not None else None,
        mean_interruptions_per_hold=per_hold,
        basis=basis,
    )

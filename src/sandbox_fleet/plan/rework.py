"""Spot rework: the sandbox-hours a reclaimed node's rollouts spend running again from scratch.

A node is reclaimed as a Poisson process of rate ``r`` per hour and every sandbox on it restarts
its task from the beginning (``simulate``'s retries re-run the task). A hold of ``h`` hours then
takes ``(e^{r h} - 1) / r`` hours in expectation (the classic restart-from-scratch result: a run
must see a gap of ``h`` between reclaims), so the extra work is ``(e^{r h} - 1) / r - h``. Summed
over the holds and divided by their total, that is the share of sandbox-hours spot adds.

The same model counts the interruptions: an attempt survives with probability ``e^{-r h}``, so a
hold sees ``e^{r h} - 1`` reclaims in expectation (geometric), not ``r h``; averaged over the holds,
``E[e^{r h} - 1]`` is larger than ``r E[h]`` (Jensen) and is what a long-tailed mix actually suffers.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.model import SpotRework

if TYPE_CHECKING:  # NumPy is imported where it is used: a plan from a summary may not need it
    import numpy as np



def rework_h(hold_h: np.ndarray, rate_per_h: float) -> np.ndarray:
    """Expected extra hours per hold: ``(e^{r h} - 1)/r - h`` (0 at r = 0)."""
    import numpy as np

    from sandbox_fleet import exact
    h = np.asarray(hold_h, dtype=float)
    if rate_per_h <= 0:
        return np.zeros_like(h)
    return exact.expm1(rate_per_h * h) / rate_per_h - h


def rework_share(hold_s: np.ndarray, rate_per_node_h: float) -> float:
    """Re-run sandbox-hours per sandbox-hour of work at ``rate_per_node_h`` reclaims per node-hour."""
    import numpy as np
    h = np.asarray(hold_s, dtype=float) / 3600.0
    return float(rework_h(h, rate_per_node_h).sum() / h.sum())


def interruptions_per_hold(hold_s: np.ndarray, rate_per_node_h: float) -> float:
    """Expected reclaims one hold suffers before it completes, ``E[e^{r h} - 1]`` over ``hold_s``."""
    import numpy as np

    from sandbox_fleet import exact
    return exact.mean(exact.expm1(rate_per_node_h * np.asarray(hold_s, dtype=float) / 3600.0))


def spot_rework(
    hold_s: Optional[np.ndarray], rate_per_node_h: Optional[float], busy_sandboxes: Optional[float],
    spot_per_h: Optional[float], source: str = "",
) -> Optional[SpotRework]:
    """The spot line's rework figures, or None when the rate or the holds are unknown."""
    if rate_per_node_h is None or hold_s is None or not len(hold_s):
        return None
    share = rework_share(hold_s, rate_per_node_h)
    return SpotRework(
        interruptions_per_node_h=rate_per_node_h,
        source=source,
        rework_share=share,
        rework_sandbox_hours_per_h=busy_sandboxes * share if busy_sandboxes is not None else None,
        rework_per_h=spot_per_h * share if spot_per_h is not None else None,
        spot_per_h_with_rework=spot_per_h * (1.0 + share) if spot_per_h is not None else None,
        mean_interruptions_per_hold=interruptions_per_hold(hold_s, rate_per_node_h) if not math.isnan(share) else None,
    )

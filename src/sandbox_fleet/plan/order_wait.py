"""What an order's provisioning waits cost in time (issue 37): the slowdown of the mean step.

An order whose burst nodes launch at need makes the rollouts placed on a joining node wait for it
(``simulate.engine.nodes``: the wait shifts that rollout's own interval). The all-up order (every
node up the whole history) makes none wait, so its replay is the history as measured; each order's
figure is read against it:

- **with synchronous steps** (``measure.steps`` finds them in the measured starts): a step ends when
  its last rollout ends, so its lengthening is its last replayed end minus its last measured end (at
  most its largest wait). The figure is the slowdown of the mean step: the summed lengthening over
  the summed measured step lengths (release to last end). Each step is read at its measured release:
  a lengthened step does not delay the next one here (the history is replayed as it ran);
- **without steps**: the slowdown of the mean rollout, the summed waits over the summed measured
  holds (the share of sandbox-time spent waiting for a node, relative to the work).

The plan's ``--tolerance`` (the allowed slowdown of the mean step the RL schedule target also reads)
bounds it: a mixed order's R is first re-chosen as the cheapest within it (plan/mixed_replay.py), and
an order still above it is not eligible (plan/order_replay.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.plan.model import WaitFigure

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class WaitCost:
    """The time an order's provisioning waits cost, against the all-up order."""

    #: "steps" (slowdown of the mean synchronous step) or "rollouts" (of the mean rollout)
    method: str
    #: the lengthening over the measured length (0.05: the mean step 5% longer)
    slowdown: float
    #: steps read (None: no steps) and their mean and largest lengthening, seconds
    steps: Optional[int]
    lengthening_s_mean: float
    lengthening_s_max: float


def step_releases_of(start_s: np.ndarray, end_s: np.ndarray) -> Optional[np.ndarray]:
    """Per rollout, the release (first start) of its synchronous step, seconds; None without steps."""
    import numpy as np

    from sandbox_fleet.measure.steps import measure_steps, step_releases

    start_us = np.round(start_s * 1e6).astype(np.int64)
    steps = measure_steps(start_us, np.round(end_s * 1e6).astype(np.int64))
    if not steps.get("detected"):
        return None
    return step_releases(start_us, float(steps["gap_threshold_s"])) / 1e6


@dataclass(frozen=True)
class StepIndex:
    """The steps of one history, read once for every candidate order's replay (``wait_cost``'s ``index``):
    the rollouts grouped by step, each step's release and its last measured end."""

    #: rollouts in step order (stable), and where each step's run of them begins
    order: np.ndarray
    firsts: np.ndarray
    keys: np.ndarray
    measured: np.ndarray
    #: the summed measured step lengths, seconds
    length: float


def index_steps(end_s: np.ndarray, release_s: np.ndarray) -> StepIndex:
    """``release_s``'s steps over the rollouts measured ending at ``end_s``, for ``wait_cost``."""
    import numpy as np

    end, release = np.asarray(end_s, dtype=float), np.asarray(release_s, dtype=float)
    keys, step = np.unique(release, return_inverse=True)
    order = np.argsort(step, kind="stable")
    firsts = np.searchsorted(step[order], np.arange(keys.size))
    measured = np.maximum.reduceat(end[order], firsts) if keys.size else np.empty(0)
    return StepIndex(order, firsts, keys, measured, float(np.sum(measured - keys)))


def wait_cost(start_s: np.ndarray, end_s: np.ndarray, replayed_end_s: np.ndarray,
              release_s: Optional[np.ndarray], index: Optional[StepIndex] = None) -> WaitCost:
    """The slowdown of the mean step (``release_s``: each rollout's step release) or, without steps, of
    the mean rollout, when the rollouts measured at ``start_s``..``end_s`` end at ``replayed_end_s``
    (NaN: not placed, left out). ``index`` (``index_steps`` of the same ``end_s`` and ``release_s``)
    shares the grouping by step across the replays of one search; the figure is the same to the bit."""
    import numpy as np  # NumPy only when a replay runs (a plan on a summary loads none)

    start, end, got = (np.asarray(a, dtype=float) for a in (start_s, end_s, replayed_end_s))
    ran = np.isfinite(got)
    if release_s is not None and index is not None and bool(ran.all()):  # every rollout placed: every step kept
        return _by_index(index, got)
    if release_s is None:
        wait = np.maximum(got[ran] - end[ran], 0.0)
        work = float(np.sum(end[ran] - start[ran]))
        return WaitCost("rollouts", float(np.sum(wait)) / work if work > 0 else 0.0, None,
                        float(np.mean(wait)) if wait.size else 0.0, float(np.max(wait)) if wait.size else 0.0)
    release = np.asarray(release_s, dtype=float)
    keys, step = np.unique(release[ran], return_inverse=True)
    measured = np.full(keys.size, -np.inf)
    replayed = np.full(keys.size, -np.inf)
    np.maximum.at(measured, step, end[ran])
    np.maximum.at(replayed, step, got[ran])
    longer = np.maximum(replayed - measured, 0.0)
    length = float(np.sum(measured - keys))
    return WaitCost("steps", float(np.sum(longer)) / length if length > 0 else 0.0, int(keys.size),
                    float(np.mean(longer)) if keys.size else 0.0, float(np.max(longer)) if keys.size else 0.0)


def _by_index(index: StepIndex, got: np.ndarray) -> WaitCost:
    """``wait_cost`` over the steps ``index`` read, every rollout placed (the same sums, in the same order)."""
    import numpy as np

    if index.keys.size == 0:
        return WaitCost("steps", 0.0, 0, 0.0, 0.0)
    replayed = np.maximum.reduceat(got[index.order], index.firsts)
    longer = np.maximum(replayed - index.measured, 0.0)
    length = index.length
    return WaitCost("steps", float(np.sum(longer)) / length if length > 0 else 0.0, int(index.keys.size),
                    float(np.mean(longer)), float(np.max(longer)))


def ruled_out(costs: list[Optional[float]], slows: list[Optional[float]], best: int,
              tolerance: Optional[float]) -> Optional[int]:
    """The cheapest R (by $, then the fewest) cheaper than ``best`` whose slowdown is past ``tolerance``:
    the R the tolerance ruled out; None when none is."""
    if tolerance is None:
        return None
    out = [r for r, c in enumerate(costs) if c is not None and c < (costs[best] or 0.0)
           and (slows[r] or 0.0) > tolerance]
    return min(out, key=lambda k: (costs[k] or 0.0, k)) if out else None


def describe(w: WaitFigure) -> str:
    """The figure in a few words: "mean step +4.2% (+12 s, at most +60 s, 8 steps)"."""
    what = "mean step" if w.method == "steps" else "mean rollout"
    where = f", {w.steps:,} steps" if w.steps is not None else ""
    return (f"{what} +{w.slowdown or 0.0:.1%} (+{w.lengthening_s_mean or 0.0:,.3g} s, at most "
            f"+{w.lengthening_s_max or 0.0:,.3g} s{where})")

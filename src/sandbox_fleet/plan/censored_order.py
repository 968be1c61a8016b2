"""The demand's history, where a cap bound: what the order is chosen on when the plan buys the demand (issue 37).

The measured history ran under the cap: its starts queued behind it (``plan/censored.py``, issue 38),
so an order chosen on it (the mixed purchase's reserved base R, the replayed node counts) is chosen
for the cap. Where the history has synchronous steps (``measure.steps``), the demand's history is
known up to the queue: each rollout re-queued at its step's release on the demand's slots, first come,
first served, holds kept (``censored_burst.requeue``; at the old cap it gives back the measured starts
of a first-come-first-served cap). The plan prices each line on its own history: the cap's is the
history as it ran, the demand's the re-queued one; without steps the demand's history is not known
and both lines rest on the history as it ran (said in ``target.censored.lines_basis``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

from sandbox_fleet.measure.intervals import RolloutIntervals

if TYPE_CHECKING:
    from sandbox_fleet.plan.model import Censored


@dataclass
class RequeuedIntervals(RolloutIntervals):
    """The measured rollouts re-queued on ``slots`` slots at their steps' releases (the demand's history)."""

    #: the history as it ran (under the cap)
    as_ran: Optional[RolloutIntervals] = None
    slots: int = 0
    #: rollouts that start earlier than measured, and the steps found
    moved: int = 0
    steps: int = 0

    def describe(self) -> str:
        return (f"the {self.count:,} measured rollouts re-queued at their {self.steps:,} steps' releases on "
                f"{self.slots:,} slots (first come, first served, holds kept; {self.moved:,} start earlier than "
                f"measured)")


def has_demand_line(c: Optional[Censored]) -> bool:
    """Whether ``c`` prices a demand line apart from the cap's (an estimated demand, not a lower bound)."""
    return (c is not None and c.cap is not None and c.demand is not None and not c.demand_is_lower_bound
            and c.demand != c.cap)


def requeued(history: RolloutIntervals, slots: int) -> Optional[RequeuedIntervals]:
    """``history`` re-queued at its steps' releases on ``slots`` slots; None without synchronous steps."""
    import numpy as np

    from sandbox_fleet.measure.steps import measure_steps, step_releases
    from sandbox_fleet.plan.censored_burst import requeue

    start_us = np.round(history.start_s * 1e6).astype(np.int64)
    steps = measure_steps(start_us, np.round(history.end_s * 1e6).astype(np.int64))
    if not steps.get("detected"):
        return None
    release_s = step_releases(start_us, float(steps["gap_threshold_s"])) / 1e6
    hold_s = history.end_s - history.start_s
    start_s = requeue(release_s, history.start_s, hold_s, slots)
    fields = {k: getattr(history, k) for k in RolloutIntervals.__dataclass_fields__}
    fields.update(start_s=start_s, end_s=start_s + hold_s)
    return RequeuedIntervals(**fields, as_ran=history, slots=slots,
                             moved=int(np.count_nonzero(start_s < history.start_s - 1e-6)),
                             steps=int(np.unique(release_s).size))


@dataclass(frozen=True)
class Histories:
    """The history each line is priced on: the cap's (as it ran) and the demand's (None: not known)."""

    at_cap: Optional[RolloutIntervals]
    at_demand: Optional[RolloutIntervals]
    #: the history the order signed is chosen on (the bought line's)
    bought: Optional[RolloutIntervals]


def histories(history: Optional[RolloutIntervals], c: Optional[Censored]) -> Histories:
    """Each line's history: the demand's re-queued where steps allow, else none; the bought line's is
    the demand's when the plan buys the demand and it is known, else the history as it ran."""
    if history is None or not has_demand_line(c):
        return Histories(history, None, history)
    assert c is not None and c.demand is not None  # has_demand_line
    demand = requeued(history, c.demand)
    bought = demand if c.chosen == "demand" and demand is not None else history
    return Histories(history, demand, bought)


def as_ran(history: Optional[RolloutIntervals]) -> Optional[RolloutIntervals]:
    """The measured history behind ``history`` (itself unless re-queued)."""
    return history.as_ran if isinstance(history, RequeuedIntervals) else history

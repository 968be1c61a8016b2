"""Cost per passing trajectory, all in: the fleet, the inference GPUs and (optionally) the trainer.

Passing trajectories per hour at the target are ``target x duty / sandbox-hours per pass`` (the
busy sandboxes over the sandbox time one pass takes), so each $/h line divides by the same rate:
``fleet $/h / passes/h`` is ``cost.per_passing_trajectory``.
"""

from __future__ import annotations

from typing import Optional

from sandbox_fleet.plan.model import CostParts


def passes_per_h(concurrency: int, duty: Optional[float], sandbox_hours_per_pass: Optional[float]) -> Optional[float]:
    if not duty or not sandbox_hours_per_pass:
        return None
    return concurrency * duty / sandbox_hours_per_pass


def all_in(
    passes: Optional[float], fleet_per_h: Optional[float], inference_per_h: Optional[float], trainer_per_h: Optional[float]
) -> tuple[Optional[float], CostParts]:
    """(``per_passing_trajectory_all_in``, its ``parts``); a part with no price is None and left out of the sum."""
    parts = CostParts(**{
        k: (v / passes if v is not None and passes else None)
        for k, v in (("fleet", fleet_per_h), ("inference", inference_per_h), ("trainer", trainer_per_h))
    })
    known = [v for v in (parts.fleet, parts.inference, parts.trainer) if v is not None]
    return (sum(known) if known and parts.fleet is not None else None), parts

"""plan stage: turn a measurement summary into a purchase order.

``make_plan(summary, PlanOptions(...))`` sizes nodes (slots, packing), storage, inference GPUs and
cost for a target concurrency; ``plan_path(path, options)`` reads a ``measure --json`` summary or
measures telemetry first. Module by role: ``target``, ``catalog``, ``slots``, ``packing``,
``storage``, ``inference``, ``cost``, ``render`` (``decision``: its first lines, what to buy);
``build`` assembles them.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "PlanOptions": "sandbox_fleet.plan.build",
    "make_plan": "sandbox_fleet.plan.build",
    "make_reserve": "sandbox_fleet.plan.build",
    "make_roofline": "sandbox_fleet.plan.build",
    "parse_request": "sandbox_fleet.plan.build",
    "plan_path": "sandbox_fleet.plan.build",
    "plan_and_input": "sandbox_fleet.plan.build",
    "rl_schedule_target": "sandbox_fleet.plan.target",
}

__all__ = ["PlanOptions", "make_plan", "make_reserve", "make_roofline", "parse_request", "plan_and_input", "plan_path",
           "rl_schedule_target"]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

"""plan stage: turn a measurement summary into a purchase order.

``make_plan(summary, PlanOptions(...))`` sizes nodes (slots, packing), storage, inference GPUs and
cost for a target concurrency; ``plan_path(path, options)`` reads a ``measure --json`` summary or
measures telemetry first. Module by role: ``target``, ``catalog``, ``slots``, ``packing``,
``storage``, ``inference``, ``cost``, ``render``; ``build`` assembles them.
"""

from __future__ import annotations

from sandbox_fleet.plan.build import PlanOptions, make_plan, make_reserve, make_roofline, parse_request, plan_path
from sandbox_fleet.plan.target import rl_schedule_target

__all__ = ["PlanOptions", "make_plan", "make_reserve", "make_roofline", "parse_request", "plan_path", "rl_schedule_target"]

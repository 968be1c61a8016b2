"""plan stage: turn a measurement summary into a purchase order.

``make_plan(summary, PlanOptions(...))`` sizes nodes (slots, packing), storage, inference GPUs and
cost for a target concurrency; ``plan_path(path, options)`` reads a ``measure --json`` summary or
measures telemetry first. Module by role: ``target``, ``catalog``, ``slots``, ``packing``,
``storage``, ``inference``, ``cost``, ``render``; ``build`` assembles them.
"""

from __future__ import annotations

import importlib

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "PlanOptions": "sandbox_fleet.plan.build",
    "make_plan": "sandbox_fleet.plan.build",
    "make_reserve": "sandbox_fleet.plan.build",
    "make_roofline": "sandbox_fleet.plan.build",
    "parse_request": "sandbox_fleet.plan.build",
    "plan_path": "sandbox_fleet.plan.build",
    "rl_schedule_target": "sandbox_fleet.plan.target",
}

__all__ = ["PlanOptions", "make_plan", "make_reserve", "make_roofline", "parse_request", "plan_path", "rl_schedule_target"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        return _submodule(name)
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def _submodule(name: str):
    """``package.sub`` without importing ``package.sub`` first, as the eager imports used to allow."""
    try:
        return importlib.import_module(f"{__name__}.{name}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None

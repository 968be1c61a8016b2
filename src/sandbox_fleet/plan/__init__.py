"""plan stage: turn a measurement summary into a purchase order.

``make_plan(summary, PlanOptions(...))`` sizes nodes (slots, packing), storage, inference GPUs and
cost for a target concurrency, from a ``MeasureSummary`` (``measure.load_measure`` reads a
``measure --json`` file or measures telemetry), and returns the ``PlanSummary`` model;
``backtest_block(path)`` reads the backtest verdict it can carry. Module by role: ``target``, ``catalog``, ``slots``, ``packing``,
``storage``, ``inference``, ``cost``, ``render`` (``decision``: its first lines, what to buy);
``build`` assembles them.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "PlanOptions": "sandbox_fleet.plan.build",
    "backtest_block": "sandbox_fleet.plan.backtest_line",
    "make_plan": "sandbox_fleet.plan.build",
    "make_reserve": "sandbox_fleet.plan.build",
    "make_roofline": "sandbox_fleet.plan.build",
    "parse_request": "sandbox_fleet.plan.build",
    "rl_schedule_target": "sandbox_fleet.plan.target",
}

__all__ = ["PlanOptions", "backtest_block", "make_plan", "make_reserve", "make_roofline", "parse_request",
           "rl_schedule_target"]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

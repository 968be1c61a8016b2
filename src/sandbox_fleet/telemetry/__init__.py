"""Telemetry: readers for each source format, the canonical record, validation.

Entry points: ``load_telemetry`` (rollouts from any PATHs), ``filter_rollouts``,
``read_tasks`` (a tasks root). Users' reference: ``docs/telemetry.md``.
"""

from __future__ import annotations

from sandbox_fleet.lazy import lazy_exports

#: public name -> the module defining it, imported on first use (start-up stays cheap)
_EXPORTS = {
    "filter_rollouts": "sandbox_fleet.telemetry.load",
    "load_telemetry": "sandbox_fleet.telemetry.load",
    "PHASES": "sandbox_fleet.telemetry.record",
    "ROLLOUT_SCHEMA": "sandbox_fleet.telemetry.record",
    "TASK_SCHEMA": "sandbox_fleet.telemetry.record",
    "Telemetry": "sandbox_fleet.telemetry.record",
    "conform_rollouts": "sandbox_fleet.telemetry.record",
    "conform_tasks": "sandbox_fleet.telemetry.record",
    "read_tasks": "sandbox_fleet.telemetry.tasks",
}

__all__ = [
    "PHASES",
    "ROLLOUT_SCHEMA",
    "TASK_SCHEMA",
    "Telemetry",
    "conform_rollouts",
    "conform_tasks",
    "filter_rollouts",
    "load_telemetry",
    "read_tasks",
]


__getattr__ = lazy_exports(__name__, _EXPORTS, globals())

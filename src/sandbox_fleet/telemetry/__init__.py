"""Telemetry: readers for each source format, the canonical record, validation.

Entry points: ``load_telemetry`` (rollouts from any PATHs), ``filter_rollouts``,
``read_tasks`` (a tasks root). Users' reference: ``docs/telemetry.md``.
"""

from sandbox_fleet.telemetry.load import filter_rollouts, load_telemetry
from sandbox_fleet.telemetry.record import (
    PHASES,
    ROLLOUT_SCHEMA,
    TASK_SCHEMA,
    Telemetry,
    conform_rollouts,
    conform_tasks,
)
from sandbox_fleet.telemetry.tasks import read_tasks

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

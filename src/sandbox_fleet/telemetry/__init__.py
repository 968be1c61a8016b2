"""Telemetry: readers for each source format, the canonical record, validation."""

from sandbox_fleet.telemetry.record import (
    PHASES,
    ROLLOUT_SCHEMA,
    TASK_SCHEMA,
    Telemetry,
    conform_rollouts,
    conform_tasks,
)

__all__ = [
    "PHASES",
    "ROLLOUT_SCHEMA",
    "TASK_SCHEMA",
    "Telemetry",
    "conform_rollouts",
    "conform_tasks",
]

"""Hand-built synchronous-RL telemetry for the censored-demand and batch-vs-cap tests.

The schedule is the tests' own (not the planner's heap): each step releases ``batch`` rollouts
when the previous step's last rollout finished plus ``train_s``; a rollout takes the slot that
frees first (a scan of every slot), never starting before its release. Rows become canonical telemetry
through the real reader path (``conform_rollouts``), which ``measure`` then reads like any input.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from sandbox_fleet.telemetry import Telemetry, conform_rollouts

T0_US = 1_780_000_000_000_000


def sync_rl_schedule(holds: np.ndarray, cap: int, train_s: float) -> tuple[list[float], list[float], list[float]]:
    """Starts, finishes (s) and per-step makespans of rows of ``holds`` run as synchronous steps on ``cap`` slots."""
    starts: list[float] = []
    finishes: list[float] = []
    makespans: list[float] = []
    release = 0.0
    for row in holds:
        free = np.full(min(cap, len(row)), release)
        for h in row:
            i = int(np.argmin(free))  # the first of the slots that free first
            s = float(free[i])
            free[i] = s + float(h)
            starts.append(s)
            finishes.append(s + float(h))
        end = float(free.max())
        makespans.append(end - release)
        release = end + train_s
    return starts, finishes, makespans


def mean_step_s(holds: np.ndarray, cap: int, train_s: float) -> float:
    """Mean synchronous step (makespan + train) of rows of ``holds`` on ``cap`` slots, by the same scan."""
    return float(np.mean(sync_rl_schedule(holds, cap, 0.0)[2])) + train_s


def telemetry(starts_s: list[float], finishes_s: list[float], model: str | None = None) -> Telemetry:
    ts = pa.timestamp("us", tz="UTC")
    cols = {
        "id": [f"r{i}" for i in range(len(starts_s))],
        "started_at": pa.array([T0_US + round(s * 1e6) for s in starts_s], type=pa.int64()).cast(ts),
        "finished_at": pa.array([T0_US + round(f * 1e6) for f in finishes_s], type=pa.int64()).cast(ts),
    }
    if model is not None:
        cols["model"] = [model] * len(starts_s)
    return Telemetry(conform_rollouts(pa.table(cols)), tasks=None, caps={}, rejected={}, sources=["<test>"])

"""Builders for small canonical Telemetry objects, times given in seconds."""

from __future__ import annotations

import pyarrow as pa

from sandbox_fleet.telemetry import Telemetry, conform_rollouts

T0_US = 1_750_000_000_000_000  # an arbitrary epoch offset, so nothing depends on t = 0
TS = pa.timestamp("us", tz="UTC")


def ts(seconds) -> pa.Array:
    """Seconds after T0 (None stays null) -> timestamp[us, UTC] array."""
    return pa.array([None if s is None else T0_US + round(s * 1_000_000) for s in seconds], type=pa.int64()).cast(TS)


def rollouts(start_s, finish_s, **cols) -> pa.Table:
    """A canonical rollout table; phase columns may be passed in seconds like the rest."""
    data = {
        "id": [f"r{i}" for i in range(len(start_s))],
        "started_at": ts(start_s),
        "finished_at": ts(finish_s),
    }
    for name, values in cols.items():
        data[name] = ts(values) if name.endswith(("_started_at", "_finished_at")) else values
    return conform_rollouts(pa.table(data))


def telemetry(start_s, finish_s, *, caps=None, rejected=None, tasks=None, **cols) -> Telemetry:
    return Telemetry(rollouts(start_s, finish_s, **cols), tasks=tasks, caps=caps or {},
                     rejected=rejected or {}, sources=["<test>"])



"""measure: every fleet figure from canonical telemetry, as one ``MeasureSummary``.

``measure_paths`` reads and filters telemetry, then ``measure_telemetry`` computes
concurrency, holds, phases, steps, tokens, outcomes, exceptions, coverage, per-model and
per-job slices, per-task exception health, and task requests. Each figure carries the row count it was computed
over; times are summed in integer microseconds so results never depend on scheduling.
The summary is built as ``measure.model.MeasureSummary`` (the contract ``plan`` and ``report``
parse) and returned as its JSON-native dict.
"""

from __future__ import annotations

import importlib

__all__ = ["MeasureSummary", "measure_paths", "measure_telemetry"]


def __getattr__(name: str):
    """Load the entry points (PyArrow, DuckDB) on first use, so importing ``measure.model`` stays cheap."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    run = importlib.import_module("sandbox_fleet.measure.run")
    if name in globals():  # a submodule the import just bound
        return globals()[name]
    try:
        value = getattr(run, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value

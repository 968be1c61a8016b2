"""measure: every fleet figure from canonical telemetry, as one ``MeasureSummary``.

``measure_paths`` reads and filters telemetry, then ``measure_telemetry`` computes
concurrency, holds, phases, steps, tokens, outcomes, exceptions, coverage, per-model and
per-job slices, per-task exception health, and task requests. Each figure carries the row count it was computed
over; times are summed in integer microseconds so results never depend on scheduling.
Both return the ``measure.model.MeasureSummary`` model that ``plan``, ``report``, ``check`` and
``optimize`` take (``.to_json()``: its JSON-native dict). ``load_measure`` is the edge: a saved
``measure --json`` file read once, or telemetry measured.
"""

from __future__ import annotations

import importlib

__all__ = ["MeasureSummary", "load_measure", "measure_paths", "measure_telemetry"]


def __getattr__(name: str):
    """Load the entry points (PyArrow, DuckDB) on first use, so importing ``measure.model`` stays cheap."""
    if name.startswith("__"):
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    # the loader alone stays light: it measures (and loads the rest) only when given telemetry
    run = importlib.import_module("sandbox_fleet.measure.load" if name == "load_measure" else "sandbox_fleet.measure.run")
    if name in globals():  # a submodule the import just bound
        return globals()[name]
    try:
        value = getattr(run, name)
    except AttributeError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    globals()[name] = value
    return value

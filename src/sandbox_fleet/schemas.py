"""Every output kind's model, and its JSON Schema as committed under ``docs/schemas/``.

``sandbox-fleet schema KIND`` prints ``schema_text(KIND)``; a test regenerates every file and
fails when one is stale.
"""

from __future__ import annotations

import json

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.contract import Summary, json_schema
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.optimize.model import OptimizeSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.checks.model import ChecksSummary
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.sweep.model import SweepSummary

MODELS: dict[str, type[Summary]] = {
    m.KIND: m for m in (MeasureSummary, PlanSummary, SimulateSummary, SweepSummary, ChecksSummary, OptimizeSummary,
                          BacktestSummary)
}


def model_of(kind: str) -> type[Summary]:
    """The model of output ``kind``; InputError naming the kinds when there is none."""
    if kind not in MODELS:
        raise InputError(f"schema {kind!r}: unknown kind; expected one of {', '.join(MODELS)}")
    return MODELS[kind]


def schema_text(kind: str) -> str:
    """The JSON Schema of ``kind``, as the bytes committed in ``docs/schemas/KIND.schema.json``."""
    return json.dumps(json_schema(model_of(kind)), indent=2, ensure_ascii=False) + "\n"

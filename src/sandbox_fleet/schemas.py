"""Every output kind's model, and its JSON Schema as committed under ``docs/schemas/``.

``sandbox-fleet schema KIND`` prints ``schema_text(KIND)``; a test regenerates every file and
fails when one is stale. Input kinds (``INPUTS``: the node catalog ``plan --nodes`` reads) have a
schema too, of the file a user writes, with no ``kind`` or ``schema_version``.
"""

from __future__ import annotations

import json

from pydantic import BaseModel

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.contract import Summary, json_schema
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.optimize.model import OptimizeSummary
from sandbox_fleet.plan.catalog import CatalogFile
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.report.checks.model import ChecksSummary
from sandbox_fleet.simulate.model import SimulateSummary
from sandbox_fleet.sweep.model import SweepSummary

MODELS: dict[str, type[Summary]] = {
    m.KIND: m for m in (MeasureSummary, PlanSummary, SimulateSummary, SweepSummary, ChecksSummary, OptimizeSummary,
                          BacktestSummary)
}


#: Input files a user writes, by kind: their models (validated as the readers validate them).
INPUTS: dict[str, type[BaseModel]] = {"catalog": CatalogFile}


def model_of(kind: str) -> type[Summary]:
    """The model of output ``kind``; InputError naming the kinds when there is none."""
    if kind not in MODELS:
        raise InputError(f"schema {kind!r}: unknown kind; expected one of {', '.join([*MODELS, *INPUTS])}")
    return MODELS[kind]


def input_schema(kind: str) -> dict:
    """The JSON Schema (draft 2020-12) of the input file ``kind``."""
    schema = INPUTS[kind].model_json_schema(mode="validation")
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = f"https://sandbox-fleet/schemas/{kind}.schema.json"
    return dict(sorted(schema.items(), key=lambda kv: (not kv[0].startswith("$"), kv[0])))


def schema_text(kind: str) -> str:
    """The JSON Schema of ``kind``, as the bytes committed in ``docs/schemas/KIND.schema.json``."""
    schema = input_schema(kind) if kind in INPUTS else json_schema(model_of(kind))
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"

"""``sandbox-fleet schema KIND``: generated from the models, committed under docs/schemas/, never stale.

The committed schemas are checked by a real JSON Schema validator (``jsonschema``, draft 2020-12)
against what the producers write.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from sandbox_fleet.contract import KINDS
from sandbox_fleet.schemas import MODELS, schema_text

DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas"
EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rst-published.json"


@pytest.mark.parametrize("kind", KINDS)
def test_committed_schema_is_current(kind):
    committed = (DOCS / f"{kind}.schema.json").read_text(encoding="utf-8")
    assert committed == schema_text(kind), f"docs/schemas/{kind}.schema.json is stale: run sandbox-fleet schema {kind}"


@pytest.mark.parametrize("kind", KINDS)
def test_schema_is_draft_2020_12_closed_and_pins_kind(kind):
    s = json.loads(schema_text(kind))
    jsonschema.Draft202012Validator.check_schema(s)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["additionalProperties"] is False
    assert s["properties"]["kind"]["const"] == kind
    assert s["properties"]["schema_version"]["const"] == MODELS[kind].VERSION


def _validate(kind: str, doc: dict) -> None:
    jsonschema.Draft202012Validator(json.loads(schema_text(kind))).validate(doc)


def test_producer_outputs_validate(produced):
    from sandbox_fleet.report.checks.model import checks_summary
    from summaries import checks_of

    _validate("measure", produced.fleet)
    _validate("measure", produced.mixed)
    _validate("plan", produced.plan)
    _validate("simulate", produced.simulate)
    _validate("checks", checks_summary(checks_of(produced.fleet, produced.plan)))


def test_published_example_validates():
    _validate("measure", json.loads(EXAMPLE.read_text(encoding="utf-8")))


def test_sweep_output_validates(tmp_path):
    from sandbox_fleet.sweep import run_sweep

    scenario = Path(__file__).resolve().parents[1] / "examples" / "scenarios" / "mmc.toml"
    out = run_sweep(scenario, ["fleet.cap=8,unbounded", "run.seed=1,2"], workers=1, target="queue_wait_s.mean")
    _validate("sweep", out)


def test_a_foreign_key_fails_the_schema(produced):
    with pytest.raises(jsonschema.ValidationError):
        _validate("measure", {**produced.fleet, "turns": {"median": 11}})


def test_figures_are_nullable():
    """Null means not measured, never zero: every figure of a measure summary may be null."""
    props = json.loads(schema_text("measure"))["properties"]
    for name, p in props.items():
        if name not in ("schema_version", "kind"):
            assert {"type": "null"} in p.get("anyOf", []), name


def test_cli_prints_the_schema_and_refuses_an_unknown_kind(run_cli):
    r = run_cli("schema", "plan")
    assert r.code == 0 and r.out == (DOCS / "plan.schema.json").read_text(encoding="utf-8")
    r = run_cli("schema", "nope")
    assert r.code == 2 and "expected one of measure, plan, simulate, sweep, checks" in r.err


def test_every_kind_has_a_model_and_every_model_a_kind():
    assert tuple(MODELS) == KINDS

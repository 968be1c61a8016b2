"""The shared envelope: every output carries schema_version and kind; readers refuse the wrong one.

A reader accepts versions 1 up to its own (keys an older version lacks read as null) and refuses
a newer version or another kind with one line naming what was given and what was expected.
"""

from __future__ import annotations

import json

import pytest

from producers import measure_doc
from sandbox_fleet import contract
from sandbox_fleet.errors import InputError
from sandbox_fleet.measure.model import MeasureSummary
from sandbox_fleet.plan.model import PlanSummary
from sandbox_fleet.schemas import MODELS


def _one_line(exc: pytest.ExceptionInfo) -> str:
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_every_output_carries_its_kind_and_version(produced):
    for kind, doc in (("measure", produced.fleet), ("plan", produced.plan), ("simulate", produced.simulate)):
        assert (doc["schema_version"], doc["kind"]) == (MODELS[kind].VERSION, kind)
        assert list(doc)[:2] == ["schema_version", "kind"]


def test_older_versions_are_read_with_missing_keys_null():
    # version 1 predates ``kind``: it is taken as the expected kind
    m = contract.parse(MeasureSummary, {"schema_version": 1, "rows": 5, "tokens": {"input": 10}})
    assert m.rows == 5 and m.tokens.input == 10 and m.tokens.cached is None and m.concurrency is None
    assert contract.parse(MeasureSummary, measure_doc(rows=3)).rows == 3


def test_a_newer_version_is_refused_naming_both():
    with pytest.raises(InputError) as err:
        contract.parse(MeasureSummary, {"schema_version": 99, "kind": "measure"}, "m.json")
    msg = _one_line(err)
    assert msg.startswith("m.json: schema_version 99") and "schema_version 1..7" in msg and "upgrade" in msg


@pytest.mark.parametrize("version", [None, "2", 2.0, True, 0])
def test_a_missing_or_non_integer_version_is_refused(version):
    with pytest.raises(InputError, match="schema_version"):
        contract.parse(MeasureSummary, {"schema_version": version, "kind": "measure"})


def test_another_kind_is_refused_naming_both(produced):
    with pytest.raises(InputError) as err:
        contract.parse(PlanSummary, produced.fleet, "fleet.json")
    msg = _one_line(err)
    assert "fleet.json: kind 'measure'" in msg and "expected a plan summary (kind 'plan'" in msg


def test_a_version_1_document_of_another_kind_is_refused_by_its_keys(produced):
    """Before ``kind``, a measure summary given as a plan: the closed top level names a foreign key."""
    old = {k: v for k, v in produced.fleet.items() if k != "kind"} | {"schema_version": 1}
    with pytest.raises(InputError) as err:
        contract.parse(PlanSummary, old, "old.json")
    assert "old.json: key" in _one_line(err)


def test_a_wrong_type_names_the_key():
    with pytest.raises(InputError) as err:
        contract.parse(MeasureSummary, measure_doc(concurrency={"peak": "lots"}), "m.json")
    assert "m.json: key concurrency.peak:" in _one_line(err)


def test_an_unknown_key_is_refused():
    with pytest.raises(InputError, match="key turns:"):
        contract.parse(MeasureSummary, measure_doc(turns={"median": 11}))


def test_load_reads_a_file_and_refuses_bad_json(tmp_path, produced):
    assert contract.load(PlanSummary, produced.plan_path).target.concurrency == produced.plan["target"]["concurrency"]
    bad = tmp_path / "p.json"
    bad.write_text("{nope")
    with pytest.raises(InputError, match="not valid JSON"):
        contract.load(PlanSummary, bad)


def test_round_trip_is_lossless(produced):
    for kind, doc in (("measure", produced.fleet), ("plan", produced.plan), ("simulate", produced.simulate)):
        again = contract.parse(MODELS[kind], json.loads(json.dumps(doc))).to_json()
        assert again == doc, kind


@pytest.mark.parametrize("argv,needle", [
    (("plan", "{v99}"), "schema_version 99"),
    (("plan", "{plan}"), "kind 'plan'; expected a measure summary"),
    (("check", "{simulate}"), "kind 'simulate'; expected a measure summary"),
])
def test_cli_refuses_with_one_line_and_exit_2(run_cli, tmp_path, produced, argv, needle):
    v99 = tmp_path / "v99.json"
    v99.write_text(json.dumps({**produced.fleet, "schema_version": 99}))
    paths = {"v99": v99, "plan": produced.plan_path, "simulate": produced.simulate_path}
    r = run_cli(*[a.format(**paths) for a in argv])
    assert r.code == 2 and needle in r.err and len(r.err.strip().splitlines()) == 1 and "Traceback" not in r.err


def test_a_model_of_another_kind_is_refused_too(produced):
    plan = contract.parse(PlanSummary, produced.plan)
    assert contract.parse(PlanSummary, plan) is plan
    with pytest.raises(InputError, match="kind 'plan'; expected a measure summary"):
        contract.parse(MeasureSummary, plan)

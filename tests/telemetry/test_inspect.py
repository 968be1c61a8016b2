"""Inspect AI logs (.eval archives and .json logs) made by the real inspect_ai (tests/fixtures/make_inspect.py)."""

import json
import zipfile
from datetime import datetime

import pytest
from telemetry_builders import FIXTURES, inspect_samples

from sandbox_fleet.telemetry import load_telemetry
from sandbox_fleet.telemetry.inspect_log import sample_row
from sandbox_fleet.telemetry.sniff import sniff

INSPECT = FIXTURES / "inspect"


def _rows(path, **kw):
    tel = load_telemetry([str(path)], progress=False, **kw)
    return tel, {r["id"].split("/", 1)[1]: r for r in tel.rollouts.to_pylist()}


def test_detected_by_content():
    assert sniff(str(INSPECT / "mock-local.eval")) == "inspect"
    assert sniff(str(INSPECT / "mock-local.json")) == "inspect"
    assert sniff(str(INSPECT)) == "inspect"


def test_json_log_maps_every_sample_and_epoch():
    raw = json.loads((INSPECT / "mock-local.json").read_text())
    tel, rows = _rows(INSPECT / "mock-local.json")
    assert len(rows) == 8  # 4 samples x 2 epochs
    assert tel.caps == {raw["eval"]["eval_id"]: 2}  # min(max_samples 2, max_sandboxes 3)
    for s in raw["samples"]:
        row = rows[f"{s['id']}/{s['epoch']}"]
        (usage,) = s["model_usage"].values()
        assert row["input_tokens"] == usage["input_tokens"] + usage["input_tokens_cache_read"]
        assert row["cached_tokens"] == usage["input_tokens_cache_read"]
        assert row["output_tokens"] == usage["output_tokens"]
        assert row["turns"] == sum(1 for e in s["events"] if e["event"] == "model")
        assert row["reward"] == {"C": 1.0, "I": 0.0}[s["scores"]["match"]["value"]]
        assert row["started_at"] == datetime.fromisoformat(s["started_at"])
        assert row["model"] == "mockllm/model"
        assert row["has_exception"] is False


def test_eval_archive_errors_and_limits():
    _tel, rows = _rows(INSPECT / "faulty.eval")
    assert rows["e1/1"]["has_exception"] and rows["e1/1"]["exception_type"] == "RuntimeError"
    assert rows["e1/1"]["reward"] is None and rows["e1/1"]["turns"] == 0
    assert rows["e1/1"]["limit_type"] is None
    # A limit is not an exception: Inspect stops the sample and scores it like any other.
    assert rows["l1/1"]["has_exception"] is False and rows["l1/1"]["exception_type"] is None
    assert rows["l1/1"]["limit_type"] == "message"
    assert rows["l2/1"]["has_exception"] is False and rows["l2/1"]["reward"] == 1.0
    assert rows["l2/1"]["limit_type"] is None
    with zipfile.ZipFile(INSPECT / "faulty.eval") as z:
        assert {i.compress_type for i in z.infolist()} == {93}  # genuinely zstd entries


def test_eval_and_json_agree_on_the_same_kind_of_run():
    _, from_eval = _rows(INSPECT / "mock-local.eval")
    _, from_json = _rows(INSPECT / "mock-local.json")
    assert sorted(from_eval) == sorted(from_json)
    # two samples run at once and share the mock's output stream: 1 to 3 calls each, 16 in all
    assert sum(from_eval[k]["turns"] for k in from_eval) == 16


def test_score_option_and_letter_values():
    spec = {"eval_id": "e", "model": "m"}
    base = {"id": "s", "epoch": 1, "started_at": "2026-01-01T00:00:00+00:00", "completed_at": "2026-01-01T00:01:00+00:00"}
    for letter, value in (("C", 1.0), ("I", 0.0), ("P", 0.5), ("N", 0.0)):
        row, _ = sample_row({**base, "scores": {"a": {"value": letter}}}, spec, None)
        assert row["reward"] == value
    two = {**base, "scores": {"first": {"value": 0.25}, "second": {"value": "C"}}}
    assert sample_row(two, spec, None)[0]["reward"] == 0.25
    assert sample_row(two, spec, "second")[0]["reward"] == 1.0
    row, (note, _) = sample_row(two, spec, "third")
    assert row["reward"] is None and note == "missing"


def test_times_fall_back_to_events_else_rejected():
    spec = {"eval_id": "e"}
    events = [{"event": "model", "timestamp": "2026-01-01T00:00:05+00:00"},
              {"event": "sample_init", "timestamp": "2026-01-01T00:00:01+00:00"}]
    row, _ = sample_row({"id": "s", "epoch": 1, "events": events}, spec, None)
    assert (row["started_at"], row["finished_at"]) == ("2026-01-01T00:00:01+00:00", "2026-01-01T00:00:05+00:00")
    assert row["turns"] == 1
    assert sample_row({"id": "s", "epoch": 1, "events": []}, spec, None)[0] is None


def test_dict_scores_by_scorer_slash_key():
    spec = {"eval_id": "e"}
    base = {"id": "s", "epoch": 1, "started_at": "2026-01-01T00:00:00+00:00", "completed_at": "2026-01-01T00:01:00+00:00"}
    rubric = {**base, "scores": {"rubric": {"value": {"Problem Correctness": 0, "Style": "C"}}, "match": {"value": "I"}}}
    assert sample_row(rubric, spec, "rubric/Style")[0]["reward"] == 1.0
    assert sample_row(rubric, spec, "rubric/Problem Correctness")[0]["reward"] == 0.0
    row, (note, read) = sample_row(rubric, spec, None)  # first scorer, first entry, noted as a guess
    assert row["reward"] == 0.0 and note == "dict default" and read == "rubric/Problem Correctness"
    row, (note, _) = sample_row(rubric, spec, "rubric")  # the scorer named, its key not: still a guess
    assert row["reward"] == 0.0 and note == "dict default"
    assert sample_row(rubric, spec, "rubric/Nope")[1][0] == "missing"
    assert sample_row(rubric, spec, "match/Style")[1][0] == "missing"  # match's value is no dict
    one = {**base, "scores": {"r": {"value": {"only": 0.75}}}}
    assert sample_row(one, spec, None)[0]["reward"] == 0.75 and sample_row(one, spec, None)[1][0] is None
    # a scorer whose own name holds a '/' is matched whole before any SCORER/KEY split
    slashed = {**base, "scores": {"pkg/grader": {"value": 0.5}}}
    assert sample_row(slashed, spec, "pkg/grader")[0]["reward"] == 0.5
    listed = {**base, "scores": {"r": {"value": [1, 0]}}}
    assert sample_row(listed, spec, None)[0]["reward"] is None and sample_row(listed, spec, None)[1][0] == "not a number"


def test_real_dict_scorer_and_limits():
    """dict-limit.eval: a rubric scorer with a dict value beside match; d3 hits the message
    limit and d5 the token limit, and Inspect scores both."""
    truth = inspect_samples(INSPECT / "dict-limit.eval")
    tel, rows = _rows(INSPECT / "dict-limit.eval")
    assert sorted(rows) == sorted(truth) == [f"d{i}/1" for i in range(1, 6)]
    for key, s in truth.items():
        assert rows[key]["reward"] == float(s["scores"]["rubric"]["value"]["Problem Correctness"])
        assert rows[key]["limit_type"] == ((s.get("limit") or {}).get("type"))
        assert rows[key]["has_exception"] is False
    assert rows["d3/1"]["limit_type"] == "message" and rows["d5/1"]["limit_type"] == "token"
    assert rows["d2/1"]["reward"] == 0.0 and rows["d3/1"]["reward"] == 1.0  # a limit hit still passes
    assert len(tel.warnings) == 2
    assert "5 sample(s) score a dict of several values; the reward is its first entry, 'rubric/Problem Correctness'" \
        in tel.warnings[0] and "--score rubric/KEY" in tel.warnings[0]
    assert "2 scorers (rubric, match)" in tel.warnings[1]
    _, style = _rows(INSPECT / "dict-limit.eval", score="rubric/Style")
    assert {k: r["reward"] for k, r in style.items()} == {
        k: float(s["scores"]["rubric"]["value"]["Style"]) for k, s in truth.items()}
    tel_m, match = _rows(INSPECT / "dict-limit.eval", score="match")
    assert {k: r["reward"] for k, r in match.items()} == {
        k: {"C": 1.0, "I": 0.0}[s["scores"]["match"]["value"]] for k, s in truth.items()}
    assert tel_m.warnings == []
    tel_x, _ = _rows(INSPECT / "dict-limit.eval", score="rubric/Nope")
    assert any("5 sample(s) have no score 'rubric/Nope'" in w for w in tel_x.warnings)


@pytest.mark.parametrize("name", ["mock-local.eval", "faulty.eval", "mock-local.json"])
def test_no_warnings_or_rejections_on_real_logs(name):
    tel, _ = _rows(INSPECT / name)
    assert tel.rejected == {} and tel.warnings == []

import json
import shutil

import pytest
from telemetry_builders import TBENCH, utc

from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import load_telemetry

RUN1 = TBENCH / "2025-06-01__12-00-00"
RUN2 = TBENCH / "2025-06-02__09-30-00"


def _rows(tel):
    return {r["id"]: r for r in tel.rollouts.to_pylist()}


def test_folder_of_runs_reads_every_run_with_caps():
    tel = load_telemetry([str(TBENCH)], progress=False)
    assert tel.rollouts.num_rows == 6
    assert tel.caps == {"2025-06-01__12-00-00": 2, "2025-06-02__09-30-00": 1}
    assert tel.warnings == [] and tel.rejected == {}


def test_one_run_mapping_by_hand():
    rows = _rows(load_telemetry([str(RUN1)], progress=False))
    assert len(rows) == 4
    r = rows["5b0a7c58-2a4e-4d57-9d1e-1f0c1e6e4a01"]
    assert r["task_id"] == "hello-world"
    assert r["model"] == "anthropic/claude-sonnet-4-20250514"
    assert r["job"] == "2025-06-01__12-00-00"
    assert r["started_at"] == utc(2025, 6, 1, 12, 0, 1)
    assert r["finished_at"] == utc(2025, 6, 1, 12, 1, 21, 500000)
    assert r["agent_execution_started_at"] == utc(2025, 6, 1, 12, 0, 9, 500000)
    assert r["agent_execution_finished_at"] == utc(2025, 6, 1, 12, 1, 10, 250000)
    assert r["verifier_started_at"] == utc(2025, 6, 1, 12, 1, 11)
    assert r["verifier_finished_at"] == utc(2025, 6, 1, 12, 1, 20)
    assert (r["input_tokens"], r["output_tokens"]) == (12034, 812)
    assert r["cached_tokens"] is None and r["turns"] is None  # Terminal-Bench does not report them
    assert r["reward"] == 1.0 and r["has_exception"] is False and r["exception_type"] is None


def test_failure_modes_and_unresolved():
    rows = _rows(load_telemetry([str(RUN1)], progress=False))
    timeout = rows["c1d2e3f4-0a1b-4c2d-9e3f-a0b1c2d3e403"]
    assert timeout["reward"] is None  # is_resolved null
    assert timeout["has_exception"] is True and timeout["exception_type"] == "agent_timeout"
    assert timeout["verifier_started_at"] is None
    failed = rows["9f3c1d22-7b7e-4f0e-8d55-0c6f7a1b2c02"]
    assert failed["reward"] == 0.0 and failed["has_exception"] is False
    assert rows["d4c3b2a1-1111-4222-8333-944455556604"]["exception_type"] == "test_timeout"


def test_model_falls_back_to_agent_name_and_none_mode_is_clean():
    rows = _rows(load_telemetry([str(RUN2)], progress=False))
    r = rows["e0e0e0e0-2222-4333-8444-555566667705"]
    assert r["model"] == "oracle"
    assert r["has_exception"] is False and r["exception_type"] is None  # failure_mode "none"
    assert r["started_at"] == utc(2025, 6, 2, 12, 30)


def test_results_json_path_reads_its_run():
    tel = load_telemetry([str(RUN2 / "results.json")], progress=False)
    assert tel.rollouts.num_rows == 2 and tel.caps == {"2025-06-02__09-30-00": 1}


def test_results_without_list_is_input_error(tmp_path):
    run = tmp_path / "run"
    shutil.copytree(RUN2, run)
    (run / "results.json").write_text(json.dumps({"id": "x", "accuracy": 1.0}))
    with pytest.raises(InputError, match=r"results\.json: expected a JSON object with a 'results' list"):
        load_telemetry([str(run)], fmt="terminal-bench", progress=False)

"""`sandbox-fleet backtest` end to end on real files: Harbor's jobs, an Inspect AI log, simulate's telemetry."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import jsonschema
import pytest
from tests.backtest.conftest import stationary_history

ROOT = Path(__file__).resolve().parents[2]
HARBOR = ROOT / "tests" / "fixtures" / "harbor"
INSPECT = ROOT / "tests" / "fixtures" / "inspect"
SCHEMA = json.loads((ROOT / "docs" / "schemas" / "backtest.schema.json").read_text())


def _trials(job: str) -> list[tuple[float, float]]:
    """(start, finish) of each trial, read straight from Harbor's result.json files."""
    out = []
    for f in sorted((HARBOR / job).glob("*/result.json")):
        r = json.loads(f.read_text())
        out.append(tuple(datetime.fromisoformat(r[k].replace("Z", "+00:00")).timestamp() for k in ("started_at", "finished_at")))
    return out


def test_harbor_fixture_splits_by_job_with_the_defaults(run_cli):
    r = run_cli("backtest", HARBOR, "--split-by", "job", "--seeds", "10", "--json")
    assert r.code == 0, r.err
    out = json.loads(r.out)
    jsonschema.validate(out, SCHEMA)
    sp = out["split"]
    assert (sp["a_groups"], sp["b_groups"], sp["a_rows"], sp["b_rows"]) == (["oracle-n2"], ["terminus2-n3"], 6, 6)
    b = _trials("terminus2-n3")
    assert len(b) == 6 and len(_trials("oracle-n2")) == 6
    fig = out["figures"]
    assert fig["makespan_s"]["actual"] == pytest.approx(max(f for _, f in b) - min(s for s, _ in b), abs=1e-6)
    assert fig["hold_mean_s"]["actual"] == pytest.approx(sum(f - s for s, f in b) / 6, abs=1e-6)
    # the oracle agent's holds are shorter than terminus-2's: calibrated on oracle-n2 the prediction is short
    assert fig["hold_mean_s"]["error"] < 0
    assert out["verdict"].startswith("simulator error on this telemetry: ")


def test_inspect_log_end_to_end(run_cli, tmp_path):
    out_file = tmp_path / "bt.json"
    r = run_cli("backtest", INSPECT / "mock-local.eval", INSPECT / "mock-local.json", "--min-rows", "4", "--seeds", "8",
                "-o", out_file)
    assert r.code == 0, r.err
    assert r.out.splitlines()[0].startswith("simulator error on this telemetry: ")
    assert "DRIFT:" in r.out
    out = json.loads(out_file.read_text())
    jsonschema.validate(out, SCHEMA)
    assert out["kind"] == "backtest" and out["rows"] == 16
    assert {t["quantity"] for t in out["drift"]["tests"]} >= {"hold_s", "tokens_per_turn", "turns"}
    assert out["figures"]["tokens_per_sandbox_s"]["predicted"] is not None


def test_simulated_telemetry_file_through_the_cli(run_cli, tmp_path):
    path = tmp_path / "history.parquet"
    import pyarrow.parquet as pq

    pq.write_table(stationary_history(n=300), path)
    a = run_cli("backtest", path, "--seeds", "6", "--json")
    b = run_cli("backtest", path, "--seeds", "6", "--json")
    assert a.code == 0 and a.out == b.out  # byte-identical


@pytest.mark.parametrize("args, message", [
    (("--split-at", "0.95"), "the split leaves part B (prediction) 1 rollouts; need at least --min-rows 5"),
    (("--split-at", "0"), "--split-at must be a fraction strictly between 0 and 1"),
    (("--split-by", "task"), "--split-by must be one of job, model"),
    (("--split-at", "0.5", "--split-by", "job"), "give --split-at or --split-by, not both"),
    (("--split-by", "job", "--min-rows", "7"), "part A (calibration) 6 rollouts; need at least --min-rows 7"),
    (("--seeds", "1"), "--seeds must be between 2 and 1000"),
])
def test_bad_splits_are_one_line_exit_2(run_cli, args, message):
    r = run_cli("backtest", HARBOR, *args)
    assert r.code == 2
    assert message in " ".join(r.err.split()) and "Traceback" not in r.err
    assert r.err.count("error:") == 1


def test_no_start_times_is_one_line(run_cli, tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("id,finished_at\na,2026-01-01T00:00:10Z\nb,2026-01-01T00:00:20Z\n")
    r = run_cli("backtest", f)
    assert r.code == 2 and "missing column(s) started_at" in r.err
    f.write_text("id,started_at,finished_at\na,,2026-01-01T00:00:10Z\nb,,2026-01-01T00:00:20Z\n")
    r = run_cli("backtest", f)
    assert r.code == 2 and "missing start or finish: 2" in r.err


def test_one_model_cannot_split_by_model(run_cli):
    r = run_cli("backtest", INSPECT / "mock-local.eval", "--split-by", "model")
    assert r.code == 2 and "has one model ('mockllm/model')" in r.err

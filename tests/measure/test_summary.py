"""The measure result as a whole: the JSON contract, determinism, bad input, reading paths."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from sandbox_fleet import jsonio
from sandbox_fleet.errors import InputError
from sandbox_fleet.telemetry import Telemetry
from summaries import measure_json, paths_json

from .helpers import rollouts, telemetry

HARBOR = Path(__file__).resolve().parents[1] / "fixtures" / "harbor"

CONTRACT = {
    "": ["schema_version", "rows", "span_s", "sandbox_s", "concurrency", "hold_s", "tokens", "outcomes",
         "exceptions", "coverage", "by_model", "by_job", "tasks", "source", "warnings"],
    "concurrency": ["mean", "mean_littles_law", "peak", "duty", "touches", "time_at_peak_s", "cap_detected",
                    "configured_cap", "series"],
    "hold_s": ["min", "median", "mean", "p90", "p99", "max", "histogram"],
    "tokens": ["rows", "sandbox_s", "hold_mean_s", "input", "output", "cached", "prefill_per_sandbox_s",
               "decode_per_sandbox_s", "prefill_decode_ratio", "cached_fraction", "turn_tokens", "r2_quadratic",
               "r2_linear", "median_input_by_turns", "turns_histogram", "model_error_by_turns"],
    "outcomes": ["exception_rate", "rewarded", "passed", "pass_rate", "pass_rate_clean", "pass_rate_exception",
                 "sandbox_hours_per_pass", "exception_sandbox_hours"],
    "exceptions": ["by_type", "sandbox_hours_by_type"],
    "coverage": ["missing_reward", "missing_tokens", "missing_turns", "missing_trajectory", "rejected"],
}


def test_contract_keys_present(ten_rows):
    out = measure_json(ten_rows)
    for section, keys in CONTRACT.items():
        obj = out if not section else out[section]
        missing = [k for k in keys if k not in obj]
        assert not missing, (section, missing)
    for model in out["by_model"].values():
        assert {"rows", "exception_rate", "hold_median_s", "hold_p99_s", "pass_rate"} <= set(model)
    assert set(out["concurrency"]["series"]) >= {"t_s", "level"}
    assert out["source"] == ["<test>"]


def test_same_input_same_bytes():
    rng = np.random.default_rng(0)
    n = 5000
    s = rng.integers(0, 10**6, n).astype(float)
    t = telemetry(s.tolist(), (s + rng.integers(1, 5000, n)).tolist(),
                  reward=rng.choice([0.0, 1.0], n).tolist(), has_exception=(rng.random(n) < 0.3).tolist(),
                  model=rng.choice(["a", "b", "c"], n).tolist(), job=rng.choice(["j1", "j2"], n).tolist(),
                  turns=rng.integers(1, 30, n).tolist(), input_tokens=rng.integers(1, 10**6, n).tolist(),
                  output_tokens=rng.integers(1, 10**4, n).tolist())
    a = jsonio.dumps(measure_json(t, seed=5))
    b = jsonio.dumps(measure_json(t, seed=5))
    assert a == b
    assert a != jsonio.dumps(measure_json(t, seed=6))  # only the bootstrap intervals move


def test_json_is_plain_and_full_precision(ten_rows):
    import json

    out = json.loads(jsonio.dumps(measure_json(ten_rows)))
    assert out["outcomes"]["pass_rate"] == 4 / 7  # not rounded
    assert isinstance(out["concurrency"]["series"]["level"][0], int)


def test_empty_input_is_an_input_error():
    t = Telemetry(rollouts([], []), sources=["empty.parquet"])
    with pytest.raises(InputError, match="empty.parquet"):
        measure_json(t)


def test_measure_paths_reads_a_canonical_parquet_file(tmp_path, ten_rows):
    path = tmp_path / "rollouts.parquet"
    pq.write_table(ten_rows.rollouts, path)
    out = paths_json([str(path)])
    assert out["rows"] == 10
    assert out["outcomes"]["passed"] == 4
    assert out["hold_s"]["median"] == 550.0
    only_b = paths_json([str(path)], models=["B"])
    assert only_b["rows"] == 5 and list(only_b["by_model"]) == ["B"]


def test_measure_paths_on_real_harbor_jobs():
    out = paths_json([str(HARBOR)])
    assert out["rows"] == 12
    jobs = out["by_job"]
    assert set(jobs) == {"oracle-n2", "terminus2-n3"}
    assert jobs["oracle-n2"]["configured_cap"] == 2
    assert jobs["terminus2-n3"]["configured_cap"] == 3
    for job in jobs.values():
        assert job["peak"] <= job["configured_cap"]
        assert job["rows"] == 6
    assert out["phases"]  # Harbor reports phase timings
    assert sum(out["exceptions"]["by_type"].values()) == out["outcomes"]["exceptions"]


def test_cli_json_is_one_object_on_stdout(tmp_path, ten_rows):
    import json

    from typer.testing import CliRunner

    from sandbox_fleet.cli import app

    path = tmp_path / "rollouts.parquet"
    pq.write_table(ten_rows.rollouts, path)
    out_file = tmp_path / "out" / "measure.json"
    result = CliRunner().invoke(app, ["measure", str(path), "--json", "-o", str(out_file)])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["rows"] == 10 and (data["schema_version"], data["kind"]) == (7, "measure")
    assert json.loads(out_file.read_text()) == data
    text = CliRunner().invoke(app, ["measure", str(path)])
    assert text.exit_code == 0 and "Concurrency" in text.stdout


def test_summary_is_json_native_and_valid(ten_rows):
    """No NumPy scalar or array leaves measure: the dict is plain JSON values, parsed by its model."""
    import json

    from sandbox_fleet.contract import parse
    from sandbox_fleet.measure.model import MeasureSummary
    from summaries import measure_json

    summary = measure_json(ten_rows)

    def native(x) -> bool:
        if isinstance(x, dict):
            return all(isinstance(k, str) and native(v) for k, v in x.items())
        if isinstance(x, list):
            return all(native(v) for v in x)
        return x is None or type(x) in (str, int, float, bool)

    assert native(summary)
    assert json.loads(json.dumps(summary, allow_nan=False)) == summary
    assert parse(MeasureSummary, summary).to_json() == summary


def test_rows_without_a_usable_interval_are_counted_not_measured():
    # A Telemetry built by hand (not through a reader) may hold a row with no finish or one that
    # finished before it started: measure leaves them out and counts them; the rest is measured.
    from summaries import measure_json

    from .helpers import telemetry

    t = telemetry([0, 10, 20, 30, 40], [100, None, 15, 130, 140], rejected={"duplicate id": 2})
    s = measure_json(t)
    assert s["rows"] == 3
    assert s["hold_s"]["max"] == 100.0 and s["hold_s"]["min"] == 100.0
    assert any("missing start or finish: 1" in w and "finished before started: 1" in w for w in s["warnings"])
    clean = measure_json(telemetry([0, 10, 20], [100, 110, 120]))
    assert clean["rows"] == 3 and not any("usable interval" in w for w in clean["warnings"])


def test_measure_hands_over_its_model_and_the_loader_reads_a_saved_one_back(tmp_path, ten_rows):
    # the library API: the stages take MeasureSummary; a saved summary read at the edge is the same model
    from sandbox_fleet.measure import load_measure, measure_paths, measure_telemetry
    from sandbox_fleet.measure.model import MeasureSummary

    path = tmp_path / "rollouts.parquet"
    pq.write_table(ten_rows.rollouts, path)
    measured = measure_paths([str(path)], progress=False)
    assert isinstance(measured, MeasureSummary) and isinstance(measure_telemetry(ten_rows), MeasureSummary)
    assert measured.rows == 10 and measured.outcomes is not None and measured.outcomes.passed == 4  # as the JSON test above
    saved = tmp_path / "m.json"
    jsonio.write(measured.to_json(), saved)
    assert load_measure(saved) == measured  # parsed, not measured: the file's figures
    assert load_measure([str(path)], progress=False) == measured  # telemetry: measured now
    with pytest.raises(InputError, match="input not found"):
        load_measure(tmp_path / "missing.json")
    with pytest.raises(InputError, match="no input given"):
        load_measure([])


def test_the_reader_options_travel_as_one_read_options(tmp_path, ten_rows):
    # --time-unit s on epoch seconds reads the same rows as the canonical table; a bad flag is refused
    # by make_options, once, before any read
    import pyarrow as pa

    from sandbox_fleet.measure import measure_paths
    from sandbox_fleet.telemetry.options import make_options

    r = ten_rows.rollouts
    secs = r.set_column(r.schema.get_field_index("started_at"), "started_at",
                        pa.array([t.timestamp() for t in r.column("started_at").to_pylist()]))
    secs = secs.set_column(secs.schema.get_field_index("finished_at"), "finished_at",
                           pa.array([t.timestamp() for t in r.column("finished_at").to_pylist()]))
    pq.write_table(secs.select(["id", "task_id", "model", "started_at", "finished_at", "reward"]), tmp_path / "s.parquet")
    got = measure_paths([str(tmp_path / "s.parquet")], read=make_options(time_unit="s"), progress=False)
    assert got.rows == 10 and got.hold_s is not None and got.hold_s.median == 550.0
    with pytest.raises(InputError, match="time_unit"):
        make_options(time_unit="fortnights")

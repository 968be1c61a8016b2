"""``simulate --from --inference``: the turn curve, decode and command time per turn, by hand."""

from __future__ import annotations

import pyarrow.compute as pc
import pytest

from sandbox_fleet.simulate import Deterministic, Episode, Exponential, Fleet, Turns, run_workloads
from sandbox_fleet.simulate.engine.inference import Inference
from sandbox_fleet.simulate.engine.workloads import Closed


def test_calibration_by_hand_and_the_written_scenario_runs(run_cli, tmp_path):
    import pyarrow.parquet as pq

    turns = Turns(Deterministic(5), None, Exponential(3.0), Deterministic(100), Deterministic(50))
    res = run_workloads(Fleet(cap=8), [Closed(population=8, n=400, episode=Episode(turns=turns))], 2,
                        inference=Inference(replicas=1, prefill_tok_s=20_000, decode_tok_s=2_000))
    tel = res.to_telemetry()
    path = tmp_path / "tel.parquet"
    pq.write_table(tel, path)
    out = tmp_path / "cal.toml"
    r = run_cli("simulate", out, "--from", path, "--inference", "--reference-decode-tok-s", "40", "--json")
    assert r.code == 0, r.err
    import json

    from sandbox_fleet.simulate.model import Calibration

    assert Calibration.model_validate(json.loads(r.out)).inference.replicas == json.loads(r.out)["inference"]["replicas"]
    cal = json.loads(r.out)["inference"]
    # Every rollout: 5 turns, input 2,000 tokens -> c = 2000 / 15; d = 250 / 5 = 50.
    assert cal["turn_tokens"] == pytest.approx(2000 / 15)
    assert cal["decode_per_turn"] == pytest.approx(50)
    assert cal["prefill_per_turn"] == pytest.approx(2000 / 15 - 50)
    agent = (pc.cast(tel.column("agent_execution_finished_at"), "int64").to_numpy()
             - pc.cast(tel.column("agent_execution_started_at"), "int64").to_numpy()) / 1e6
    assert cal["command_s"] == pytest.approx((agent.sum() - 400 * 250 / 40) / (400 * 5), rel=1e-9)
    text = out.read_text()
    assert "ASSUMPTION" in text and "[inference]" in text and "[hold]" not in text
    r = run_cli("simulate", out, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["inference"]["calls"] == 400 * 5
    # the text (no --json) reads the same figures through the model: c = 133.3, d = 50.0, 40 tok/s assumed
    r = run_cli("simulate", tmp_path / "cal2.toml", "--from", path, "--inference", "--reference-decode-tok-s", "40")
    assert r.code == 0, r.err
    said = " ".join(r.out.split())
    assert "cap 8 (measured peak" in said and "400 rollouts, exception rate 0.0%" in said
    assert f"--inference: 133.3 tokens/turn, 50.0 decoded per turn, {cal['command_s']:.2f} s command per turn " \
           "(assumed 40 tok/s per sequence)" in said


def test_inference_flag_needs_from_and_tokens(run_cli, tmp_path):
    r = run_cli("simulate", tmp_path / "x.toml", "--inference")
    assert r.code == 2 and "--from" in r.err
    import pyarrow.parquet as pq

    from sandbox_fleet.simulate import Poisson

    tel = run_workloads(Fleet(cap=2), [Poisson(rate_per_s=1.0, n=20, holds=Exponential(1.0))], 1).to_telemetry()
    pq.write_table(tel, tmp_path / "t.parquet")
    r = run_cli("simulate", tmp_path / "c.toml", "--from", tmp_path / "t.parquet", "--inference")
    assert r.code == 2 and "input_tokens" in r.err and r.err.count("\n") == 1


def test_the_turn_curve_is_measures_on_the_same_telemetry(run_cli, tmp_path):
    """Turn counts drawn lognormal (median 6): the rare long ones have fewer than 20 rows. The
    calibration writes measure's tokens.turn_tokens for the same file, not a fit over every count."""
    import json

    import pyarrow.parquet as pq

    from sandbox_fleet.simulate import LogNormal
    from summaries import paths_json

    turns = Turns(LogNormal(6, 0.6), None, Exponential(3.0), Exponential(120), Exponential(60))
    res = run_workloads(Fleet(cap=16), [Closed(population=16, n=1500, episode=Episode(turns=turns))], 4,
                        inference=Inference(replicas=2, prefill_tok_s=20_000, decode_tok_s=2_000))
    path = tmp_path / "tel.parquet"
    pq.write_table(res.to_telemetry(), path)
    measured = paths_json([str(path)])["tokens"]
    assert any(n < 20 for n in measured["median_input_rows_by_turns"].values())  # the case that differed
    r = run_cli("simulate", tmp_path / "cal.toml", "--from", path, "--inference", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["inference"]["turn_tokens"] == pytest.approx(measured["turn_tokens"], rel=1e-12)
    assert "over turn counts with >= 20 rows" in (tmp_path / "cal.toml").read_text()

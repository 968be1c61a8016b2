"""optimize on the command line: JSON contract, written scenario, and bad input (one line, exit 2)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from sandbox_fleet.optimize.model import OptimizeSummary
from sandbox_fleet.schemas import schema_text

SMALL = Path(__file__).with_name("small.toml")
ROOT = Path(__file__).resolve().parents[2]
CLI = Path(sys.executable).parent / "sandbox-fleet"
GRID = ["--max-cap", "256", "--cap-step", "32", "--max-replicas", "4", "--gpu", "h100-80gb", "--gpu", "l40s-48gb",
        "--workers", "1"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(CLI), "optimize", *args], capture_output=True,
                          text=True, cwd=ROOT)


def test_json_is_an_optimize_summary_and_the_scenario_is_written(tmp_path):
    out, scen = tmp_path / "o.json", tmp_path / "w.toml"
    p = _run(str(SMALL), "--passing-per-hour", "4000", *GRID, "--json", "-o", str(out), "--write-scenario", str(scen))
    assert p.returncode == 0, p.stderr
    s = OptimizeSummary.model_validate(json.loads(p.stdout))
    assert s.kind == "optimize" and s.backend == "local" and s.best.meets
    assert json.loads(out.read_text()) == json.loads(p.stdout)
    assert f"cap = {s.best.sandbox_cap}" in scen.read_text()
    sim = subprocess.run([str(CLI), "simulate", str(scen), "--json"], capture_output=True,
                         text=True, cwd=ROOT)
    assert sim.returncode == 0 and json.loads(sim.stdout)["concurrency"]["peak"] <= s.best.sandbox_cap

    # the report draws the frontier and states the winner (a real optimize output, not a hand-made one)
    page = tmp_path / "r.html"
    rep = subprocess.run([str(CLI), "report", str(ROOT / "examples/rst-published.json"), "--optimize", str(out),
                          "-o", str(page)], capture_output=True, text=True, cwd=ROOT)
    assert rep.returncode == 0, rep.stderr
    html = page.read_text()
    assert 'id="optimize"' in html and 'id="fig-frontier"' in html
    assert f"<th>sandbox cap</th><td>{s.best.sandbox_cap:,}</td>" in html
    frontier_usd = [p.usd_per_h for p in s.frontier]
    assert frontier_usd == sorted(frontier_usd)  # drawn as given: cheapest first, never cheaper for more
    # a summary of another kind is refused in one line
    bad = subprocess.run([str(CLI), "report", str(ROOT / "examples/rst-published.json"), "--optimize",
                          str(ROOT / "examples/rst-published.json"), "-o", str(page)], capture_output=True, text=True, cwd=ROOT)
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1 and "optimize" in bad.stderr


def test_the_committed_schema_is_current():
    assert (ROOT / "docs/schemas/optimize.schema.json").read_text(encoding="utf-8") == schema_text("optimize")


def _one_line_exit_2(p: subprocess.CompletedProcess, *words: str) -> None:
    assert p.returncode == 2, (p.stdout, p.stderr)
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in p.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_an_unreachable_target_names_the_bounds_hit():
    p = _run(str(SMALL), "--passing-per-hour", "1e7", *GRID)
    _one_line_exit_2(p, "no searched configuration meets --passing-per-hour 1e+07", "--max-replicas 4",
                     "--max-cap 256")


def test_a_gpu_whose_replica_cannot_hold_the_model(tmp_path):
    big = tmp_path / "big.toml"
    big.write_text(SMALL.read_text().replace("model_params_b = 27", "model_params_b = 70"))
    p = _run(str(big), "--passing-per-hour", "100", "--gpu", "l40s-48gb", "--gpus-per-replica", "2", "--max-cap", "64")
    _one_line_exit_2(p, "l40s-48gb", "cannot hold the model", "inference.model_params_b = 70")


def test_a_measure_summary_without_token_telemetry(tmp_path):
    """measure run on the healthy corpus with its token columns emptied (a fleet that logs no tokens)."""
    import pyarrow as pa

    from producers import healthy_telemetry
    from sandbox_fleet import jsonio
    from summaries import measure_json

    tel = healthy_telemetry()
    t = tel.rollouts
    for col in ("turns", "input_tokens", "output_tokens", "cached_tokens"):
        i = t.schema.get_field_index(col)
        t = t.set_column(i, t.schema.field(i), pa.nulls(len(t), t.schema.field(i).type))
    tel.rollouts = t
    path = tmp_path / "no_tokens.json"
    jsonio.write(measure_json(tel), path)
    p = _run(str(path), "--passing-per-hour", "100")
    _one_line_exit_2(p, str(path), "no token telemetry")


def test_a_measure_summary_with_tokens_is_searched(produced, tmp_path):
    """The healthy corpus's measure summary: turn curve 800 tokens/turn, 60% pass."""
    p = _run(str(produced.fleet_path), "--passing-per-hour", "100", "--count", "150", "--max-cap", "128",
             "--cap-step", "32", "--max-replicas", "2", "--gpu", "h100-80gb", "--caching", "on", "--reps", "5",
             "--workers", "1", "--json")
    assert p.returncode == 0, p.stderr
    s = OptimizeSummary.model_validate(json.loads(p.stdout))
    assert s.target.pass_rate == pytest.approx(produced.fleet["outcomes"]["pass_rate"])
    assert any("800 tokens/turn" in b for b in s.basis)


def test_a_scenario_without_token_draws():
    p = _run(str(ROOT / "examples/scenarios/sync_rl.toml"), "--passing-per-hour", "100")
    _one_line_exit_2(p, "sync_rl.toml", "no token draws")


@pytest.mark.parametrize("args,words", [
    (["--passing-per-hour", "10", "--batch", "8", "--max-step-s", "5"], ["not both"]),
    ([], ["give a target"]),
    (["--passing-per-hour", "10", "--scale", "2"], ["--scale 2.0"]),
    (["--passing-per-hour", "10", "--backend", "slurm"], ["--backend 'slurm'"]),
])
def test_bad_flags(args, words):
    _one_line_exit_2(_run(str(SMALL), *args), *words)


def test_a_measure_model_handed_over_searches_as_its_file(produced):
    """``run_optimize`` takes the ``MeasureSummary`` (as the CLI hands it over, read once by
    ``load_measure``) and gives the same bytes as the path convenience on the file it came from."""
    from sandbox_fleet import jsonio
    from sandbox_fleet.measure.load import load_measure
    from sandbox_fleet.optimize import run_optimize

    kw: dict = {"passing_per_hour": 100, "count": 150, "max_cap": 128, "cap_step": 32, "max_replicas": 2,
                "gpus": ["h100-80gb"], "caching": "on", "reps": 5, "workers": 1}
    by_path = run_optimize(produced.fleet_path, **kw)
    by_model = run_optimize(load_measure(produced.fleet_path), name=str(produced.fleet_path), **kw)
    assert jsonio.dumps(by_model.summary) == jsonio.dumps(by_path.summary)
    assert by_model.scenario_toml == by_path.scenario_toml
    assert by_model.summary["input"] == Path(produced.fleet_path).name

    from sandbox_fleet.errors import InputError
    from sandbox_fleet.measure.model import MeasureSummary

    no_tokens = MeasureSummary.model_validate({**produced.fleet, "tokens": None})  # a model with no file behind it
    with pytest.raises(InputError, match=r"^measure summary: no token telemetry \(tokens is null\)"):
        run_optimize(no_tokens, **kw)

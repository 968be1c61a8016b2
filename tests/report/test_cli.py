"""`sandbox-fleet report` and `sandbox-fleet check`: outputs and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from sandbox_fleet.cli import app

PUBLISHED = Path(__file__).resolve().parents[2] / "examples" / "rst-published.json"
runner = CliRunner()


def test_check_published_fails_with_exit_1():
    res = runner.invoke(app, ["check", str(PUBLISHED)])
    assert res.exit_code == 1, res.output
    assert "prefix_cache_off" in res.output


def test_check_healthy_passes_unless_strict(produced):
    # Its one warning is cap_below_configured (100 busy slots under two jobs of cap 150 side by side).
    assert runner.invoke(app, ["check", str(produced.fleet_path)]).exit_code == 0
    res = runner.invoke(app, ["check", str(produced.fleet_path), "--plan", str(produced.plan_path), "--strict"])
    assert res.exit_code == 1 and "1 warn" in res.output, res.output


def test_warnings_pass_unless_strict(tmp_path, produced):
    m = json.loads(produced.fleet_path.read_text())
    m["concurrency"]["duty"] = 0.2  # duty_cycle warns, nothing fails
    f = tmp_path / "m.json"
    f.write_text(json.dumps(m))
    assert runner.invoke(app, ["check", str(f)]).exit_code == 0
    assert runner.invoke(app, ["check", str(f), "--strict"]).exit_code == 1


def test_check_json_is_one_checks_object_on_stdout():
    res = runner.invoke(app, ["check", str(PUBLISHED), "--json"])
    doc = json.loads(res.stdout)
    assert (doc["schema_version"], doc["kind"]) == (1, "checks")
    data = doc["results"]
    assert {d["name"]: d["status"] for d in data}["exception_rate"] == "fail"
    assert set(data[0]) == {"name", "status", "value", "threshold", "message"}


def test_thresholds_override_changes_the_verdict(tmp_path):
    f = tmp_path / "t.toml"
    # relax every gate the published figures fail
    f.write_text("\n".join([
        "[prefix_cache_off]\nenabled = false",
        "[exception_rate]\nfail_above = 0.5",
        "[exception_rate_by_model]\nfail_above = 0.8",
        "[missing_reward]\nfail_above = 0.3",
        "[missing_tokens]\nfail_above = 0.3",
        "[missing_turns]\nfail_above = 0.3",
    ]))
    res = runner.invoke(app, ["check", str(PUBLISHED), "--thresholds", str(f)])
    assert res.exit_code == 0, res.output


def test_check_help_documents_exit_codes():
    res = runner.invoke(app, ["check", "--help"])
    assert "Exit status" in res.output and "--strict" in res.output


def test_report_writes_html(tmp_path, produced):
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(produced.fleet_path), "--plan", str(produced.plan_path),
                              "--simulate", str(produced.simulate_path), "-o", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>") and '<section id="plan">' in html


def _main(monkeypatch, capsys, *args: str) -> tuple[int, str]:
    """Run the console entry point in-process: (exit status, stderr)."""
    from sandbox_fleet import cli

    monkeypatch.setattr(sys, "argv", ["sandbox-fleet", *args])
    try:
        cli.main()
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


def test_bad_inputs_exit_2_with_one_line(tmp_path, monkeypatch, capsys, produced):
    bad_json = tmp_path / "m.json"
    bad_json.write_text("{oops")
    bad_toml = tmp_path / "t.toml"
    bad_toml.write_text("[exception_rate]\nbudget = 0.3\n")
    cases = [
        (("check", str(bad_json)), "not valid JSON"),
        (("check", str(produced.fleet_path), "--thresholds", str(bad_toml)), "unknown key 'exception_rate.budget'"),
        (("report", str(produced.fleet_path), "--plan", str(tmp_path / "missing.json"), "-o", str(tmp_path / "r.html")),
         "not found"),
        # another stage's summary where one kind is expected: refused, naming both
        (("report", str(produced.fleet_path), "--plan", str(produced.fleet_path), "-o", str(tmp_path / "r.html")),
         "kind 'measure'; expected a plan summary"),
        (("report", str(produced.fleet_path), "--simulate", str(produced.plan_path), "-o", str(tmp_path / "r.html")),
         "kind 'plan'; expected a simulate summary"),
        (("check", str(produced.plan_path)), "kind 'plan'; expected a measure summary"),
        (("check", str(produced.fleet_path), "--plan", str(produced.simulate_path)), "kind 'simulate'; expected a plan"),
    ]
    for args, needle in cases:
        code, err = _main(monkeypatch, capsys, *args)
        assert code == 2, (args, err)
        assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r.html").exists()  # inputs are validated before anything is written


def test_module_entry_point_exit_codes(tmp_path):
    """End to end through `python -m sandbox_fleet.cli`: 1 on a failing check, 2 on bad input."""
    def run(*a):
        return subprocess.run([sys.executable, "-m", "sandbox_fleet.cli", *a], capture_output=True, text=True)
    assert run("check", str(PUBLISHED), "--json").returncode == 1
    bad = tmp_path / "m.json"
    bad.write_text("[]")
    proc = run("check", str(bad))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr


def test_report_shows_gpu_memory_all_in_cost_and_assumptions(tmp_path):
    """A plan sized with a GPU carries its memory lines and every assumption into the report."""
    plan = tmp_path / "plan.json"
    res = runner.invoke(app, ["plan", str(PUBLISHED), "--node-type", "aws-m6id.24xlarge", "--gpu", "h100-80gb",
                              "--model-params-b", "27", "--kv-bytes-per-token", "65536", "--json", "-o", str(plan)])
    assert res.exit_code == 0, res.output
    out = tmp_path / "r.html"
    res = runner.invoke(app, ["report", str(PUBLISHED), "--plan", str(plan), "-o", str(out)])
    assert res.exit_code == 0, res.output
    html = out.read_text()
    # 27e9 parameters x 2 bytes (BF16) = 50.29 GiB of weights, by hand
    assert "GPU memory: weights (GiB)</th><td>50.3</td>" in html
    assert 'id="assumptions"' in html and '<td data-label="assumption">price_tier</td>' in html
    assert "$ per passing trajectory, all in" in html  # GPUs priced from the catalog: more than the fleet


def test_check_fails_an_unstable_simulation(tmp_path, produced):
    """M/M/1 at rho 1.2 has no steady state: check --simulate fails it (exit 1); at rho 0.5 it passes."""
    from sandbox_fleet.simulate.scenario.run import run_scenario

    out = {}
    for rate in (1.2, 0.5):
        scen = tmp_path / f"mm1_{rate}.toml"
        scen.write_text(f'[fleet]\ncap = 1\n[workload]\nkind = "poisson"\nrate_per_s = {rate}\ncount = 8000\n'
                        '[hold]\ndist = "exponential"\nmean_s = 1.0\n[run]\nseed = 3\n')
        sim = tmp_path / f"sim_{rate}.json"
        sim.write_text(json.dumps(run_scenario(scen)))
        res = runner.invoke(app, ["check", str(produced.fleet_path), "--simulate", str(sim), "--json"])
        out[rate] = (res.exit_code, {r["name"]: r for r in json.loads(res.output)["results"]}["simulation_steady"])
    code, r = out[1.2]
    assert code == 1 and r["status"] == "fail" and r["message"].startswith("unstable: offered work exceeds capacity")
    assert r["value"] == pytest.approx(1.2, rel=0.05)
    code, r = out[0.5]
    assert code == 0 and r["status"] == "pass"


def test_report_footer_names_version_command_and_input_digests(tmp_path, produced, run_cli):
    """The footer: the version, the command line as typed, and each input summary's digest (the
    digest a plan made from it carries as ``input.fingerprint``, read from the plan's own JSON)."""
    from sandbox_fleet import __version__

    out = tmp_path / "r.html"
    r = run_cli("report", produced.fleet_path, "--plan", produced.plan_path, "-o", out)
    assert r.code == 0, r.err
    html = out.read_text(encoding="utf-8")
    footer = html[html.index("<footer"):]
    plan = json.loads(Path(produced.plan_path).read_text())
    assert f"sandbox-fleet {__version__}" in footer
    assert f'<code id="command">sandbox-fleet report {produced.fleet_path} --plan {produced.plan_path} -o {out}</code>' in footer
    assert f"measure {plan['input']['fingerprint']}" in footer and "plan sha256:" in footer

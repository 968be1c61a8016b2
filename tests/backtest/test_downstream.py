"""A backtest's verdict downstream: the purchase order's line, the check drift gate, the report section."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sandbox_fleet.backtest.model import BacktestSummary
from sandbox_fleet.report.thresholds import Thresholds
from summaries import checks_of

ROOT = Path(__file__).resolve().parents[2]
HARBOR = ROOT / "tests" / "fixtures" / "harbor"


def _summary(error: float, drifted: bool) -> dict:
    """A hand-made backtest summary: a makespan error and one hold test, drifted or not."""
    fig = {"actual": 100.0, "predicted": 100.0 * (1 + error), "interval": [90.0, 110.0], "error": error,
           "within_interval": abs(error) <= 0.1}
    test = {"quantity": "hold_s", "model": "m1", "test": "mann-whitney-u", "n_a": 50, "n_b": 50, "statistic": 2000.0,
            "p_value": 1e-6 if drifted else 0.4, "p_adjusted": 1e-6 if drifted else 0.4, "effect": 0.4 if drifted else 0.02,
            "effect_name": "cliffs_delta", "effect_floor": 0.147, "a_value": 10.0, "b_value": 15.0 if drifted else 10.1,
            "value_name": "median", "drifted": drifted}
    return BacktestSummary.build(
        sources=["x"], rows=100, split={"by": "fraction", "fraction": 0.5, "a_rows": 50, "b_rows": 50, "min_rows": 5,
                                        "b_cap": 4, "a_cap": 4},
        seed=0, seeds=10, interval_level=0.95, figures={"makespan_s": fig}, oracle={"makespan_s": fig},
        drift={"detected": drifted, "alpha": 0.05, "correction": "holm-bonferroni", "tests": [test]},
        verdict="v", basis="b").to_json()


@pytest.mark.parametrize("error, drifted, status", [
    (0.05, False, "pass"), (-0.15, False, "warn"), (0.30, False, "fail"), (0.02, True, "fail"), (-0.15, True, "fail"),
])
def test_drift_gate_statuses(produced, error, drifted, status):
    results = checks_of(produced.fleet, None, Thresholds.default(), _summary(error, drifted))
    gate = results[-1]
    assert gate.name == "backtest_drift" and gate.status == status
    assert gate.value == pytest.approx(abs(error))
    assert ("constants drifted: yes (hold_s of m1)" in gate.message) == drifted


def test_drift_gate_is_absent_without_a_backtest(produced):
    assert "backtest_drift" not in {r.name for r in checks_of(produced.fleet)}


def test_drift_gate_can_warn_instead(produced, tmp_path):
    from sandbox_fleet.report.thresholds import load_thresholds

    f = tmp_path / "t.toml"
    f.write_text('[backtest_drift]\ndrifted = "warn"\n')
    assert checks_of(produced.fleet, None, load_thresholds(f), _summary(0.0, True))[-1].status == "warn"


@pytest.fixture(scope="module")
def harbor_backtest(tmp_path_factory):
    from sandbox_fleet import jsonio
    from sandbox_fleet.backtest import backtest_paths

    out = backtest_paths([str(HARBOR)], split_by="job", seeds=10).to_json()
    path = tmp_path_factory.mktemp("bt") / "bt.json"
    jsonio.write(out, path)
    return path, out


def test_plan_carries_the_backtest_line(run_cli, harbor_backtest):
    path, bt = harbor_backtest
    r = run_cli("plan", HARBOR, "--backtest", path, "--detail")
    assert r.code == 0, r.err
    short = run_cli("plan", HARBOR, "--backtest", path).out.splitlines()  # the decision alone: the line leads "rests on"
    assert short[short.index("  rests on:") + 1].startswith("    - simulator error on this telemetry: mean concurrency")
    err = bt["figures"]["makespan_s"]["error"]
    conc = bt["figures"]["mean_concurrency"]["error"]
    # the same headline as the backtest's verdict: mean concurrency first, the makespan (replayed starts) after
    assert bt["verdict"].startswith(f"simulator error on this telemetry: mean concurrency {conc:+.1%} (")
    line = bt["verdict"].split("; worst figure")[0] + f"; constants drifted: {'yes' if bt['drift']['detected'] else 'no'}"
    assert f"makespan {err:+.1%} (B's start times are replayed" in line
    # in the order's opening block (before the evidence), folded at the terminal width like every line
    opening = " ".join(r.out.split("\nMeasured (carried over")[0].split())
    assert f" {line} (backtest " in opening
    j = json.loads(run_cli("plan", HARBOR, "--backtest", path, "--json").out)
    assert j["backtest"]["makespan_error"] == err and j["backtest"]["drifted"] == bt["drift"]["detected"]


def test_plan_refuses_a_file_that_is_not_a_backtest(run_cli, tmp_path):
    f = tmp_path / "x.json"
    f.write_text('{"schema_version": 1, "kind": "plan"}')
    r = run_cli("plan", HARBOR, "--backtest", f)
    assert r.code == 2 and "kind 'plan'; expected a backtest summary" in r.err


def test_check_and_report_take_the_backtest(run_cli, harbor_backtest, tmp_path):
    path, bt = harbor_backtest
    r = run_cli("check", HARBOR, "--backtest", path, "--json")
    gate = [x for x in json.loads(r.out)["results"] if x["name"] == "backtest_drift"]
    assert len(gate) == 1 and gate[0]["value"] == pytest.approx(abs(bt["figures"]["makespan_s"]["error"]))
    html = tmp_path / "r.html"
    assert run_cli("report", HARBOR, "--backtest", path, "-o", html).code == 0
    text = html.read_text()
    assert 'id="backtest"' in text and 'id="fig-backtest"' in text and bt["verdict"].split(",")[0] in text

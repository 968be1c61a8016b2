"""Issue 22 item 10 on measure's side: a job of one trial under a larger cap, and agents that
report 0 tokens. The real inputs are tests/fixtures/harbor-layouts/one-trial (Harbor's own
GeminiCli fills its agent_result) and tests/fixtures/terminal_bench (installed agents report 0)."""

from __future__ import annotations

import json

import pytest
from tests.measure.helpers import telemetry
from tests.telemetry.telemetry_builders import FIXTURES

from summaries import checks_of, measure_json, paths_json

ONE_TRIAL = FIXTURES / "harbor-layouts" / "one-trial"
TB = FIXTURES / "terminal_bench"


def _check(summary, name):
    return next(r for r in checks_of(summary) if r.name == name)


def test_one_trial_under_cap_four_is_too_few_to_tell():
    config = json.loads((ONE_TRIAL / "config.json").read_text())
    trials = [p for p in ONE_TRIAL.iterdir() if (p / "result.json").exists()]
    assert (config["n_concurrent_trials"], len(trials)) == (4, 1)
    m = paths_json([str(ONE_TRIAL)], progress=False)
    c = m["concurrency"]
    assert (c["configured_cap"], c["peak"], c["time_at_peak_share"]) == (4, 1, 1.0)
    assert c["effective_cap"] is None
    assert "too few rollouts to tell: all 1 ran at once, under a configured cap of 4" in c["effective_cap_note"]
    job = m["by_job"]["one-trial"]["concurrency"]
    assert job["effective_cap"] is None and job["effective_cap_note"] == c["effective_cap_note"]
    r = _check(m, "cap_below_configured")
    assert r.status == "skip" and "too few rollouts to tell" in r.message and "another limit" not in r.message


def test_effective_cap_both_sides_of_too_few():
    # 3 rollouts at once under a cap of 4: nothing waited, they could not reach 4 -> no effective cap, a note.
    few = measure_json(telemetry([0, 0, 0], [100, 100, 100], job=["j"] * 3, caps={"j": 4}))["concurrency"]
    assert (few["peak"], few["effective_cap"]) == (3, None) and few["effective_cap_note"].startswith("too few")
    # 6 rollouts, never more than 3 at once, under a cap of 4: 3 waited, so 3 is a plateau.
    starts, ends = [0, 0, 0, 100, 100, 100], [100, 100, 100, 200, 200, 200]
    enough = measure_json(telemetry(starts, ends, job=["j"] * 6, caps={"j": 4}))
    c = enough["concurrency"]
    assert (c["peak"], c["effective_cap"], c["effective_cap_note"]) == (3, 3, None)
    assert _check(enough, "cap_below_configured").status == "warn"
    # 3 rollouts, one after another, under a cap of 4: 2 waited although a slot was free -> plateau at 1.
    serial = measure_json(telemetry([0, 100, 200], [100, 200, 300], job=["j"] * 3, caps={"j": 4}))
    assert (serial["concurrency"]["effective_cap"], serial["concurrency"]["effective_cap_note"]) == (1, None)


def test_harbor_agent_reporting_zero_tokens_gives_null_rates():
    result = json.loads((ONE_TRIAL / "hello-pass__hKWP3f9" / "result.json").read_text())
    assert (result["agent_result"]["n_input_tokens"], result["agent_result"]["n_output_tokens"]) == (0, 0)
    m = paths_json([str(ONE_TRIAL)], progress=False)
    t = m["tokens"]
    assert (t["rows"], t["zero_token_rows"]) == (0, 1)
    assert t["prefill_per_sandbox_s"] is None and t["decode_per_sandbox_s"] is None
    assert m["by_model"]["gemini-2.5-pro"]["decode_per_sandbox_s"] is None
    assert any("1 row(s) report 0 input and 0 output tokens" in w for w in m["warnings"])


def test_terminal_bench_installed_agents_left_out_of_rates():
    """The rates are over the trials that count tokens, from the run files themselves."""
    trials = []
    for run in sorted(p for p in TB.iterdir() if p.is_dir()):
        trials += json.loads((run / "results.json").read_text())["results"]
    from datetime import datetime

    def hold(tr):
        return (datetime.fromisoformat(tr["trial_ended_at"]) - datetime.fromisoformat(tr["trial_started_at"])).total_seconds()

    counted = [tr for tr in trials if tr["total_input_tokens"] or tr["total_output_tokens"]]
    zero = [tr for tr in trials if tr["total_input_tokens"] == 0 and tr["total_output_tokens"] == 0]
    assert counted and zero
    t = paths_json([str(TB)], progress=False)["tokens"]
    assert (t["rows"], t["zero_token_rows"]) == (len(counted), len(zero))
    assert t["prefill_per_sandbox_s"] == pytest.approx(
        sum(tr["total_input_tokens"] for tr in counted) / sum(hold(tr) for tr in counted), rel=1e-9)
    assert t["decode_per_sandbox_s"] == pytest.approx(
        sum(tr["total_output_tokens"] for tr in counted) / sum(hold(tr) for tr in counted), rel=1e-9)


def test_zero_on_one_side_is_still_a_report():
    t = measure_json(telemetry([0, 0], [10, 10], input_tokens=[0, 100], output_tokens=[5, 0]))["tokens"]
    assert (t["rows"], t["zero_token_rows"]) == (2, 0)
    assert t["prefill_per_sandbox_s"] == pytest.approx(100 / 20)

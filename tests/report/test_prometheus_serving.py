"""check --serving-rules: rules over vLLM's and SGLang's own metric names, thresholds from the plan.

promtool is the oracle: the rules load, and on hand-chosen engine series (names as the engines
export them) exactly the hand-predicted alerts fire, per model, at the hand-computed thresholds.
"""

from __future__ import annotations

import copy
import json

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.report.prometheus import rules_yaml, serving_basis, serving_rule_list
from sandbox_fleet.report.thresholds import Thresholds
from summaries import as_plan


@pytest.fixture
def plan(produced) -> dict:
    """The producers' plan with round inference figures: prefill 1,000 tok/s, 200 of it computed
    with caching planned, utilisation target 0.8."""
    p = copy.deepcopy(produced.plan)
    p["inference"].update(prefill_tok_s=1000.0, prefill_tok_s_cached=200.0, utilisation_target=0.8)
    return p


def test_thresholds_are_the_plans_assumptions(plan):
    b = serving_basis(as_plan(plan))
    # by hand: h = 1 - 200/1000 = 0.8; floor = 1 - (1 - 0.8) / 0.8 = 0.75
    assert b.hit_ratio == pytest.approx(0.8) and b.hit_ratio_floor == pytest.approx(0.75) and b.utilisation == 0.8
    assert "0.8000" in b.basis and "0.7500" in b.basis


def test_a_plan_without_inference_figures_is_refused(plan):
    plan["inference"]["prefill_tok_s"] = None
    with pytest.raises(InputError, match="`serving_rules`"):
        serving_basis(as_plan(plan))


def _series(plan_rules_dir, series: list[tuple[str, str]], expected: list[dict]) -> str:
    lines = ["rule_files: [rules.yml]", "evaluation_interval: 1m", "tests:", "  - interval: 1m", "    input_series:"]
    for sel, values in series:
        lines += [f"      - series: {json.dumps(sel)}", f"        values: {json.dumps(values)}"]
    lines += ["    promql_expr_test:", '      - expr: ALERTS{alertstate="firing"}', "        eval_time: 40m",
              "        exp_samples:"]
    for labels in expected:
        body = ",".join(f"{k}={json.dumps(v)}" for k, v in sorted(labels.items()))
        lines += [f"          - labels: {json.dumps('ALERTS{' + body + '}')}", "            value: 1"]
    return "\n".join(lines) + "\n"


def _alert(name: str, gate: str, severity: str, model: str) -> dict:
    return {"__name__": "ALERTS", "alertname": name, "alertstate": "firing", "gate": gate, "severity": severity,
            "model_name": model}


def test_engine_series_fire_exactly_the_predicted_alerts(promtool, tmp_path, plan):
    (tmp_path / "rules.yml").write_text(rules_yaml(Thresholds.default(), serving=(
        "sandbox-fleet-serving", serving_rule_list(as_plan(plan)), serving_basis(as_plan(plan)).basis)))
    res = promtool("check", "rules", "rules.yml", cwd=tmp_path)
    assert res.returncode == 0 and "SUCCESS: 49 rules found" in res.stdout, res.stdout + res.stderr
    series = [
        # vLLM prefix cache, tokens per minute: a 790/1000 = 0.79 warns (< 0.8, >= 0.75);
        # b 700/1000 = 0.70 is critical (< 0.75); c 850/1000 is silent
        ('vllm:prefix_cache_queries_total{model_name="a"}', "0+1000x50"),
        ('vllm:prefix_cache_hits_total{model_name="a"}', "0+790x50"),
        ('vllm:prefix_cache_queries_total{model_name="b"}', "0+1000x50"),
        ('vllm:prefix_cache_hits_total{model_name="b"}', "0+700x50"),
        ('vllm:prefix_cache_queries_total{model_name="c"}', "0+1000x50"),
        ('vllm:prefix_cache_hits_total{model_name="c"}', "0+850x50"),
        # SGLang's gauge: d at 0.5 is critical, e at 0.9 silent
        ('sglang:cache_hit_rate{model_name="d"}', "0.5x50"),
        ('sglang:cache_hit_rate{model_name="e"}', "0.9x50"),
        # KV usage: a 0.85 warns (> 0.8, <= 0.95), b (the older vLLM name) 0.97 critical, d 0.5 silent
        ('vllm:kv_cache_usage_perc{model_name="a"}', "0.85x50"),
        ('vllm:gpu_cache_usage_perc{model_name="b"}', "0.97x50"),
        ('sglang:token_usage{model_name="d"}', "0.5x50"),
        # queue share of latency: vLLM a 10/100 = 0.1 silent; SGLang d 90/100 = 0.9 warns
        ('vllm:request_queue_time_seconds_sum{model_name="a"}', "0+10x50"),
        ('vllm:e2e_request_latency_seconds_sum{model_name="a"}', "0+100x50"),
        ('sglang:queue_time_seconds_sum{model_name="d"}', "0+90x50"),
        ('sglang:e2e_request_latency_seconds_sum{model_name="d"}', "0+100x50"),
        # our own metrics present, so the absent() alert stays silent
        ("sandbox_fleet_rollouts", "5000x50"),
    ]
    expected = [
        _alert("SandboxFleetServingPrefixCache", "serving_prefix_cache", "warning", "a"),
        _alert("SandboxFleetServingPrefixCache", "serving_prefix_cache", "critical", "b"),
        _alert("SandboxFleetServingPrefixCache", "serving_prefix_cache", "critical", "d"),
        _alert("SandboxFleetServingKvCache", "serving_kv_cache", "warning", "a"),
        _alert("SandboxFleetServingKvCache", "serving_kv_cache", "critical", "b"),
        _alert("SandboxFleetServingQueue", "serving_queue", "warning", "d"),
    ]
    (tmp_path / "test.yml").write_text(_series(tmp_path, series, expected))
    res = promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr
    # the harness can fail: drop one expected alert and promtool must object
    (tmp_path / "test.yml").write_text(_series(tmp_path, series, expected[1:]))
    assert promtool("test", "rules", "test.yml", cwd=tmp_path).returncode != 0


def test_cli_serving_rules_need_a_plan_and_a_rules_file(run_cli, tmp_path, produced):
    res = run_cli("check", produced.fleet_path, "--serving-rules", "--prometheus-rules", tmp_path / "r.yml")
    assert res.code == 2 and "--serving-rules needs --plan" in res.err and len(res.err.strip().splitlines()) == 1
    res = run_cli("check", produced.fleet_path, "--plan", produced.plan_path, "--serving-rules",
                  "--prometheus-rules", tmp_path / "r.yml", "-o", tmp_path / "checks.json", "--quiet")
    assert res.code in (0, 1) and res.out == "" and res.err == ""
    text = (tmp_path / "r.yml").read_text()
    assert 'name: "sandbox-fleet-serving"' in text and "vllm:prefix_cache_hits_total" in text
    assert json.loads((tmp_path / "checks.json").read_text())["kind"] == "checks"

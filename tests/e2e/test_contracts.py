"""The JSON contracts of issues 2 (measure s5), 3 (simulate s5) and 4 (plan s8), through the CLI.

Every key each issue lists must be present with the right type; turn-keyed objects are keyed by
the turn count as a string; ``--json`` prints exactly one strict-JSON object on stdout and nothing
else. The summaries come from the session's real pipeline (see ``conftest.pipeline``), so this is
what a user's script would read.
"""

from __future__ import annotations

import json
import re

import pytest

from .conftest import HARBOR, Run

# A type spec per dotted key. "num" is an int or float (never a bool); a trailing "?" allows null.
MEASURE = {
    "schema_version": "int", "rows": "int", "span_s": "num", "sandbox_s": "num",
    "concurrency.mean": "num", "concurrency.mean_littles_law": "num", "concurrency.peak": "num",
    "concurrency.duty": "num", "concurrency.touches": "int", "concurrency.time_at_peak_s": "num",
    "concurrency.cap_detected": "bool", "concurrency.configured_cap": "num?",
    **{f"hold_s.{k}": "num" for k in ("min", "median", "mean", "p90", "p99", "max")},
    "tokens.rows": "int", "tokens.sandbox_s": "num", "tokens.hold_mean_s": "num", "tokens.input": "int",
    "tokens.output": "int", "tokens.cached": "int?", "tokens.prefill_per_sandbox_s": "num",
    "tokens.decode_per_sandbox_s": "num", "tokens.prefill_decode_ratio": "num", "tokens.cached_fraction": "num?",
    "tokens.turn_tokens": "num", "tokens.r2_quadratic": "num", "tokens.r2_linear": "num",
    "tokens.median_input_by_turns": "turns:num", "tokens.turns_histogram": "turns:int",
    "outcomes.exception_rate": "num", "outcomes.rewarded": "int", "outcomes.passed": "int",
    "outcomes.pass_rate": "num", "outcomes.pass_rate_clean": "num", "outcomes.pass_rate_exception": "num",
    "outcomes.sandbox_hours_per_pass": "num", "outcomes.exception_sandbox_hours": "num",
    "exceptions.by_type": "map:int",
    "coverage.missing_reward": "int", "coverage.missing_tokens": "int", "coverage.missing_turns": "int",
    "coverage.missing_trajectory": "int", "coverage.rejected": "map:int",
    "by_model": "dict", "by_job": "dict", "tasks.count": "int", "tasks.requests": "list",
}
PER_MODEL = {"rows": "int", "exception_rate": "num", "hold_median_s": "num", "pass_rate": "num?"}
PER_JOB = {**PER_MODEL, "peak": "num", "mean": "num", "duty": "num", "touches": "int",
           "time_at_peak_s": "num", "cap_detected": "bool", "configured_cap": "num?"}
REQUEST = {"cpus": "num", "memory_mb": "num", "storage_mb": "num", "gpus": "num", "tasks": "int"}

SIMULATE = {
    "schema_version": "int", "rollouts": "int", "completed": "int", "dropped": "int", "sim_time_s": "num",
    "concurrency.mean": "num", "concurrency.peak": "num", "concurrency.time_at_peak_s": "num",
    **{f"hold_s.{k}": "num" for k in ("min", "median", "mean", "p90", "p99", "max")},
    "outcomes.exception_rate": "num",
    "queue_wait_s.mean": "num", "queue_wait_s.p50": "num", "queue_wait_s.p99": "num",
    "utilisation": "num", "sandbox_hours": "num",
    "lost_sandbox_hours.exception": "num", "lost_sandbox_hours.preemption": "num", "events": "int",
}
SIMULATE_RL = {"step_s.mean": "num", "step_s.p50": "num", "step_s.p99": "num", "trainer_idle_fraction": "num"}

PLAN = {
    "target.concurrency": "num", "target.source": "str",
    "nodes.type": "str", "nodes.count": "int", "nodes.binding": "str", "nodes.slots_per_node": "dict",
    "nodes.lower_bound": "int", "nodes.stranded": "dict", "nodes.alternatives": "list",
    "storage.scratch_gb": "num", "storage.per_node_gb": "num",
    "inference.prefill_tok_s": "num", "inference.decode_tok_s": "num", "inference.prefill_tok_s_cached": "num",
    "inference.gpus": "int", "inference.gpus_cached": "int", "inference.binding": "str",
    "caching.saving_by_turns": "turns:num", "caching.saving_measured_mix": "num",
    "cost.reserved_per_h": "num", "cost.on_demand_per_h": "num", "cost.spot_per_h": "num",
    "cost.per_passing_trajectory": "num", "cost.exception_waste_per_h": "num",
    "measured.concurrency_mean": "num", "measured.duty": "num", "measured.pass_rate": "num",
    "measured.sandbox_hours_per_pass": "num", "measured.sandbox_hours": "num", "measured.span_days": "num",
    "context.model_error_by_turns": "turns:num",
}

_MISSING = object()
ANSI = re.compile(r"\x1b\[")


def _get(obj: dict, dotted: str):
    for part in dotted.split("."):
        if not isinstance(obj, dict) or part not in obj:
            return _MISSING
        obj = obj[part]
    return obj


def _is(kind: str, v) -> bool:
    if kind == "num":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    if kind == "int":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, {"bool": bool, "str": str, "dict": dict, "list": list}[kind])


def violations(obj: dict, spec: dict[str, str], where: str = "") -> list[str]:
    """Every key of ``spec`` that is missing from ``obj`` or has the wrong type."""
    bad = []
    for key, kind in spec.items():
        v = _get(obj, key)
        nullable = kind.endswith("?")
        kind = kind.rstrip("?")
        if v is _MISSING:
            bad.append(f"{where}{key}: missing")
        elif v is None:
            if not nullable:
                bad.append(f"{where}{key}: null, expected {kind}")
        elif ":" in kind:
            keys, vals = kind.split(":")
            if not isinstance(v, dict) or (keys == "turns" and not v):
                bad.append(f"{where}{key}: expected a{' non-empty' if keys == 'turns' else 'n'} object, got {v!r}")
                continue
            for k, x in v.items():
                if keys == "turns" and not re.fullmatch(r"[0-9]+", k):
                    bad.append(f"{where}{key}: key {k!r} is not a turn count as a string")
                if not _is(vals, x):
                    bad.append(f"{where}{key}.{k}: {x!r} is not {vals}")
        elif not _is(kind, v):
            bad.append(f"{where}{key}: {v!r} is not {kind}")
    return bad


def _reject_constant(name: str):
    raise AssertionError(f"stdout holds {name}, which is not JSON (NaN/Infinity must be null)")


def only_json(run: Run) -> dict:
    """stdout is exactly one strict-JSON object (no banner, no progress, no colour codes)."""
    assert run.code == 0, run.err
    assert not ANSI.search(run.out), "colour codes on stdout"
    obj = json.loads(run.out, parse_constant=_reject_constant)  # raises on any trailing text
    assert isinstance(obj, dict)
    assert run.out.lstrip().startswith("{") and run.out.rstrip().endswith("}")
    return obj


# --- measure --------------------------------------------------------------------------------

def test_measure_json_contract(pipeline):
    m = only_json(pipeline.measure)
    assert violations(m, MEASURE) == []
    assert set(m["by_model"]) == {"qwen35-27b-iter0000161-hf", "Qwen3.5-27B", "Qwen3.6-27B-base", "gpt-oss-120b"}
    for name, row in m["by_model"].items():
        assert violations(row, PER_MODEL, f"by_model.{name}.") == []
    assert m["tasks"]["requests"], "tasks.requests is empty"
    for i, req in enumerate(m["tasks"]["requests"]):
        assert violations(req, REQUEST, f"tasks.requests[{i}].") == []


def test_measure_json_figures_hang_together(pipeline):
    """Cross-checks between keys that a consumer relies on (independent of the values' accuracy)."""
    m = only_json(pipeline.measure)
    t, cov = m["tokens"], m["coverage"]
    assert sum(t["turns_histogram"].values()) == m["rows"] - cov["missing_turns"]
    assert set(t["median_input_by_turns"]) <= set(t["turns_histogram"])
    assert sum(r["tasks"] for r in m["tasks"]["requests"]) <= m["tasks"]["count"]
    assert sum(r["rows"] for r in m["by_model"].values()) == m["rows"]
    c = m["concurrency"]
    assert c["mean"] == pytest.approx(m["sandbox_s"] / m["span_s"], rel=1e-9)
    assert c["duty"] == pytest.approx(c["mean"] / c["peak"], rel=1e-9)
    assert c["mean_littles_law"] == pytest.approx(c["mean"], rel=1e-6)
    h = m["hold_s"]
    assert h["min"] <= h["median"] <= h["p90"] <= h["p99"] <= h["max"] and h["min"] <= h["mean"] <= h["max"]
    assert h["mean"] == pytest.approx(m["sandbox_s"] / m["rows"], rel=1e-9)


def test_measure_json_equals_the_o_file(pipeline):
    # `--json -o m.json`: the file and stdout hold the same object
    assert json.loads((pipeline.work / "m.json").read_text()) == json.loads(pipeline.measure.out)


def test_measure_by_job_contract_on_harbor_jobs(cli):
    """Two Harbor jobs: by_job carries the concurrency figures, each with its own configured cap."""
    m = only_json(cli("measure", HARBOR, "--json"))
    assert set(m["by_job"]) == {"oracle-n2", "terminus2-n3"}
    for name, row in m["by_job"].items():
        assert violations(row, PER_JOB, f"by_job.{name}.") == []
    # config.json n_concurrent_trials of each job (read from the fixture, not from the code)
    caps = {}
    for job in ("oracle-n2", "terminus2-n3"):
        caps[job] = json.loads((HARBOR / job / "config.json").read_text())["n_concurrent_trials"]
    assert {j: r["configured_cap"] for j, r in m["by_job"].items()} == caps
    assert m["rows"] == sum(r["rows"] for r in m["by_job"].values())


# --- simulate -------------------------------------------------------------------------------

def test_simulate_json_contract(pipeline):
    s = only_json(pipeline.simulate)
    assert violations(s, SIMULATE) == []
    assert s["concurrency"]["peak"] <= 30  # the cap the user edited in


SYNC_RL = """
[fleet]
cap = 40
[workload]
kind = "sync-rl"
batch = 32
steps = 6
train_s = 120
[hold]
dist = "lognormal"
median_s = 600
sigma = 0.8
[run]
seed = 5
"""


def test_simulate_rl_json_contract(cli, tmp_path):
    (tmp_path / "rl.toml").write_text(SYNC_RL)
    s = only_json(cli("simulate", "rl.toml", "--json"))
    assert violations(s, {**SIMULATE, **SIMULATE_RL}) == []
    assert s["rollouts"] == 32 * 6 and s["completed"] + s["dropped"] <= s["rollouts"]
    # a step is at least its training time; the trainer idles while the fleet runs
    assert s["step_s"]["p50"] >= 120 and 0 < s["trainer_idle_fraction"] < 1


def test_simulate_events_per_s_with_timing(cli, tmp_path):
    """events_per_s (issue 3 s5) is wall-clock, so it is emitted only with --timing."""
    (tmp_path / "rl.toml").write_text(SYNC_RL)
    s = only_json(cli("simulate", "rl.toml", "--json", "--timing"))
    assert violations(s, {"events": "int", "events_per_s": "num"}) == []
    assert s["events_per_s"] > 0


# --- plan -----------------------------------------------------------------------------------

def test_plan_json_contract(cli, pipeline):
    m_json = pipeline.work / "m.json"
    p = only_json(cli("plan", m_json, "--json", "--gpu-prefill-tok-s", "20000", "--gpu-decode-tok-s", "800"))
    assert violations(p, PLAN) == []
    assert p["target"]["source"] == only_json(pipeline.plan)["target"]["source"]
    for i, alt in enumerate(p["nodes"]["alternatives"]):
        assert isinstance(alt, dict) and "type" in alt and "count" in alt, f"alternatives[{i}]: {alt!r}"
    assert set(p["nodes"]["slots_per_node"]) >= {"cpu", "memory", "disk"}
    # caching saving is (n+1)/2 per turn count (issue 4 s5), keyed by the count as a string
    for k, v in p["caching"]["saving_by_turns"].items():
        assert v == pytest.approx((int(k) + 1) / 2)


def test_plan_json_from_the_pipeline_matches_its_o_file(pipeline):
    p = only_json(pipeline.plan)
    assert violations(p, {k: v for k, v in PLAN.items() if not k.startswith("inference.gpus")
                          and k != "inference.binding"}) == []
    assert json.loads((pipeline.work / "p.json").read_text()) == p


def test_check_json_is_one_checks_object(pipeline):
    r = pipeline.check_json
    assert r.code == 1
    doc = json.loads(r.out, parse_constant=_reject_constant)
    assert (doc["schema_version"], doc["kind"]) == (1, "checks") and set(doc) == {"schema_version", "kind", "results"}
    results = doc["results"]
    assert isinstance(results, list) and all({"name", "status"} <= set(x) for x in results)

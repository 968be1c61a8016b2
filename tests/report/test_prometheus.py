"""check --metrics-out / --prometheus-rules, held against Prometheus's own promtool.

promtool is the oracle: `check metrics` lints the exposition, `check rules` parses the rules, and
`test rules` evaluates them on series fed from the exported metrics. The mirror test asserts that
the alerts firing on a summary's own metrics are exactly the gates `check` fails (critical) and
warns on (warning); the hand-written unit tests (prometheus_unit.yml) fix the expected alerts,
labels and rendered annotations for hand-chosen series.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from sandbox_fleet.report.prometheus import rules, rules_yaml
from sandbox_fleet.report.thresholds import Thresholds
from summaries import checks_of, metrics_of

HERE = Path(__file__).parent
PUBLISHED = HERE.parents[1] / "examples" / "rst-published.json"
_PRODUCED = {}


@pytest.fixture(autouse=True)
def _producers(produced):
    """Summaries made by measure and plan (tests/producers.py), for :func:`load`."""
    _PRODUCED.update({"fleet.json": produced.fleet, "plan.json": produced.plan})


def load(name: str) -> dict:
    """``published.json``: the document's figures (examples/); ``fleet.json`` / ``plan.json``: producer-made."""
    if name == "published.json":
        return json.loads(PUBLISHED.read_text(encoding="utf-8"))
    return copy.deepcopy(_PRODUCED[name])


NAME = re.compile(r"\bsandbox_fleet_[a-z0-9_]+")


def _metrics(m: dict, plan: dict | None = None, t: Thresholds | None = None) -> str:
    t = t or Thresholds.default()
    return metrics_of(m, plan, checks_of(m, plan, t), t)


def _samples(text: str) -> list[tuple[str, float]]:
    """(series selector, value) per sample line of an exposition."""
    out = []
    for line in text.splitlines():
        if line and not line.startswith("#"):
            series, value = line.rsplit(" ", 1)
            out.append((series, float(value)))
    return out


def _full_summary() -> dict:
    """fleet.json with every optional block the metrics read: rejected rows, a cap, a job cap."""
    m = load("fleet.json")
    m["coverage"]["rejected"] = {"finish_before_start": 3, "duplicate": 1}
    m["concurrency"]["cap_detected"] = True
    m["concurrency"]["configured_cap"] = None
    m["concurrency"]["time_at_peak_s"] = 1000.0
    m["last_finished_at"] = "2026-07-26T22:41:58Z"
    return m


# --- metrics --------------------------------------------------------------------------------


def test_metrics_pass_promtool_lint_on_every_fixture(promtool):
    for name in ("published.json", "fleet.json"):
        text = _metrics(load(name), load("plan.json"))
        res = promtool("check", "metrics", stdin=text)
        assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), (name, res.stdout, res.stderr)


def test_every_metric_has_help_and_type_and_base_unit_names():
    text = _metrics(_full_summary(), load("plan.json"))
    names = {s.split("{")[0] for s, _ in _samples(text)}
    helps = set(re.findall(r"^# HELP (\S+) ", text, re.M))
    types = dict(re.findall(r"^# TYPE (\S+) (\w+)$", text, re.M))
    assert names == helps == set(types)
    for name, kind in types.items():
        assert name.startswith("sandbox_fleet_")
        # every figure is a snapshot of one summary: a gauge, never a counter that could go down
        assert kind == "gauge" and not name.endswith("_total"), name
    # quantiles are separate gauges in seconds, per model too
    assert {"sandbox_fleet_hold_p99_seconds", "sandbox_fleet_hold_median_seconds",
            "sandbox_fleet_model_hold_p99_seconds"} <= names


def test_metric_values_are_the_summary_figures_in_base_units():
    m = load("published.json")
    values = dict(_samples(_metrics(m)))
    assert values["sandbox_fleet_exception_ratio"] == m["outcomes"]["exception_rate"]
    # 3.06 sandbox-hours per pass, in seconds
    assert values["sandbox_fleet_sandbox_time_per_pass_seconds"] == pytest.approx(m["outcomes"]["sandbox_hours_per_pass"] * 3600)
    assert values["sandbox_fleet_hold_p99_seconds"] == 8845.0
    assert values['sandbox_fleet_model_exception_ratio{model="gpt-oss-120b"}'] == 0.745
    # cap detected on the published campaign: 10,248 s at the cap over the span
    assert values["sandbox_fleet_cap_binding_ratio"] == pytest.approx(10248.0 / m["span_s"])


def test_last_finished_is_data_time_and_output_is_deterministic():
    m = _full_summary()
    text = _metrics(m)
    # 2026-07-26T22:41:58Z, computed by hand: 20,660 days after the epoch + 81,718 s
    assert dict(_samples(text))["sandbox_fleet_last_finished_timestamp_seconds"] == 20660 * 86400 + 22 * 3600 + 41 * 60 + 58
    assert _metrics(copy.deepcopy(m)) == text


def test_figures_not_measured_are_left_out_not_zero():
    m = load("fleet.json")
    del m["tokens"]["cached"], m["tokens"]["cached_fraction"]
    names = {s.split("{")[0] for s, _ in _samples(_metrics(m))}
    assert "sandbox_fleet_prefix_cache_hit_ratio" not in names
    assert "sandbox_fleet_cached_tokens" not in names
    assert "sandbox_fleet_plan_target_concurrency" not in names  # no plan given


def _not_finite(m: dict) -> dict:
    """fleet.json with NaN and infinite figures (what a hand-made JSON's NaN / Infinity tokens parse to)
    for the fleet, one model and one job: each stands for a figure that was not measured."""
    model, job = sorted(m["by_model"])[0], sorted(m["by_job"])[0]
    m["outcomes"]["pass_rate"] = float("nan")
    m["by_model"][model].update(pass_rate=float("nan"), exception_rate=float("inf"), hold_median_s=float("nan"))
    m["hold_s"]["by_model"][model]["median"] = float("nan")
    m["by_job"][job]["exception_rate"] = float("nan")
    m["by_job"][job]["concurrency"]["time_at_peak_s"] = float("nan")
    return m


def test_a_figure_that_is_not_a_number_is_left_out_for_slices_as_for_the_fleet(promtool):
    m = load("fleet.json")
    model, job = sorted(m["by_model"])[0], sorted(m["by_job"])[0]
    full = dict(_samples(_metrics(copy.deepcopy(m))))
    # the series below are written for a real summary, so leaving them out is the change under test
    touched = {"sandbox_fleet_pass_ratio", f'sandbox_fleet_model_pass_ratio{{model="{model}"}}',
               f'sandbox_fleet_model_exception_ratio{{model="{model}"}}',
               f'sandbox_fleet_model_hold_median_seconds{{model="{model}"}}',
               f'sandbox_fleet_job_exception_ratio{{rl_job="{job}"}}', f'sandbox_fleet_job_peak_time_ratio{{rl_job="{job}"}}'}
    assert touched <= set(full)
    # made in-process (a file carrying NaN is refused on reading: test_cli_refuses_the_nan_of_a_json_file)
    from sandbox_fleet.measure.model import MeasureSummary

    text = _metrics(MeasureSummary.model_validate(_not_finite(m)))
    assert "NaN" not in text and "Inf" not in text
    values = dict(_samples(text))
    assert set(values) == set(full) - touched  # only those: every other series is as before
    assert all(values[k] == full[k] for k in values)
    res = promtool("check", "metrics", stdin=text)
    assert res.returncode == 0 and not res.stdout.strip() and not res.stderr.strip(), res.stdout + res.stderr


def test_cli_refuses_the_nan_of_a_json_file(run_cli, tmp_path):
    """A summary file with NaN tokens (Python's json accepts them, this tool never writes them: a
    figure not measured is null) is refused naming the key, and no metrics file is written (issue 42 s4)."""
    summary = tmp_path / "m.json"
    summary.write_text(json.dumps(_not_finite(load("fleet.json"))))  # writes NaN and Infinity
    assert "NaN" in summary.read_text()
    res = run_cli("check", summary, "--metrics-out", tmp_path / "fleet.prom")
    assert res.code == 2 and "m.json" in res.err and "not a finite number" in res.err, res.err
    assert not (tmp_path / "fleet.prom").exists()


def test_label_values_are_escaped_so_promtool_parses_them(promtool):
    m = load("fleet.json")
    m["by_model"]['we"ird\\model'] = {"rows": 300, "exception_rate": 0.5}
    text = _metrics(m)
    # the name's backslash is shown doubled (one escaping, injective: issue 42), then the format escapes both
    assert 'model="we\\"ird\\\\\\\\model"' in text
    assert promtool("check", "metrics", stdin=text).returncode == 0


def test_tasks_failing_is_the_count_check_judges():
    m = load("published.json")
    t = Thresholds.default()
    results = {r.name: r for r in checks_of(m, None, t)}
    values = dict(_samples(_metrics(m)))
    # the per-task check fails on the published data exactly when at least one task is counted failing
    assert (values.get("sandbox_fleet_tasks_failing", 0) > 0) == (results["exception_rate_by_task"].status == "fail")


def test_node_gauges_are_by_node_and_the_chance_flag_is_the_check_s():
    m = load("fleet.json")
    per_node = {e["node"]: e for e in m["by_node"]["per_node"]}
    per_node["node-2"].update(exceptions=60, exception_rate=0.3)
    values = dict(_samples(_metrics(m)))
    assert values['sandbox_fleet_node_rollouts{sandbox_node="node-0"}'] == 200
    assert values['sandbox_fleet_node_exception_ratio{sandbox_node="node-0"}'] == 0.05
    assert values['sandbox_fleet_node_exception_ratio{sandbox_node="node-2"}'] == 0.3
    # P(X >= 60 | 200, 5%) is ~1e-28, times 6 nodes far below 0.01; 10 of 200 at 5% is the mean
    flags = {k: v for k, v in values.items() if k.startswith("sandbox_fleet_node_beyond_chance")}
    assert flags == {f'sandbox_fleet_node_beyond_chance{{sandbox_node="node-{j}"}}': float(j == 2) for j in range(6)}


def test_nodes_under_min_rows_get_no_chance_flag_so_no_alert():
    m = load("fleet.json")
    for e in m["by_node"]["per_node"]:
        e.update(rows=20, exception_rate_rows=20, exceptions=20, exception_rate=1.0)
    names = {s.split("{")[0] for s, _ in _samples(_metrics(m))}
    assert "sandbox_fleet_node_exception_ratio" in names and "sandbox_fleet_node_beyond_chance" not in names


# --- rules ----------------------------------------------------------------------------------


def test_rules_pass_promtool_check(promtool, tmp_path):
    path = tmp_path / "rules.yml"
    path.write_text(rules_yaml(Thresholds.default()))
    res = promtool("check", "rules", str(path))
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"SUCCESS: {len(rules(Thresholds.default()))} rules found" in res.stdout


def test_one_alert_per_gate_and_severity_with_for_from_thresholds():
    t = Thresholds.default()
    rs = rules(t)
    assert len({(r.gate, r.severity) for r in rs}) == len(rs)
    # backtest_drift gates a backtest summary (check --backtest), the two limit gates a plan's lint and
    # a study of the history (docs/providers.md), none a live series: no alert
    offline = {"backtest_drift", "lifetime_below_budget", "creation_rate_saturated"}
    assert {r.gate for r in rs} == set(Thresholds.model_fields) - offline
    text = rules_yaml(t)
    # as Prometheus writes durations: for_s = 900 is 15m, 1,800 is 30m, 3,600 is 1h (before: 900s, 3600s)
    # the shipped for_s values are 600, 900, 1,800 and 3,600 s
    assert set(re.findall(r"for: (\S+)", text)) == {"10m", "15m", "30m", "1h"}
    assert "# Gates not expressed as a PromQL threshold" in text and "exception_rate_by_task" in text.split("groups:")[0]


def test_every_metric_a_rule_uses_is_one_metrics_out_writes():
    used = set(NAME.findall(rules_yaml(Thresholds.default()).split("groups:", 1)[1]))
    m = _full_summary()
    m["by_job"]["job-1"]["concurrency"] = {"cap_detected": True, "time_at_peak_s": 10.0, "span_s": 1000.0}
    m["concurrency"]["self_check"] = {"ok": True}
    recorded = copy.deepcopy(m)
    recorded["concurrency"]["configured_cap"] = 3000  # written only when the telemetry records one
    written = {s.split("{")[0] for x in (m, recorded) for s, _ in _samples(_metrics(x, load("plan.json")))}
    censored = load("plan.json")  # written only when the plan names the demand a binding cap hid
    censored["target"]["censored"] = {"cap": 3000, "touches": 5000, "demand": 3001, "demand_is_lower_bound": True}
    written |= {s.split("{")[0] for s, _ in _samples(_metrics(m, censored))}
    assert used <= written, used - written


def test_disabled_gates_have_no_rule_and_are_named(promtool, tmp_path):
    f = tmp_path / "t.toml"
    f.write_text("[duty_cycle]\nenabled = false\n[hold_tail]\nfor_s = 120\n")
    from sandbox_fleet.report.thresholds import load_thresholds

    t = load_thresholds(f)
    text = rules_yaml(t, str(f))
    assert "SandboxFleetLowDutyCycle" not in text
    assert "Disabled in the thresholds (no rule): duty_cycle" in text
    assert any(r.gate == "hold_tail" and r.for_s == 120 for r in rules(t))
    path = tmp_path / "r.yml"
    path.write_text(text)
    assert promtool("check", "rules", str(path)).returncode == 0


# --- promtool test rules ----------------------------------------------------------------------


def _unit_file(series: list[tuple[str, float]], eval_s: int, critical: set[str], warning: set[str]) -> str:
    steps = eval_s // 60 + 5
    lines = ["rule_files: [rules.yml]", "evaluation_interval: 1m", "tests:", "  - interval: 1m", "    input_series:"]
    for sel, value in series:
        lines += [f"      - series: {json.dumps(sel)}", f"        values: {json.dumps(f'{value!r}x{steps}')}"]
    lines.append("    promql_expr_test:")
    for expr, names in (
        ('group by (alertname) (ALERTS{alertstate="firing",severity="critical"})', critical),
        ('group by (alertname) (ALERTS{alertstate="firing",severity="warning"}) unless on(alertname) '
         'ALERTS{alertstate="firing",severity="critical"}', warning),
    ):
        lines += [f"      - expr: {json.dumps(expr)}", f"        eval_time: {eval_s}s", "        exp_samples:"]
        lines += [f"          - labels: {json.dumps(f'{{alertname={json.dumps(n)}}}')}\n            value: 1" for n in sorted(names)]
        if not names:
            lines[-1] += " []"
    return "\n".join(lines) + "\n"


def _variants() -> list[tuple[str, dict, dict | None]]:
    """Summaries spanning pass, warn and fail of the gates (names say what each moves)."""
    fleet, published = load("fleet.json"), load("published.json")
    out: list[tuple[str, dict, dict | None]] = [("published", published, None), ("fleet", fleet, load("plan.json"))]
    warn = copy.deepcopy(fleet)
    warn["outcomes"]["exception_rate"] = 0.15
    warn["by_model"]["model-b"] = {"rows": 50, "exception_rate": 0.9}  # small slice: warn, not fail
    warn["concurrency"].update(duty=0.3, cap_detected=True, time_at_peak_s=0.01 * fleet["span_s"], configured_cap=None,
                               time_at_cap_s=None, configured_cap_basis=None)  # one fleet cap, not the jobs' sum
    warn["tokens"]["cached_fraction"] = 0.3
    warn["rows"] = 80
    out.append(("warn", warn, None))
    fail = copy.deepcopy(fleet)
    fail["coverage"]["rejected"] = {"duplicate": 500}
    fail["coverage"]["missing_reward"] = 900
    fail["concurrency"].update(cap_detected=True, time_at_peak_s=0.2 * fleet["span_s"], configured_cap=4000,
                               time_at_cap_s=None, configured_cap_basis=None)
    fail["hold_s"]["p99"] = fail["hold_s"]["median"] * 30
    fail["outcomes"]["sandbox_hours_per_pass"] = 12.0
    fail["phases"]["environment_setup"]["share_of_hold"] = 0.4
    plan = load("plan.json")
    plan["target"]["concurrency"] = 1
    out.append(("fail", fail, plan))
    nodes = copy.deepcopy(fleet)  # fleet rate 5%; 6 nodes of 200 rollouts
    per_node = {e["node"]: e for e in nodes["by_node"]["per_node"]}
    per_node["node-2"].update(exceptions=60, exception_rate=0.3)   # beyond chance, above 25%: fail
    per_node["node-4"].update(exceptions=30, exception_rate=0.15)  # beyond chance, above 10%: warn
    out.append(("bad-nodes", nodes, None))
    unreported = copy.deepcopy(fleet)
    del unreported["tokens"]["cached"], unreported["tokens"]["cached_fraction"]
    unreported["outcomes"]["sandbox_hours_per_pass"] = None
    unreported["outcomes"]["passed"] = 0
    out.append(("unreported-cache-none-passed", unreported, None))
    signal = copy.deepcopy(fleet)  # issue 40: few groups carry signal (warn), many fake zeros (fail)
    signal["rl_groups"] = {"recorded": True, "groups": 500, "informative_share": 0.3,
                           "exceptions_scored_zero": 90, "exceptions_scored_zero_share": 0.2}
    out.append(("signal", signal, None))
    no_groups = copy.deepcopy(fleet)  # none recorded: the expected share at G gates, and fails
    no_groups["rl_groups"] = {"recorded": False, "group_size": 8, "expected_informative_share": 0.1,
                              "exceptions_scored_zero": 0, "exceptions_scored_zero_share": 0.0}
    out.append(("signal-expected", no_groups, None))
    return out


VARIANTS = ("published", "fleet", "warn", "fail", "bad-nodes", "unreported-cache-none-passed", "signal", "signal-expected")


def test_the_variants_are_the_ones_listed():
    assert tuple(v[0] for v in _variants()) == VARIANTS


@pytest.mark.parametrize("name", VARIANTS)
def test_alerts_firing_on_the_exported_metrics_are_the_check_verdicts(promtool, tmp_path, name):
    _, m, plan = next(v for v in _variants() if v[0] == name)
    t = Thresholds.default()
    results = checks_of(m, plan, t)
    alert_of = {r.gate: r.alert for r in rules(t)}
    critical = {alert_of[r.name] for r in results if r.status == "fail"}
    warning = {alert_of[r.name] for r in results if r.status == "warn"}
    assert critical or warning or name == "fleet"  # each variant but the healthy one moves some gate
    (tmp_path / "rules.yml").write_text(rules_yaml(t))
    series = _samples(metrics_of(m, plan, results, t))
    eval_s = int(max(r.for_s for r in rules(t))) + 120
    (tmp_path / "test.yml").write_text(_unit_file(series, eval_s, critical, warning))
    res = promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


def test_hand_written_unit_tests_pass(promtool, tmp_path):
    """prometheus_unit.yml: hand-chosen series, the exact alerts, labels and annotations expected."""
    (tmp_path / "rules.yml").write_text(rules_yaml(Thresholds.default()))
    (tmp_path / "unit.yml").write_text((HERE / "prometheus_unit.yml").read_text())
    res = promtool("test", "rules", "unit.yml", cwd=tmp_path)
    assert res.returncode == 0, res.stdout + res.stderr


def test_promtool_unit_test_can_fail(promtool, tmp_path):
    """The harness is not vacuous: expecting silence where an alert fires makes promtool fail."""
    (tmp_path / "rules.yml").write_text(rules_yaml(Thresholds.default()))
    (tmp_path / "test.yml").write_text(_unit_file([("sandbox_fleet_exception_ratio", 0.5)], 4000, set(), set()))
    res = promtool("test", "rules", "test.yml", cwd=tmp_path)
    assert res.returncode != 0 and "SandboxFleetExceptionRate" in res.stdout + res.stderr


# --- CLI ------------------------------------------------------------------------------------


def test_cli_writes_both_files_before_exiting_1(run_cli, tmp_path):
    summary = tmp_path / "m.json"
    summary.write_text(json.dumps(load("published.json")))
    res = run_cli("check", summary, "--metrics-out", tmp_path / "out" / "fleet.prom",
                  "--prometheus-rules", tmp_path / "out" / "rules.yml")
    assert res.code == 1
    assert (tmp_path / "out" / "fleet.prom").read_text() == _metrics(load("published.json"))
    assert (tmp_path / "out" / "rules.yml").read_text() == rules_yaml(Thresholds.default())
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["fleet.prom", "rules.yml"]  # no temp left


@pytest.mark.parametrize("bad", ['"600"', "-5", "0", "nan", "true"])
def test_for_s_not_a_positive_number_is_one_line_exit_2(run_cli, tmp_path, bad):
    summary = tmp_path / "m.json"
    summary.write_text(json.dumps(load("fleet.json")))
    th = tmp_path / "t.toml"
    th.write_text(f"[exception_rate]\nfor_s = {bad}\n")
    res = run_cli("check", summary, "--thresholds", th, "--prometheus-rules", tmp_path / "r.yml")
    assert res.code == 2
    assert len(res.err.strip().splitlines()) == 1
    assert "exception_rate.for_s" in res.err and "positive number of seconds" in res.err and str(th) in res.err
    assert not (tmp_path / "r.yml").exists()


def test_a_thresholds_path_with_a_newline_stays_in_the_header_comment(promtool, tmp_path):
    text = rules_yaml(Thresholds.default(), "t\ngroups: []\n.toml")
    assert "t\\x0agroups: []\\x0a.toml" in text
    assert [line for line in text.splitlines() if line.startswith("groups:")] == ["groups:"]
    (tmp_path / "r.yml").write_text(text)
    res = promtool("check", "rules", str(tmp_path / "r.yml"))
    assert res.returncode == 0 and f"SUCCESS: {len(rules(Thresholds.default()))} rules found" in res.stdout, res.stdout


def test_no_label_written_is_one_prometheus_reserves():
    from sandbox_fleet.report.prometheus.metrics import RESERVED_LABELS, Registry

    labels = set(re.findall(r"[{,]([a-z_]+)=", _metrics(_full_summary(), load("plan.json"))))
    assert labels == {"model", "rl_job", "sandbox_node", "field", "reason"} and not labels & RESERVED_LABELS
    with pytest.raises(ValueError, match="reserved"):
        Registry().add("x", "x", 1.0, {"job": "j1"})
    with pytest.raises(ValueError, match="reserved"):  # Kubernetes SD and node-exporter set `node`
        Registry().add("x", "x", 1.0, {"node": "n1"})


@pytest.mark.parametrize("seconds,text", [
    (900, "15m"), (3600, "1h"), (5400, "1h30m"), (600, "10m"), (86_400, "1d"), (7 * 86_400, "1w"),
    (90 * 86_400, "90d"),  # not 12w6d: weeks and years only when exact, as Prometheus writes them
    (365 * 86_400, "1y"), (1.5, "1s500ms"), (0.25, "250ms"), (0, "0s"), (3661, "1h1m1s"),
])
def test_durations_are_written_as_prometheus_writes_them(seconds, text):
    from sandbox_fleet.report.prometheus.rules import duration

    assert duration(seconds) == text


def _github_anchors(markdown: str) -> set[str]:
    """GitHub's heading anchors: lower case, punctuation other than '-' and '_' dropped, spaces to '-'."""
    out = set()
    for line in markdown.splitlines():
        if line.startswith("#") and not line.startswith("#!"):
            title = line.lstrip("#").strip().lower()
            out.add(re.sub(r"[^a-z0-9 _-]", "", title).replace(" ", "-"))
    return out


def test_every_rules_runbook_url_is_an_anchor_of_operate_md(produced):
    from sandbox_fleet.report.prometheus.serving import serving_rules
    from summaries import as_plan

    doc = (Path(__file__).resolve().parents[2] / "docs" / "operate.md").read_text()
    anchors = _github_anchors("\n".join(doc.split("```")[0::2]))  # headings outside code blocks
    plan = copy.deepcopy(produced.plan)
    plan["inference"].update(prefill_tok_s=1000.0, prefill_tok_s_cached=200.0, utilisation_target=0.8)
    plan = as_plan(plan)
    text = rules_yaml(Thresholds.default(), serving=("sandbox-fleet-serving", serving_rules(plan), "basis"))
    alerts = re.findall(r"- alert: (\w+)", text)
    urls = re.findall(r'runbook_url: "([^"]+)"', text)
    assert len(urls) == len(alerts) > 20
    for alert, url in zip(alerts, urls):
        page, anchor = url.split("#")
        assert page == "docs/operate.md" and anchor in anchors, (alert, url)
    # a base is put in front; a heading that is not there would fail (the check is not vacuous)
    assert "sandboxfleetnosuchalert" not in anchors
    based = rules_yaml(Thresholds.default(), runbook_base="https://example.org/sandbox-fleet/")
    assert 'runbook_url: "https://example.org/sandbox-fleet/docs/operate.md#sandboxfleetsmallsample"' in based


def test_grafana_dashboard_colours_are_the_shipped_thresholds_and_bytes_are_stable():
    """The dashboard's colour steps are data/checks.toml's bounds (read here with tomllib, not through
    the Thresholds model), and the same thresholds give the same bytes."""
    import json
    import tomllib
    from importlib import resources

    from sandbox_fleet.report.prometheus.grafana import dashboard_json
    from sandbox_fleet.report.thresholds import Thresholds

    shipped = tomllib.loads(resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text())
    text = dashboard_json(Thresholds.default())
    assert text == dashboard_json(Thresholds.default())
    steps = {p["title"]: [(s["color"], s["value"]) for s in p["fieldConfig"]["defaults"]["thresholds"]["steps"]]
             for p in json.loads(text)["panels"]}
    er = shipped["exception_rate"]
    assert steps["Exception rate"] == [("green", None), ("orange", er["warn_above"]), ("red", er["fail_above"])]
    duty = shipped["duty_cycle"]
    assert steps["Duty (mean / peak)"][-1] == ("green", duty["warn_below"])
    stale = shipped["telemetry_stale"]
    assert steps["Telemetry age"] == [("green", None), ("orange", stale["warn_above_s"]), ("red", stale["fail_above_s"])]
    per_pass = shipped["sandbox_hours_per_pass"]  # hours in checks.toml, seconds on the dashboard
    assert steps["Sandbox time per passing rollout"][1:] == [("orange", per_pass["warn_above"] * 3600),
                                                              ("red", per_pass["fail_above"] * 3600)]

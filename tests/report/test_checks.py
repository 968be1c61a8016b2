"""Each check on both sides of its threshold, on the published figures and on a measured healthy fleet.

The threshold cases are partial measure summaries: the figures a check reads, every other one null
(not measured), exactly as a reader of an older or sparser summary sees it; each goes through
the model (``run`` adds the envelope).
"""

from __future__ import annotations

import pytest

from producers import measure_doc
from sandbox_fleet.errors import InputError
from sandbox_fleet.plan import PlanOptions
from sandbox_fleet.report.checks import CHECKS, CheckResult, exit_code, worst_status
from sandbox_fleet.report.thresholds import Thresholds
from summaries import checks_of, plan_json


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


def run(summary: dict, plan: dict | None = None, thresholds: Thresholds | None = None) -> list[CheckResult]:
    """``run_checks`` on a partial measure summary (``summary`` holds its figures only)."""
    return checks_of(measure_doc(**summary), plan, thresholds)


def status(summary: dict, name: str, plan: dict | None = None) -> str:
    return by_name(run(summary, plan))[name].status


# --- the document's figures -----------------------------------------------------------------
EXPECTED_PUBLISHED = {
    "small_sample": "pass",            # 327,189 rows
    "prefix_cache_off": "fail",        # cached_tokens 0 on all 238,415 rows
    "exception_rate": "fail",          # 29.4% > 25% budget
    "exception_rate_by_model": "fail",  # gpt-oss-120b at 74.5%
    "exception_rate_by_job": "skip",   # no per-job figures published
    "exception_rate_by_task": "skip",  # no per-task figures published
    "exception_rate_by_node": "skip",  # no per-node figures published
    "missing_reward": "fail",          # 81,635 / 327,189 = 25.0%
    "missing_tokens": "fail",          # 88,774 = 27.1%
    "missing_turns": "fail",
    "missing_trajectory": "warn",      # 18,041 = 5.5%
    "rejected_rows": "skip",
    "cap_binding": "warn",             # 10,248 s / 1,471,279 s = 0.70% > 0.5%
    "cap_recorded": "warn",            # cap inferred from 5,000 touches, never written down
    "cap_below_configured": "skip",    # no configured cap recorded
    "duty_cycle": "warn",              # 15.6% < 50%
    "hold_tail": "warn",               # 8,845 / 1,332 = 6.6x > 5x
    "sandbox_hours_per_pass": "warn",  # 3.06 > 2
    "build_share": "skip",
    "plan_covers_peak": "skip",
    "sweep_self_check": "skip",
    "lifetime_below_budget": "skip",   # no plan made with --budgets
    "creation_rate_saturated": "skip",  # the published figures carry no start times
    "informative_groups": "skip",            # no groups published (issue 40)
    "exceptions_scored_as_rewards": "skip",
}


def test_published_figures_give_expected_statuses(published):
    results = by_name(checks_of(published))
    assert {n: r.status for n, r in results.items()} == EXPECTED_PUBLISHED


def test_published_values_are_the_documents(published):
    r = by_name(checks_of(published))
    assert r["prefix_cache_off"].value == 0.0
    assert r["exception_rate"].value == pytest.approx(0.294, abs=0.0005)
    assert r["duty_cycle"].value == pytest.approx(0.156, abs=0.0005)
    assert r["exception_rate_by_model"].value == pytest.approx(0.745)
    assert "gpt-oss-120b" in r["exception_rate_by_model"].message
    assert "Qwen3.6-27B-base" not in r["exception_rate_by_model"].message  # 5.9% is within budget
    assert r["missing_reward"].value == pytest.approx(81_635 / 327_189)
    assert r["cap_binding"].value == pytest.approx(10_248 / 1_471_279.1)
    assert r["hold_tail"].value == pytest.approx(8845 / 1332)
    assert "spot" in r["duty_cycle"].message


def test_published_exit_codes(published):
    results = checks_of(published)
    assert exit_code(results) == 1
    assert worst_status(results) == "fail"


def test_healthy_fleet_passes_everything_but_its_plateau(fleet, plan):
    # 100 always-busy slots under two jobs of cap 150 side by side (the fleet's cap: their sum, 300 while both
    # run, 150 while one does): the fleet sits at 100 for most of its span,
    # which cap_below_configured names (issue 10); every other check passes.
    results = by_name(checks_of(fleet, plan))
    below = results.pop("cap_below_configured")
    assert results.pop("lifetime_below_budget").status == "skip"  # the plan was made without --budgets
    assert {r.status for r in results.values()} == {"pass"}
    assert below.status == "warn" and "fleet: effective cap 100 below the configured 300" in below.message
    assert fleet["concurrency"]["effective_cap"] == 100
    assert exit_code(list(results.values()), strict=True) == 0


def test_empty_summary_skips_everything_without_crashing():
    results = run({})
    assert [r.name for r in results] == [c.__name__ for c in CHECKS]
    assert {r.status for r in results} == {"skip"}
    assert all(r.message.startswith("not measured") for r in results)
    assert exit_code(results, strict=True) == 0


def test_wrong_types_are_refused_naming_the_key():
    for garbage, key in (({"rows": "many"}, "rows"), ({"concurrency": [1, 2]}, "concurrency"),
                         ({"by_model": {"m": "x"}}, "by_model.m"), ({"coverage": 7}, "coverage")):
        with pytest.raises(InputError, match=f"key {key}:") as err:
            run(garbage)
        assert "\n" not in str(err.value)


# --- both sides of every threshold (defaults from data/checks.toml) --------------------------
def test_small_sample():
    assert status({"rows": 99}, "small_sample") == "warn"
    assert status({"rows": 100}, "small_sample") == "pass"


def test_prefix_cache_zero_fails_and_low_fraction_warns():
    base = {"tokens": {"rows": 10, "input": 1000}}
    assert status({"tokens": {**base["tokens"], "cached": 0}}, "prefix_cache_off") == "fail"
    assert status({"tokens": {**base["tokens"], "cached": 499}}, "prefix_cache_off") == "warn"  # 49.9%
    assert status({"tokens": {**base["tokens"], "cached": 500}}, "prefix_cache_off") == "pass"  # 50%
    # cached_fraction, when given, is used as is
    assert status({"tokens": {**base["tokens"], "cached": 1, "cached_fraction": 0.9}}, "prefix_cache_off") == "pass"


def test_prefix_cache_unreported_is_configurable():
    summary = {"tokens": {"rows": 10, "input": 1000, "cached": None, "cached_fraction": None}}
    r = by_name(run(summary))["prefix_cache_off"]
    assert r.status == "fail" and "not reported" in r.message
    t = Thresholds.default().model_copy(deep=True)
    t.prefix_cache_off.unreported = "warn"
    assert by_name(run(summary, thresholds=t))["prefix_cache_off"].status == "warn"


def test_prefix_cache_skips_without_input_tokens():
    assert status({"tokens": {"rows": 0, "input": None, "cached": 0}}, "prefix_cache_off") == "skip"


@pytest.mark.parametrize("rate,expected", [(0.10, "pass"), (0.1001, "warn"), (0.25, "warn"), (0.2501, "fail")])
def test_exception_rate(rate, expected):
    assert status({"outcomes": {"exception_rate": rate}}, "exception_rate") == expected


def test_exception_rate_by_model_names_the_offender():
    summary = {"by_model": {
        "good": {"rows": 1000, "exception_rate": 0.05},
        "bad": {"rows": 1000, "exception_rate": 0.30},
    }}
    r = by_name(run(summary))["exception_rate_by_model"]
    assert r.status == "fail" and r.value == 0.30 and r.threshold == 0.25
    assert "bad 30.0%" in r.message and "good" not in r.message
    summary["by_model"]["bad"]["exception_rate"] = 0.2
    assert status(summary, "exception_rate_by_model") == "warn"
    summary["by_model"]["bad"]["exception_rate"] = 0.09
    assert status(summary, "exception_rate_by_model") == "pass"


def test_small_slice_warns_instead_of_failing():
    summary = {"by_model": {"tiny": {"rows": 99, "exception_rate": 0.9}}}
    assert status(summary, "exception_rate_by_model") == "warn"
    summary["by_model"]["tiny"]["rows"] = 100
    assert status(summary, "exception_rate_by_model") == "fail"


def test_exception_rate_by_job():
    summary = {"by_job": {"j1": {"rows": 500, "exception_rate": 0.26}, "j2": {"rows": 500, "exception_rate": 0.0}}}
    assert status(summary, "exception_rate_by_job") == "fail"
    summary["by_job"]["j1"]["exception_rate"] = 0.01
    assert status(summary, "exception_rate_by_job") == "pass"


@pytest.mark.parametrize("field,warn_at,fail_at", [
    ("reward", 0.01, 0.20), ("tokens", 0.01, 0.20), ("turns", 0.01, 0.20), ("trajectory", 0.01, 0.10)])
def test_missing_fields(field, warn_at, fail_at):
    rows = 10_000
    def st(count: int) -> str:
        return status({"rows": rows, "coverage": {f"missing_{field}": count}}, f"missing_{field}")
    assert st(int(warn_at * rows)) == "pass"
    assert st(int(warn_at * rows) + 1) == "warn"
    assert st(int(fail_at * rows)) == "warn"
    assert st(int(fail_at * rows) + 1) == "fail"


def test_rejected_rows_share_is_of_all_input_rows():
    # 6 rejected of 100 input rows = 6% > 5%: fail; 5 of 100 = 5%: warn; none: pass.
    assert status({"rows": 94, "coverage": {"rejected": {"duplicate id": 4, "unparsable time": 2}}}, "rejected_rows") == "fail"
    r = by_name(run({"rows": 95, "coverage": {"rejected": {"duplicate id": 5}}}))["rejected_rows"]
    assert r.status == "warn" and r.value == pytest.approx(0.05) and "duplicate id 5" in r.message
    assert status({"rows": 95, "coverage": {"rejected": {}}}, "rejected_rows") == "pass"


def test_cap_binding():
    def summary(at_peak: float, detected: bool = True) -> dict:
        return {"span_s": 10_000.0, "concurrency": {"peak": 50, "touches": 20, "cap_detected": detected,
                                                    "time_at_peak_s": at_peak}}
    assert status(summary(50.0), "cap_binding") == "pass"    # 0.5%
    assert status(summary(51.0), "cap_binding") == "warn"    # 0.51%
    assert status(summary(501.0), "cap_binding") == "fail"   # 5.01%
    assert status(summary(9000.0, detected=False), "cap_binding") == "pass"  # a chance maximum is no cap
    assert status({"concurrency": {"peak": 3}}, "cap_binding") == "skip"


def test_cap_binding_looks_at_each_job():
    summary = {"span_s": 10_000.0,
               "concurrency": {"peak": 80, "cap_detected": False, "time_at_peak_s": 1.0},
               "by_job": {"a": {"concurrency": {"peak": 40, "cap_detected": True, "time_at_peak_s": 600.0,
                                                "span_s": 5_000.0, "touches": 30}}}}
    r = by_name(run(summary))["cap_binding"]
    assert r.status == "fail" and r.value == pytest.approx(0.12) and "job a" in r.message


def test_cap_recorded():
    assert status({"concurrency": {"peak": 10, "cap_detected": True, "configured_cap": None}}, "cap_recorded") == "warn"
    assert status({"concurrency": {"peak": 10, "cap_detected": True, "configured_cap": 10}}, "cap_recorded") == "pass"
    assert status({"concurrency": {"peak": 10, "cap_detected": False}}, "cap_recorded") == "pass"


def test_duty_cycle_from_duty_or_mean_and_peak():
    assert status({"concurrency": {"duty": 0.49}}, "duty_cycle") == "warn"
    assert status({"concurrency": {"duty": 0.5}}, "duty_cycle") == "pass"
    r = by_name(run({"concurrency": {"mean": 30.0, "peak": 100}}))["duty_cycle"]
    assert r.status == "warn" and r.value == pytest.approx(0.3)


def test_hold_tail():
    assert status({"hold_s": {"median": 100.0, "p99": 500.0}}, "hold_tail") == "pass"   # 5x
    assert status({"hold_s": {"median": 100.0, "p99": 501.0}}, "hold_tail") == "warn"
    assert status({"hold_s": {"median": 100.0, "p99": 2001.0}}, "hold_tail") == "fail"  # 20.01x
    assert status({"hold_s": {"median": 0.0, "p99": 5.0}}, "hold_tail") == "skip"


def test_sandbox_hours_per_pass():
    assert status({"outcomes": {"sandbox_hours_per_pass": 2.0}}, "sandbox_hours_per_pass") == "pass"
    assert status({"outcomes": {"sandbox_hours_per_pass": 2.01}}, "sandbox_hours_per_pass") == "warn"
    assert status({"outcomes": {"sandbox_hours_per_pass": 10.01}}, "sandbox_hours_per_pass") == "fail"
    # nothing passed: per-pass cost is undefined, and that is a failure
    assert status({"outcomes": {"sandbox_hours_per_pass": None, "passed": 0, "rewarded": 50}},
                  "sandbox_hours_per_pass") == "fail"


def test_build_share():
    assert status({"phases": {"environment_setup": {"share_of_hold": 0.26}}}, "build_share") == "warn"
    assert status({"phases": {"environment_setup": {"share_of_hold": 0.25}}}, "build_share") == "pass"


def test_plan_covers_peak(published):
    m = {"concurrency": {"mean": 100.0, "peak": 600}}
    plans = {n: plan_json(published, PlanOptions(concurrency=n)) for n in (600, 599, 99)}
    assert status(m, "plan_covers_peak", plans[600]) == "pass"
    assert status(m, "plan_covers_peak", plans[599]) == "warn"
    assert status(m, "plan_covers_peak", plans[99]) == "fail"
    assert status(m, "plan_covers_peak", None) == "skip"


def test_sweep_self_check():
    # measure writes the verdict and both sides; without the verdict they are compared here
    assert status({"sandbox_s": 1000.0, "concurrency": {"self_check": {"area_s": 1000.0}}}, "sweep_self_check") == "pass"
    assert status({"sandbox_s": 1000.0, "concurrency": {"self_check": {"area_s": 1000.5}}}, "sweep_self_check") == "fail"
    assert status({"concurrency": {"self_check": {"area_s": 10.0, "sum_of_holds_s": 10.0}}}, "sweep_self_check") == "pass"
    assert status({"concurrency": {"self_check": {"ok": False}}}, "sweep_self_check") == "fail"
    assert status({"concurrency": {"self_check": {"ok": True}}}, "sweep_self_check") == "pass"
    assert status({"sandbox_s": 1000.0}, "sweep_self_check") == "skip"


def test_disabled_check_skips():
    t = Thresholds.default().model_copy(deep=True)
    t.exception_rate.enabled = False
    r = by_name(run({"outcomes": {"exception_rate": 0.9}}, thresholds=t))["exception_rate"]
    assert r.status == "skip" and "disabled" in r.message


def test_exit_code_strict():
    warn = [CheckResult("a", "warn", 1.0, 0.5, "")]
    assert exit_code(warn) == 0 and exit_code(warn, strict=True) == 1
    assert exit_code([CheckResult("a", "skip", None, None, "")], strict=True) == 0
    assert exit_code([CheckResult("a", "fail", None, None, "")]) == 1


def test_to_dict_round_trip():
    r = CheckResult("x", "pass", 1.5, 2.0, "ok")
    assert r.to_dict() == {"name": "x", "status": "pass", "value": 1.5, "threshold": 2.0, "message": "ok"}


def test_unknown_trajectory_is_not_a_pass():
    summary = {"rows": 12, "coverage": {"missing_trajectory": 0, "unknown_trajectory": 12}}
    assert status(summary, "missing_trajectory") == "skip"


def test_job_advice_differs_from_model_advice():
    summary = {"by_job": {"j": {"rows": 500, "exception_rate": 0.5}}}
    assert "bad image" in by_name(run(summary))["exception_rate_by_job"].message


# --- exception_rate_by_task (defaults: warn at or above 0.5, fail at or above 0.9, min_rows 3) ---
def _task(task_id: str, exceptions: int, rows: int, kind: str | None = "DaytonaError", count: int | None = None) -> dict:
    return {"task_id": task_id, "rows": rows, "exceptions": exceptions, "exception_rate": exceptions / rows,
            "exception_rate_rows": rows, "top_exception_type": kind,
            "top_exception_count": exceptions if count is None else count, "exception_sandbox_hours": 1.0}


def _by_task(*tasks: dict, max_rate: float | None = None, min_rows: int = 3) -> dict:
    return {"by_task": {"tasks": 100, "min_rows": min_rows, "broken_rate": 0.5, "tasks_judged": 90,
                        "tasks_broken": len(tasks), "max_exception_rate": max_rate,
                        "worst": list(tasks), "highest_rate": [],
                        "tasks_all_exceptions": 0, "tasks_all_exceptions_share": 0.0}}


@pytest.mark.parametrize("exceptions,rows,expected", [
    (9, 10, "fail"),   # 0.9: at the fail rate is a fail
    (8, 9, "warn"),    # 0.889
    (5, 10, "warn"),   # 0.5: at the warn rate is a warn
    (4, 9, "pass"),    # 0.444
])
def test_exception_rate_by_task_both_sides_of_each_threshold(exceptions, rows, expected):
    summary = _by_task(_task("t1", exceptions, rows), max_rate=exceptions / rows)
    r = by_name(run(summary))["exception_rate_by_task"]
    assert r.status == expected and r.value == exceptions / rows
    assert r.threshold == {"fail": 0.9, "warn": 0.5, "pass": 0.5}[expected]


def test_exception_rate_by_task_min_rows():
    # 2 of 2 raised: too few rollouts to judge, whatever the rate
    summary = _by_task(_task("tiny", 2, 2), max_rate=None)
    assert status(summary, "exception_rate_by_task") == "skip"
    summary = _by_task(_task("tiny", 2, 2), _task("ok", 1, 4, count=1), max_rate=0.25)
    r = by_name(run(summary))["exception_rate_by_task"]
    assert r.status == "pass" and r.value == 0.25
    assert status(_by_task(_task("three", 3, 3), max_rate=1.0), "exception_rate_by_task") == "fail"


def test_exception_rate_by_task_names_the_worst_five_with_their_exception_type():
    tasks = [_task(f"t{i}", 10, 10, kind="ImagePullError") for i in range(6, 0, -1)]  # t6..t1, all 100%
    tasks.append(_task("half", 30, 60, kind="AgentTimeoutError", count=20))            # most exceptions
    r = by_name(run(_by_task(*tasks, max_rate=1.0)))["exception_rate_by_task"]
    assert r.status == "fail" and r.value == 1.0 and r.threshold == 0.9
    # highest rate first, ties by task_id; only 5 named
    assert "worst: t1 100.0% (10/10, mostly ImagePullError (10)); t2 100.0%" in r.message
    assert "t5 100.0%" in r.message and "t6" not in r.message and "half" not in r.message
    assert "6 of 90 tasks" not in r.message and "7 of 90 tasks raise on 50.0% or more" in r.message


def test_exception_rate_by_task_reads_highest_rate_and_the_summary_maximum():
    # The broken task is outside 'worst' (few exceptions) but in 'highest_rate'.
    summary = _by_task(_task("busy", 40, 70, kind="AgentTimeoutError"), max_rate=1.0)
    summary["by_task"]["highest_rate"] = [_task("bad-image", 4, 4, kind="ImagePullError")]
    r = by_name(run(summary))["exception_rate_by_task"]
    assert r.status == "fail" and "bad-image 100.0% (4/4, mostly ImagePullError (4))" in r.message
    assert r.message.index("bad-image") < r.message.index("busy")


def test_exception_rate_by_task_ignores_what_the_fleet_rate_explains_by_chance():
    # At a 29% fleet rate, 3 of 3 raising has chance 0.29**3 = 0.0244 per task; over 37,000 tasks
    # judged that is expected ~900 times, so it proves nothing about the task.
    summary = _by_task(_task("lucky", 3, 3), max_rate=1.0)
    summary["by_task"]["tasks_judged"] = 37_000
    summary["outcomes"] = {"exception_rate": 0.29}
    r = by_name(run(summary))["exception_rate_by_task"]
    assert r.status == "pass" and "by chance" in r.message
    # no rate was held to the 50% threshold, so none is shown (was 100% beside PASS); the raw 3/3 is named
    assert r.value is None and r.threshold == 0.5 and "lucky 100.0% (3/3" in r.message
    # 40 of 40: 0.29**40 ~ 1.4e-22, times 37,000 tasks, is far below the family-wise 0.01.
    summary["by_task"]["worst"] = [_task("broken", 40, 40), _task("lucky", 3, 3)]
    r = by_name(run(summary))["exception_rate_by_task"]
    assert r.status == "fail" and "broken" in r.message and "lucky" not in r.message
    # 10 of 10 over 90 tasks: 0.29**10 * 90 = 3.8e-4 < 0.01 (fail); over 37,000 tasks: 0.16 (pass).
    summary["by_task"]["worst"] = [_task("ten", 10, 10)]
    summary["by_task"]["tasks_judged"] = 90
    assert status(summary, "exception_rate_by_task") == "fail"
    summary["by_task"]["tasks_judged"] = 37_000
    assert status(summary, "exception_rate_by_task") == "pass"


def test_binomial_tail_matches_enumeration():
    from sandbox_fleet.report.checks import binomial_tail

    # n = 5, p = 0.3: P(X >= 2) = 1 - 0.7**5 - 5 * 0.3 * 0.7**4 = 0.47178
    assert binomial_tail(2, 5, 0.3) == pytest.approx(0.47178)
    assert binomial_tail(0, 5, 0.3) == 1.0 and binomial_tail(5, 5, 0.3) == pytest.approx(0.3**5)
    assert binomial_tail(1, 4, 0.0) == 0.0 and binomial_tail(4, 4, 1.0) == 1.0


def test_exception_rate_by_task_skips_without_by_task():
    assert status({"by_model": {"m": {"rows": 10, "exception_rate": 0.1}}}, "exception_rate_by_task") == "skip"
    assert status({"by_task": None}, "exception_rate_by_task") == "skip"


def test_exception_rate_by_task_thresholds_are_configurable():
    t = Thresholds.default().model_copy(deep=True)
    t.exception_rate_by_task.fail_at_or_above = 1.0
    summary = _by_task(_task("t", 9, 10), max_rate=0.9)
    assert by_name(run(summary, thresholds=t))["exception_rate_by_task"].status == "warn"
    t.exception_rate_by_task.min_rows = 11
    r = by_name(run(summary, thresholds=t))["exception_rate_by_task"]
    assert r.status == "skip" and "11 rollouts" in r.message


def test_cap_below_configured_without_a_plateau_bound_is_skipped():
    # A loaded thresholds file always has cap_binding.warn_above (the defaults set it, TOML has no
    # null); a hand-built Thresholds may leave it unset. Then no plateau can be called: the check
    # skips and no alert rule is written, where both used to compare with None (TypeError).
    from sandbox_fleet.report.prometheus import rules_yaml

    t = Thresholds.default()
    unset = t.model_copy(update={"cap_binding": t.cap_binding.model_copy(update={"warn_above": None})})
    plateau = {"span_s": 100.0, "concurrency": {"configured_cap": 20, "peak": 4, "time_at_peak_s": 92.0}}
    r = by_name(run(plateau, thresholds=unset))["cap_below_configured"]
    assert r.status == "skip" and "cap_binding.warn_above" in r.message
    assert by_name(run(plateau, thresholds=t))["cap_below_configured"].status == "warn"
    assert "SandboxFleetCapBelowConfigured" not in rules_yaml(unset)
    assert "SandboxFleetCapBelowConfigured" in rules_yaml(t)


def test_cap_below_configured_names_the_effective_cap():
    # peak 4 under a configured 20, at the peak 92 s of a 100 s span: 92% >= 0.5% -> warn
    plateau = {"span_s": 100.0, "concurrency": {"configured_cap": 20, "peak": 4, "time_at_peak_s": 92.0}}
    r = by_name(run(plateau))["cap_below_configured"]
    assert r.status == "warn" and r.value == 0.92
    assert "effective cap 4 below the configured 20" in r.message
    # the peak reached the cap: no plateau below it
    at_cap = {"span_s": 100.0, "concurrency": {"configured_cap": 4, "peak": 4, "time_at_peak_s": 92.0}}
    assert status(at_cap, "cap_below_configured") == "pass"
    # a chance maximum: 0.1 s of 100 s = 0.1% < 0.5%
    brief = {"span_s": 100.0, "concurrency": {"configured_cap": 20, "peak": 4, "time_at_peak_s": 0.1}}
    assert status(brief, "cap_below_configured") == "pass"
    # no configured cap anywhere: nothing to be below
    assert status({"span_s": 100.0, "concurrency": {"peak": 4, "time_at_peak_s": 92.0}}, "cap_below_configured") == "skip"
    # a job plateaus even when the fleet does not: 10 s at 3 of its 50 s span under its configured 8
    jobs = {"span_s": 100.0, "concurrency": {"configured_cap": 20, "peak": 20, "time_at_peak_s": 1.0},
            "by_job": {"j": {"concurrency": {"span_s": 50.0, "configured_cap": 8, "peak": 3, "time_at_peak_s": 10.0}}}}
    r = by_name(run(jobs))["cap_below_configured"]
    assert r.status == "warn" and r.value == 0.2 and "job j: effective cap 3 below the configured 8" in r.message

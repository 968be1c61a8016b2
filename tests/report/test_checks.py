"""Each check on hand-made summaries on both sides of its threshold, and on the published figures."""

from __future__ import annotations

import pytest

from sandbox_fleet.report.checks import CHECKS, CheckResult, exit_code, run_checks, worst_status
from sandbox_fleet.report.thresholds import Thresholds


def by_name(results: list[CheckResult]) -> dict[str, CheckResult]:
    return {r.name: r for r in results}


def status(summary: dict, name: str, plan: dict | None = None) -> str:
    return by_name(run_checks(summary, plan))[name].status


# --- the document's figures -----------------------------------------------------------------
EXPECTED_PUBLISHED = {
    "small_sample": "pass",            # 327,189 rows
    "prefix_cache_off": "fail",        # cached_tokens 0 on all 238,415 rows
    "exception_rate": "fail",          # 29.4% > 25% budget
    "exception_rate_by_model": "fail",  # gpt-oss-120b at 74.5%
    "exception_rate_by_job": "skip",   # no per-job figures published
    "missing_reward": "fail",          # 81,635 / 327,189 = 25.0%
    "missing_tokens": "fail",          # 88,774 = 27.1%
    "missing_turns": "fail",
    "missing_trajectory": "warn",      # 18,041 = 5.5%
    "rejected_rows": "skip",
    "cap_binding": "warn",             # 10,248 s / 1,471,279 s = 0.70% > 0.5%
    "cap_recorded": "warn",            # cap inferred from 5,000 touches, never written down
    "duty_cycle": "warn",              # 15.6% < 50%
    "hold_tail": "warn",               # 8,845 / 1,332 = 6.6x > 5x
    "sandbox_hours_per_pass": "warn",  # 3.06 > 2
    "build_share": "skip",
    "plan_covers_peak": "skip",
    "sweep_self_check": "skip",
}


def test_published_figures_give_expected_statuses(published):
    results = by_name(run_checks(published))
    assert {n: r.status for n, r in results.items()} == EXPECTED_PUBLISHED


def test_published_values_are_the_documents(published):
    r = by_name(run_checks(published))
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
    results = run_checks(published)
    assert exit_code(results) == 1
    assert worst_status(results) == "fail"


def test_healthy_fleet_passes_everything(fleet, plan):
    results = run_checks(fleet, plan)
    assert {r.status for r in results} == {"pass"}
    assert exit_code(results, strict=True) == 0


def test_empty_summary_skips_everything_without_crashing():
    results = run_checks({})
    assert [r.name for r in results] == [c.__name__ for c in CHECKS]
    assert {r.status for r in results} == {"skip"}
    assert all(r.message.startswith("not measured") for r in results)
    assert exit_code(results, strict=True) == 0


def test_wrong_types_are_not_measured():
    garbage = {"rows": "many", "concurrency": [1, 2], "hold_s": {"median": True, "p99": None},
               "outcomes": {"exception_rate": "0.3"}, "by_model": {"m": "x"}, "coverage": 7}
    assert {r.status for r in run_checks(garbage)} == {"skip"}


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
    r = by_name(run_checks(summary))["prefix_cache_off"]
    assert r.status == "fail" and "not reported" in r.message
    t = Thresholds.default().model_copy(deep=True)
    t.prefix_cache_off.unreported = "warn"
    assert by_name(run_checks(summary, thresholds=t))["prefix_cache_off"].status == "warn"


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
    r = by_name(run_checks(summary))["exception_rate_by_model"]
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
    r = by_name(run_checks({"rows": 95, "coverage": {"rejected": {"duplicate id": 5}}}))["rejected_rows"]
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
    r = by_name(run_checks(summary))["cap_binding"]
    assert r.status == "fail" and r.value == pytest.approx(0.12) and "job a" in r.message


def test_cap_recorded():
    assert status({"concurrency": {"peak": 10, "cap_detected": True, "configured_cap": None}}, "cap_recorded") == "warn"
    assert status({"concurrency": {"peak": 10, "cap_detected": True, "configured_cap": 10}}, "cap_recorded") == "pass"
    assert status({"concurrency": {"peak": 10, "cap_detected": False}}, "cap_recorded") == "pass"


def test_duty_cycle_from_duty_or_mean_and_peak():
    assert status({"concurrency": {"duty": 0.49}}, "duty_cycle") == "warn"
    assert status({"concurrency": {"duty": 0.5}}, "duty_cycle") == "pass"
    r = by_name(run_checks({"concurrency": {"mean": 30.0, "peak": 100}}))["duty_cycle"]
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


def test_plan_covers_peak():
    m = {"concurrency": {"mean": 100.0, "peak": 600}}
    assert status(m, "plan_covers_peak", {"target": {"concurrency": 600}}) == "pass"
    assert status(m, "plan_covers_peak", {"target": {"concurrency": 599}}) == "warn"
    assert status(m, "plan_covers_peak", {"target": {"concurrency": 99}}) == "fail"
    assert status(m, "plan_covers_peak", None) == "skip"


def test_sweep_self_check():
    assert status({"sandbox_s": 1000.0, "concurrency": {"area_s": 1000.0}}, "sweep_self_check") == "pass"
    assert status({"sandbox_s": 1000.0, "concurrency": {"area_s": 1000.5}}, "sweep_self_check") == "fail"
    assert status({"concurrency": {"self_check": {"ok": False}}}, "sweep_self_check") == "fail"
    assert status({"concurrency": {"self_check": True}}, "sweep_self_check") == "pass"


def test_disabled_check_skips():
    t = Thresholds.default().model_copy(deep=True)
    t.exception_rate.enabled = False
    r = by_name(run_checks({"outcomes": {"exception_rate": 0.9}}, thresholds=t))["exception_rate"]
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
    assert "bad image" in by_name(run_checks(summary))["exception_rate_by_job"].message

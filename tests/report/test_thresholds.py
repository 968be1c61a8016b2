"""Threshold loading: shipped defaults, partial overrides, and one-line errors for bad files."""

from __future__ import annotations

import tomllib
from importlib import resources

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.report.checks import CHECKS
from sandbox_fleet.report.thresholds import Thresholds, load_thresholds


def test_defaults_cover_every_check_and_nothing_else():
    table = tomllib.loads(resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text())
    # telemetry_stale and metrics_absent are the alert-only gates (check --prometheus-rules); check reads data time.
    # backtest_drift runs only with check --backtest (it reads a backtest summary, not the measure one).
    assert set(table) == {c.__name__ for c in CHECKS} | {"telemetry_stale", "metrics_absent", "backtest_drift"} == set(
        Thresholds.model_fields)


def test_every_gate_has_a_positive_for_s():
    t = Thresholds.default()
    assert all(getattr(t, name).for_s > 0 for name in Thresholds.model_fields)


def test_default_values_match_the_shipped_file():
    t = Thresholds.default()
    assert t.small_sample.min_rows == 100
    assert t.exception_rate.fail_above == 0.25
    assert t.duty_cycle.warn_below == 0.5
    assert t.prefix_cache_off.unreported == "fail"


def _typed(model) -> object:
    """A model's values with their types (1 and 1.0 differ), nested models by class name."""
    from pydantic import BaseModel

    return {name: (type(model).__name__, _typed(v)) if isinstance(v, BaseModel) else (type(v).__name__, v)
            for name, v in model} | {"__set__": sorted(model.model_fields_set)}


def test_the_unvalidated_defaults_are_what_validating_the_shipped_file_gives():
    # load_thresholds(None) skips the validator for the shipped file: it must equal a full validation
    # of that file, value for value and type for type (the file's 900 becomes 900.0 either way)
    table = tomllib.loads(resources.files("sandbox_fleet").joinpath("data/checks.toml").read_text())
    validated = Thresholds.model_validate(table)
    constructed = load_thresholds(None)
    assert _typed(constructed) == _typed(validated)
    assert repr(constructed) == repr(validated)
    assert constructed.telemetry_stale.warn_above_s == 3600.0 and type(constructed.small_sample.for_s) is float


def test_override_one_key_keeps_the_rest(tmp_path):
    f = tmp_path / "t.toml"
    f.write_text("[exception_rate]\nfail_above = 0.4\n\n[duty_cycle]\nenabled = false\n")
    t = load_thresholds(f)
    assert t.exception_rate.fail_above == 0.4
    assert t.exception_rate.warn_above == 0.10  # default kept
    assert t.duty_cycle.enabled is False and t.duty_cycle.warn_below == 0.5


@pytest.mark.parametrize("text,needle", [
    ("[exception_rate]\nfail_abov = 0.4\n", "unknown key 'exception_rate.fail_abov'"),
    ("[no_such_check]\nx = 1\n", "unknown key 'no_such_check'"),
    ("[exception_rate]\nfail_above = \"high\"\n", "exception_rate.fail_above"),
    ("[exception_rate]\nwarn_above = 0.5\nfail_above = 0.3\n", "warn_above must not exceed fail_above"),
    ("[prefix_cache_off]\nunreported = \"maybe\"\n", "prefix_cache_off.unreported"),
    ("exception_rate = 0.3\n", "exception_rate"),
    ("[exception_rate\n", "not valid TOML"),
])
def test_bad_files_are_one_line_input_errors(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(InputError) as err:
        load_thresholds(f)
    msg = str(err.value)
    assert needle in msg and str(f) in msg and "\n" not in msg


def test_missing_file(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_thresholds(tmp_path / "nope.toml")


def test_exception_rate_by_task_defaults():
    t = Thresholds.default().exception_rate_by_task
    assert (t.warn_at_or_above, t.fail_at_or_above, t.min_rows) == (0.5, 0.9, 3)


@pytest.mark.parametrize("text,needle", [
    ("warn_at_or_above = 0.95\n", "warn_at_or_above must not exceed fail_at_or_above"),
    ("fail_at_or_above = 1.5\n", "exception_rate_by_task.fail_at_or_above"),
    ("warn_at_or_above = -0.1\n", "exception_rate_by_task.warn_at_or_above"),
    ("min_rows = 0\n", "exception_rate_by_task.min_rows"),
    ("warn_above = 0.5\n", "unknown key 'exception_rate_by_task.warn_above'"),
])
def test_exception_rate_by_task_is_validated(tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text("[exception_rate_by_task]\n" + text)
    with pytest.raises(InputError) as err:
        load_thresholds(f)
    assert needle in str(err.value) and "\n" not in str(err.value)


def test_exception_rate_by_node_defaults():
    t = Thresholds.default().exception_rate_by_node
    assert (t.warn_above, t.fail_above, t.min_rows, t.max_chance, t.for_s) == (0.10, 0.25, 30, 0.01, 900)


@pytest.mark.parametrize("text,needle", [
    ("warn_above = 0.3\n", "warn_above must not exceed fail_above"),
    ("max_chance = 0\n", "exception_rate_by_node.max_chance"),
    ("max_chance = 1.5\n", "exception_rate_by_node.max_chance"),
    ("min_rows = 0\n", "exception_rate_by_node.min_rows"),
    ("warn_at_or_above = 0.5\n", "unknown key 'exception_rate_by_node.warn_at_or_above'"),
])
def test_exception_rate_by_node_is_validated_one_line_exit_2(run_cli, tmp_path, text, needle):
    f = tmp_path / "bad.toml"
    f.write_text("[exception_rate_by_node]\n" + text)
    with pytest.raises(InputError) as err:
        load_thresholds(f)
    assert needle in str(err.value) and "\n" not in str(err.value)
    summary = tmp_path / "m.json"
    summary.write_text('{"schema_version": 5, "kind": "measure"}')
    res = run_cli("check", summary, "--thresholds", f)
    assert res.code == 2 and needle in res.err and len(res.err.strip().splitlines()) == 1

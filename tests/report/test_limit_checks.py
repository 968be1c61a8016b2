"""The provider-limit gates: ``lifetime_below_budget`` and ``creation_rate_saturated``.

Built end to end: a history simulated with a known creation limit, measured, planned with a budgets
file made from each failure shape of the lifetime lint, then checked; the ramp band against a
ramp share hand-computed from the closed form.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from tests.measure.helpers import telemetry

from sandbox_fleet.measure import measure_telemetry
from sandbox_fleet.plan import PlanOptions, make_plan
from sandbox_fleet.plan.model import CreationRampFit, PlanLimits, ProviderFit
from sandbox_fleet.report.checks import run_checks


def _history(limited: bool):
    """20 steps of 400 released every 300 s; with ``limited``, created at 5/s (burst 5) as E2B Pro does."""
    release = np.repeat(np.arange(20) * 300.0, 400)
    if limited:
        k = np.tile(np.arange(1, 401), 20)
        start = release + np.maximum(0.0, (k - 5) / 5.0)  # the bucket's k-th start, each step from full
    else:
        start = release + np.random.default_rng(1).uniform(0, 0.01, release.size)
    hold = np.random.default_rng(2).lognormal(np.log(100.0), 0.6, release.size)
    return measure_telemetry(telemetry(start, start + hold, has_exception=[False] * release.size,
                                       reward=[1.0] * release.size))


@pytest.fixture(scope="module")
def limited():
    return _history(True)


@pytest.fixture(scope="module")
def free():
    return _history(False)


def _gate(m, plan, name):
    return next(r for r in run_checks(m, plan) if r.name == name)


def _budgets(tmp_path: Path, text: str) -> str:
    f = tmp_path / "budgets.toml"
    f.write_text(text, encoding="utf-8")
    return str(f)


SHAPES = {
    "timeout_equals_lifetime": "lifetime_s = 1800\n[phases]\nstart = 30\nagent = 1800\n",
    "boot_outside_rollout_timeout": "lifetime_s = 7200\nrollout_timeout_s = 1800\n[phases]\ncreate = 10\nstart = 299\nagent = 1800\n",
    "verifier_past_lifetime": "lifetime_s = 2000\n[phases]\nstart = 30\nbuild = 100\nagent = 1800\nverifier = 300\n",
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_each_failure_shape_fails_the_lifetime_gate(free, tmp_path, shape):
    plan = make_plan(free, PlanOptions(budgets_file=_budgets(tmp_path, SHAPES[shape])))
    r = _gate(free, plan, "lifetime_below_budget")
    assert r.status == "fail" and shape in r.message


def test_budgets_that_fit_pass_and_headroom_alone_warns(free, tmp_path):
    ok = make_plan(free, PlanOptions(budgets_file=_budgets(tmp_path, "lifetime_s = 3600\n[phases]\nstart = 30\nagent = 1800\n")))
    r = _gate(free, ok, "lifetime_below_budget")
    assert r.status == "pass" and r.value == pytest.approx(1830 * 1.1 / 3600)
    tight = make_plan(free, PlanOptions(budgets_file=_budgets(tmp_path, "lifetime_s = 2000\n[phases]\nagent = 1900\n")))
    assert _gate(free, tight, "lifetime_below_budget").status == "warn"
    assert _gate(free, make_plan(free), "lifetime_below_budget").status == "skip"


def test_the_provider_lifetime_stands_in_when_the_file_has_none(free, tmp_path):
    # E2B Hobby: 1 h at most; an agent budget of 1 h reaches it.
    plan = make_plan(free, PlanOptions(rent_providers=["e2b-hobby"],
                                       budgets_file=_budgets(tmp_path, "[phases]\nstart = 30\nagent = 3600\n")))
    assert plan.limits.lifetime.lifetime_s == 3600 and "e2b-hobby" in plan.limits.lifetime.lifetime_source
    assert _gate(free, plan, "lifetime_below_budget").status == "fail"


def test_a_measured_creation_ceiling_warns(limited, free):
    assert limited.limits.creation.detected is True
    assert limited.limits.creation.rate_per_s == pytest.approx(5.0, rel=0.05)
    r = _gate(limited, None, "creation_rate_saturated")
    assert r.status == "warn" and "creation ceiling" in r.message
    assert _gate(free, None, "creation_rate_saturated").status == "pass"


def _with_ramp(m, share_of_step: float):
    plan = make_plan(m)
    step = 1000.0
    bound = 2 * share_of_step * step
    fit = ProviderFit(provider="e2b", rented=True, ramp=CreationRampFit(
        batch=700, creates_per_s=5, burst=1, bound_s=bound, mean_delay_s=share_of_step * step, step_s=step,
        bound_step_share=bound / step, mean_step_share=share_of_step, basis="hand-made"))
    return plan.model_copy(update={"limits": PlanLimits(fits=[fit])})


@pytest.mark.parametrize("share,expected", [(0.005, "pass"), (0.02, "warn"), (0.07, "fail")])
def test_the_ramp_band(free, share, expected):
    assert _gate(free, _with_ramp(free, share), "creation_rate_saturated").status == expected

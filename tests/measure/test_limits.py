"""Rollouts a limit ended (``limit_type``): their own outcome, outside the exception rate.

Hand-counted on a small table, then on the real Inspect logs (tests/fixtures/make_inspect.py),
whose truth is each sample's own ``limit`` / ``error`` / scores as inspect_ai wrote them.
"""

from __future__ import annotations

import pytest
from tests.measure.helpers import telemetry
from tests.telemetry.telemetry_builders import FIXTURES, inspect_samples

from summaries import measure_json, paths_json

INSPECT = FIXTURES / "inspect"


def _six():
    # r0 exception; r1 limit+passed; r2 limit+failed; r3 clean passed; r4 clean failed;
    # r5 an exception that also names a limit: the error wins.
    return telemetry([0] * 6, [100, 200, 300, 400, 500, 600],
                     has_exception=[True, False, False, False, False, True],
                     exception_type=["OOM", None, None, None, None, "RuntimeError"],
                     limit_type=[None, "message", "token", None, None, "time"],
                     reward=[0.0, 1.0, 0.0, 1.0, 0.0, 1.0])


def test_limit_outcome_by_hand():
    m = measure_json(_six())
    o = m["outcomes"]
    assert (o["exceptions"], o["limits"], o["clean"]) == (2, 2, 2)
    assert o["exception_rate"] == pytest.approx(2 / 6)
    assert o["limits_by_type"] == {"message": 1, "token": 1}
    assert (o["passed_limit"], o["pass_rate_limit"]) == (1, pytest.approx(1 / 2))
    assert o["pass_rate_clean"] == pytest.approx(1 / 2)  # r3 of r3, r4
    assert o["pass_rate_exception"] == pytest.approx(1 / 2)  # r5 of r0, r5
    assert o["limit_rate"] == pytest.approx(2 / 6)
    assert o["limit_sandbox_hours"] == pytest.approx((200 + 300) / 3600)
    assert o["limit_sandbox_share"] == pytest.approx(500 / 2100)
    lo, hi = o["pass_rate_limit_ci95"]
    assert lo <= 0.5 <= hi
    by = m["hold_s"]["by_outcome"]
    assert (by["exception"]["rows"], by["limit"]["rows"], by["passed"]["rows"], by["failed"]["rows"]) == (2, 2, 1, 1)
    assert by["limit"]["max"] == 300.0
    assert m["exceptions"]["by_type"] == {"OOM": 1, "RuntimeError": 1}


def test_no_limit_recorded_leaves_the_figures_null():
    t = telemetry([0, 0], [10, 20], has_exception=[False, True], reward=[1.0, 0.0])
    m = measure_json(t)
    assert m["outcomes"]["limits"] is None and m["outcomes"]["pass_rate_limit"] is None
    assert m["hold_s"]["by_outcome"]["limit"] is None


@pytest.mark.parametrize("name", ["dict-limit.eval", "faulty.eval"])
def test_real_inspect_limits_are_not_exceptions(name):
    truth = inspect_samples(INSPECT / name)
    o = paths_json([str(INSPECT / name)], progress=False)["outcomes"]
    errors = [k for k, s in truth.items() if s.get("error")]
    limits = [k for k, s in truth.items() if s.get("limit") and not s.get("error")]
    assert limits, "the fixture hits a limit"
    assert o["exceptions"] == len(errors)
    assert o["exception_rate"] == pytest.approx(len(errors) / len(truth))
    assert o["limits"] == len(limits)
    kinds = [truth[k]["limit"]["type"] for k in limits]
    assert o["limits_by_type"] == {k: kinds.count(k) for k in set(kinds)}


def test_real_limit_hits_scored_like_any_other():
    """dict-limit.eval: d3 (message) and d5 (token) are scored and pass; no 'exception passing'."""
    truth = inspect_samples(INSPECT / "dict-limit.eval")
    o = paths_json([str(INSPECT / "dict-limit.eval")], progress=False, score="rubric/Problem Correctness")["outcomes"]
    right = {k: s["scores"]["rubric"]["value"]["Problem Correctness"] == 1 for k, s in truth.items()}
    limited = [k for k, s in truth.items() if s.get("limit")]
    clean = [k for k in truth if k not in limited]
    assert o["pass_rate_exception"] is None  # no exception at all
    assert o["pass_rate_limit"] == pytest.approx(sum(right[k] for k in limited) / len(limited))
    assert o["pass_rate_clean"] == pytest.approx(sum(right[k] for k in clean) / len(clean))


def test_cli_score_selects_a_dict_entry(run_cli):
    """``measure --score SCORER/KEY`` through the CLI: the Style grades, and no dict warning."""
    import json

    truth = inspect_samples(INSPECT / "dict-limit.eval")
    r = run_cli("measure", INSPECT / "dict-limit.eval", "--score", "rubric/Style", "--pass-threshold", "0.5", "--json")
    assert r.code == 0, r.err
    m = json.loads(r.out)
    style = [s["scores"]["rubric"]["value"]["Style"] for s in truth.values()]
    assert m["outcomes"]["passed"] == sum(v >= 0.5 for v in style)
    assert not any("dict of several values" in w for w in m["warnings"])
    r = run_cli("measure", INSPECT / "dict-limit.eval", "--json")
    assert any("'rubric/Problem Correctness' (choose one with --score rubric/KEY)" in w for w in json.loads(r.out)["warnings"])

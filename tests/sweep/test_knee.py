"""The knee finder on hand-made tables."""

from __future__ import annotations

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.knee import default_goal, find_knee


def rows(pairs, key="cap", target="t", **fixed):
    return [{key: k, **fixed, target: v} for k, v in pairs]


def test_reference_is_best_when_nothing_uncapped():
    r = rows([(1, 50.0), (2, 20.0), (4, 10.1), (8, 10.0), (16, 10.05)])
    g = find_knee(r, ["cap"], "cap", "t", 0.01, "min")["groups"][0]
    assert (g["knee"], g["reference"], g["reference_from"], g["target_at_knee"]) == (4, 10.0, "best", 10.1)


def test_reference_is_the_unbounded_run():
    r = rows([(4, 10.1), (8, 10.0), ("unbounded", 9.0)])
    g = find_knee(r, ["cap"], "cap", "t", 0.12, "min")["groups"][0]
    # limit 9.0 x 1.12 = 10.08: cap 4 (10.1) fails, cap 8 (10.0) passes
    assert (g["knee"], g["reference"], g["reference_from"]) == (8, 9.0, "unbounded")


def test_only_unbounded_qualifies():
    r = rows([(4, 20.0), ("unbounded", 10.0)])
    g = find_knee(r, ["cap"], "cap", "t", 0.01, "min")["groups"][0]
    assert g["knee"] is None and "no swept value" in g["note"]


def test_a_lucky_dip_below_the_knee_is_not_the_knee():
    # cap 2 happens to be within 1%, but cap 3 is not: the knee is 4, where it stays flat
    r = rows([(1, 30.0), (2, 10.05), (3, 12.0), (4, 10.0), (5, 10.0)])
    assert find_knee(r, ["cap"], "cap", "t", 0.01, "min")["groups"][0]["knee"] == 4


def test_unsorted_input_and_groups_by_other_keys():
    r = (rows([(8, 10.0), (2, 40.0), (4, 20.0)], batch=8) + rows([(4, 5.0), (8, 5.0), (2, 10.0)], batch=4))
    out = find_knee(r, ["cap", "batch"], "cap", "t", 0.01, "min")
    assert [(g["fixed"], g["knee"]) for g in out["groups"]] == [({"batch": 8}, 8), ({"batch": 4}, 4)]


def test_max_goal():
    r = rows([(1, 0.5), (2, 0.98), (4, 1.0)])
    assert find_knee(r, ["cap"], "cap", "t", 0.05, "max")["groups"][0]["knee"] == 2
    assert default_goal("completed") == "max" and default_goal("utilisation") == "max"
    assert default_goal("step_s.mean") == "min"


def test_null_target_everywhere():
    g = find_knee(rows([(1, None), (2, None)]), ["cap"], "cap", "t", 0.01, "min")["groups"][0]
    assert g["knee"] is None and "null" in g["note"]


def test_errors():
    r = [{"kind": "fifo", "t": 1.0}]
    with pytest.raises(InputError, match="not a number"):
        find_knee(r, ["kind"], "kind", "t", 0.01, "min")
    with pytest.raises(InputError, match="not a swept key"):
        find_knee(rows([(1, 1.0)]), ["cap"], "batch", "t", 0.01, "min")
    with pytest.raises(InputError, match="`within`"):
        find_knee(rows([(1, 1.0)]), ["cap"], "cap", "t", -0.1, "min")
    with pytest.raises(InputError, match="`goal`"):
        find_knee(rows([(1, 1.0)]), ["cap"], "cap", "t", 0.1, "best")


def test_absolute_tolerance_for_a_target_whose_best_is_zero():
    # queue wait: the best run waits 0 s, so any relative tolerance admits only exact zeros;
    # within 5 s absolute: cap 4 (12 s) fails, cap 8 (4 s) passes, 16 (0 s) passes -> knee 8
    r = rows([(2, 60.0), (4, 12.0), (8, 4.0), (16, 0.0)])
    assert find_knee(r, ["cap"], "cap", "t", 0.01, "min")["groups"][0]["knee"] == 16
    k = find_knee(r, ["cap"], "cap", "t", None, "min", within_abs=5.0)
    assert k["groups"][0]["knee"] == 8 and k["within_abs"] == 5.0


def test_relative_and_absolute_together_is_an_error():
    with pytest.raises(InputError, match="not both"):
        find_knee(rows([(1, 0.0)]), ["cap"], "cap", "t", 0.01, "min", within_abs=1.0)
    with pytest.raises(InputError, match="`within_abs`"):
        find_knee(rows([(1, 0.0)]), ["cap"], "cap", "t", None, "min", within_abs=-1.0)

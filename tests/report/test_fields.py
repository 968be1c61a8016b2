"""Tolerant accessors: anything absent or mistyped reads as None."""

from __future__ import annotations

import math

from sandbox_fleet.report.fields import as_num, get, mapping, num, numbers, turn_keyed


def test_get_and_num():
    d = {"a": {"b": 3, "c": True, "d": math.nan, "e": "4"}}
    assert get(d, "a.b") == 3 and get(d, "a.x") is None and get(d, "a.b.c") is None
    assert num(d, "a.b") == 3.0
    assert num(d, "a.c") is None and num(d, "a.d") is None and num(d, "a.e") is None
    assert mapping(d, "a.b") == {} and mapping(None, "a") == {}


def test_numbers_rejects_partial_lists():
    assert numbers([1, 2.5]) == [1.0, 2.5]
    assert numbers([1, None]) is None and numbers("12") is None
    assert as_num(float("inf")) is None


def test_turn_keyed_sorts_numerically_and_skips_bad_entries():
    assert turn_keyed({"11": 5, "2": 1, "x": 3, "5": None}) == [(2, 1.0), (11, 5.0)]
    assert turn_keyed(None) == []

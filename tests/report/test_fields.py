"""Value helpers: anything absent, mistyped or non-finite reads as None."""

from __future__ import annotations

import math

from sandbox_fleet.report.fields import as_num, numbers, turn_keyed


def test_as_num():
    assert as_num(3) == 3.0 and isinstance(as_num(3), float)
    assert as_num(True) is None and as_num(math.nan) is None and as_num("4") is None and as_num(None) is None


def test_numbers_rejects_partial_lists():
    assert numbers([1, 2.5]) == [1.0, 2.5]
    assert numbers([1, None]) is None and numbers("12") is None
    assert as_num(float("inf")) is None


def test_turn_keyed_sorts_numerically_and_skips_bad_entries():
    assert turn_keyed({"11": 5, "2": 1, "x": 3, "5": None}) == [(2, 1.0), (11, 5.0)]
    assert turn_keyed(None) == []

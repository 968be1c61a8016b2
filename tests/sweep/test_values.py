"""--vary parsing: lists, ranges, value types, and one-line errors."""

from __future__ import annotations

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.sweep.values import parse_vary


def test_comma_list_of_ints():
    assert parse_vary("fleet.cap=100,200,400") == ("fleet.cap", [100, 200, 400])


def test_integer_range_includes_stop():
    key, vals = parse_vary("fleet.cap=100:1000:100")
    assert key == "fleet.cap"
    assert vals == [100, 200, 300, 400, 500, 600, 700, 800, 900, 1000]
    assert all(type(v) is int for v in vals)


def test_range_stop_not_on_grid_is_excluded():
    assert parse_vary("a.b=1:10:4")[1] == [1, 5, 9]


def test_float_range_is_exact_decimal():
    # naive float stepping gives 0.30000000000000004 for the third value
    assert parse_vary("hold.sigma=0.1:0.3:0.1")[1] == [0.1, 0.2, 0.3]


def test_mixed_list_and_range_and_word():
    assert parse_vary("fleet.cap=1:3:1,8,unbounded")[1] == [1, 2, 3, 8, "unbounded"]


def test_types_follow_toml():
    _, vals = parse_vary("k.v=3,2.5,1e3,true,False,fifo,-4")
    assert vals == [3, 2.5, 1000.0, True, False, "fifo", -4]
    assert [type(v) for v in vals] == [int, float, float, bool, bool, str, int]


def test_non_finite_words_stay_strings():
    assert parse_vary("k.v=inf,nan")[1] == ["inf", "nan"]


def test_quoted_value_with_colons_is_not_a_range():
    assert parse_vary('run.epoch="2026-01-01T00:00:00+00:00"')[1] == ["2026-01-01T00:00:00+00:00"]


def test_wildcard_and_index_keys():
    assert parse_vary("workloads.*.batch=1")[0] == "workloads.*.batch"
    assert parse_vary("workloads.0.batch=1")[0] == "workloads.0.batch"


@pytest.mark.parametrize(
    "text, fragment",
    [
        ("fleet.cap", "expected KEY=VALUES"),
        ("=1,2", "expected KEY=VALUES"),
        ("fleet..cap=1", "dotted path"),
        ("fleet.cap=1,,2", "empty value"),
        ("fleet.cap=1:10", "START:STOP:STEP"),
        ("fleet.cap=a:10:1", "three numbers"),
        ("fleet.cap=1:10:0", "positive STEP"),
        ("fleet.cap=10:1:1", "STOP below START"),
        ("fleet.cap=1:1000000000:1", "at most"),
        ("fleet.cap=1,2,1", "given twice"),
    ],
)
def test_errors_are_one_line_and_name_the_key(text, fragment):
    with pytest.raises(InputError) as exc:
        parse_vary(text)
    msg = str(exc.value)
    assert fragment in msg and "\n" not in msg
    assert msg.startswith("`vary`")

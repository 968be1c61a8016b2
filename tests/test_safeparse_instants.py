"""The one ISO-8601 reader (``safeparse.iso_instant``) and its two rules for a time without an offset."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from sandbox_fleet.errors import InputError
from sandbox_fleet.safeparse import iso_instant, option_instant


@pytest.mark.parametrize(("text", "expected_unix_s"), [
    ("1970-01-01T00:00:00Z", 0.0),
    ("1970-01-01T01:00:00+01:00", 0.0),                # the same instant in another zone
    ("2026-11-29T08:00:00-05:30", 20_786 * 86_400 + 8 * 3600 + 5.5 * 3600),  # 08:00 at -05:30 is 13:30 UTC
    ("2026-01-01", 20_454 * 86_400.0),                 # a date is midnight, naive = UTC
    ("2026-01-01T00:00:00.25Z", 20_454 * 86_400 + 0.25),
])
def test_instants_are_utc_and_keep_the_instant(text: str, expected_unix_s: float) -> None:
    parsed = iso_instant(text)
    assert parsed is not None and parsed.tzinfo is UTC
    assert parsed.timestamp() == expected_unix_s


def test_hand_computed_epoch_seconds() -> None:
    # 2026-11-29 is day 20,786 since 1970-01-01: 56 years with 14 leap days, then 332 days of 2026
    assert 56 * 365 + 14 + (31 + 28 + 31 + 30 + 31 + 30 + 31 + 31 + 30 + 31) + 28 == 20_786
    assert iso_instant("2026-11-29T08:00:00Z") == datetime.fromtimestamp(20_786 * 86_400 + 8 * 3600, UTC)


@pytest.mark.parametrize("value", [None, 17, 1.5, b"2026-01-01", "", "yesterday", "2026-13-01", "2026-01-01T00:00:00ZZ"])
def test_anything_else_is_none(value: object) -> None:
    assert iso_instant(value) is None
    assert iso_instant(value, naive_is_utc=False) is None


def test_naive_times_follow_the_rule_asked_for() -> None:
    assert iso_instant("2026-01-01T06:00:00") == datetime(2026, 1, 1, 6, tzinfo=UTC)
    assert iso_instant("2026-01-01T06:00:00", naive_is_utc=False) is None
    assert iso_instant("2026-01-01T06:00:00Z", naive_is_utc=False) == datetime(2026, 1, 1, 6, tzinfo=UTC)


def test_an_option_names_itself_when_it_is_not_a_time() -> None:
    assert option_instant(" 2026-01-01 ", "since", "2026-11-29") == datetime(2026, 1, 1, tzinfo=UTC)
    with pytest.raises(InputError, match=r"^`since`: 'soon' is not an ISO-8601 date or time \(e.g. 2026-11-29\)$"):
        option_instant("soon", "since", "2026-11-29")

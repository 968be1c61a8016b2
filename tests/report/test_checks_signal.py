"""The two signal gates (issue 40 item 3) on both sides of their default thresholds (data/checks.toml:
informative_groups warns below 0.5 and fails below 0.2; exceptions_scored_as_rewards warns above 0.05
and fails above 0.15), on partial summaries that carry only the figures a gate reads."""

from __future__ import annotations

import pytest

from producers import measure_doc
from sandbox_fleet.report.checks import CheckResult
from summaries import checks_of


def _gate(name: str, rl_groups: dict) -> CheckResult:
    return {r.name: r for r in checks_of(measure_doc(rl_groups=rl_groups))}[name]


@pytest.mark.parametrize(("share", "expected"), [(0.51, "pass"), (0.5, "pass"), (0.49, "warn"), (0.2, "warn"),
                                                 (0.19, "fail"), (0.0, "fail")])
def test_informative_groups_both_sides(share, expected):
    r = _gate("informative_groups", {"recorded": True, "groups": 400, "informative_share": share,
                                     "expected_informative_share": 0.9})
    assert (r.status, r.value) == (expected, share)
    assert "of 400 recorded groups" in r.message


def test_informative_groups_reads_the_expected_share_when_no_group_is_recorded():
    r = _gate("informative_groups", {"recorded": False, "group_size": 8, "informative_share": None,
                                     "expected_informative_share": 0.3})
    assert (r.status, r.value) == ("warn", 0.3)
    assert "expected for groups of 8 (none recorded)" in r.message
    assert "3.33 groups per informative one" in r.message


@pytest.mark.parametrize(("share", "expected"), [(0.0, "pass"), (0.05, "pass"), (0.051, "warn"), (0.15, "warn"),
                                                 (0.151, "fail")])
def test_exceptions_scored_as_rewards_both_sides(share, expected):
    r = _gate("exceptions_scored_as_rewards", {"exceptions_scored_zero": 12, "exceptions_scored_zero_share": share})
    assert (r.status, r.value) == (expected, share)
    assert r.message.startswith("12 exception rows carry a failing reward")


def test_signal_gates_skip_without_rl_groups():
    for name in ("informative_groups", "exceptions_scored_as_rewards"):
        assert {r.name: r for r in checks_of(measure_doc())}[name].status == "skip"

"""Shared fixtures for the measure tests."""

from __future__ import annotations

import pytest

from sandbox_fleet.telemetry import Telemetry

from .helpers import telemetry


@pytest.fixture
def ten_rows() -> Telemetry:
    """The hand-made 10-row table used by the outcome, coverage, hold and model tests.

    row  exc  reward  hold  model  type     input  output cached turns traj
     1   F    1.0     100   A      -        1000   10     500    1     T
     2   F    0.0     200   A      -        2000   20     0      2     T
     3   F    -       300   A      -        3000   30     -      3     T
     4   F    1.0     400   A      -        4000   40     -      4     T
     5   T    -       500   A      Timeout  5000   50     -      5     T
     6   T    0.0     600   B      Timeout  6000   60     -      6     T
     7   T    1.0     700   B      OOM      -      -      -      7     T
     8   F    0.5     800   B      -        -      -      -      8     -
     9   T    -       900   B      -        -      -      -      -     F
    10   F    1.0     1000  B      -        -      -      -      -     F
    """
    holds = [100 * (i + 1) for i in range(10)]
    starts = [10.0 * i for i in range(10)]
    return telemetry(
        starts,
        [s + h for s, h in zip(starts, holds)],
        has_exception=[False, False, False, False, True, True, True, False, True, False],
        reward=[1.0, 0.0, None, 1.0, None, 0.0, 1.0, 0.5, None, 1.0],
        model=["A"] * 5 + ["B"] * 5,
        exception_type=[None, None, None, None, "Timeout", "Timeout", "OOM", None, None, None],
        input_tokens=[1000, 2000, 3000, 4000, 5000, 6000, None, None, None, None],
        output_tokens=[10, 20, 30, 40, 50, 60, None, None, None, None],
        cached_tokens=[500, 0, None, None, None, None, None, None, None, None],
        turns=[1, 2, 3, 4, 5, 6, 7, 8, None, None],
        has_trajectory=[True] * 7 + [None, False, False],
        rejected={"duplicate id": 3},
    )

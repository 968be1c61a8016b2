"""Harbor phase timings: median, p99, share of hold, invalid and missing phases."""

from __future__ import annotations

import pytest

from summaries import measure_json

from .helpers import telemetry


def test_environment_setup_figures():
    # Holds 100 s each. Setup 10, 20, 30 s on rows 0-2; row 3 finishes before it starts; row 4 has none.
    t = telemetry(
        [0, 0, 0, 0, 0], [100, 100, 100, 100, 100],
        environment_setup_started_at=[0, 0, 0, 50, None],
        environment_setup_finished_at=[10, 20, 30, 40, None],
        verifier_started_at=[90, None, None, None, None],
        verifier_finished_at=[100, None, None, None, None],
    )
    ph = measure_json(t)["phases"]
    assert list(ph) == ["environment_setup", "verifier"]  # phases nobody reports are left out
    env = ph["environment_setup"]
    assert (env["rows"], env["invalid"]) == (3, 1)
    assert env["median_s"] == 20.0
    assert env["p99_s"] == pytest.approx(29.8)  # position 1.98
    assert env["share_of_hold"] == pytest.approx(60 / 300)
    assert ph["verifier"]["share_of_hold"] == pytest.approx(0.1)
    assert ph["verifier"]["small_sample"] is True

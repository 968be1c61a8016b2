"""The plan's ramp with the catalog's starting-at-once cap (``ramp.creation_delays_s``), against the
simulator placing the same batch through ``[fleet.limits]`` (an independent computation: event by event,
a heap of starting slots) and hand cases."""

from __future__ import annotations

import numpy as np
import pytest

from sandbox_fleet.plan.quotas import ramp_delays
from sandbox_fleet.plan.ramp import creation_delays_s
from sandbox_fleet.simulate import Fleet, run_workloads
from sandbox_fleet.simulate.engine.sandbox_limits import SandboxLimits
from sandbox_fleet.simulate.engine.workloads import Replay


def test_by_hand():
    # no rate: 5 creations, 2 starting at once for 3 s: ready 3, 3, 6, 6, 9
    assert creation_delays_s(5, None, 1.0, 2, 3.0).tolist() == [3.0, 3.0, 6.0, 6.0, 9.0]
    # 1/s, burst 1, one at a time for 2 s: passes 0,1,2,3; the starting slot binds: 2, 4, 6, 8
    assert creation_delays_s(4, 1.0, 1.0, 1, 2.0).tolist() == [2.0, 4.0, 6.0, 8.0]
    # no cap: the bucket's closed form plus the cold start
    assert creation_delays_s(4, 2.0, 2.0, None, 1.0).tolist() == [1.0, 1.0, 1.5, 2.0]
    # the bound and mean past a lone cold start: 0, 0, 3, 3, 6
    assert ramp_delays(5, 1e9, 1.0, 2, 3.0) == pytest.approx((6.0, 12.0 / 5))


@pytest.mark.parametrize(("n", "rate", "burst", "m", "cold"),
                         [(300, 5.0, 10, 8, 3.7), (1000, 70.0, 300, 64, 3.7), (200, None, 1, 7, 12.5), (50, 0.5, 1, 3, 1.0)])
def test_matches_the_simulator(n, rate, burst, m, cold):
    lim = SandboxLimits(creates_per_s=rate, creates_burst=burst if rate else None, max_starting=m, cold_start_s=cold)
    res = run_workloads(Fleet(cap=None, limits=lim), [Replay(arrivals_s=np.zeros(n), holds=np.ones(n))], seed=1,
                        engine="events")
    np.testing.assert_allclose(creation_delays_s(n, rate, float(burst), m, cold), res.start_s + res.build_s,
                               rtol=1e-12, atol=1e-9)
